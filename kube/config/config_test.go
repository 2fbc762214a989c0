package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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
	if !slices.Equal(kinds, []string{"CustomResourceDefinition/" + CRDName, "ClusterRole/hymn-kube-controller", "Role/hymn-kube-controller", "Role/hymn-kube-controller-leader"}) {
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

// The controller's RBAC as rendered for two namespaces: write access only
// in those (a Role and RoleBinding in each), the leader Lease only in the
// first, and cluster-wide nothing but reading the nodes.
func TestAccessObjects(t *testing.T) {
	sa := &rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "hymn-a", Name: DefaultServiceAccount}
	objs, err := Access{Namespaces: []string{"hymn-a", "hymn-b"}, Subject: sa}.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName()))
		switch o.GetKind() {
		case "ClusterRole":
			r := &rbacv1.ClusterRole{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, r); err != nil {
				t.Fatal(err)
			}
			for _, rule := range r.Rules {
				if !slices.Equal(rule.Resources, []string{"nodes"}) || !slices.Equal(rule.Verbs, []string{"get", "list"}) {
					t.Errorf("cluster-wide rule beyond reading the nodes: %+v", rule)
				}
			}
		case "RoleBinding", "ClusterRoleBinding":
			b := &rbacv1.RoleBinding{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, b); err != nil {
				t.Fatal(err)
			}
			if len(b.Subjects) != 1 || b.Subjects[0] != *sa || b.RoleRef.Name != o.GetName() || b.RoleRef.Kind+"Binding" != o.GetKind() {
				t.Errorf("%s %s: subjects %+v, role %+v", o.GetKind(), o.GetName(), b.Subjects, b.RoleRef)
			}
		}
	}
	want := []string{
		"ServiceAccount hymn-a/hymn-kube-controller",
		"ClusterRole /hymn-kube-controller", "ClusterRoleBinding /hymn-kube-controller",
		"Role hymn-a/hymn-kube-controller", "RoleBinding hymn-a/hymn-kube-controller",
		"Role hymn-b/hymn-kube-controller", "RoleBinding hymn-b/hymn-kube-controller",
		"Role hymn-a/hymn-kube-controller-leader", "RoleBinding hymn-a/hymn-kube-controller-leader",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("objects:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	y, err := YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Objects(y)
	if err != nil || len(back) != len(objs) {
		t.Fatalf("YAML round trip: %d objects, %v", len(back), err)
	}
	if _, err := (Access{}).Objects(); err == nil {
		t.Error("no namespace: rendered")
	}
	noSubject, err := Access{Namespaces: []string{"x"}}.Objects()
	if err != nil || len(noSubject) != 3 {
		t.Errorf("without a subject: %d objects (want the 3 roles), %v", len(noSubject), err)
	}
}

func TestParseNamespaces(t *testing.T) {
	if ns, err := ParseNamespaces("a, b"); err != nil || !slices.Equal(ns, []string{"a", "b"}) {
		t.Errorf("a, b: %v %v", ns, err)
	}
	for _, bad := range []string{"", "a,,b", "A", "a,a", "x/y"} {
		if _, err := ParseNamespaces(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
