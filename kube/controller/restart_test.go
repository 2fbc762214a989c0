package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/kube/api/v1alpha1"
	"github.com/hymn-net/hymn/kube/internal/kubetest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A controller that restarts cannot resume its workers' attach streams
// (a worker tears down when its stdin ends): a Topology it finds Running
// without them goes to Failed, saying why, and its pods and ConfigMaps are
// removed. The restarted controller is a second Reconciler with no
// sessions, given the Topology as a new process would be.
func TestControllerRestartFailsRunning(t *testing.T) {
	h := newHarness(t, &Reconciler{PodTimeout: time.Minute})
	topo := h.create("survivor", v1alpha1.TopologySpec{Topology: "linear,4", Workers: 2})
	h.runPods(topo, "10.244.1.", 10)
	topo = h.waitPhase("survivor", v1alpha1.PhaseRunning, 20*time.Second)

	restarted := &Reconciler{Client: h.c, APIReader: h.c, Scheme: kubetest.Scheme(t), Attach: h.workers.Attach, Namespaces: h.Watched}
	if _, err := restarted.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(topo)}); err != nil {
		t.Fatal(err)
	}
	topo = h.waitPhase("survivor", v1alpha1.PhaseFailed, 20*time.Second)
	if m := topo.Status.Message; !strings.Contains(m, "the controller lost its streams to the workers (it restarted); delete and recreate the Topology") {
		t.Fatalf("message %q", m)
	}
	h.waitPodsGone(topo)
	h.eventually(20*time.Second, "the ConfigMaps removed", func() (bool, string) {
		n := len(h.configMaps(topo))
		return n == 0, fmt.Sprintf("%d ConfigMaps", n)
	})
	t.Logf("Failed: %q", topo.Status.Message)
}
