package config

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// CRD is the Topology CustomResourceDefinition.
//
//go:embed crd.yaml
var CRD []byte

// RBAC is the controller's permissions as templates: the ClusterRole
// (read the nodes), the Role for each watched namespace and the Role for
// the leader-election Lease. Access renders them.
//
//go:embed rbac.yaml
var RBAC []byte

// Names of the controller's roles (and of their bindings).
const (
	RoleName       = "hymn-kube-controller"
	LeaderRoleName = "hymn-kube-controller-leader"
)

// DefaultServiceAccount is the controller's service account (in the first
// watched namespace) when none is named.
const DefaultServiceAccount = "hymn-kube-controller"

// Access is who the controller runs as and where it may act.
type Access struct {
	// Namespaces the controller watches: it gets a Role in each, and the
	// first also holds its leader-election Lease. At least one.
	Namespaces []string
	// Subject is the controller's identity the roles are bound to (a
	// ServiceAccount, which Objects also creates, or a User); nil: the
	// roles only, bound by hand.
	Subject *rbacv1.Subject
}

// ParseNamespaces splits a comma-separated list of namespaces, refusing an
// empty list, a name that is not a DNS label and a repeated one.
func ParseNamespaces(list string) ([]string, error) {
	var out []string
	for _, ns := range strings.Split(list, ",") {
		ns = strings.TrimSpace(ns)
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("namespace %q: %s", ns, strings.Join(errs, "; "))
		}
		if slices.Contains(out, ns) {
			return nil, fmt.Errorf("namespace %q named twice", ns)
		}
		out = append(out, ns)
	}
	return out, nil
}

// Objects renders the controller's RBAC: the ClusterRole, a Role in each
// namespace, the leader Role in the first, and (with a Subject) the
// ServiceAccount and the bindings of every role to it.
func (a Access) Objects() ([]*unstructured.Unstructured, error) {
	if len(a.Namespaces) == 0 {
		return nil, errors.New("the controller's RBAC: no namespace to watch")
	}
	tmpl, err := Objects(RBAC)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	bind := func(kind, ns, name string) {
		if a.Subject == nil {
			return
		}
		b := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1",
			"kind":       kind,
			"metadata":   map[string]any{"name": name},
			"roleRef":    map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": strings.TrimSuffix(kind, "Binding"), "name": name},
			"subjects":   []any{subjectMap(*a.Subject)},
		}}
		if ns != "" {
			b.SetNamespace(ns)
		}
		out = append(out, b)
	}
	if s := a.Subject; s != nil && s.Kind == rbacv1.ServiceAccountKind {
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ServiceAccount",
			"metadata": map[string]any{"name": s.Name, "namespace": s.Namespace},
			// The controller talks to the API server with its token; the
			// worker pods it makes never mount one.
			"automountServiceAccountToken": true,
		}})
	}
	for _, o := range tmpl {
		switch {
		case o.GetKind() == "ClusterRole":
			out = append(out, o)
			bind("ClusterRoleBinding", "", o.GetName())
		case o.GetKind() == "Role" && o.GetName() == RoleName:
			for _, ns := range a.Namespaces {
				r := o.DeepCopy()
				r.SetNamespace(ns)
				out = append(out, r)
				bind("RoleBinding", ns, o.GetName())
			}
		case o.GetKind() == "Role" && o.GetName() == LeaderRoleName:
			r := o.DeepCopy()
			r.SetNamespace(a.Namespaces[0])
			out = append(out, r)
			bind("RoleBinding", a.Namespaces[0], o.GetName())
		default:
			return nil, fmt.Errorf("rbac.yaml: unexpected %s %s", o.GetKind(), o.GetName())
		}
	}
	return out, nil
}

func subjectMap(s rbacv1.Subject) map[string]any {
	m := map[string]any{"kind": s.Kind, "name": s.Name}
	if s.Kind == rbacv1.ServiceAccountKind {
		m["namespace"] = s.Namespace
	} else {
		m["apiGroup"] = rbacv1.GroupName
	}
	return m
}

// YAML renders objects as multi-document YAML (for kubectl apply -f -).
func YAML(objs []*unstructured.Unstructured) ([]byte, error) {
	var b bytes.Buffer
	for i, o := range objs {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}

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

// Install creates or updates the CRD and the controller's RBAC (Access),
// then waits (up to timeout) until the API server serves Topologies. log
// gets one line per object.
func Install(ctx context.Context, c client.Client, access Access, timeout time.Duration, log func(format string, a ...any)) error {
	objs, err := Objects(CRD)
	if err != nil {
		return err
	}
	rbac, err := access.Objects()
	if err != nil {
		return err
	}
	if err := Apply(ctx, c, append(objs, rbac...), log); err != nil {
		return err
	}
	return WaitEstablished(ctx, c, timeout)
}

// Apply creates each object, or updates it if it exists.
func Apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, log func(format string, a ...any)) error {
	for _, o := range objs {
		what := o.GetKind() + " " + o.GetName()
		if ns := o.GetNamespace(); ns != "" {
			what = o.GetKind() + " " + ns + "/" + o.GetName()
		}
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(o.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(o), cur)
		switch {
		case apierrors.IsNotFound(err):
			if err := c.Create(ctx, o); err != nil {
				return fmt.Errorf("creating %s: %w", what, err)
			}
			log("*** created %s\n", what)
		case err != nil:
			return fmt.Errorf("reading %s: %w", what, err)
		default:
			o.SetResourceVersion(cur.GetResourceVersion())
			if err := c.Update(ctx, o); err != nil {
				return fmt.Errorf("updating %s: %w", what, err)
			}
			log("*** updated %s\n", what)
		}
	}
	return nil
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
