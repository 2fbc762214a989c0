package testnet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
)

// Network is what Start needs of a hymn.Network.
type Network interface {
	Start(ctx context.Context) error
	Stop() error
	RunID() string
}

// Start starts net, whose teardown it registers first, and fails the test
// if the start fails; at cleanup it stops net and fails the test if
// anything of the run is left (AssertRunGone). It skips the test without
// root (or fails it under HYMN_REQUIRE=all).
func Start(t testing.TB, net Network, timeout time.Duration) {
	t.Helper()
	testenv.Root(t)
	t.Cleanup(func() {
		if err := net.Stop(); err != nil {
			t.Errorf("stopping the network: %v", err)
		}
		AssertRunGone(t, net.RunID())
	})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := net.Start(ctx); err != nil {
		t.Fatalf("starting the network: %v", err)
	}
}

// Topo parses a Mininet topology spec or fails the test.
func Topo(t testing.TB, spec string) *topo.Topo {
	t.Helper()
	top, err := topo.FromSpecString(spec)
	if err != nil {
		t.Fatalf("topology %q: %v", spec, err)
	}
	return top
}

// processGrace is how long AssertRunGone waits for a process naming the
// run to go: Stop waits for the processes it kills, but a daemon's child
// may still be exiting.
const processGrace = 5 * time.Second

// AssertRunGone fails the test if anything of the run is left on the
// machine: a namespace, the run's state file, Open vSwitch or controller
// state, or (after up to processGrace) a process whose command line names
// the run.
func AssertRunGone(t testing.TB, run string) {
	t.Helper()
	left, err := owner.Namespaces(run)
	if err != nil {
		t.Errorf("listing the run's namespaces: %v", err)
	}
	if len(left) > 0 {
		t.Errorf("run %s left namespaces behind: %v", run, left)
	}
	if _, err := os.Stat(filepath.Join(owner.StateDir, run+".json")); err == nil {
		t.Errorf("run %s left its state file behind", run)
	}
	mark := owner.Prefix + run + "-"
	for _, dir := range []string{nodes.OVSRunDir, nodes.ControllerRunDir} {
		if m, _ := filepath.Glob(filepath.Join(dir, mark+"*")); len(m) > 0 {
			t.Errorf("run %s left files behind: %v", run, m)
		}
	}
	deadline := time.Now().Add(processGrace)
	for {
		procs := processesNaming(mark)
		if len(procs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("run %s left processes behind: %v", run, procs)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processesNaming lists the processes whose command line contains mark.
// A process that exits meanwhile has no cmdline to read; a zombie has an
// empty one: neither counts.
func processesNaming(mark string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), mark) {
			out = append(out, fmt.Sprintf("%s: %q", filepath.Base(filepath.Dir(p)), b))
		}
	}
	return out
}
