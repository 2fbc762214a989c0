package controller

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/cluster"
	"github.com/hymn-net/hymn/kube/api/v1alpha1"
	"github.com/hymn-net/hymn/kube/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// harness is envtest with the controller running and fake workers.
type harness struct {
	*kubetest.Env
	t       *testing.T
	c       client.Client
	ns      string
	env     *envtest.Environment
	workers *kubetest.FakeWorkers
}

func newHarness(t *testing.T, r *Reconciler) *harness {
	t.Helper()
	e := kubetest.Start(t)
	h := &harness{Env: e, t: t, c: e.Client, ns: e.NS, env: e.Env, workers: &kubetest.FakeWorkers{C: e.Client}}
	if r.Attach == nil {
		r.Attach = h.workers.Attach
	}
	if r.Namespaces == nil {
		r.Namespaces = e.Watched
	}
	e.RunController(r)
	return h
}

func (h *harness) eventually(timeout time.Duration, what string, cond func() (bool, string)) {
	h.t.Helper()
	kubetest.Eventually(h.t, timeout, what, cond)
}

func (h *harness) create(name string, spec v1alpha1.TopologySpec) *v1alpha1.Topology {
	h.t.Helper()
	topo := &v1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}, Spec: spec}
	if err := h.c.Create(h.t.Context(), topo); err != nil {
		h.t.Fatal(err)
	}
	return topo
}

func (h *harness) get(name string) (*v1alpha1.Topology, error) {
	topo := &v1alpha1.Topology{}
	err := h.c.Get(h.t.Context(), client.ObjectKey{Namespace: h.ns, Name: name}, topo)
	return topo, err
}

// waitPhase waits for the phase and returns the Topology.
func (h *harness) waitPhase(name string, phase v1alpha1.Phase, timeout time.Duration) *v1alpha1.Topology {
	h.t.Helper()
	var topo *v1alpha1.Topology
	h.eventually(timeout, fmt.Sprintf("topology %s phase %s", name, phase), func() (bool, string) {
		var err error
		if topo, err = h.get(name); err != nil {
			return false, err.Error()
		}
		return topo.Status.Phase == phase, fmt.Sprintf("%+v", topo.Status)
	})
	return topo
}

func (h *harness) pods(topo *v1alpha1.Topology) []corev1.Pod { return h.Pods(string(topo.UID)) }

// waitPodsGone waits until none of topo's worker pods is left.
func (h *harness) waitPodsGone(topo *v1alpha1.Topology) {
	h.t.Helper()
	h.eventually(20*time.Second, "the pods removed", func() (bool, string) {
		n := len(h.pods(topo))
		return n == 0, fmt.Sprintf("%d pods", n)
	})
}

// waitGone waits until the Topology name no longer exists.
func (h *harness) waitGone(name string) {
	h.t.Helper()
	h.eventually(20*time.Second, "the topology to go", func() (bool, string) {
		_, err := h.get(name)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func (h *harness) run(p *corev1.Pod, ip string) { h.RunPod(p, ip) }

// waitPods waits for topo's two worker pods and returns them.
func (h *harness) waitPods(topo *v1alpha1.Topology) []corev1.Pod {
	h.t.Helper()
	var pods []corev1.Pod
	h.eventually(20*time.Second, "two worker pods", func() (bool, string) {
		pods = h.pods(topo)
		return len(pods) == 2, fmt.Sprintf("%d pods", len(pods))
	})
	return pods
}

// runPods waits for topo's two worker pods and runs them, as the kubelet
// would, at addresses prefix+first and prefix+first+1.
func (h *harness) runPods(topo *v1alpha1.Topology, prefix string, first int) []corev1.Pod {
	h.t.Helper()
	pods := h.waitPods(topo)
	for i := range pods {
		h.run(&pods[i], fmt.Sprintf("%s%d", prefix, first+i))
	}
	return pods
}

// A Topology becomes worker pods owned by it, each with its part; once the
// pods run the workers are built and linked (Running, with the counts);
// deleting it stops every worker and the resource goes.
func TestTopologyLifecycle(t *testing.T) {
	h := newHarness(t, &Reconciler{PodTimeout: time.Minute})
	topo := h.create("line", v1alpha1.TopologySpec{Topology: "linear,4", Workers: 2})
	pods := h.waitPods(topo)
	topo = h.waitPhase("line", v1alpha1.PhaseBuilding, 10*time.Second)
	if topo.Status.WorkersReady != 0 || !slices.Contains(topo.Finalizers, Finalizer) {
		t.Fatalf("building: %+v, finalizers %v", topo.Status, topo.Finalizers)
	}
	for i := range pods {
		p := &pods[i]
		ref := metav1.GetControllerOf(p)
		if ref == nil || ref.Kind != "Topology" || ref.UID != topo.UID || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			t.Fatalf("pod %s: controller reference %+v", p.Name, ref)
		}
		c := p.Spec.Containers[0]
		if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || *c.SecurityContext.Privileged || !c.Stdin || !c.StdinOnce {
			t.Fatalf("pod %s: container %+v", p.Name, c)
		}
		cm := &corev1.ConfigMap{}
		if err := h.c.Get(t.Context(), client.ObjectKey{Namespace: h.ns, Name: p.Name}, cm); err != nil {
			t.Fatal(err)
		}
		if metav1.GetControllerOf(cm) == nil || metav1.GetControllerOf(cm).UID != topo.UID {
			t.Fatalf("configmap %s not owned by the topology", cm.Name)
		}
		spec, err := cluster.LoadSpec([]byte(cm.Data[specKey]))
		if err != nil {
			t.Fatal(err)
		}
		if want := p.Labels[LabelWorker]; fmt.Sprint(spec.Worker) != want || spec.Workers != 2 || spec.Topology != "linear,4" || len(spec.Assign) != 8 {
			t.Fatalf("pod %s's part: worker %d of %d, topology %q, %d nodes assigned", p.Name, spec.Worker, spec.Workers, spec.Topology, len(spec.Assign))
		}
	}
	// kubectl get topologies shows the columns (as an admin user of its
	// own: the control plane's default user is deprecated).
	admin, err := h.env.AddUser(envtest.User{Name: "kubectl", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubectl, err := admin.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, err := kubectl.Run("get", "topologies", "-n", h.ns)
	if err != nil {
		b, _ := io.ReadAll(errOut)
		t.Fatalf("kubectl get topologies: %v: %s", err, b)
	}
	b, _ := io.ReadAll(out)
	if f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0]); !slices.Equal(f, []string{"NAME", "PHASE", "WORKERS", "NODES", "LINKS", "AGE"}) {
		t.Fatalf("kubectl get topologies:\n%s", b)
	}
	t.Logf("kubectl get topologies:\n%s", b)

	for i := range pods {
		h.run(&pods[i], fmt.Sprintf("10.244.0.%d", 10+i))
	}
	topo = h.waitPhase("line", v1alpha1.PhaseRunning, 20*time.Second)
	if s := topo.Status; s.WorkersReady != 2 || s.NodesReady != 8 || s.LinksUp != 1 {
		t.Fatalf("running: %+v", s)
	}
	for _, typ := range []string{v1alpha1.ConditionWorkersReady, v1alpha1.ConditionLinked, v1alpha1.ConditionReady} {
		if c := findCond(topo, typ); c == nil || c.Status != metav1.ConditionTrue {
			t.Fatalf("condition %s: %+v", typ, c)
		}
	}
	t.Logf("running: %s", topo.Status.Message)

	if err := h.c.Delete(t.Context(), topo); err != nil {
		t.Fatal(err)
	}
	h.waitGone("line")
	for _, p := range pods {
		if n := h.workers.Stopped(p.Name); n == 0 {
			t.Errorf("worker %s was never stopped", p.Name)
		}
	}
}

func findCond(t *v1alpha1.Topology, typ string) *metav1.Condition {
	for i := range t.Status.Conditions {
		if t.Status.Conditions[i].Type == typ {
			return &t.Status.Conditions[i]
		}
	}
	return nil
}

// Bad specs: the API server refuses what the schema can judge; the
// controller fails the rest with the parser's message and makes no pods.
func TestBadTopologies(t *testing.T) {
	h := newHarness(t, &Reconciler{PodTimeout: time.Minute})
	refused := []struct {
		name string
		spec v1alpha1.TopologySpec
		want string
	}{
		{"neither", v1alpha1.TopologySpec{Workers: 2}, "exactly one of spec.topology"},
		{"both", v1alpha1.TopologySpec{Topology: "linear,2", File: "nodes: []", Workers: 2}, "exactly one of spec.topology"},
		{"workers-0", v1alpha1.TopologySpec{Topology: "linear,2", Workers: -1}, "spec.workers"},
		{"workers-65", v1alpha1.TopologySpec{Topology: "linear,2", Workers: 65}, "spec.workers"},
		{"pull", v1alpha1.TopologySpec{Topology: "linear,2", ImagePullPolicy: "Sometimes"}, "imagePullPolicy"},
	}
	for _, c := range refused {
		topo := &v1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: h.ns}, Spec: c.spec}
		err := h.c.Create(t.Context(), topo)
		if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: created, or not the error wanted (%q): %v", c.name, c.want, err)
		}
	}
	failed := []struct {
		name string
		spec v1alpha1.TopologySpec
		want string
	}{
		{"unknown", v1alpha1.TopologySpec{Topology: "nosuch,4"}, "nosuch"},
		{"badarg", v1alpha1.TopologySpec{Topology: "linear,x"}, "linear"},
		{"badfile", v1alpha1.TopologySpec{File: "nodes: [unclosed"}, "spec.file"},
		{"ipbase", v1alpha1.TopologySpec{Topology: "linear,2", IPBase: "10.0.0.0/99"}, "10.0.0.0/99"},
		{"toomany", v1alpha1.TopologySpec{Topology: "single,1", Workers: 8}, ""},
	}
	for _, c := range failed {
		h.create(c.name, c.spec)
	}
	for _, c := range failed {
		topo := h.waitPhase(c.name, v1alpha1.PhaseFailed, 15*time.Second)
		if !strings.Contains(topo.Status.Message, c.want) || topo.Status.Message == "" {
			t.Errorf("%s: message %q, want it to name %q", c.name, topo.Status.Message, c.want)
		}
		if n := len(h.pods(topo)); n != 0 {
			t.Errorf("%s: %d pods", c.name, n)
		}
		t.Logf("%s: Failed: %s", c.name, topo.Status.Message)
	}
	// The spec is immutable.
	topo, err := h.get("unknown")
	if err != nil {
		t.Fatal(err)
	}
	topo.Spec.Topology = "linear,2"
	if err := h.c.Update(t.Context(), topo); err == nil || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("changing the spec: %v", err)
	}
}

// A worker pod that fails fails the Topology, naming the pod, and its pods
// go; deleting the failed Topology then removes it.
func TestWorkerPodFails(t *testing.T) {
	h := newHarness(t, &Reconciler{PodTimeout: time.Minute})
	topo := h.create("fails", v1alpha1.TopologySpec{Topology: "linear,4", Workers: 2})
	pods := h.waitPods(topo)
	h.run(&pods[0], "10.244.0.10")
	p := &pods[1]
	p.Status.Phase = corev1.PodFailed
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "worker", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: "worker: needs root"}}}}
	if err := h.c.Status().Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	topo = h.waitPhase("fails", v1alpha1.PhaseFailed, 20*time.Second)
	if !strings.Contains(topo.Status.Message, p.Name) || !strings.Contains(topo.Status.Message, "needs root") {
		t.Fatalf("message %q does not name pod %s and its error", topo.Status.Message, p.Name)
	}
	h.waitPodsGone(topo)
	t.Logf("Failed: %q", topo.Status.Message)
	if err := h.c.Delete(t.Context(), topo); err != nil {
		t.Fatal(err)
	}
	h.waitGone("fails")
}

// A worker pod that never runs fails the Topology after PodTimeout, and a
// worker that reports a fatal error while building fails it with that
// error; the pods go in both cases.
func TestWorkerNeverReadyOrFatal(t *testing.T) {
	r := &Reconciler{PodTimeout: 3 * time.Second}
	h := newHarness(t, r)
	slow := h.create("slow", v1alpha1.TopologySpec{Topology: "linear,2", Workers: 2})
	topo := h.waitPhase("slow", v1alpha1.PhaseFailed, 20*time.Second)
	if !strings.Contains(topo.Status.Message, "slow-w") || !strings.Contains(topo.Status.Message, "did not run within 3s") {
		t.Fatalf("message %q", topo.Status.Message)
	}
	h.waitPodsGone(slow)
	t.Logf("Failed: %q", topo.Status.Message)

	h.workers.SetFatal("building h1: operation not permitted")
	r.PodTimeout = time.Minute
	bad := h.create("fatal", v1alpha1.TopologySpec{Topology: "linear,2", Workers: 2})
	h.runPods(bad, "10.244.0.", 20)
	topo = h.waitPhase("fatal", v1alpha1.PhaseFailed, 20*time.Second)
	if !strings.Contains(topo.Status.Message, "operation not permitted") {
		t.Fatalf("message %q", topo.Status.Message)
	}
	h.waitPodsGone(bad)
	t.Logf("Failed: %q", topo.Status.Message)
}

// Deleting a Topology that is still building (no coordinator yet) removes
// it at once.
func TestDeleteWhileBuilding(t *testing.T) {
	h := newHarness(t, &Reconciler{PodTimeout: time.Minute})
	topo := h.create("early", v1alpha1.TopologySpec{Topology: "linear,3", Workers: 3})
	h.waitPhase("early", v1alpha1.PhaseBuilding, 20*time.Second)
	if err := h.c.Delete(t.Context(), topo); err != nil {
		t.Fatal(err)
	}
	h.waitGone("early")
}

// With the real attacher (client-go remotecommand through pods/attach, as
// the controller's ClusterRole allows it) and no kubelet behind the API
// server, the attach fails: the Topology fails saying so, naming the pod,
// and its pods go.
func TestRealAttachWithoutKubelet(t *testing.T) {
	e := kubetest.Start(t)
	h := &harness{Env: e, t: t, c: e.Client, ns: e.NS, env: e.Env}
	e.RunController(&Reconciler{PodTimeout: time.Minute, LinkTimeout: 20 * time.Second, Namespaces: e.Watched})
	topo := h.create("attach", v1alpha1.TopologySpec{Topology: "linear,2", Workers: 2})
	h.runPods(topo, "10.244.0.", 30)
	topo = h.waitPhase("attach", v1alpha1.PhaseFailed, 40*time.Second)
	if !strings.Contains(topo.Status.Message, "pod attach-w") || !strings.Contains(topo.Status.Message, "does not have a host assigned") {
		t.Fatalf("message %q", topo.Status.Message)
	}
	h.waitPodsGone(topo)
	t.Logf("Failed: %q", topo.Status.Message)
}

// waitNewPod waits for worker pod name to exist again with another UID
// than old, and plays the kubelet: it runs with ip.
func (h *harness) waitNewPod(topo *v1alpha1.Topology, name string, old types.UID, ip string) *corev1.Pod {
	h.t.Helper()
	var p *corev1.Pod
	h.eventually(20*time.Second, "a new pod "+name, func() (bool, string) {
		for _, q := range h.pods(topo) {
			if q.Name == name && q.UID != old && q.DeletionTimestamp.IsZero() {
				p = &q
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d pods", len(h.pods(topo)))
	})
	h.run(p, ip)
	return p
}

// A worker pod of a running Topology that is deleted, or fails, is
// replaced: a new pod of the same name, its part built again and its cut
// links relinked (Restoring, then Running with status.restarts counted
// and the Restored condition saying what happened); a loss beyond the
// restart budget fails the Topology naming the pod.
func TestWorkerPodRestored(t *testing.T) {
	h := newHarness(t, &Reconciler{PodTimeout: time.Minute, MaxRestarts: 2})
	topo := h.create("held", v1alpha1.TopologySpec{Topology: "linear,4", Workers: 2})
	h.runPods(topo, "10.244.0.", 10)
	topo = h.waitPhase("held", v1alpha1.PhaseRunning, 20*time.Second)
	byName := map[string]corev1.Pod{}
	for _, p := range h.pods(topo) {
		byName[p.Name] = p
	}

	// Deleted.
	w1 := byName["held-w1"]
	if err := h.c.Delete(t.Context(), &w1); err != nil {
		t.Fatal(err)
	}
	h.waitPhase("held", v1alpha1.PhaseRestoring, 20*time.Second)
	h.waitNewPod(topo, "held-w1", w1.UID, "10.244.0.21")
	topo = h.waitRestarts("held", 1)
	c := findCond(topo, v1alpha1.ConditionRestored)
	if c == nil || c.Status != metav1.ConditionTrue || c.Message != "worker 1 restored (pod held-w1 was deleted)" {
		t.Fatalf("restored condition %+v", c)
	}
	if s := topo.Status; s.WorkersReady != 2 || s.NodesReady != 8 || s.LinksUp != 1 || !strings.Contains(s.Message, "worker 1 restored") {
		t.Fatalf("running again: %+v", s)
	}
	if h.workers.Stopped("held-w1") == 0 {
		t.Error("the lost worker's stream was never stopped")
	}
	if r := h.workers.Relinks("held-w0"); !slices.Equal(r, []string{"1@10.244.0.21"}) {
		t.Errorf("worker 0 was told to relink %v, want worker 1 at its new pod's address", r)
	}
	t.Logf("restored: %s", topo.Status.Message)
	h.eventually(20*time.Second, "the WorkerLost and WorkerRestored events", func() (bool, string) {
		l := &eventsv1.EventList{}
		if err := h.c.List(t.Context(), l, client.InNamespace(h.ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range l.Items {
			if e.Regarding.UID == topo.UID {
				seen = append(seen, e.Type+"/"+e.Reason+": "+e.Note)
			}
		}
		return slices.Contains(seen, "Normal/WorkerRestored: worker 1 restored (pod held-w1 was deleted)") &&
			slices.Contains(seen, "Warning/WorkerLost: worker 1 lost (pod held-w1 was deleted): restoring it"), fmt.Sprint(seen)
	})

	// Failed (its container exited): the pod is deleted, then replaced.
	w0 := byName["held-w0"]
	w0.Status.Phase = corev1.PodFailed
	w0.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "worker", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}}
	if err := h.c.Status().Update(t.Context(), &w0); err != nil {
		t.Fatal(err)
	}
	h.waitNewPod(topo, "held-w0", w0.UID, "10.244.0.20")
	topo = h.waitRestarts("held", 2)
	if c := findCond(topo, v1alpha1.ConditionRestored); c == nil || !strings.Contains(c.Message, "worker 0 restored (pod held-w0 failed: container worker exited with code 137 (OOMKilled))") {
		t.Fatalf("restored condition %+v", c)
	}
	t.Logf("restored: %s", topo.Status.Message)

	// Beyond the budget (2 within the window): Failed, naming the pod.
	for _, p := range h.pods(topo) {
		if p.Name == "held-w1" {
			if err := h.c.Delete(t.Context(), &p); err != nil {
				t.Fatal(err)
			}
		}
	}
	topo = h.waitPhase("held", v1alpha1.PhaseFailed, 20*time.Second)
	if m := topo.Status.Message; !strings.Contains(m, "worker 1 lost: pod held-w1 was deleted") || !strings.Contains(m, "restored 2 times within 10m0s") {
		t.Fatalf("message %q", m)
	}
	h.waitPodsGone(topo)
	t.Logf("Failed: %q", topo.Status.Message)
}

// A worker whose part fails to build again fails the Topology with its
// error, naming the worker and why it was lost.
func TestWorkerRestoreFails(t *testing.T) {
	h := newHarness(t, &Reconciler{PodTimeout: time.Minute})
	topo := h.create("again", v1alpha1.TopologySpec{Topology: "linear,4", Workers: 2})
	pods := h.runPods(topo, "10.244.0.", 40)
	topo = h.waitPhase("again", v1alpha1.PhaseRunning, 20*time.Second)
	h.workers.SetFatal("building h3: operation not permitted")
	old := pods[1]
	if err := h.c.Delete(t.Context(), &old); err != nil {
		t.Fatal(err)
	}
	h.waitNewPod(topo, old.Name, old.UID, "10.244.0.51")
	topo = h.waitPhase("again", v1alpha1.PhaseFailed, 20*time.Second)
	want := fmt.Sprintf("worker %s could not be restored (pod %s was deleted)", old.Labels[LabelWorker], old.Name)
	if m := topo.Status.Message; !strings.Contains(m, want) || !strings.Contains(m, "operation not permitted") {
		t.Fatalf("message %q, want %q and the worker's error", m, want)
	}
	h.waitPodsGone(topo)
	t.Logf("Failed: %q", topo.Status.Message)
}

// With restoring off (MaxRestarts < 0) a lost worker pod fails the
// Topology as before.
func TestWorkerRestoreOff(t *testing.T) {
	h := newHarness(t, &Reconciler{PodTimeout: time.Minute, MaxRestarts: -1})
	topo := h.create("off", v1alpha1.TopologySpec{Topology: "linear,2", Workers: 2})
	pods := h.runPods(topo, "10.244.0.", 60)
	h.waitPhase("off", v1alpha1.PhaseRunning, 20*time.Second)
	if err := h.c.Delete(t.Context(), &pods[0]); err != nil {
		t.Fatal(err)
	}
	topo = h.waitPhase("off", v1alpha1.PhaseFailed, 20*time.Second)
	if m := topo.Status.Message; !strings.Contains(m, "pod "+pods[0].Name+" was deleted") || !strings.Contains(m, "restoring workers is off") {
		t.Fatalf("message %q", m)
	}
}

// waitRestarts waits until the Topology runs again with that many
// restarts.
func (h *harness) waitRestarts(name string, n int32) *v1alpha1.Topology {
	h.t.Helper()
	var topo *v1alpha1.Topology
	h.eventually(20*time.Second, fmt.Sprintf("topology %s Running with %d restarts", name, n), func() (bool, string) {
		var err error
		if topo, err = h.get(name); err != nil {
			return false, err.Error()
		}
		return topo.Status.Phase == v1alpha1.PhaseRunning && topo.Status.Restarts == n, fmt.Sprintf("%+v", topo.Status)
	})
	return topo
}
