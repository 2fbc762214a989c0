package kubetest

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
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

// Main runs the tests and fails the run when a process they started (etcd,
// kube-apiserver) outlives them.
//
// envtest claims its random ports with lock files under the user's cache
// directory (kubebuilder-envtest/port-*) and never removes them: the tests
// point XDG_CACHE_HOME at a directory of their own, removed at the end.
func Main(m *testing.M) {
	cache, err := os.MkdirTemp("", "hymn-kube-envtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.Setenv("XDG_CACHE_HOME", cache); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = os.RemoveAll(cache)
		os.Exit(1)
	}
	code := m.Run()
	if err := os.RemoveAll(cache); err != nil {
		fmt.Fprintf(os.Stderr, "removing the envtest cache: %v\n", err)
		code = 1
	}
	if left := Children(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "processes left behind by the tests: %s\n", strings.Join(left, ", "))
		code = 1
	}
	os.Exit(code)
}

// Children lists this process's live child processes, "pid name".
func Children() []string {
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

// Assets returns a KUBEBUILDER_ASSETS directory: the variable's, else one
// of symlinks to the built kube-apiserver and kubectl and the machine's
// etcd. It skips the test (fails it under HYMN_REQUIRE=all) without them.
func Assets(t *testing.T) string {
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

// Scheme has the built-in types and Topology.
func Scheme(t testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// Env is a running envtest with the CRD installed.
type Env struct {
	T      *testing.T
	Env    *envtest.Environment
	Config *rest.Config  // admin
	Client client.Client // admin
	NS     string
	// Watched are the namespaces the controller under test watches
	// (NS first); Start makes the others.
	Watched []string
}

// ControllerUser is the identity the controller under test runs as.
const ControllerUser = "hymn-kube-controller"

// Start starts kube-apiserver and etcd (stopped in t.Cleanup), creates
// the watched namespaces besides "default" (the controller under test
// watches "default" without any) and installs the CRD and the
// controller's roles in them with config.Install.
func Start(t *testing.T, watched ...string) *Env {
	t.Helper()
	e := StartBare(t)
	if len(watched) > 0 {
		e.Watched, e.NS = watched, watched[0]
	}
	for _, ns := range e.Watched {
		if ns == "default" {
			continue
		}
		if err := e.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := config.Install(t.Context(), e.Client, config.Access{Namespaces: e.Watched}, 30*time.Second, t.Logf); err != nil {
		t.Fatal(err)
	}
	return e
}

// StartBare is Start without installing anything.
func StartBare(t *testing.T) *Env {
	t.Helper()
	dir := Assets(t)
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
	c, err := client.New(cfg, client.Options{Scheme: Scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	return &Env{T: t, Env: env, Config: cfg, Client: c, NS: "default", Watched: []string{"default"}}
}

// Reconciler is what RunController needs of the controller (an interface,
// so this package does not import it).
type Reconciler interface {
	SetupWithManager(ctrl.Manager) error
}

// RunController runs a manager with r as a user holding only the
// controller's RBAC (config.Access for e.Watched, bound to it here), its
// cache watching only e.Watched, until the test ends.
func (e *Env) RunController(r Reconciler) {
	t := e.T
	t.Helper()
	user, err := e.Env.AddUser(envtest.User{Name: ControllerUser}, nil)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := config.Access{Namespaces: e.Watched, Subject: &rbacv1.Subject{Kind: rbacv1.UserKind, Name: ControllerUser}}.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if err := config.Apply(t.Context(), e.Client, objs, t.Logf); err != nil {
		t.Fatal(err)
	}
	logTo(t)
	skip := true
	namespaces := map[string]cache.Config{}
	for _, ns := range e.Watched {
		namespaces[ns] = cache.Config{}
	}
	mgr, err := ctrl.NewManager(user.Config(), ctrl.Options{
		Cache:                  cache.Options{DefaultNamespaces: namespaces},
		Scheme:                 Scheme(t),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             crconfig.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// Kubeconfig writes a kubeconfig file for the admin user and returns its
// path.
func (e *Env) Kubeconfig() string {
	e.T.Helper()
	return e.KubeconfigFor(e.Config)
}

// User adds a user with no permissions at all (bind some to it) and
// returns its kubeconfig file.
func (e *Env) User(name string) string {
	e.T.Helper()
	u, err := e.Env.AddUser(envtest.User{Name: name}, nil)
	if err != nil {
		e.T.Fatal(err)
	}
	return e.KubeconfigFor(u.Config())
}

// KubeconfigFor writes a kubeconfig file for a REST config.
func (e *Env) KubeconfigFor(c *rest.Config) string {
	e.T.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertData, ClientKeyData: c.KeyData, Token: c.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(e.T.TempDir(), "kubeconfig")
	e.T.Logf("kubeconfig %s for %s", path, c.Host)
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		e.T.Fatal(err)
	}
	return path
}

// The controllers' log goes to the test running one (t.Log: shown when it
// fails or under -v). controller-runtime's logger is global, so it is set
// once and forwards to the current test; a line logged after that test
// ended is dropped (t.Log would panic).
var (
	logOnce sync.Once
	logMu   sync.Mutex
	logT    *testing.T
)

func logTo(t *testing.T) {
	logOnce.Do(func() { log.SetLogger(zap.New(zap.WriteTo(testWriter{}), zap.UseDevMode(true))) })
	logMu.Lock()
	logT = t
	logMu.Unlock()
	t.Cleanup(func() {
		logMu.Lock()
		if logT == t {
			logT = nil
		}
		logMu.Unlock()
	})
}

type testWriter struct{}

func (testWriter) Write(p []byte) (int, error) {
	logMu.Lock()
	defer logMu.Unlock()
	if logT != nil {
		logT.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// Eventually polls cond every 100 ms until it holds, failing the test
// after timeout with the last state cond described.
func Eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s; last state: %s", timeout, what, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Pods lists a Topology's worker pods.
func (e *Env) Pods(uid string) []corev1.Pod {
	e.T.Helper()
	l := &corev1.PodList{}
	if err := e.Client.List(e.T.Context(), l, client.InNamespace(e.NS), client.MatchingLabels{"hymn.hymn-net.io/topology-uid": uid}); err != nil {
		e.T.Fatal(err)
	}
	return l.Items
}

// RunPod plays the kubelet: the pod runs, with an address.
func (e *Env) RunPod(p *corev1.Pod, ip string) {
	e.T.Helper()
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = ip
	p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	if err := e.Client.Status().Update(e.T.Context(), p); err != nil {
		e.T.Fatal(err)
	}
}

// FakeWorkers plays `hymn worker` in each pod: it reads the pod's part
// from its ConfigMap (as the real one reads /spec/spec.json) and answers
// the protocol.
type FakeWorkers struct {
	C     client.Client
	mu    sync.Mutex
	stops map[string]int // pod name -> stop commands or stdin ends seen
	// relinks are the relink commands each pod's worker got, as
	// "worker@address".
	relinks map[string][]string
	// Fatal, when set, is the error a worker reports instead of ready
	// (set it with SetFatal while a controller runs).
	Fatal string
}

// SetFatal sets Fatal for the workers attached from now on.
func (f *FakeWorkers) SetFatal(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Fatal = msg
}

// Stopped counts the stops (a stop command or the end of stdin) a pod's
// worker saw.
func (f *FakeWorkers) Stopped(pod string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stops[pod]
}

func (f *FakeWorkers) stopped(pod string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stops == nil {
		f.stops = map[string]int{}
	}
	f.stops[pod]++
}

// Relinks returns the relink commands a pod's worker got, each as
// "worker@address" (the replaced worker and its new address).
func (f *FakeWorkers) Relinks(pod string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.relinks[pod])
}

// Attach is a controller.AttachFunc.
func (f *FakeWorkers) Attach(ctx context.Context, pod *corev1.Pod) (io.WriteCloser, io.ReadCloser, error) {
	cm := &corev1.ConfigMap{}
	if err := f.C.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: pod.Spec.Volumes[0].ConfigMap.Name}, cm); err != nil {
		return nil, nil, err
	}
	spec, err := cluster.LoadSpec([]byte(cm.Data["spec.json"]))
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
	f.mu.Lock()
	fatal := f.Fatal
	f.mu.Unlock()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	// The fake worker's events are not checked: a write fails only once
	// the coordinator closed its end, which ends the reads below too.
	go func() {
		defer func() { _ = outW.Close() }()
		enc := json.NewEncoder(outW)
		dec := json.NewDecoder(inR)
		for {
			var cmd cluster.Command
			if err := dec.Decode(&cmd); err != nil {
				f.stopped(pod.Name)
				return
			}
			switch cmd.Cmd {
			case "ready":
				if fatal != "" {
					_ = enc.Encode(cluster.Event{Event: "error", Worker: spec.Worker, Error: fatal, Fatal: true})
					continue
				}
				_ = enc.Encode(cluster.Event{Event: "ready", Worker: spec.Worker, Address: pod.Status.PodIP, Nodes: nodes, Millis: 5})
			case "link":
				_ = enc.Encode(cluster.Event{Event: "linked", ID: cmd.ID, Worker: spec.Worker, Millis: 1})
			case "relink":
				f.mu.Lock()
				if f.relinks == nil {
					f.relinks = map[string][]string{}
				}
				f.relinks[pod.Name] = append(f.relinks[pod.Name], fmt.Sprintf("%d@%s", *cmd.Peer, cmd.Address))
				f.mu.Unlock()
				_ = enc.Encode(cluster.Event{Event: "relinked", ID: cmd.ID, Worker: spec.Worker, Millis: 1})
			case "stop":
				_ = enc.Encode(cluster.Event{Event: "stopped", Worker: spec.Worker})
				f.stopped(pod.Name)
				_ = inR.Close() // an io.Pipe end's Close never fails
				return
			default:
				_ = enc.Encode(cluster.Event{Event: "error", ID: cmd.ID, Worker: spec.Worker, Error: fmt.Sprintf("unknown command %q", cmd.Cmd)})
			}
		}
	}()
	return inW, outR, nil
}
