package hymn

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/sriov"
	"github.com/vishvananda/netlink"
)

func TestNATSubnetsAreDistinct(t *testing.T) {
	seen := map[netip.Prefix]int{}
	space := netip.MustParsePrefix("172.31.0.0/16")
	for slot := 0; slot < owner.NATSlots; slot++ {
		root, nat := natSubnet(slot)
		if root.Masked() != nat.Masked() || root.Addr() == nat.Addr() || !space.Contains(root.Addr()) {
			t.Fatalf("slot %d: root %v, nat %v", slot, root, nat)
		}
		if other, dup := seen[root.Masked()]; dup {
			t.Fatalf("slots %d and %d share %v", other, slot, root.Masked())
		}
		seen[root.Masked()] = slot
	}
}

// staleRun makes a run whose owner has exited: a record naming a dead
// process, and a namespace.
func staleRun(t *testing.T) (run, ns string) {
	t.Helper()
	run = owner.NewRunID()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(owner.State{Run: run, PID: dead.Process.Pid, StartTime: 1})
	if err := os.WriteFile(filepath.Join(owner.StateDir, run+".json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	ns = owner.NamespaceName(run, "h1")
	if err := netnsx.Create(ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, _, err := owner.RemoveRun(run); err != nil {
			t.Error(err)
		}
	})
	return run, ns
}

// startIn starts sh -c script in a namespace, detached from the test's
// process group, and returns its pid (the test never waits for it: Clean
// must).
func startIn(t *testing.T, ns, script string) int {
	t.Helper()
	p, err := os.StartProcess("/usr/bin/nsenter", []string{"nsenter", "--net=/run/netns/" + ns, "sh", "-c", script},
		&os.ProcAttr{Sys: &syscall.SysProcAttr{Setpgid: true}})
	if err != nil {
		t.Fatal(err)
	}
	return p.Pid
}

func running(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	for i := len(data) - 1; i > 0; i-- {
		if data[i] == ')' {
			return i+2 < len(data) && data[i+2] != 'Z' && data[i+2] != 'X'
		}
	}
	return false
}

// hymn clean returns only when every process it stopped has exited, and a
// clean looping beside live runs (some of them being built or stopped at
// that moment) never harms one.
func TestCleanWaitsForProcessesAndSparesLiveRuns(t *testing.T) {
	testenv.RootAndTools(t, "nsenter", "ping")
	live := startNet(t, mustTopo(t, "single,2"), Options{})

	run, ns := staleRun(t)
	pids := []int{
		startIn(t, ns, `trap "" TERM; exec sleep 60`),                                 // needs SIGKILL
		startIn(t, ns, `trap "sleep 0.3; exit 0" TERM; while :; do sleep 0.05; done`), // slow to go
		startIn(t, ns, `exec sleep 60`),
	}
	time.Sleep(200 * time.Millisecond)

	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	cleans := 0
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			rep, err := Clean(ctx, CleanOptions{})
			if err != nil {
				t.Errorf("Clean: %v", err)
			}
			for _, r := range rep.Runs {
				if r == run {
					for _, pid := range pids {
						if running(pid) {
							t.Errorf("Clean returned while pid %d of run %s still runs", pid, run)
						}
					}
				}
			}
			mu.Lock()
			cleans++
			mu.Unlock()
		}
	}()
	// Networks built and stopped while the clean loop runs: their records
	// are being written and removed under its eyes.
	for i := 0; i < 3 || cleanCount(&mu, &cleans) < 20; i++ {
		net, err := New(mustTopo(t, "single,2"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := net.Start(ctx); err != nil {
			t.Fatalf("Start beside hymn clean: %v", err)
		}
		if loss, err := net.PingAll(ctx, 0); err != nil || loss != 0 {
			t.Errorf("network %s beside hymn clean: %v%% dropped, %v", net.RunID(), loss, err)
		}
		if err := net.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
		assertRunGone(t, net.RunID())
	}
	close(stop)
	wg.Wait()
	t.Logf("%d cleans beside live runs being built, used and stopped", cleans)
	for _, pid := range pids {
		if running(pid) {
			t.Errorf("pid %d in the stale run still runs", pid)
		}
	}
	assertRunGone(t, run)
	if loss, err := live.PingAll(ctx, 0); err != nil || loss != 0 {
		t.Errorf("live network broken by hymn clean: %v%% dropped, %v", loss, err)
	}
	if left, _ := owner.Namespaces(live.RunID()); len(left) == 0 {
		t.Error("hymn clean removed the live run's namespaces")
	}
}

// What a run keeps outside its namespaces and record is found and undone
// even when nothing else of the run is left: SR-IOV state directories and
// NAT slots with their root-namespace links.
func TestCleanFindsOrphanedSRIOVStateAndNATSlots(t *testing.T) {
	testenv.Root(t)
	run := owner.NewRunID()
	dir := sriov.RunDir(owner.StateDir, run)
	if err := sriov.WriteState(filepath.Join(dir, "state.json"), &sriov.State{Run: run, Simulated: true}); err != nil {
		t.Fatal(err)
	}
	slot, err := owner.AllocNAT(run)
	if err != nil {
		t.Fatal(err)
	}
	name := owner.NATLinkName(slot)
	peer := "hymnp" + strconv.Itoa(slot)
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peer}); err != nil {
		t.Fatal(err)
	}
	l, err := netlink.LinkByName(name)
	if err == nil {
		err = netlink.LinkSetAlias(l, owner.LinkAlias(run))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// hymn clean may have removed the link already (what the test
		// checks); what is left goes here.
		if l, err := netlink.LinkByName(name); err == nil {
			_ = netlink.LinkDel(l)
		}
		if err := errors.Join(os.RemoveAll(dir), owner.FreeNAT(run, slot)); err != nil {
			t.Error(err)
		}
	})

	rep, err := Clean(context.Background(), CleanOptions{Runs: []string{run}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || rep.Runs[0] != run {
		t.Errorf("Clean report %+v: want run %s", rep, run)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("SR-IOV state %s left", dir)
	}
	if s := owner.NATSlotsOf(run); len(s) != 0 {
		t.Errorf("NAT slots %v left", s)
	}
	if _, err := netlink.LinkByName(name); err == nil {
		t.Errorf("NAT link %s left", name)
	}
}

func cleanCount(mu *sync.Mutex, n *int) int {
	mu.Lock()
	defer mu.Unlock()
	return *n
}
