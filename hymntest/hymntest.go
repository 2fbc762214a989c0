package hymntest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/internal/stallwatch"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/internal/testnet"
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
	return testnet.Topo(t, spec)
}

// Start builds and starts a network from top and stops it when the test
// ends. The teardown is registered before anything is built, so a failed
// start leaves nothing either; at cleanup it fails the test if anything of
// the run is left (AssertRunGone).
func Start(t testing.TB, top *topo.Topo, opts hymn.Options) *hymn.Network {
	t.Helper()
	RequireRoot(t)
	net, err := hymn.New(top, opts)
	if err != nil {
		t.Fatalf("hymn.New: %v", err)
	}
	testnet.Start(t, net, StartTimeout)
	return net
}

// AssertRunGone fails the test if anything of the run is left on the
// machine: a namespace, the run's state file, Open vSwitch or controller
// state, or (after a few seconds' grace) a process whose command line
// names the run.
func AssertRunGone(t testing.TB, run string) {
	t.Helper()
	testnet.AssertRunGone(t, run)
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
