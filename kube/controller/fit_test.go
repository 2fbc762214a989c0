package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/kube/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// node creates a Node (deleted when the test ends) that takes pods, with
// that much allocatable.
func (h *harness) node(name, memory, cpu string, pods int64) *corev1.Node {
	h.t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := h.c.Create(h.t.Context(), n); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		// t.Context is done by now.
		if err := h.c.Delete(context.Background(), n); err != nil {
			h.t.Errorf("deleting node %s: %v", name, err)
		}
	})
	// The API server taints a new Node not-ready (admission plugin
	// TaintNodesByCondition) until its kubelet, absent here, says
	// otherwise.
	if len(n.Spec.Taints) > 0 {
		n.Spec.Taints = nil
		if err := h.c.Update(h.t.Context(), n); err != nil {
			h.t.Fatal(err)
		}
	}
	h.setNode(n, memory, cpu, pods)
	return n
}

// setNode sets a Node's capacity and allocatable, as its kubelet would.
func (h *harness) setNode(n *corev1.Node, memory, cpu string, pods int64) {
	h.t.Helper()
	room := corev1.ResourceList{
		corev1.ResourceMemory: resource.MustParse(memory),
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourcePods:   *resource.NewQuantity(pods, resource.DecimalSI),
	}
	n.Status.Capacity, n.Status.Allocatable = room, room
	if err := h.c.Status().Update(h.t.Context(), n); err != nil {
		h.t.Fatal(err)
	}
}

// configMaps lists a Topology's worker ConfigMaps.
func (h *harness) configMaps(topo *v1alpha1.Topology) []corev1.ConfigMap {
	h.t.Helper()
	l := &corev1.ConfigMapList{}
	if err := h.c.List(h.t.Context(), l, client.InNamespace(h.ns), client.MatchingLabels{LabelTopology: string(topo.UID)}); err != nil {
		h.t.Fatal(err)
	}
	return l.Items
}

// waitFailedTooLarge waits for a Topology to fail with a message holding
// want, and checks that it never got a pod or ConfigMap.
func (h *harness) waitFailedTooLarge(name string, want ...string) {
	h.t.Helper()
	topo := h.waitPhase(name, v1alpha1.PhaseFailed, 15*time.Second)
	for _, w := range append([]string{"too large for the cluster: "}, want...) {
		if !strings.Contains(topo.Status.Message, w) {
			h.t.Errorf("%s: message %q, want it to hold %q", name, topo.Status.Message, w)
		}
	}
	if p, cm := len(h.pods(topo)), len(h.configMaps(topo)); p != 0 || cm != 0 {
		h.t.Errorf("%s: %d pods, %d ConfigMaps", name, p, cm)
	}
	h.t.Logf("%s: Failed: %s", name, topo.Status.Message)
}

// A Topology too large for the cluster's nodes fails at once, saying by
// how much, and makes no pod: a part beyond the largest node, the parts
// beyond all the nodes' memory or cpu, more workers than pods allowed.
// Cordoned and tainted nodes do not count. Once a node is big enough the
// Topology runs as before, its pods requesting what their parts need.
func TestTopologyTooLargeForCluster(t *testing.T) {
	h := newHarness(t, &Reconciler{PodTimeout: time.Minute})
	small := h.node("small", "128Mi", "2", 110)
	big := h.node("cordoned", "64Gi", "64", 110)
	big.Spec.Unschedulable = true
	if err := h.c.Update(t.Context(), big); err != nil {
		t.Fatal(err)
	}
	tainted := h.node("control-plane", "64Gi", "64", 110)
	tainted.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
	if err := h.c.Update(t.Context(), tainted); err != nil {
		t.Fatal(err)
	}

	// linear,100 is 200 nodes: 100 a part, 164 MiB with the worker's 64.
	h.create("part", v1alpha1.TopologySpec{Topology: "linear,100", Workers: 2})
	h.waitFailedTooLarge("part", "part needs 164 MiB memory (100 nodes), the largest node (small) has 128 MiB allocatable")

	h.setNode(small, "300Mi", "2", 110)
	h.create("memory", v1alpha1.TopologySpec{Topology: "linear,100", Workers: 2})
	h.waitFailedTooLarge("memory", "the 2 workers' parts need 328 MiB memory in all (200 nodes), the cluster's 1 schedulable node has 300 MiB allocatable in all")

	h.setNode(small, "8Gi", "150m", 110)
	h.create("cpu", v1alpha1.TopologySpec{Topology: "linear,4", Workers: 2})
	h.waitFailedTooLarge("cpu", "the 2 workers' parts need 200m cpu in all (100m a worker), the cluster's 1 schedulable node has 150m allocatable in all")

	h.setNode(small, "8Gi", "8", 1)
	h.create("pods", v1alpha1.TopologySpec{Topology: "linear,4", Workers: 2})
	h.waitFailedTooLarge("pods", "2 worker pods, and the cluster's 1 schedulable node has room for 1 pod in all")

	// Big enough: the pods are made, requesting their parts' needs, and
	// run.
	h.setNode(small, "8Gi", "8", 110)
	topo := h.create("fits", v1alpha1.TopologySpec{Topology: "linear,4", Workers: 2})
	pods := h.waitPods(topo)
	for i := range pods {
		req := pods[i].Spec.Containers[0].Resources.Requests
		if m, c := req[corev1.ResourceMemory], req[corev1.ResourceCPU]; m.String() != "68Mi" || c.String() != "100m" {
			t.Errorf("pod %s requests %v, want 68Mi memory (64 for the worker, 4 nodes) and 100m cpu", pods[i].Name, req)
		}
		h.run(&pods[i], fmt.Sprintf("10.244.0.%d", 10+i))
	}
	h.waitPhase("fits", v1alpha1.PhaseRunning, 20*time.Second)
}

// unschedulable plays the scheduler finding no node for a pod.
func (h *harness) unschedulable(p *corev1.Pod, msg string) {
	h.t.Helper()
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: msg, LastTransitionTime: metav1.Now()}}
	if err := h.c.Status().Update(h.t.Context(), p); err != nil {
		h.t.Fatal(err)
	}
}

// A worker pod the scheduler finds no node for fails the Topology at once
// (not after PodTimeout), quoting the scheduler, and the pods go; so does
// the new pod of a worker being restored.
func TestWorkerPodUnschedulable(t *testing.T) {
	h := newHarness(t, &Reconciler{PodTimeout: time.Minute})
	const verdict = "0/1 nodes are available: 1 Insufficient memory. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
	topo := h.create("nowhere", v1alpha1.TopologySpec{Topology: "linear,4", Workers: 2})
	pods := h.waitPods(topo)
	h.run(&pods[0], "10.244.0.10")
	t0 := time.Now()
	h.unschedulable(&pods[1], verdict)
	topo = h.waitPhase("nowhere", v1alpha1.PhaseFailed, 10*time.Second)
	want := fmt.Sprintf("worker pod %s cannot be scheduled: %s (it requests 68 MiB memory and 100m cpu)", pods[1].Name, verdict)
	if topo.Status.Message != want {
		t.Errorf("message %q, want %q", topo.Status.Message, want)
	}
	h.waitPodsGone(topo)
	if n := len(h.configMaps(topo)); n != 0 {
		t.Errorf("%d ConfigMaps left", n)
	}
	t.Logf("Failed in %v: %s", time.Since(t0).Round(time.Millisecond), topo.Status.Message)

	// Restoring: the lost worker's new pod finds no node.
	topo = h.create("restore", v1alpha1.TopologySpec{Topology: "linear,4", Workers: 2})
	pods = h.runPods(topo, "10.244.0.", 20)
	h.waitPhase("restore", v1alpha1.PhaseRunning, 20*time.Second)
	old := pods[1]
	if err := h.c.Delete(t.Context(), &old); err != nil {
		t.Fatal(err)
	}
	var fresh *corev1.Pod
	h.eventually(20*time.Second, "a new pod "+old.Name, func() (bool, string) {
		for _, q := range h.pods(topo) {
			if q.Name == old.Name && q.UID != old.UID {
				fresh = &q
				return true, ""
			}
		}
		return false, "not yet"
	})
	h.unschedulable(fresh, verdict)
	topo = h.waitPhase("restore", v1alpha1.PhaseFailed, 10*time.Second)
	want = fmt.Sprintf("worker %s could not be restored (pod %s was deleted): its new pod %s cannot be scheduled: %s", old.Labels[LabelWorker], old.Name, old.Name, verdict)
	if !strings.HasPrefix(topo.Status.Message, want) {
		t.Errorf("message %q, want it to start with %q", topo.Status.Message, want)
	}
	h.waitPodsGone(topo)
	t.Logf("Failed: %s", topo.Status.Message)
}
