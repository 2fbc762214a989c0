package reliability

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/topo"
)

type resources struct {
	fds, goroutines int
	heap            uint64
}

func measure() resources {
	// Finished goroutines and closed files settle within a moment.
	time.Sleep(100 * time.Millisecond)
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	entries, _ := os.ReadDir("/proc/self/fd")
	return resources{fds: len(entries), goroutines: runtime.NumGoroutine(), heap: ms.HeapAlloc}
}

// cycleTopo is two switches with a host each, joined by an emulated link
// (a forwarder with its packet sockets and goroutines), plus a plain one.
func cycleTopo() *topo.Topo {
	t := topo.New()
	t.AddHost("h1")
	t.AddHost("h2")
	t.AddSwitch("s1")
	t.AddSwitch("s2")
	t.AddLink("h1", "s1")
	t.AddLink("s1", "s2", topo.Params{"delay": "1ms"})
	t.AddLink("h2", "s2", topo.Params{"delay": "1ms", "loss": "0"})
	return t
}

// TestBuildTeardownCycles builds, uses and stops a network over and over
// in one process through the Go API: file descriptors, goroutines and heap
// must stay flat, and each run must leave nothing.
func TestBuildTeardownCycles(t *testing.T) {
	testenv.RootAndTools(t, "ping")
	cycles := 10
	if full {
		cycles = 100
	}
	ctx := context.Background()
	cycle := func(i int) {
		net, err := hymn.New(cycleTopo(), hymn.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := net.Start(ctx); err != nil {
			_ = net.Stop() // Start removed what it built: a no-op
			t.Fatalf("cycle %d: Start: %v", i, err)
		}
		if loss, err := net.PingAll(ctx, 0); err != nil || loss != 0 {
			t.Errorf("cycle %d: PingAll %v%% dropped, %v", i, loss, err)
		}
		if err := net.Stop(); err != nil {
			t.Errorf("cycle %d: Stop: %v", i, err)
		}
		if st := runState(net.RunID()); len(st) > 0 {
			t.Errorf("cycle %d: run %s left %v", i, net.RunID(), st)
		}
	}
	// Two warm-up cycles: lazily created pools, caches and netlink
	// sockets belong to the process, not to a run.
	cycle(-2)
	cycle(-1)
	base := measure()
	peak := base
	t0 := time.Now()
	for i := 0; i < cycles && !t.Failed(); i++ {
		cycle(i)
		if (i+1)%max(1, cycles/10) == 0 {
			m := measure()
			peak.fds, peak.goroutines, peak.heap = max(peak.fds, m.fds), max(peak.goroutines, m.goroutines), max(peak.heap, m.heap)
			t.Logf("after %d cycles: %d fds, %d goroutines, heap %d KiB", i+1, m.fds, m.goroutines, m.heap>>10)
		}
	}
	end := measure()
	t.Logf("%d cycles in %v; start %d fds, %d goroutines, heap %d KiB; end %d, %d, %d KiB",
		cycles, time.Since(t0).Round(time.Millisecond), base.fds, base.goroutines, base.heap>>10, end.fds, end.goroutines, end.heap>>10)
	flat := true
	if end.fds > base.fds+2 {
		t.Errorf("file descriptors grew from %d to %d over %d cycles", base.fds, end.fds, cycles)
		flat = false
	}
	if end.goroutines > base.goroutines+3 {
		t.Errorf("goroutines grew from %d to %d over %d cycles", base.goroutines, end.goroutines, cycles)
		flat = false
	}
	if end.heap > base.heap+8<<20 {
		t.Errorf("heap grew from %d KiB to %d KiB over %d cycles", base.heap>>10, end.heap>>10, cycles)
		flat = false
	}
	verdict := "flat"
	if !flat {
		verdict = "NOT flat"
	}
	summary("cycles %d build/teardown, resources %s: fds %d -> %d, goroutines %d -> %d, heap %d -> %d KiB (peak %d fds, %d goroutines, %d KiB)",
		cycles, verdict, base.fds, end.fds, base.goroutines, end.goroutines, base.heap>>10, end.heap>>10, peak.fds, peak.goroutines, peak.heap>>10)
}
