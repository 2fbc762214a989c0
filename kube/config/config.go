package config

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// CRD is the Topology CustomResourceDefinition.
//
//go:embed crd.yaml
var CRD []byte

// RBAC is the controller's ClusterRole.
//
//go:embed rbac.yaml
var RBAC []byte

// CRDName is the CustomResourceDefinition's name.
const CRDName = "topologies.hymn.hymn-net.io"

// Objects decodes multi-document YAML into objects; a document that is
// empty (comments only) is skipped.
func Objects(docs ...[]byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, d := range docs {
		for i, part := range bytes.Split(d, []byte("\n---")) {
			m := map[string]any{}
			if err := yaml.Unmarshal(part, &m); err != nil {
				return nil, fmt.Errorf("manifest document %d: %v", i+1, err)
			}
			if len(m) == 0 {
				continue
			}
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	return out, nil
}

// Install creates or updates the CRD and the ClusterRole, then waits (up to
// timeout) until the API server serves Topologies. log gets one line per
// object.
func Install(ctx context.Context, c client.Client, timeout time.Duration, log func(format string, a ...any)) error {
	objs, err := Objects(CRD, RBAC)
	if err != nil {
		return err
	}
	for _, o := range objs {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(o.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(o), cur)
		switch {
		case apierrors.IsNotFound(err):
			if err := c.Create(ctx, o); err != nil {
				return fmt.Errorf("creating %s %s: %w", o.GetKind(), o.GetName(), err)
			}
			log("*** created %s %s\n", o.GetKind(), o.GetName())
		case err != nil:
			return fmt.Errorf("reading %s %s: %w", o.GetKind(), o.GetName(), err)
		default:
			o.SetResourceVersion(cur.GetResourceVersion())
			if err := c.Update(ctx, o); err != nil {
				return fmt.Errorf("updating %s %s: %w", o.GetKind(), o.GetName(), err)
			}
			log("*** updated %s %s\n", o.GetKind(), o.GetName())
		}
	}
	return WaitEstablished(ctx, c, timeout)
}

// WaitEstablished waits until the CRD's Established condition is true.
func WaitEstablished(ctx context.Context, c client.Client, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		if err := c.Get(ctx, client.ObjectKey{Name: CRDName}, crd); err != nil {
			last = err.Error()
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, x := range conds {
			m, _ := x.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		last = "not established yet"
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s: %s: %w", CRDName, last, err)
	}
	return nil
}
