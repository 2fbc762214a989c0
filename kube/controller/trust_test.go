package controller

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/kube/api/v1alpha1"
	"github.com/hymn-net/hymn/kube/config"
	"github.com/hymn-net/hymn/kube/internal/kubetest"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A Topology naming an image off the allow-list fails at once with the
// reason in its status (message, the Ready condition's reason, an event)
// and no pod or ConfigMap is made; an allowed one gets its pods.
func TestForeignImageRefused(t *testing.T) {
	h := newHarness(t, &Reconciler{PodTimeout: time.Minute, AllowedImages: []string{"localhost/hymn-worker:*"}})
	for _, img := range []string{"evil.example/root:latest", "localhost/hymn-worker-evil:dev"} {
		name := strings.NewReplacer(".", "-", "/", "-", ":", "-").Replace(img)
		h.create(name, v1alpha1.TopologySpec{Topology: "linear,2", Workers: 2, Image: img})
		topo := h.waitPhase(name, v1alpha1.PhaseFailed, 15*time.Second)
		want := fmt.Sprintf("spec.image %q is not on the controller's allow-list (localhost/hymn-worker:dev, localhost/hymn-worker:*)", img)
		if !strings.Contains(topo.Status.Message, want) {
			t.Errorf("%s: message %q, want %q", img, topo.Status.Message, want)
		}
		if c := findCond(topo, v1alpha1.ConditionReady); c == nil || c.Status != "False" || c.Reason != reasonImageNotAllowed {
			t.Errorf("%s: Ready condition %+v", img, c)
		}
		// Give a controller that would make pods the time to make them.
		time.Sleep(time.Second)
		if n, m := len(h.pods(topo)), len(h.configMaps(topo)); n != 0 || m != 0 {
			t.Errorf("%s: %d pods and %d ConfigMaps made", img, n, m)
		}
		h.eventually(10*time.Second, "an ImageNotAllowed event", func() (bool, string) {
			l := &eventsv1.EventList{}
			if err := h.c.List(t.Context(), l, client.InNamespace(h.ns)); err != nil {
				return false, err.Error()
			}
			for _, e := range l.Items {
				if e.Regarding.Name == name && e.Reason == reasonImageNotAllowed {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d events", len(l.Items))
		})
		t.Logf("%s: %s (Ready: %s)", img, topo.Status.Message, reasonImageNotAllowed)
	}
	topo := h.create("allowed", v1alpha1.TopologySpec{Topology: "linear,2", Workers: 2, Image: "localhost/hymn-worker:v2"})
	pods := h.waitPods(topo)
	for _, p := range pods {
		if img := p.Spec.Containers[0].Image; img != "localhost/hymn-worker:v2" {
			t.Errorf("pod %s runs %s", p.Name, img)
		}
	}
}

// The worker pods the controller makes: not privileged, only the listed
// capabilities, no service-account token.
func TestWorkerPodSecurity(t *testing.T) {
	h := newHarness(t, &Reconciler{PodTimeout: time.Minute})
	topo := h.create("sec", v1alpha1.TopologySpec{Topology: "linear,2", Workers: 2})
	for _, p := range h.waitPods(topo) {
		c := p.Spec.Containers[0]
		sc, err := json.Marshal(c.SecurityContext)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("pod %s: automountServiceAccountToken %v, securityContext %s", p.Name, *p.Spec.AutomountServiceAccountToken, sc)
		if strings.Contains(string(sc), `"privileged":true`) || c.SecurityContext.Privileged == nil || *c.SecurityContext.Privileged {
			t.Errorf("pod %s is privileged", p.Name)
		}
		if string(sc) != `{"capabilities":{"add":["NET_ADMIN","NET_RAW","SYS_ADMIN","SYS_NICE"],"drop":["ALL"]},"privileged":false,"seccompProfile":{"type":"RuntimeDefault"},"appArmorProfile":{"type":"Unconfined"}}` {
			t.Errorf("pod %s: securityContext %s", p.Name, sc)
		}
		if a := p.Spec.AutomountServiceAccountToken; a == nil || *a {
			t.Errorf("pod %s mounts a service-account token", p.Name)
		}
		for _, v := range p.Spec.Volumes {
			if v.HostPath != nil || v.Projected != nil {
				t.Errorf("pod %s has volume %s: %+v", p.Name, v.Name, v.VolumeSource)
			}
		}
	}
}

// The controller's service account, with the RBAC hymn-kube install
// renders for namespaces hymn-a and hymn-b: pods, ConfigMaps and attach
// streams there, nowhere else (not in another namespace, not cluster-wide),
// and of cluster-scoped objects only reading the nodes. Asked of the API
// server's RBAC authorizer (SubjectAccessReview, and kubectl auth can-i as
// an operator would).
func TestControllerRBAC(t *testing.T) {
	e := kubetest.Start(t, "hymn-a", "hymn-b")
	if err := e.Client.Create(t.Context(), nsObject("other")); err != nil {
		t.Fatal(err)
	}
	sa := &rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "hymn-a", Name: config.DefaultServiceAccount}
	objs, err := config.Access{Namespaces: e.Watched, Subject: sa}.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if err := config.Apply(t.Context(), e.Client, objs, t.Logf); err != nil {
		t.Fatal(err)
	}
	user := "system:serviceaccount:hymn-a:" + config.DefaultServiceAccount
	can := func(verb, group, resource, sub, ns string) bool {
		t.Helper()
		sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User:               user,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:hymn-a", "system:authenticated"},
			ResourceAttributes: &authzv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Subresource: sub, Namespace: ns},
		}}
		if err := e.Client.Create(t.Context(), sar); err != nil {
			t.Fatal(err)
		}
		return sar.Status.Allowed
	}
	for _, c := range []struct {
		verb, group, resource, sub, ns string
		want                           bool
	}{
		{"create", "", "pods", "", "hymn-a", true},
		{"create", "", "pods", "", "hymn-b", true},
		{"create", "", "pods", "attach", "hymn-b", true},
		{"update", "hymn.hymn-net.io", "topologies", "status", "hymn-a", true},
		{"list", "", "nodes", "", "", true},
		{"create", "coordination.k8s.io", "leases", "", "hymn-a", true},
		{"create", "", "pods", "", "other", false},
		{"create", "", "pods", "", "default", false},
		{"create", "", "pods", "", "", false}, // every namespace at once
		{"create", "", "configmaps", "", "other", false},
		{"create", "", "pods", "attach", "other", false},
		{"create", "", "pods", "exec", "hymn-a", false},
		{"list", "hymn.hymn-net.io", "topologies", "", "", false},
		{"get", "", "secrets", "", "hymn-a", false},
		{"create", "", "nodes", "", "", false},
		{"create", "coordination.k8s.io", "leases", "", "hymn-b", false},
		{"create", "rbac.authorization.k8s.io", "rolebindings", "", "hymn-a", false},
	} {
		if got := can(c.verb, c.group, c.resource, c.sub, c.ns); got != c.want {
			t.Errorf("%s %s.%s/%s in %q: allowed %v, want %v", c.verb, c.resource, c.group, c.sub, c.ns, got, c.want)
		}
	}
	// The same question as an operator asks it.
	kubectl := filepath.Join(kubetest.Assets(t), "kubectl")
	kc := e.Kubeconfig()
	for ns, want := range map[string]string{"other": "no", "hymn-a": "yes"} {
		out, err := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", kc, "auth", "can-i", "--as="+user, "create", "pods", "-n", ns).CombinedOutput()
		got := strings.TrimSpace(string(out))
		t.Logf("kubectl auth can-i --as=%s create pods -n %s: %s", user, ns, got)
		if got != want || (want == "yes") != (err == nil) {
			t.Errorf("kubectl auth can-i ... -n %s: %q (%v), want %q", ns, got, err, want)
		}
	}
}

// A Topology in a namespace the controller does not watch is left alone:
// no finalizer, no status, no pods.
func TestUnwatchedNamespaceIgnored(t *testing.T) {
	h := newHarness(t, &Reconciler{PodTimeout: time.Minute})
	if err := h.c.Create(t.Context(), nsObject("other")); err != nil {
		t.Fatal(err)
	}
	topo := &v1alpha1.Topology{}
	topo.Name, topo.Namespace, topo.Spec = "outside", "other", v1alpha1.TopologySpec{Topology: "linear,2", Workers: 2}
	if err := h.c.Create(t.Context(), topo); err != nil {
		t.Fatal(err)
	}
	// A Topology in the watched namespace goes on meanwhile.
	inside := h.create("inside", v1alpha1.TopologySpec{Topology: "linear,2", Workers: 2})
	h.waitPods(inside)
	time.Sleep(2 * time.Second)
	if err := h.c.Get(t.Context(), client.ObjectKeyFromObject(topo), topo); err != nil {
		t.Fatal(err)
	}
	l := &corev1.PodList{}
	if err := h.c.List(t.Context(), l, client.InNamespace("other")); err != nil {
		t.Fatal(err)
	}
	if topo.Status.Phase != "" || len(topo.Finalizers) != 0 || len(l.Items) != 0 {
		t.Errorf("outside the watched namespaces: phase %q, finalizers %v, %d pods", topo.Status.Phase, topo.Finalizers, len(l.Items))
	}
}

func nsObject(name string) *corev1.Namespace {
	ns := &corev1.Namespace{}
	ns.Name = name
	return ns
}
