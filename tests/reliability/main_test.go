package reliability

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/owner"
	"golang.org/x/sys/unix"
)

// hymnBin is the binary under test: $HYMN_BIN, or one built into a
// temporary directory by TestMain.
var hymnBin string

// full selects the long version of every test (HYMN_RELIABILITY=full).
var full = os.Getenv("HYMN_RELIABILITY") == "full"

// seed drives every random choice; HYMN_RELIABILITY_SEED repeats a run.
var seed uint64

var (
	summaryMu sync.Mutex
	summaries []string
)

// summary records one line for the suite's summary, printed at the end.
func summary(format string, args ...any) {
	summaryMu.Lock()
	defer summaryMu.Unlock()
	summaries = append(summaries, fmt.Sprintf(format, args...))
}

func TestMain(m *testing.M) {
	seed = uint64(time.Now().UnixNano())
	if s := os.Getenv("HYMN_RELIABILITY_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "HYMN_RELIABILITY_SEED:", err)
			os.Exit(2)
		}
		seed = v
	}
	hymnBin = os.Getenv("HYMN_BIN")
	var tmp string
	if hymnBin == "" && os.Geteuid() == 0 {
		var err error
		tmp, err = os.MkdirTemp("", "hymn-reliability-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		hymnBin = filepath.Join(tmp, "hymn")
		cmd := exec.Command("go", "build", "-o", hymnBin, "github.com/hymn-net/hymn/cmd/hymn")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building hymn:", err)
			_ = os.RemoveAll(tmp) // best effort: exiting on the build's error
			os.Exit(1)
		}
	}
	// Orphans of the hymn processes under test (a kill -9'ed run's QEMU,
	// a shell a failed command left) become this process's children, so
	// the tests can see and account for every one of them.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "reliability: PR_SET_CHILD_SUBREAPER:", err)
		if tmp != "" {
			_ = os.RemoveAll(tmp) // best effort: exiting on prctl's error
		}
		os.Exit(1)
	}
	mode := "short"
	if full {
		mode = "full"
	}
	fmt.Printf("reliability: %s run, seed %d (HYMN_RELIABILITY_SEED=%d repeats it)\n", mode, seed, seed)
	code := m.Run()
	for _, s := range summaries {
		fmt.Println("reliability: " + s)
	}
	if tmp != "" {
		if err := os.RemoveAll(tmp); err != nil {
			fmt.Fprintln(os.Stderr, "reliability:", err)
		}
	}
	os.Exit(code)
}

func rng(salt uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, salt)) }

// proc is a process identified by pid and start time, so a reused pid is
// never taken for it.
type proc struct {
	pid   int
	start uint64
}

func statFields(pid int) []string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(data[i+1:]))
}

func procOf(pid int) (proc, bool) {
	f := statFields(pid)
	if len(f) < 20 {
		return proc{}, false
	}
	st, _ := strconv.ParseUint(f[19], 10, 64)
	return proc{pid, st}, true
}

// running reports whether p still runs (not exited, not a zombie).
func (p proc) running() bool {
	f := statFields(p.pid)
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return false
	}
	st, _ := strconv.ParseUint(f[19], 10, 64)
	return st == p.start
}

// exists reports whether p is still in the process table (even as a
// zombie).
func (p proc) exists() bool {
	f := statFields(p.pid)
	if len(f) < 20 {
		return false
	}
	st, _ := strconv.ParseUint(f[19], 10, 64)
	return st == p.start
}

func (p proc) String() string {
	base := "/proc/" + strconv.Itoa(p.pid)
	comm, _ := os.ReadFile(base + "/comm")
	cmd, _ := os.ReadFile(base + "/cmdline")
	state, ppid := "?", "?"
	if f := statFields(p.pid); len(f) > 1 {
		state, ppid = f[0], f[1]
	}
	return fmt.Sprintf("%d %s (state %s, parent %s: %s)", p.pid, strings.TrimSpace(string(comm)), state, ppid,
		strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")))
}

// descendants returns every process below pid.
func descendants(pid int) []proc {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(p); len(f) > 1 {
			pp, _ := strconv.Atoi(f[1])
			children[pp] = append(children[pp], p)
		}
	}
	var out []proc
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			if pr, ok := procOf(c); ok {
				out = append(out, pr)
			}
			walk(c)
		}
	}
	walk(pid)
	return out
}

// orphans returns the processes this (subreaper) process inherited that
// are not in known, reaping the ones that have exited.
func orphans(known map[int]bool) []proc {
	var out []proc
	for _, p := range descendantsDirect(os.Getpid()) {
		if known[p.pid] {
			continue
		}
		if !p.running() {
			var ws syscall.WaitStatus
			// Reaping an exited child: nothing to learn from the result.
			_, _ = syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
			continue
		}
		out = append(out, p)
	}
	return out
}

func descendantsDirect(pid int) []proc {
	var out []proc
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(p); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			if pr, ok := procOf(p); ok {
				out = append(out, pr)
			}
		}
	}
	return out
}

// own holds the pids of the processes the tests start themselves (exec
// reaps those); reapOrphans reaps every other exited child.
var own = struct {
	sync.Mutex
	pids map[int]bool
}{pids: map[int]bool{}}

// startOwn starts cmd as one of the tests' own processes: registered
// before the reaper can look at it.
func startOwn(cmd *exec.Cmd) error {
	own.Lock()
	defer own.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	own.pids[cmd.Process.Pid] = true
	return nil
}

// reapOrphans reaps, until stop closes, the exited children this
// subreaper inherits (a killed run's QEMU and shells), as init would for
// hymn clean run by hand. The tests' own processes are left to exec.
func reapOrphans(stop <-chan struct{}) (done <-chan struct{}) {
	d := make(chan struct{})
	go func() {
		defer close(d)
		self := strconv.Itoa(os.Getpid())
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			own.Lock()
			entries, _ := os.ReadDir("/proc")
			for _, e := range entries {
				pid, err := strconv.Atoi(e.Name())
				if err != nil || own.pids[pid] {
					continue
				}
				f := statFields(pid)
				if len(f) < 2 || f[0] != "Z" || f[1] != self {
					continue
				}
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil) // reaping a zombie child
			}
			own.Unlock()
		}
	}()
	return d
}

// reapAndKill ends leftovers the test found (after reporting them), so one
// failure does not spill into the next case.
func reapAndKill(ps []proc) {
	for _, p := range ps {
		if p.running() {
			_ = syscall.Kill(p.pid, syscall.SIGKILL) // it may end on its own meanwhile
		}
	}
	for _, p := range ps {
		var ws syscall.WaitStatus
		for i := 0; i < 100; i++ {
			if wp, err := syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil); wp == p.pid || errors.Is(err, syscall.ECHILD) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// runState lists what a run has on the machine: namespaces, records and
// state under /run/hymn, cgroups and root-namespace links. Empty means the
// run left nothing.
func runState(run string) []string {
	var out []string
	ns, _ := owner.Namespaces(run)
	for _, n := range ns {
		out = append(out, "namespace "+n)
	}
	for _, p := range []string{run + ".json", run + "-sriov"} {
		if _, err := os.Stat(filepath.Join(owner.StateDir, p)); err == nil {
			out = append(out, "state "+filepath.Join(owner.StateDir, p))
		}
	}
	for _, dir := range []string{"vm", "ovs"} {
		m, _ := filepath.Glob(filepath.Join(owner.StateDir, dir, owner.Prefix+run+"-*"))
		for _, f := range m {
			out = append(out, "state "+f)
		}
	}
	for _, s := range owner.NATSlotsOf(run) {
		out = append(out, fmt.Sprintf("NAT slot %d", s))
	}
	for _, base := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuset"} {
		m, _ := filepath.Glob(filepath.Join(base, owner.Prefix+run+"-*"))
		for _, f := range m {
			out = append(out, "cgroup "+f)
		}
	}
	for _, l := range rootLinks() {
		if l.alias == owner.LinkAlias(run) {
			out = append(out, "root link "+l.name)
		}
	}
	return out
}

type rootLink struct{ name, alias string }

// rootLinks lists the root namespace's interfaces from sysfs.
func rootLinks() []rootLink {
	entries, _ := os.ReadDir("/sys/class/net")
	var out []rootLink
	for _, e := range entries {
		alias, _ := os.ReadFile(filepath.Join("/sys/class/net", e.Name(), "ifalias"))
		out = append(out, rootLink{e.Name(), strings.TrimSpace(string(alias))})
	}
	return out
}

// runsOf returns the runs whose record names pid as owner.
func runsOf(pid int) []string {
	var out []string
	entries, _ := os.ReadDir(owner.StateDir)
	for _, e := range entries {
		run, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !owner.ValidRunID(run) {
			continue
		}
		if st, err := owner.ReadState(run); err == nil && st.PID == pid {
			out = append(out, run)
		}
	}
	return out
}

// tempsOf lists temporary records a writer with this pid left.
func tempsOf(pid int) []string {
	var out []string
	for _, dir := range []string{owner.StateDir, filepath.Join(owner.StateDir, "nat")} {
		m, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf(".tmp-%d-*", pid)))
		out = append(out, m...)
	}
	return out
}

// lines splits output into its lines.
func lines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
