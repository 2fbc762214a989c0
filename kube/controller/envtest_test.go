package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hymn-net/hymn/cluster"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/kube/api/v1alpha1"
	"github.com/hymn-net/hymn/kube/config"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// K8SBin is where scripts/envtest-assets.sh (and scripts/k8s-check.sh)
// keep the built kube-apiserver and kubectl.
const K8SBin = "/var/lib/hymn-k8s/bin"

// TestMain fails the run when a process the tests started (etcd,
// kube-apiserver) outlives them.
func TestMain(m *testing.M) {
	code := m.Run()
	if left := children(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "processes left behind by the tests: %s\n", strings.Join(left, ", "))
		code = 1
	}
	os.Exit(code)
}

// children lists this process's child processes by pid and name.
func children() []string {
	me := fmt.Sprint(os.Getpid())
	var out []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == me && f[0] != "Z" {
			out = append(out, d.Name()+" "+s[strings.IndexByte(s, '(')+1:i])
		}
	}
	return out
}

// assets returns a KUBEBUILDER_ASSETS directory: the variable's, else one
// made of symlinks to the built kube-apiserver and kubectl and the
// machine's etcd; it skips (fails under HYMN_REQUIRE=all) without them.
func assets(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		for _, b := range []string{"etcd", "kube-apiserver", "kubectl"} {
			if _, err := os.Stat(filepath.Join(d, b)); err != nil {
				testenv.Skip(t, fmt.Sprintf("KUBEBUILDER_ASSETS=%s has no %s (scripts/envtest-assets.sh makes the directory)", d, b))
			}
		}
		return d
	}
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		testenv.Skip(t, "envtest needs etcd: apt-get install etcd-server (scripts/setup.sh)")
	}
	d := t.TempDir()
	for _, b := range []string{"kube-apiserver", "kubectl"} {
		p := filepath.Join(K8SBin, b)
		if _, err := os.Stat(p); err != nil {
			testenv.Skip(t, fmt.Sprintf("envtest needs %s: build it with scripts/envtest-assets.sh (about 5 minutes the first time)", p))
		}
		if err := os.Symlink(p, filepath.Join(d, b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(etcd, filepath.Join(d, "etcd")); err != nil {
		t.Fatal(err)
	}
	return d
}

func testScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// harness is a kube-apiserver with etcd, the CRD installed, and the
// controller running as a user holding only the ClusterRole of
// config/rbac.yaml, its workers in-process fakes.
type harness struct {
	t       *testing.T
	env     *envtest.Environment
	c       client.Client // admin
	ns      string
	workers *fakeWorkers
}

func newHarness(t *testing.T, r *Reconciler) *harness {
	t.Helper()
	dir := assets(t)
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	t0 := time.Now()
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest (assets %s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	t.Logf("envtest up in %v", time.Since(t0).Round(time.Millisecond))
	scheme := testScheme(t)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := config.Install(ctx, c, 30*time.Second, t.Logf); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, env: env, c: c, ns: "default", workers: &fakeWorkers{c: c, stops: map[string]int{}}}

	// The controller runs as a user with only the ClusterRole.
	user, err := env.AddUser(envtest.User{Name: "hymn-kube-controller"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "hymn-kube-controller"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "hymn-kube-controller"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "hymn-kube-controller"}},
	}
	if err := c.Create(ctx, crb); err != nil {
		t.Fatal(err)
	}
	log.SetLogger(zap.New(zap.WriteTo(testWriter{t}), zap.UseDevMode(true)))
	skip := true
	mgr, err := ctrl.NewManager(user.Config(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             crconfig.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Attach == nil {
		r.Attach = h.workers.attach
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return h
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// eventually polls cond every 100 ms until it holds or timeout passes.
func (h *harness) eventually(timeout time.Duration, what string, cond func() (bool, string)) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			h.t.Fatalf("after %v: %s; last state: %s", timeout, what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
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

func (h *harness) pods(topo *v1alpha1.Topology) []corev1.Pod {
	h.t.Helper()
	l := &corev1.PodList{}
	if err := h.c.List(h.t.Context(), l, client.InNamespace(h.ns), client.MatchingLabels{LabelTopology: string(topo.UID)}); err != nil {
		h.t.Fatal(err)
	}
	return l.Items
}

// run plays the kubelet: the pod runs, with an address.
func (h *harness) run(p *corev1.Pod, ip string) {
	h.t.Helper()
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = ip
	p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	if err := h.c.Status().Update(h.t.Context(), p); err != nil {
		h.t.Fatal(err)
	}
}

// fakeWorkers plays `hymn worker` in each pod: it reads the pod's part from
// its ConfigMap (as the real one reads /spec/spec.json) and answers the
// protocol.
type fakeWorkers struct {
	c     client.Client
	mu    sync.Mutex
	stops map[string]int // pod name -> stop commands or stdin ends seen
	// fatal, when set, is the error a worker reports instead of ready.
	fatal string
}

func (f *fakeWorkers) stopped(pod string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stops[pod]
}

func (f *fakeWorkers) attach(ctx context.Context, pod *corev1.Pod) (io.WriteCloser, io.ReadCloser, error) {
	cm := &corev1.ConfigMap{}
	if err := f.c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: pod.Spec.Volumes[0].ConfigMap.Name}, cm); err != nil {
		return nil, nil, err
	}
	spec, err := cluster.LoadSpec([]byte(cm.Data[specKey]))
	if err != nil {
		return nil, nil, err
	}
	var nodes []string
	for n, w := range spec.Assign {
		if w == spec.Worker {
			nodes = append(nodes, n)
		}
	}
	slices.Sort(nodes)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		defer outW.Close()
		enc := json.NewEncoder(outW)
		dec := json.NewDecoder(inR)
		for {
			var cmd cluster.Command
			if err := dec.Decode(&cmd); err != nil {
				f.mu.Lock()
				f.stops[pod.Name]++
				f.mu.Unlock()
				return
			}
			switch cmd.Cmd {
			case "ready":
				if f.fatal != "" {
					enc.Encode(cluster.Event{Event: "error", Worker: spec.Worker, Error: f.fatal, Fatal: true})
					continue
				}
				enc.Encode(cluster.Event{Event: "ready", Worker: spec.Worker, Address: pod.Status.PodIP, Nodes: nodes, Millis: 5})
			case "link":
				enc.Encode(cluster.Event{Event: "linked", ID: cmd.ID, Worker: spec.Worker, Millis: 1})
			case "stop":
				enc.Encode(cluster.Event{Event: "stopped", Worker: spec.Worker})
				f.mu.Lock()
				f.stops[pod.Name]++
				f.mu.Unlock()
				inR.Close()
				return
			}
		}
	}()
	return inW, outR, nil
}

// A Topology becomes worker pods owned by it, each with its part; once the
// pods run the workers are built and linked (Running, with the counts);
// deleting it stops every worker and the resource goes.
func TestTopologyLifecycle(t *testing.T) {
	h := newHarness(t, &Reconciler{PodTimeout: time.Minute})
	topo := h.create("line", v1alpha1.TopologySpec{Topology: "linear,4", Workers: 2})
	var pods []corev1.Pod
	h.eventually(20*time.Second, "two worker pods", func() (bool, string) {
		pods = h.pods(topo)
		return len(pods) == 2, fmt.Sprintf("%d pods", len(pods))
	})
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
		if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged || !c.Stdin || !c.StdinOnce {
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
	// kubectl get topologies shows the columns.
	out, errOut, err := h.env.ControlPlane.KubeCtl().Run("get", "topologies", "-n", h.ns)
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
	h.eventually(20*time.Second, "the topology to go", func() (bool, string) {
		_, err := h.get("line")
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	for _, p := range pods {
		if n := h.workers.stopped(p.Name); n == 0 {
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
	var pods []corev1.Pod
	h.eventually(20*time.Second, "two worker pods", func() (bool, string) {
		pods = h.pods(topo)
		return len(pods) == 2, fmt.Sprintf("%d pods", len(pods))
	})
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
	h.eventually(20*time.Second, "the pods removed", func() (bool, string) {
		n := len(h.pods(topo))
		return n == 0, fmt.Sprintf("%d pods", n)
	})
	t.Logf("Failed: %s", topo.Status.Message)
	if err := h.c.Delete(t.Context(), topo); err != nil {
		t.Fatal(err)
	}
	h.eventually(20*time.Second, "the topology to go", func() (bool, string) {
		_, err := h.get("fails")
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
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
	h.eventually(20*time.Second, "the pods removed", func() (bool, string) {
		n := len(h.pods(slow))
		return n == 0, fmt.Sprintf("%d pods", n)
	})
	t.Logf("Failed: %s", topo.Status.Message)

	h.workers.fatal = "building h1: operation not permitted"
	r.PodTimeout = time.Minute
	bad := h.create("fatal", v1alpha1.TopologySpec{Topology: "linear,2", Workers: 2})
	var pods []corev1.Pod
	h.eventually(20*time.Second, "two worker pods", func() (bool, string) {
		pods = h.pods(bad)
		return len(pods) == 2, fmt.Sprintf("%d pods", len(pods))
	})
	for i := range pods {
		h.run(&pods[i], fmt.Sprintf("10.244.0.%d", 20+i))
	}
	topo = h.waitPhase("fatal", v1alpha1.PhaseFailed, 20*time.Second)
	if !strings.Contains(topo.Status.Message, "operation not permitted") {
		t.Fatalf("message %q", topo.Status.Message)
	}
	h.eventually(20*time.Second, "the pods removed", func() (bool, string) {
		n := len(h.pods(bad))
		return n == 0, fmt.Sprintf("%d pods", n)
	})
	t.Logf("Failed: %s", topo.Status.Message)
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
	h.eventually(20*time.Second, "the topology to go", func() (bool, string) {
		_, err := h.get("early")
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
