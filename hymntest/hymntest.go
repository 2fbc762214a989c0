package hymntest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/stallwatch"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
)

// StartTimeout bounds building and starting a network in Start.
var StartTimeout = 2 * time.Minute

// RequireRoot skips the test unless it runs as root, or fails it under
// HYMN_REQUIRE=all (CI), where a skip would hide an untested feature.
func RequireRoot(t testing.TB) {
	t.Helper()
	testenv.Root(t)
}

// RequireTools is RequireRoot's counterpart for programs on PATH: the
// reason names the Debian package that provides each missing one.
func RequireTools(t testing.TB, programs ...string) {
	t.Helper()
	testenv.Tools(t, programs...)
}

// Topo parses a Mininet topology spec ("linear,4", "tree,depth=2,fanout=2")
// or fails the test.
func Topo(t testing.TB, spec string) *topo.Topo {
	t.Helper()
	top, err := topo.FromSpecString(spec)
	if err != nil {
		t.Fatalf("topology %q: %v", spec, err)
	}
	return top
}

// Start builds and starts a network from top and stops it when the test
// ends. The teardown is registered before anything is built, so a failed
// start leaves nothing either; at cleanup it fails the test if any
// namespace or state file of the run is left.
func Start(t testing.TB, top *topo.Topo, opts hymn.Options) *hymn.Network {
	t.Helper()
	RequireRoot(t)
	net, err := hymn.New(top, opts)
	if err != nil {
		t.Fatalf("hymn.New: %v", err)
	}
	t.Cleanup(func() {
		if err := net.Stop(); err != nil {
			t.Errorf("stopping the network: %v", err)
		}
		AssertRunGone(t, net.RunID())
	})
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if err := net.Start(ctx); err != nil {
		t.Fatalf("starting the network: %v", err)
	}
	return net
}

// AssertRunGone fails the test if anything of the run is left on the
// machine: a namespace, the run's state file, Open vSwitch or controller
// state, or a process whose command line names the run.
func AssertRunGone(t testing.TB, run string) {
	t.Helper()
	left, err := owner.Namespaces(run)
	if err != nil {
		t.Errorf("listing the run's namespaces: %v", err)
	}
	if len(left) > 0 {
		t.Errorf("run %s left namespaces behind: %v", run, left)
	}
	if _, err := os.Stat(owner.StateDir + "/" + run + ".json"); err == nil {
		t.Errorf("run %s left its state file behind", run)
	}
	mark := owner.Prefix + run + "-"
	for _, dir := range []string{nodes.OVSRunDir, nodes.ControllerRunDir} {
		if m, _ := filepath.Glob(filepath.Join(dir, mark+"*")); len(m) > 0 {
			t.Errorf("run %s left files behind: %v", run, m)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		// A process that exited meanwhile has no cmdline to read; a zombie
		// has an empty one.
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), mark) {
			t.Errorf("run %s left a process behind: %s: %q", run, filepath.Dir(p), b)
		}
	}
}

// Stalls is what a stall watcher saw (WatchStalls).
type Stalls = stallwatch.Report

// StallWatcher watches for stalls of the whole machine until Stop.
type StallWatcher = stallwatch.Watcher

// WatchStalls starts a watcher that tells a timing test whether the
// machine stopped it: shared VMs sometimes stop every thread for tens of
// milliseconds, which makes a frame late that the code sent in time. A
// test that judges a time repeats a measurement during which the machine
// stalled (Stalls.Stalled, Stalls.Worst), and fails one during which it
// did not.
func WatchStalls() *StallWatcher { return stallwatch.Start() }

// WaitFor polls cond every interval until it returns true, and fails the
// test with what if it has not after timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Reachable fails the test unless every host named pings every other one
// (Mininet's ping between them, one echo request each way), within ten
// seconds; with fewer than two names, all hosts.
func Reachable(t testing.TB, net *hymn.Network, hosts ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if len(hosts) < 2 {
		hosts = nil
	}
	results, err := net.PingFull(ctx, hosts, time.Second)
	if err != nil {
		t.Fatalf("ping: %v", err)
	}
	var lost []string
	for _, r := range results {
		if r.Received < r.Sent || r.Sent == 0 {
			lost = append(lost, r.Src+"->"+r.Dst)
		}
	}
	if len(lost) > 0 {
		t.Fatalf("no reply for %d of %d pings: %s", len(lost), len(results), strings.Join(lost, " "))
	}
}

// Unreachable fails the test if src reaches dst.
func Unreachable(t testing.TB, net *hymn.Network, src, dst string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	results, err := net.PingFull(ctx, []string{src, dst}, time.Second)
	if err != nil {
		t.Fatalf("ping: %v", err)
	}
	for _, r := range results {
		if r.Src == src && r.Dst == dst && r.Received > 0 {
			t.Fatalf("%s reaches %s", src, dst)
		}
	}
}

// Cmd runs a shell command on a node with a timeout and returns its output;
// it fails the test if the command cannot run or exits non-zero.
func Cmd(t testing.TB, net *hymn.Network, node, command string, timeout time.Duration) string {
	t.Helper()
	n, err := net.Node(node)
	if err != nil {
		t.Fatalf("%s: %v", node, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := n.Cmd(ctx, command)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", node, command, err, out)
	}
	return out
}
