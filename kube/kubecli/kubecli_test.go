package kubecli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/kube/controller"
	"github.com/hymn-net/hymn/kube/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

func run(ctx context.Context, args ...string) (int, string, string) {
	return runIn(ctx, nil, args...)
}

// runIn runs hymn-kube with stdin read from a file holding input.
func runIn(ctx context.Context, input []string, args ...string) (int, string, string) {
	var stdin *os.File
	if input != nil {
		f, err := os.CreateTemp("", "hymn-kube-stdin")
		if err != nil {
			panic(err)
		}
		// Closing and removing the temporary file are best effort: it is
		// only read, once the write below succeeded.
		defer func() { _ = os.Remove(f.Name()) }()
		defer func() { _ = f.Close() }()
		if _, err := f.WriteString(strings.Join(input, "\n") + "\n"); err != nil {
			panic(err)
		}
		if _, err := f.Seek(0, 0); err != nil {
			panic(err)
		}
		stdin = f
	}
	var out, errb bytes.Buffer
	code := Execute(ctx, args, stdin, &out, &errb)
	return code, out.String(), errb.String()
}

// Bad input exits 2 with one line naming the problem, before any request.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(empty, []byte("\n  \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"controller", "--allow-image", "repo/*"}, `--allow-image: image "repo/*": a wildcard is only allowed as a final ":*"`},
		{[]string{"controller", "--namespaces", "a,A"}, `--namespaces: namespace "A"`},
		{[]string{"install", "--namespaces", "a,a"}, `--namespaces: namespace "a" named twice`},
		{[]string{"install", "--service-account", "nobody"}, `--service-account "nobody": use NAMESPACE/NAME`},
		{[]string{"list", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"list", "extra"}, "list takes no arguments"},
		{[]string{"run"}, "run needs --topo SPEC"},
		{[]string{"run", "--topo", "linear,2", "x.yaml"}, "not both"},
		{[]string{"run", "a.yaml", "b.yaml"}, "at most one topology file"},
		{[]string{"run", "--topo", "linear,2", "--workers", "0"}, "--workers 0: use 1 to 64"},
		{[]string{"run", "--topo", "linear,2", "--workers", "65"}, "--workers 65"},
		{[]string{"run", "--topo", "linear,2", "--workers", "two"}, "invalid argument"},
		{[]string{"run", "--topo", "linear,2", "--pull-policy", "Sometimes"}, "--pull-policy"},
		{[]string{"run", "--topo", "linear,2", "--name", "Bad_Name"}, "--name"},
		{[]string{"run", "--topo", "linear,2", "--timeout", "0s"}, "--timeout"},
		{[]string{"run", "--topo", "linear,2", "--test", "iperf"}, `--test "iperf": use cli, pingall, pingpair, none`},
		{[]string{"run", "--topo", "linear,2", "--test", "pingall", "--hold"}, "--hold and --test"},
		{[]string{"run", filepath.Join(dir, "missing.yaml")}, "no such file"},
		{[]string{"run", empty}, "is empty"},
		{[]string{"run", "/dev/zero"}, "not a regular file: it is a character device"},
		{[]string{"delete"}, "delete takes one Topology name"},
		{[]string{"delete", "Bad_Name"}, "not a Topology name"},
		{[]string{"list", "--kubeconfig", filepath.Join(dir, "nope")}, "--kubeconfig: stat"},
		{[]string{"list", "-n", "Bad_NS", "--kubeconfig", empty}, "--namespace"},
		{[]string{"controller", "--pull-policy", "Sometimes"}, "--pull-policy"},
		{[]string{"controller", "--pod-timeout", "0s"}, "must be positive"},
		{[]string{"controller", "--max-restarts", "-1"}, "--max-restarts -1"},
		{[]string{"controller", "--max-restarts", "1001"}, "--max-restarts 1001"},
		{[]string{"controller", "--max-restarts", "x"}, "invalid argument"},
		{[]string{"controller", "--restart-window", "0s"}, "--restart-window must be positive"},
	}
	for _, c := range cases {
		code, out, errs := run(t.Context(), c.args...)
		if code != 2 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 || out != "" {
			t.Errorf("hymn-kube %s: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", strings.Join(c.args, " "), code, out, errs, c.want)
		}
	}
	// No kubeconfig anywhere.
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", dir)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	code, _, errs := run(t.Context(), "list")
	if code != 2 || !strings.Contains(errs, "no cluster configured") {
		t.Errorf("no kubeconfig: exit %d, %q", code, errs)
	}
	// A kubeconfig that is not one.
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("{not yaml: ["), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = run(t.Context(), "list", "--kubeconfig", bad)
	if code != 2 || !strings.Contains(errs, "kubeconfig") {
		t.Errorf("bad kubeconfig: exit %d, %q", code, errs)
	}
}

// An API server nobody listens at: exit 1, saying so.
func TestUnreachableCluster(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"list"}, {"delete", "x"}, {"run", "--topo", "linear,2"}, {"install"}, {"controller"}} {
		code, _, errs := run(t.Context(), append(args, "--kubeconfig", kc, "--request-timeout", "5s")...)
		if code != 1 || !strings.Contains(errs, "cannot reach the API server at https://127.0.0.1:1") {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
}

// Against a real kube-apiserver: without the CRD every command says to
// install it; install, then run (the controller in-process with fake
// workers, the test playing the kubelet) reaches Running and removes the
// Topology; list and delete of an unknown name.
func TestAgainstAPIServer(t *testing.T) {
	e := kubetest.StartBare(t)
	kc := e.Kubeconfig()
	for _, args := range [][]string{{"list"}, {"run", "--topo", "linear,2"}, {"controller"}} {
		code, _, errs := run(t.Context(), append(args, "--kubeconfig", kc)...)
		if code != 1 || !strings.Contains(errs, "run hymn-kube install") {
			t.Errorf("%v without the CRD: exit %d, %q", args, code, errs)
		}
	}
	// A user without permissions: every command says RBAC.
	nobody := e.User("nobody")
	code, _, errs := run(t.Context(), "install", "--kubeconfig", nobody)
	if code != 1 || !strings.Contains(errs, "not allowed (RBAC)") {
		t.Errorf("install as a user without permissions: exit %d, %q", code, errs)
	}
	code, out, errs := run(t.Context(), "install", "--kubeconfig", kc)
	if code != 0 || !strings.Contains(out, "created CustomResourceDefinition topologies.hymn.hymn-net.io") || !strings.Contains(out, "created ClusterRole hymn-kube-controller") ||
		!strings.Contains(out, "created Role default/hymn-kube-controller") || !strings.Contains(out, "created RoleBinding default/hymn-kube-controller") ||
		!strings.Contains(out, "created ServiceAccount default/hymn-kube-controller") {
		t.Fatalf("install: exit %d, %q %q", code, out, errs)
	}
	if code, out, errs = run(t.Context(), "install", "--kubeconfig", kc); code != 0 || !strings.Contains(out, "updated CustomResourceDefinition") {
		t.Fatalf("install again: exit %d, %q %q", code, out, errs)
	}
	for _, args := range [][]string{{"list"}, {"run", "--topo", "linear,2"}, {"delete", "x"}, {"controller"}} {
		code, _, errs := run(t.Context(), append(args, "--kubeconfig", nobody)...)
		if code != 1 || !strings.Contains(errs, "not allowed (RBAC)") {
			t.Errorf("%v as a user without permissions: exit %d, %q", args, code, errs)
		}
	}
	workers := &kubetest.FakeWorkers{C: e.Client}
	// The controller watches default and other.
	if err := e.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}); err != nil {
		t.Fatal(err)
	}
	e.Watched = []string{"default", "other"}
	e.RunController(&controller.Reconciler{Attach: workers.Attach, PodTimeout: time.Minute, Namespaces: e.Watched})

	// The kubelet: every worker pod of the run runs.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		seen := map[string]bool{}
		for ctx.Err() == nil {
			l := &corev1.PodList{}
			if e.Client.List(ctx, l, client.InNamespace(e.NS)) == nil {
				for i := range l.Items {
					p := &l.Items[i]
					if !seen[p.Name] && (p.Status.Phase == "" || p.Status.Phase == corev1.PodPending) {
						p.Status.Phase, p.Status.PodIP = corev1.PodRunning, fmt.Sprintf("10.244.0.%d", 10+len(seen))
						if e.Client.Status().Update(ctx, p) == nil {
							seen[p.Name] = true
						}
					}
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	t0 := time.Now()
	// The shell: the plan comes from the workers' ConfigMaps; a node's
	// command goes to its pod through pods/exec, which fails here (no
	// kubelet) and says so, and the shell goes on.
	code, out, errs = runIn(t.Context(), []string{"nodes", "net", "h4 echo hi", "iperf", "bogus", "exit"},
		"run", "--kubeconfig", kc, "--topo", "linear,4", "--workers", "2", "--name", "clirun")
	t.Logf("run in %v:\n%s%s", time.Since(t0).Round(time.Millisecond), out, errs)
	for _, want := range []string{"*** Created topology default/clirun: linear,4 over 2 workers", "*** Building", "*** Running: 8 nodes on 2 workers, 1 cut links up",
		"workers ready 2/2, nodes 8, cut links up 1", "Ready=True", "mininet> ", "*** Removing topology clirun"} {
		if !strings.Contains(out, want) {
			t.Errorf("run's output lacks %q", want)
		}
	}
	for _, want := range []string{"available nodes are: \nh1 h2 h3 h4 s1 s2 s3 s4\n", "h1 h1-eth0:s1-eth1\n", "s2 lo:  s2-eth1:h2-eth0 s2-eth2:s1-eth2 s2-eth3:s3-eth2\n",
		"*** Error: h4 on pod clirun-w1:", "*** iperf is not available here", "*** Unknown command: bogus"} {
		if !strings.Contains(errs, want) {
			t.Errorf("the shell's output lacks %q", want)
		}
	}
	if code != 0 {
		t.Fatalf("run: exit %d", code)
	}
	if workers.Stopped("clirun-w0") == 0 || workers.Stopped("clirun-w1") == 0 {
		t.Errorf("the workers were not stopped at exit")
	}
	code, out, _ = run(t.Context(), "list", "--kubeconfig", kc)
	if code != 0 || !strings.Contains(out, "(none)") {
		t.Errorf("list after run: exit %d, %q", code, out)
	}
	// A bad topology: Failed, exit 1 with the parser's message.
	code, out, errs = run(t.Context(), "run", "--kubeconfig", kc, "--topo", "nosuch,3")
	if code != 1 || !strings.Contains(errs, `unknown topology "nosuch"`) || !strings.Contains(out, "*** Failed") {
		t.Errorf("bad topology: exit %d, %q %q", code, out, errs)
	}
	// A topology file.
	f := filepath.Join(t.TempDir(), "two.yaml")
	if err := os.WriteFile(f, []byte("nodes: [{name: h1}, {name: h2}, {name: s1, kind: switch}]\nlinks: [{endpoints: [h1, s1]}, {endpoints: [h2, s1]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t.Context(), "run", "--kubeconfig", kc, f, "--workers", "1", "--test", "none")
	if code != 0 || !strings.Contains(out, "*** Running: 3 nodes on 1 workers, 0 cut links up") {
		t.Errorf("file run: exit %d, %q %q", code, out, errs)
	}
	// Interrupted while the pods do not run (namespace other has no
	// kubelet here): exit 1, and the Topology is removed.
	ictx, icancel := context.WithCancel(t.Context())
	time.AfterFunc(3*time.Second, icancel)
	code, out, errs = run(ictx, "run", "--kubeconfig", kc, "-n", "other", "--topo", "linear,2", "--name", "stopped")
	if code != 1 || !strings.Contains(errs, "interrupted") || !strings.Contains(out, "*** Building: 0 of 2 worker pods running") || !strings.Contains(out, "*** Removing topology stopped") {
		t.Errorf("interrupted run: exit %d, %q %q", code, out, errs)
	}
	if code, out, _ = run(t.Context(), "list", "-A", "--kubeconfig", kc); code != 0 || !strings.Contains(out, "(none)") {
		t.Errorf("list -A after the interrupted run: exit %d, %q", code, out)
	}
	code, _, errs = run(t.Context(), "delete", "nosuch", "--kubeconfig", kc)
	if code != 1 || !strings.Contains(errs, `no Topology "nosuch" in namespace default`) {
		t.Errorf("delete nosuch: exit %d, %q", code, errs)
	}
}
