package controller

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/kube/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestImageAllowed(t *testing.T) {
	allowed := []string{"localhost/hymn-worker:*", "registry.example:5000/team/hymn:1.2"}
	for img, want := range map[string]bool{
		"localhost/hymn-worker:dev":             true,
		"localhost/hymn-worker@sha256:abcd":     true,
		"localhost/hymn-worker":                 false, // no tag: not "any tag"
		"localhost/hymn-worker-evil:dev":        false,
		"localhost/hymn-worker:dev/../x":        false,
		"registry.example:5000/team/hymn:1.2":   true,
		"registry.example:5000/team/hymn:1.3":   false,
		"evil.example/hymn-worker:dev":          false,
		"docker.io/library/alpine:latest":       false,
		"registry.example:5000/team/hymn:1.2-x": false,
	} {
		if got := ImageAllowed(img, allowed); got != want {
			t.Errorf("%s: allowed %v, want %v", img, got, want)
		}
	}
	for _, bad := range [][]string{{""}, {":*"}, {"a b"}, {"repo/*"}, {"repo:1*"}} {
		if err := CheckAllowList(bad); err == nil {
			t.Errorf("allow-list %q accepted", bad)
		}
	}
	if err := CheckAllowList(allowed); err != nil {
		t.Error(err)
	}
}

// A spec.image off the allow-list is refused before anything is split or
// created, saying which image and how to allow it; the default image and
// allowed ones pass.
func TestValidateImage(t *testing.T) {
	r := &Reconciler{Image: "localhost/hymn-worker:dev", AllowedImages: []string{"registry.example/hymn:*"}}
	topo := func(image string) *v1alpha1.Topology {
		return &v1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "default"},
			Spec: v1alpha1.TopologySpec{Topology: "linear,2", Workers: 1, Image: image}}
	}
	for _, img := range []string{"", "localhost/hymn-worker:dev", "registry.example/hymn:v3"} {
		if _, _, _, err := r.validate(topo(img)); err != nil {
			t.Errorf("%q: %v", img, err)
		}
	}
	_, _, _, err := r.validate(topo("evil.example/root:latest"))
	var na *imageNotAllowed
	if err == nil || !strings.Contains(err.Error(), `spec.image "evil.example/root:latest" is not on the controller's allow-list (localhost/hymn-worker:dev, registry.example/hymn:*)`) ||
		!strings.Contains(err.Error(), "--allow-image") || !errors.As(err, &na) {
		t.Errorf("foreign image: %v", err)
	}
}

// A request for a namespace the controller does not watch is ignored
// before anything is read (the Reconciler here has no client at all: a
// read would panic).
func TestReconcileOutsideNamespaces(t *testing.T) {
	r := &Reconciler{Namespaces: []string{"hymn-a"}}
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "other", Name: "x"}})
	if err != nil || res != (ctrl.Result{}) {
		t.Fatalf("outside: %v %v", res, err)
	}
	if err := (&Reconciler{}).SetupWithManager(nil); err == nil || !strings.Contains(err.Error(), "watches no namespace") {
		t.Errorf("no namespaces: %v", err)
	}
}

// The worker container is not privileged and holds exactly the listed
// capabilities.
func TestWorkerSecurityContext(t *testing.T) {
	sc := WorkerSecurityContext()
	if sc.Privileged == nil || *sc.Privileged || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Fatalf("%+v", sc)
	}
	var add []string
	for _, c := range sc.Capabilities.Add {
		add = append(add, string(c))
	}
	if !slices.Equal(add, []string{"NET_ADMIN", "NET_RAW", "SYS_ADMIN", "SYS_NICE"}) {
		t.Errorf("capabilities %v", add)
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != "RuntimeDefault" || sc.AppArmorProfile == nil || sc.AppArmorProfile.Type != "Unconfined" {
		t.Errorf("seccomp %+v, apparmor %+v", sc.SeccompProfile, sc.AppArmorProfile)
	}
}
