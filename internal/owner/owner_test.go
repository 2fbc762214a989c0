package owner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
)

// privateState points the package at a temporary state directory, so the
// tests never touch the machine's records.
func privateState(t *testing.T) string {
	t.Helper()
	old := stateDir
	stateDir = t.TempDir()
	t.Cleanup(func() { stateDir = old })
	return stateDir
}

func TestNewRunIDIs64Bits(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := NewRunID()
		if len(id) != 16 || !ValidRunID(id) {
			t.Fatalf("run id %q: want 16 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("run id %s drawn twice", id)
		}
		seen[id] = true
	}
}

func TestRunOfNamespace(t *testing.T) {
	for _, c := range []struct {
		ns, run string
		ok      bool
	}{
		{"hymn-0123456789abcdef-h1", "0123456789abcdef", true},
		{"hymn-0123456789abcdef-@emu", "0123456789abcdef", true},
		{"hymn-abcdef-h1", "abcdef", true}, // an earlier version's run
		{"hymn-abcdef-0123456789-x", "abcdef", true},
		{"hymn-0123456789abcdef-", "", false},
		{"hymn-0123456789ABCDEF-h1", "", false},
		{"hymn-0123456789abcdeg-h1", "", false},
		{"hymn-abcd-h1", "", false},
		{"other-0123456789abcdef-h1", "", false},
		{"hymn-0123456789abcdef0-h1", "", false},
	} {
		t.Run(c.ns, func(t *testing.T) {
			t.Parallel()
			run, ok := RunOfNamespace(c.ns)
			if run != c.run || ok != c.ok {
				t.Errorf("RunOfNamespace(%q) = %q, %v; want %q, %v", c.ns, run, ok, c.run, c.ok)
			}
		})
	}
}

func TestClaimIsExclusive(t *testing.T) {
	privateState(t)
	run := NewRunID()
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := Claim(run)
			if err == nil {
				wins.Add(1)
			} else if !errors.Is(err, ErrClaimed) {
				t.Errorf("Claim: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d claims of one run id succeeded; want exactly 1", wins.Load())
	}
	if !Alive(run) {
		t.Error("claimed run is not alive")
	}
	if err := Claim("../x"); err == nil {
		t.Error("Claim accepted a run id that is not one")
	}
}

// A reader racing with writers must never see a record it cannot parse:
// every record it lists belongs to this live process.
func TestRecordBeingWrittenNeverLooksDead(t *testing.T) {
	dir := privateState(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := Claim(NewRunID()); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	checked := 0
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			run, ok := cutJSON(e.Name())
			if !ok {
				continue
			}
			// Straight from the file, without the grace for unparsable
			// records: the record must be complete whenever it exists.
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			var st State
			if err != nil || json.Unmarshal(data, &st) != nil || !ProcessAlive(st.PID, st.StartTime) {
				t.Fatalf("record of live run %s read as dead: %q %v", run, data, err)
			}
			checked++
		}
	}
	close(stop)
	wg.Wait()
	if checked == 0 {
		t.Fatal("no record checked")
	}
	if runs, _ := os.ReadDir(dir); len(runs) == 0 {
		t.Fatal("no records written")
	}
	t.Logf("%d reads of records being written, none dead", checked)
}

func cutJSON(name string) (string, bool) {
	if len(name) > 5 && name[len(name)-5:] == ".json" && name[0] != '.' {
		return name[:len(name)-5], true
	}
	return "", false
}

func writeRecord(t *testing.T, run string, pid int, start uint64) {
	t.Helper()
	data, _ := json.Marshal(State{Run: run, PID: pid, StartTime: start, Created: time.Now()})
	if err := os.WriteFile(statePath(run), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAliveChecksPidAndStartTime(t *testing.T) {
	privateState(t)
	self := os.Getpid()
	start := processStartTime(self)
	if start == 0 {
		t.Fatal("no start time for this process")
	}
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := zombie.Wait(); err != nil {
			t.Error(err)
		}
	}()
	for i := 0; i < 200 && processState(zombie.Process.Pid) != "Z"; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	for _, c := range []struct {
		name  string
		pid   int
		start uint64
		alive bool
	}{
		{"owner running", self, start, true},
		{"pid reused (other start time)", self, start + 1, false},
		{"owner exited", exited.Process.Pid, 1, false},
		{"owner a zombie", zombie.Process.Pid, processStartTime(zombie.Process.Pid), false},
		{"no pid", 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := NewRunID()
			writeRecord(t, run, c.pid, c.start)
			if got := Alive(run); got != c.alive {
				t.Errorf("Alive = %v, want %v", got, c.alive)
			}
		})
	}
	if Alive(NewRunID()) {
		t.Error("a run without a record is alive")
	}
	// Unparsable: alive while young (someone may be writing it the old
	// way), dead once old.
	run := NewRunID()
	if err := os.WriteFile(statePath(run), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !Alive(run) {
		t.Error("a fresh empty record counts as dead")
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(statePath(run), old, old); err != nil {
		t.Fatal(err)
	}
	if Alive(run) {
		t.Error("an hour-old empty record counts as alive")
	}
}

func processState(pid int) string {
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	for i := len(data) - 1; i >= 0; i-- {
		if data[i] == ')' && i+2 < len(data) {
			return string(data[i+2])
		}
	}
	return ""
}

func TestRunsFindsEveryKindOfState(t *testing.T) {
	dir := privateState(t)
	rec, sr, nat := NewRunID(), NewRunID(), NewRunID()
	writeRecord(t, rec, 1, 1)
	if err := os.Mkdir(filepath.Join(dir, sr+"-sriov"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := AllocNAT(nat); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sriov.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".tmp-1-x-"+NewRunID()+".json"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	runs, err := Runs()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range runs {
		if ns, _ := Namespaces(r); len(ns) == 0 { // not a run live on this machine
			got[r] = true
		}
	}
	for _, want := range []string{rec, sr, nat} {
		if !got[want] {
			t.Errorf("Runs() = %v, misses %s", runs, want)
		}
	}
	if len(got) != 3 {
		t.Errorf("Runs() = %v, want exactly 3 runs (these, not the lock or the temporary file)", runs)
	}
}

func TestStaleTemporaryRecordsAreSwept(t *testing.T) {
	dir := privateState(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	staleName := fmt.Sprintf(".tmp-%d-aaaa-%s.json", dead.Process.Pid, NewRunID())
	liveName := fmt.Sprintf(".tmp-%d-bbbb-%s.json", os.Getpid(), NewRunID())
	for _, n := range []string{staleName, liveName} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	SweepTemps()
	if _, err := os.Stat(filepath.Join(dir, staleName)); err == nil {
		t.Error("temporary record of a dead writer left")
	}
	if _, err := os.Stat(filepath.Join(dir, liveName)); err != nil {
		t.Error("temporary record of a live writer removed")
	}
}

func TestNATSlotsNeverCollide(t *testing.T) {
	privateState(t)
	const runs = 64
	slots := make([]int, runs)
	ids := make([]string, runs)
	var wg sync.WaitGroup
	for i := range runs {
		ids[i] = NewRunID()
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if slots[i], err = AllocNAT(ids[i]); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	seen := map[int]string{}
	for i, s := range slots {
		if other, dup := seen[s]; dup {
			t.Fatalf("runs %s and %s share NAT slot %d", other, ids[i], s)
		}
		seen[s] = ids[i]
		if got := NATSlotsOf(ids[i]); len(got) != 1 || got[0] != s {
			t.Errorf("NATSlotsOf(%s) = %v, want [%d]", ids[i], got, s)
		}
		if len(NATLinkName(s)) > 15 {
			t.Errorf("NAT link name %q longer than 15 bytes", NATLinkName(s))
		}
	}
	// A run that happens to start at a taken slot gets another.
	if err := FreeNAT("ffffffffffffffff", slots[0]); err != nil || len(NATSlotsOf(ids[0])) != 1 {
		t.Errorf("FreeNAT by a run that does not hold the slot freed it: %v", err)
	}
	if err := FreeNAT(ids[0], slots[0]); err != nil || len(NATSlotsOf(ids[0])) != 0 {
		t.Errorf("FreeNAT: %v, slots left %v", err, NATSlotsOf(ids[0]))
	}
	if len(NATLinkName(NATSlots-1)) > 15 {
		t.Error("the last NAT slot's link name is too long")
	}
}

// Stop escalates from SIGTERM to SIGKILL and returns only when every
// process has exited.
func TestStopWaitsUntilProcessesExit(t *testing.T) {
	start := func(script string) int {
		p, err := os.StartProcess("/bin/sh", []string{"sh", "-c", script}, &os.ProcAttr{Sys: &syscall.SysProcAttr{Setpgid: true}})
		if err != nil {
			t.Fatal(err)
		}
		return p.Pid
	}
	// One ignores SIGTERM (needs SIGKILL), one takes 300 ms to exit on it,
	// one exits at once.
	deaf := start(`trap "" TERM; exec sleep 60`)
	slow := start(`trap "sleep 0.3; exit 0" TERM; while :; do sleep 0.05; done`)
	quick := start(`exec sleep 60`)
	time.Sleep(100 * time.Millisecond) // let the traps be set
	t0 := time.Now()
	n, err := Stop([]int{deaf, slow, quick}, nil, time.Second, 10*time.Second)
	took := time.Since(t0)
	if err != nil || n != 3 {
		t.Fatalf("Stop = %d, %v; want 3, nil", n, err)
	}
	for _, pid := range []int{deaf, slow, quick} {
		if st := processState(pid); st != "" && st != "Z" {
			t.Errorf("pid %d still running (state %s) after Stop returned", pid, st)
		}
	}
	// The 1 s grace, then SIGKILL: a little under the grace is allowed,
	// the timer and this clock being read apart.
	testenv.Floor(t, "Stop's grace", took, time.Second, 50*time.Millisecond)
	testenv.Elapsed(t, "Stop", took, 5*time.Second)
	// Gone already: nothing to do, no error.
	if n, err := Stop([]int{deaf}, nil, 0, time.Second); err != nil || n != 0 {
		t.Errorf("Stop of an exited pid = %d, %v", n, err)
	}
}

// WaitExit waits for processes to exit on their own and never signals
// them.
func TestWaitExitNeverSignals(t *testing.T) {
	// The clock starts before the short sleep does, so a correct WaitExit
	// returns 300 ms after it at the earliest, however long the machine
	// takes to start the two processes (started before them, a stall or
	// a slow fork between them shortened the interval measured).
	t0 := time.Now()
	short, err := os.StartProcess("/bin/sleep", []string{"sleep", "0.3"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	long, err := os.StartProcess("/bin/sleep", []string{"sleep", "60"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := long.Kill(); err != nil {
			t.Error(err)
		}
		if _, err := long.Wait(); err != nil {
			t.Error(err)
		}
	}()
	if err := WaitExit([]int{short.Pid}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	testenv.Floor(t, "WaitExit on a process sleeping 300 ms", time.Since(t0), 300*time.Millisecond, 10*time.Millisecond)
	if err := WaitExit([]int{long.Pid}, 200*time.Millisecond); err == nil {
		t.Error("WaitExit on a process that keeps running returned no error")
	}
	if st := processState(long.Pid); st == "" || st == "Z" {
		t.Errorf("WaitExit signalled the process (state %q)", st)
	}
	for _, pid := range ExitingSince(0) {
		if pid == long.Pid || pid == os.Getpid() {
			t.Errorf("running process %d listed as exiting", pid)
		}
	}
}
