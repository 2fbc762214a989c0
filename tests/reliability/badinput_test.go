package reliability

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
	"golang.org/x/sys/unix"
)

// badInput is one wrong, hostile or huge input. {dir} in args is replaced
// by the directory holding files.
type badInput struct {
	name  string
	args  []string
	files map[string]string
	fifos []string // named pipes made in {dir}: opening one to read would block
}

const vmCPUPinYAML = `nodes:
  - name: h1
    backend: vm
    params: {cpupin: "0-9223372036854775807"}
  - h2
links:
  - endpoints: [h1, h2]
`

func yamlNodes(nodes string, link string) string {
	return "nodes:\n" + nodes + "links:\n" + link
}

var badInputs = []badInput{
	// The hangs and silent acceptances of issue 11.
	{name: "run /dev/zero", args: []string{"run", "/dev/zero", "--test", "build"}},
	{name: "linear 100000000", args: []string{"--topo", "linear,100000000", "--test", "build"}},
	{name: "tree depth 30", args: []string{"--topo", "tree,depth=30,fanout=2", "--test", "build"}},
	{name: "VM cpupin huge range", args: []string{"run", "{dir}/cpupin.yaml", "--test", "build"}, files: map[string]string{"cpupin.yaml": vmCPUPinYAML}},
	{name: "host cpu NaN", args: []string{"--host", "cfs,cpu=NaN", "--test", "build"}},
	{name: "node name ..", args: []string{"run", "{dir}/dotdot.yaml", "--test", "build"},
		files: map[string]string{"dotdot.yaml": yamlNodes("  - ..\n  - h2\n", "  - endpoints: [.., h2]\n")}},
	{name: "node name -h", args: []string{"run", "{dir}/dash.yaml", "--test", "build"},
		files: map[string]string{"dash.yaml": yamlNodes("  - \"-h\"\n  - h2\n", "  - endpoints: [\"-h\", h2]\n")}},
	{name: "jitter 1e9 s", args: []string{"--link", "emu,delay=1s,jitter=1000000000s", "--test", "build"}},
	{name: "max_frame 1 MiB", args: []string{"--link", "emu,max_frame=1048576", "--test", "build"}},
	{name: "YAML delay abc", args: []string{"run", "{dir}/delay.yaml", "--test", "build"},
		files: map[string]string{"delay.yaml": yamlNodes("  - h1\n  - h2\n", "  - endpoints: [h1, h2]\n    params: {delay: abc}\n")}},
	{name: "YAML bad intf name", args: []string{"run", "{dir}/intf.yaml", "--test", "build"},
		files: map[string]string{"intf.yaml": yamlNodes("  - h1\n  - h2\n", "  - a: {node: h1, intf: \"-bad\"}\n    b: {node: h2}\n")}},
	{name: "YAML intf name with slash", args: []string{"run", "{dir}/intfslash.yaml", "--test", "build"},
		files: map[string]string{"intfslash.yaml": yamlNodes("  - h1\n  - h2\n", "  - a: {node: h1, intf: \"a/b\"}\n    b: {node: h2}\n")}},
	{name: "YAML over-long intf name", args: []string{"run", "{dir}/intflong.yaml", "--test", "build"},
		files: map[string]string{"intflong.yaml": yamlNodes("  - h1\n  - h2\n", "  - a: {node: h1, intf: h1-eth0123456789012}\n    b: {node: h2}\n")}},
	{name: "YAML over-long node name", args: []string{"run", "{dir}/nodelong.yaml", "--test", "build"},
		files: map[string]string{"nodelong.yaml": yamlNodes("  - averyveryverylongnodename\n  - h2\n", "  - endpoints: [averyveryverylongnodename, h2]\n")}},
	{name: "sriov vfs 1000000", args: []string{"--links", "sriov,vfs=1000000", "--test", "build"}},

	// Spec strings and flags.
	{name: "unknown topology", args: []string{"--topo", "bogus", "--test", "build"}},
	{name: "unknown switch", args: []string{"--switch", "nope", "--test", "build"}},
	{name: "unknown flag", args: []string{"--nosuchflag"}},
	{name: "linear -1", args: []string{"--topo", "linear,-1", "--test", "build"}},
	{name: "linear abc", args: []string{"--topo", "linear,abc", "--test", "build"}},
	{name: "tree depth -1", args: []string{"--topo", "tree,depth=-1", "--test", "build"}},
	{name: "torus 1x1", args: []string{"--topo", "torus,1,1", "--test", "build"}},
	{name: "tc delay abc", args: []string{"--link", "tc,delay=abc", "--test", "build"}},
	{name: "tc loss 150%", args: []string{"--link", "tc,loss=150", "--test", "build"}},
	{name: "tc bw -5", args: []string{"--link", "tc,bw=-5", "--test", "build"}},
	{name: "tc bw NaN", args: []string{"--link", "tc,bw=NaN", "--test", "build"}},
	{name: "emu unknown param", args: []string{"--link", "emu,nosuchparam=1", "--test", "build"}},
	{name: "unknown link type", args: []string{"--link", "bogus", "--test", "build"}},
	{name: "unknown node backend", args: []string{"--nodes", "bogus", "--test", "build"}},
	{name: "unknown link backend", args: []string{"--links", "bogus", "--test", "build"}},
	{name: "host cpu -1", args: []string{"--host", "cfs,cpu=-1", "--test", "build"}},
	{name: "host cpu Inf", args: []string{"--host", "cfs,cpu=Inf", "--test", "build"}},
	{name: "ipbase 999.0.0.0/8", args: []string{"--ipbase", "999.0.0.0/8", "--test", "build"}},
	{name: "ipbase /33", args: []string{"--ipbase", "10.0.0.0/33", "--test", "build"}},
	{name: "unknown test", args: []string{"--test", "bogus"}},
	{name: "unknown verbosity", args: []string{"-v", "bogus", "--test", "build"}},
	{name: "unknown controller", args: []string{"--controller", "bogus", "--test", "build"}},

	// Files: hymn YAML/JSON.
	{name: "run without a file", args: []string{"run"}},
	{name: "run missing file", args: []string{"run", "{dir}/missing.yaml", "--test", "build"}},
	{name: "run a directory", args: []string{"run", "{dir}", "--test", "build"}},
	// Not regular files: refused before they are opened (issue 22).
	{name: "run a FIFO", args: []string{"run", "{dir}/fifo.yaml", "--test", "build"}, fifos: []string{"fifo.yaml"}},
	{name: "MiniEdit FIFO", args: []string{"--custom", "{dir}/fifo.mn", "--test", "build"}, fifos: []string{"fifo.mn"}},
	{name: "custom .py FIFO", args: []string{"--custom", "{dir}/fifo.py", "--topo", "t", "--test", "build"}, fifos: []string{"fifo.py"}},
	{name: "--pre FIFO", args: []string{"--pre", "{dir}/fifo.pre", "--test", "build"}, fifos: []string{"fifo.pre"}},
	{name: "trace FIFO", args: []string{"run", "{dir}/trace.yaml", "--test", "build"}, fifos: []string{"fifo.trace"},
		files: map[string]string{"trace.yaml": yamlNodes("  - h1\n  - h2\n", "  - endpoints: [h1, h2]\n    params: {trace: fifo.trace}\n")}},
	{name: "trace device", args: []string{"run", "{dir}/tracedev.yaml", "--test", "build"},
		files: map[string]string{"tracedev.yaml": yamlNodes("  - h1\n  - h2\n", "  - endpoints: [h1, h2]\n    params: {trace: /dev/zero}\n")}},
	// Two interfaces with one address on one LAN (issue 22).
	{name: "YAML duplicate host address", args: []string{"run", "{dir}/dupip.yaml", "--test", "build"},
		files: map[string]string{"dupip.yaml": yamlNodes("  - {name: h1, ip: 10.0.0.1/24}\n  - {name: h2, ip: 10.0.0.1/24}\n  - {name: s1, kind: switch}\n",
			"  - endpoints: [h1, s1]\n  - endpoints: [h2, s1]\n")}},
	{name: "YAML duplicate automatic address", args: []string{"run", "{dir}/dupauto.yaml", "--test", "build"},
		files: map[string]string{"dupauto.yaml": yamlNodes("  - h1\n  - {name: h2, ip: 10.0.0.1/8}\n", "  - endpoints: [h1, h2]\n")}},
	{name: "YAML duplicate link-end address", args: []string{"run", "{dir}/duplink.yaml", "--test", "build"},
		files: map[string]string{"duplink.yaml": yamlNodes("  - h1\n  - {name: r1, kind: router}\n",
			"  - a: {node: h1, ip: 192.168.1.1/24}\n    b: {node: r1, ip: 192.168.1.1/24}\n")}},
	{name: "custom .py duplicate address", args: []string{"--custom", "{dir}/dupip.py", "--topo", "t", "--test", "build"},
		files: map[string]string{"dupip.py": "from mininet.topo import Topo\n\nclass T(Topo):\n    def build(self):\n" +
			"        s1 = self.addSwitch('s1')\n        for h in ('h1', 'h2'):\n            self.addLink(self.addHost(h, ip='10.0.0.7/8'), s1)\n\ntopos = {'t': (lambda: T())}\n"}},
	// kind=existing over interfaces the host does not have, or its loopback.
	{name: "YAML existing interface missing", args: []string{"run", "{dir}/exmiss.yaml", "--test", "build"},
		files: map[string]string{"exmiss.yaml": yamlNodes("  - h1\n  - h2\n", "  - a: {node: h1, intf: hxnosuch0}\n    b: {node: h2, intf: hxnosuch1}\n    kind: existing\n")}},
	{name: "YAML existing loopback", args: []string{"run", "{dir}/exlo.yaml", "--test", "build"},
		files: map[string]string{"exlo.yaml": yamlNodes("  - h1\n  - h2\n", "  - a: {node: h1, intf: lo}\n    b: {node: h2, intf: hxnosuch1}\n    kind: existing\n")}},
	{name: "YAML malformed", args: []string{"run", "{dir}/bad.yaml", "--test", "build"}, files: map[string]string{"bad.yaml": "nodes: [h1, \n  - : :\n"}},
	{name: "YAML unknown key", args: []string{"run", "{dir}/key.yaml", "--test", "build"}, files: map[string]string{"key.yaml": "nodez: [h1]\n"}},
	{name: "YAML duplicate node", args: []string{"run", "{dir}/dup.yaml", "--test", "build"},
		files: map[string]string{"dup.yaml": yamlNodes("  - h1\n  - h1\n", "  - endpoints: [h1, h1]\n")}},
	{name: "YAML link to unknown node", args: []string{"run", "{dir}/unk.yaml", "--test", "build"},
		files: map[string]string{"unk.yaml": yamlNodes("  - h1\n", "  - endpoints: [h1, h9]\n")}},
	{name: "YAML mtu 1000000", args: []string{"run", "{dir}/mtu.yaml", "--test", "build"},
		files: map[string]string{"mtu.yaml": yamlNodes("  - h1\n  - h2\n", "  - endpoints: [h1, h2]\n    params: {mtu: 1000000}\n")}},
	{name: "YAML bad IP", args: []string{"run", "{dir}/ip.yaml", "--test", "build"},
		files: map[string]string{"ip.yaml": yamlNodes("  - {name: h1, ip: 10.0.0.300/8}\n  - h2\n", "  - endpoints: [h1, h2]\n")}},
	{name: "YAML bad MAC", args: []string{"run", "{dir}/mac.yaml", "--test", "build"},
		files: map[string]string{"mac.yaml": yamlNodes("  - {name: h1, mac: \"zz:00:00:00:00:01\"}\n  - h2\n", "  - endpoints: [h1, h2]\n")}},
	{name: "YAML unknown kind", args: []string{"run", "{dir}/kind.yaml", "--test", "build"},
		files: map[string]string{"kind.yaml": yamlNodes("  - {name: h1, kind: toaster}\n  - h2\n", "  - endpoints: [h1, h2]\n")}},
	{name: "YAML alias bomb", args: []string{"run", "{dir}/bomb.yaml", "--test", "build"}, files: map[string]string{"bomb.yaml": aliasBomb()}},
	{name: "JSON malformed", args: []string{"run", "{dir}/bad.json", "--test", "build"}, files: map[string]string{"bad.json": `{"nodes": [`}},
	{name: "JSON wrong type", args: []string{"run", "{dir}/type.json", "--test", "build"}, files: map[string]string{"type.json": `{"nodes": 5}`}},
	{name: "JSON deep nesting", args: []string{"run", "{dir}/deep.json", "--test", "build"},
		files: map[string]string{"deep.json": `{"nodes": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`}},

	// MiniEdit and Mininet custom topologies.
	{name: "MiniEdit malformed", args: []string{"--custom", "{dir}/bad.mn", "--test", "build"}, files: map[string]string{"bad.mn": `{"hosts": [{"opts": `}},
	{name: "MiniEdit bad link delay", args: []string{"--custom", "{dir}/delay.mn", "--test", "build"}, files: map[string]string{"delay.mn": miniEditDelay}},
	{name: "custom .py syntax error", args: []string{"--custom", "{dir}/syntax.py", "--topo", "t", "--test", "build"},
		files: map[string]string{"syntax.py": "from mininet.topo import Topo\nclass T(Topo:\n"}},
	{name: "custom .py unknown topo", args: []string{"--custom", "{dir}/ok.py", "--topo", "nope", "--test", "build"}, files: map[string]string{"ok.py": customPy("")}},
	{name: "custom .py bad intfName1", args: []string{"--custom", "{dir}/intf.py", "--topo", "t", "--test", "build"},
		files: map[string]string{"intf.py": customPy(", intfName1='-x'")}},
	{name: "custom .py delay abc", args: []string{"--custom", "{dir}/delay.py", "--topo", "t", "--test", "build"},
		files: map[string]string{"delay.py": customPy(", delay='abc'")}},
}

func customPy(linkOpts string) string {
	return `from mininet.topo import Topo

class T(Topo):
    def build(self):
        h1 = self.addHost('h1')
        s1 = self.addSwitch('s1')
        self.addLink(h1, s1` + linkOpts + `)

topos = {'t': (lambda: T())}
`
}

const miniEditDelay = `{"application": {"ipBase": "10.0.0.0/8", "switchType": "lxbr"},
 "controllers": [],
 "hosts": [{"number": "1", "opts": {"hostname": "h1", "nodeNum": 1}, "x": "1", "y": "1"},
           {"number": "2", "opts": {"hostname": "h2", "nodeNum": 2}, "x": "2", "y": "2"}],
 "switches": [{"number": "1", "opts": {"hostname": "s1", "nodeNum": 1, "switchType": "default"}, "x": "3", "y": "3"}],
 "links": [{"src": "h1", "dest": "s1", "opts": {"delay": "abc"}},
           {"src": "h2", "dest": "s1", "opts": {}}],
 "version": "2"}
`

// aliasBomb is a "billion laughs" file: 10^12 nodes once its aliases
// are expanded, a few hundred bytes on disk.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("nodes:\n  - name: h1\n    params:\n      a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 12; i++ {
		fmt.Fprintf(&b, "      a%d: &a%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	b.WriteString("  - h2\nlinks:\n  - endpoints: [h1, h2]\n")
	return b.String()
}

// hangLimit is how long one bad input may take: "no hang" with room for
// a loaded 2-core machine.
func hangLimit() time.Duration {
	if v, err := time.ParseDuration(os.Getenv("HYMN_RELIABILITY_HANG")); err == nil {
		return v
	}
	return 10 * time.Second
}

// claimWatch records, through inotify, every file created under
// /run/hymn and /run/hymn/nat: a run's record is always written first to
// .tmp-<pid>-..., so a process that claimed a run (got past validation)
// shows up by its pid even if it removed everything again.
type claimWatch struct {
	fd    int
	mu    sync.Mutex
	names []string
	done  chan struct{}
}

func newClaimWatch() (*claimWatch, error) {
	for _, d := range []string{owner.StateDir, filepath.Join(owner.StateDir, "nat")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{owner.StateDir, filepath.Join(owner.StateDir, "nat")} {
		if _, err := unix.InotifyAddWatch(fd, d, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
			_ = unix.Close(fd) // the watch's error is the one to report
			return nil, err
		}
	}
	w := &claimWatch{fd: fd, done: make(chan struct{})}
	go w.read()
	return w, nil
}

func (w *claimWatch) read() {
	defer close(w.done)
	buf := make([]byte, 64*1024)
	for {
		n, err := unix.Read(w.fd, buf)
		if err != nil || n <= 0 {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			nameLen := int(uint32(buf[off+12]) | uint32(buf[off+13])<<8 | uint32(buf[off+14])<<16 | uint32(buf[off+15])<<24)
			name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+nameLen], "\x00"))
			w.mu.Lock()
			w.names = append(w.names, name)
			w.mu.Unlock()
			off += unix.SizeofInotifyEvent + nameLen
		}
	}
}

// claimedBy returns the temporary record names a pid created.
func (w *claimWatch) claimedBy(pid int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	prefix := ".tmp-" + strconv.Itoa(pid) + "-"
	for _, n := range w.names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

func (w *claimWatch) close() {
	// An inotify descriptor: closing it loses nothing (and ends read).
	_ = unix.Close(w.fd)
}

// hymnNamespaces lists the hymn namespaces on the machine.
func hymnNamespaces() map[string]bool {
	out := map[string]bool{}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), owner.Prefix) {
			out[e.Name()] = true
		}
	}
	return out
}

// TestBadInputs runs every bad input against the built binary: each must
// exit 2 with exactly one line on stderr, quickly, having built nothing.
func TestBadInputs(t *testing.T) {
	testenv.Root(t)
	if len(badInputs) < 40 {
		t.Fatalf("only %d bad inputs; the suite promises at least 40", len(badInputs))
	}
	watch, err := newClaimWatch()
	if err != nil {
		t.Fatal(err)
	}
	defer watch.close()
	dir := t.TempDir()
	handled := 0
	var slowest time.Duration
	var failed []string
	for _, c := range badInputs {
		ok := t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			took := runBadInput(t, watch, dir, c)
			slowest = max(slowest, took)
		})
		if ok {
			handled++
		} else {
			failed = append(failed, c.name)
		}
	}
	summary("bad inputs handled %d/%d (exit 2, one line, nothing built, slowest %v)", handled, len(badInputs), slowest.Round(time.Millisecond))
	if len(failed) > 0 {
		summary("bad inputs failing: %s", strings.Join(failed, "; "))
	}
}

func runBadInput(t *testing.T, watch *claimWatch, dir string, c badInput) time.Duration {
	for _, name := range c.fifos {
		path := filepath.Join(dir, name)
		// A FIFO an earlier case left, absent the first time; should it
		// fail to go, Mkfifo fails.
		_ = os.Remove(path)
		if err := unix.Mkfifo(path, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range c.files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = strings.ReplaceAll(a, "{dir}", dir)
	}
	nsBefore := hymnNamespaces()
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit())
	defer cancel()
	cmd := exec.CommandContext(ctx, hymnBin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = nil // /dev/null: a missed validation that reaches the shell ends at once
	cmd.WaitDelay = time.Second
	t0 := time.Now()
	err := cmd.Start()
	if err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	err = cmd.Wait()
	took := time.Since(t0)
	if ctx.Err() != nil {
		t.Errorf("hung: killed after %v", hangLimit())
	}
	code := cmd.ProcessState.ExitCode()
	if code != 2 {
		t.Errorf("exit status %d (%v), want 2", code, err)
	}
	errLines := lines(stderr.Bytes())
	if len(errLines) != 1 || strings.TrimSpace(errLines[0]) == "" || !bytes.HasSuffix(stderr.Bytes(), []byte("\n")) {
		t.Errorf("stderr has %d lines, want exactly one:\n%s", len(errLines), clip(stderr.String()))
	} else {
		t.Logf("%s (%v)", errLines[0], took.Round(time.Millisecond))
	}
	// Nothing built: no run claimed (the record comes before anything
	// else), nothing of a run left, no process left behind.
	time.Sleep(20 * time.Millisecond) // let inotify deliver
	if claims := watch.claimedBy(pid); len(claims) > 0 {
		t.Errorf("got past validation: claimed a run (%v)", claims)
	}
	for _, run := range runsOf(pid) {
		t.Errorf("left run %s: %v", run, runState(run))
		if out, err := exec.Command(hymnBin, "clean").CombinedOutput(); err != nil {
			t.Errorf("hymn clean: %v\n%s", err, out)
		}
	}
	if left := tempsOf(pid); len(left) > 0 {
		t.Errorf("left temporary records %v", left)
	}
	if ps := orphans(nil); len(ps) > 0 {
		t.Errorf("left processes %v", ps)
		reapAndKill(ps)
	}
	for ns := range hymnNamespaces() {
		if nsBefore[ns] {
			continue
		}
		if run, ok := owner.RunOfNamespace(ns); ok && !owner.Alive(run) {
			if st, err := owner.ReadState(run); err != nil || st.PID == pid {
				t.Errorf("left namespace %s", ns)
			}
		}
	}
	return took
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}
