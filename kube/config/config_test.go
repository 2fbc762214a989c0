package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The embedded manifests decode into the CRD and the ClusterRole, and the
// CRD says what kubectl get shows and what the schema refuses.
func TestManifests(t *testing.T) {
	objs, err := Objects(CRD, RBAC)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind()+"/"+o.GetName())
	}
	if !slices.Equal(kinds, []string{"CustomResourceDefinition/" + CRDName, "ClusterRole/hymn-kube-controller"}) {
		t.Fatalf("manifests: %v", kinds)
	}
	crd := objs[0]
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	v := versions[0].(map[string]any)
	var cols []string
	for _, c := range v["additionalPrinterColumns"].([]any) {
		if m := c.(map[string]any); m["priority"] == nil {
			cols = append(cols, m["name"].(string))
		}
	}
	if !slices.Equal(cols, []string{"Phase", "Workers", "Nodes", "Links", "Age"}) {
		t.Fatalf("printer columns %v", cols)
	}
	short, _, _ := unstructured.NestedStringSlice(crd.Object, "spec", "names", "shortNames")
	if !slices.Equal(short, []string{"topo"}) {
		t.Fatalf("short names %v", short)
	}
	spec, _, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema", "properties", "spec", "properties", "workers")
	if fmt.Sprint(spec["minimum"], spec["maximum"], spec["default"]) != "1 64 2" {
		t.Fatalf("workers schema %v", spec)
	}
}

func TestObjectsBadYAML(t *testing.T) {
	if _, err := Objects([]byte("a: [")); err == nil || !strings.Contains(err.Error(), "manifest document 1") {
		t.Fatalf("bad YAML: %v", err)
	}
	objs, err := Objects([]byte("# only a comment\n---\n"))
	if err != nil || len(objs) != 0 {
		t.Fatalf("comments only: %v %v", objs, err)
	}
}
