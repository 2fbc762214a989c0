package reliability

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
)

// killScenario is a topology to build, run and kill -9 at a random point.
type killScenario struct {
	name  string
	args  []string
	span  time.Duration // kill points are drawn from [0, span): building, then running
	short int           // kill points in the short version
	full  int           // and in the full one
	tools []string
	work  string // a command the shell runs once it is up
}

var killScenarios = []killScenario{
	{name: "netns", args: []string{"--topo", "linear,3", "--link", "tc,delay=1ms"}, span: 3 * time.Second, short: 3, full: 30,
		work: "h1 ping -c 1000 -i 0.02 h3"},
	{name: "sriov", args: []string{"--links", "sriov", "--topo", "linear,2", "--link", "tc,delay=1ms"}, span: 4 * time.Second, short: 1, full: 15,
		work: "h1 ping -c 1000 -i 0.02 h2"},
	{name: "vm", args: []string{"--nodes", "vm", "--topo", "single,2", "--link", "tc,delay=1ms"}, span: 40 * time.Second, short: 1, full: 10,
		tools: []string{"qemu-system-x86_64"}, work: "h1 ping -c 1000 -i 0.02 h2"},
}

// TestKill9ThenClean kills hymn with SIGKILL at random points while it
// builds and runs namespace, SR-IOV (simulated NIC) and VM topologies with
// emulated links, runs hymn clean, and checks that nothing of the killed
// run is left: namespaces, records and state under /run/hymn, cgroups,
// NAT slots, root links, and every process the run had started.
func TestKill9ThenClean(t *testing.T) {
	testenv.RootAndTools(t, "ping")
	total, clean := 0, 0
	phases := map[string]int{}
	var slowestClean time.Duration
	for si, sc := range killScenarios {
		t.Run(sc.name, func(t *testing.T) {
			if len(sc.tools) > 0 {
				testenv.Tools(t, sc.tools...)
			}
			n := sc.short
			if full {
				n = sc.full
			}
			r := rng(uint64(si) + 100)
			for i := 0; i < n; i++ {
				// Half the points early, where building happens on a
				// fast machine; half anywhere up to span.
				limit := int64(sc.span)
				if r.IntN(2) == 0 {
					limit /= 5
				}
				at := time.Duration(r.Int64N(limit))
				total++
				ok := t.Run(fmt.Sprintf("%d_at_%v", i, at.Round(time.Millisecond)), func(t *testing.T) {
					took, phase := killAndClean(t, sc, at)
					slowestClean = max(slowestClean, took)
					phases[phase]++
				})
				if ok {
					clean++
				}
			}
		})
	}
	summary("kill -9 runs %d (%d before the run was claimed, %d while building, %d while running), %d with 0 leftovers after hymn clean (slowest clean %v)",
		total, phases["unclaimed"], phases["building"], phases["running"], clean, slowestClean.Round(time.Millisecond))
}

// killAndClean returns how long hymn clean took and the phase the kill
// hit: "unclaimed" (no run yet), "building" or "running" (the shell was
// up).
func killAndClean(t *testing.T, sc killScenario, at time.Duration) (time.Duration, string) {
	cmd := exec.Command(hymnBin, sc.args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	// Queued for the shell: it runs once the network is up.
	if _, err := io.WriteString(stdin, sc.work+"\n"); err != nil {
		t.Errorf("writing hymn's stdin: %v", err)
	}
	time.Sleep(at)
	procs := descendants(pid)
	// Not waited for yet, it is there (a zombie at worst).
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Errorf("kill -9 %d: %v", pid, err)
	}
	_ = cmd.Wait()    // "signal: killed", or its exit status had it ended first
	_ = stdin.Close() // Wait closed it already
	runs := runsOf(pid)
	phase := "unclaimed"
	switch {
	case strings.Contains(out.String(), "*** Starting CLI"):
		phase = "running"
	case len(runs) > 0:
		phase = "building"
	}
	t.Logf("killed at %v (%s): %d processes below hymn, runs %v", at, phase, len(procs), runs)

	stopReaper := make(chan struct{})
	reaper := reapOrphans(stopReaper)
	t0 := time.Now()
	cleanCmd := exec.Command(hymnBin, "clean")
	var cleanBuf bytes.Buffer
	cleanCmd.Stdout, cleanCmd.Stderr = &cleanBuf, &cleanBuf
	err = startOwn(cleanCmd)
	if err == nil {
		err = cleanCmd.Wait()
	}
	cleanOut := cleanBuf.Bytes()
	took := time.Since(t0)
	close(stopReaper)
	<-reaper
	if err != nil {
		t.Errorf("hymn clean: %v\n%s", err, cleanOut)
	}
	// Every process of the run is gone by the time clean returns: exited
	// and reaped (by this test, their subreaper, standing in for init).
	var left []proc
	for _, p := range procs {
		if p.exists() {
			left = append(left, p)
		}
	}
	if len(left) > 0 {
		t.Errorf("processes still there after hymn clean returned: %v", left)
	}
	if ps := orphans(nil); len(ps) > 0 {
		t.Errorf("orphaned processes still running after hymn clean: %v", ps)
		left = append(left, ps...)
	}
	for _, run := range runs {
		if st := runState(run); len(st) > 0 {
			t.Errorf("run %s left after hymn clean: %s", run, strings.Join(st, ", "))
		}
	}
	if tmp := tempsOf(pid); len(tmp) > 0 {
		t.Errorf("temporary records left: %v", tmp)
	}
	if t.Failed() {
		t.Logf("hymn output:\n%s\nhymn clean:\n%s", clip(out.String()), cleanOut)
		reapAndKill(left)
		if out, err := exec.Command(hymnBin, "clean").CombinedOutput(); err != nil {
			t.Errorf("hymn clean: %v\n%s", err, out)
		}
	}
	return took, phase
}
