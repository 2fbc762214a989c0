package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
)

// run executes the hymn command in-process and returns its exit status,
// stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Execute(context.Background(), args, devNull(t), &out, &errOut)
	return code, out.String(), errOut.String()
}

// devNull is an empty stdin for in-process runs.
func devNull(t *testing.T) *os.File {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() }) // /dev/null, read-only
	return f
}

// The walkthrough's testTopoChange and testConnectivity, as a user types them.
func TestMNPingAll(t *testing.T) {
	testenv.Root(t)
	for spec, want := range map[string]string{
		"single,3":              "*** Results: 0% dropped (6/6 received)\n",
		"linear,4":              "*** Results: 0% dropped (12/12 received)\n",
		"tree,depth=2,fanout=2": "*** Results: 0% dropped (12/12 received)\n",
	} {
		code, _, stderr := run(t, "--topo", spec, "--test", "pingall")
		if code != 0 || !strings.Contains(stderr, want) {
			t.Errorf("hymn --topo %s --test pingall: exit %d, want %q in:\n%s", spec, code, want, stderr)
		}
	}
}

// TestMNOutputIsMininets: with Mininet's switch (--switch lxbr) hymn prints
// Mininet's lines exactly; with its own default it prints them too, plus
// the one line after "*** Creating network" that says which switch it chose
// (TestDefaultSwitchSaysWhich covers that line).
func TestMNOutputIsMininets(t *testing.T) {
	testenv.Root(t)
	code, stdout, stderr := run(t, "--switch", "lxbr", "--topo", "single,3", "--test", "pingall")
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	_, _, byDefault := run(t, "--topo", "single,3", "--test", "pingall")
	if first, rest, ok := strings.Cut(byDefault, "\n"); ok {
		if line, rest, ok := strings.Cut(rest, "\n"); ok && strings.HasPrefix(line, "*** Switches: bpf ") {
			byDefault = first + "\n" + rest
		}
	}
	if strip := regexp.MustCompile(`completed in [0-9.]+ seconds`); strip.ReplaceAllString(byDefault, "") != strip.ReplaceAllString(stderr, "") {
		t.Errorf("the default switch's output, without its *** Switches: line, differs from --switch lxbr's:\n%s\nwant:\n%s", byDefault, stderr)
	}
	want := "*** Creating network\n*** Adding controller\n*** Adding hosts:\nh1 h2 h3 \n*** Adding switches:\ns1 \n" +
		"*** Adding links:\n(h1, s1) (h2, s1) (h3, s1) \n*** Configuring hosts\nh1 h2 h3 \n" +
		"*** Starting controller\n\n*** Starting 1 switches\ns1 \n*** Waiting for switches to connect\ns1 \n" +
		"*** Ping: testing ping reachability\nh1 -> h2 h3 \nh2 -> h1 h3 \nh3 -> h1 h2 \n" +
		"*** Results: 0% dropped (6/6 received)\n*** Stopping 0 controllers\n\n*** Stopping 3 links\n...\n" +
		"*** Stopping 1 switches\ns1 \n*** Stopping 3 hosts\nh1 h2 h3 \n*** Done\n"
	if !strings.HasPrefix(stderr, want) {
		t.Errorf("output differs from Mininet's.\ngot:\n%s\nwant:\n%s", stderr, want)
	}
	if !regexp.MustCompile(`\ncompleted in \d+\.\d{3} seconds\n$`).MatchString(stderr) {
		t.Errorf("no 'completed in X seconds' line at the end:\n%s", stderr)
	}
	// -v output hides the build lines but keeps the results.
	_, _, stderr = run(t, "--topo", "single,2", "--test", "pingall", "-v", "output")
	if strings.Contains(stderr, "*** Creating network") || !strings.Contains(stderr, "2/2 received") {
		t.Errorf("-v output:\n%s", stderr)
	}
}

// testBenchmark of Mininet's walkthrough: --test none completes in under 2 s.
func TestMNTestNoneUnderTwoSeconds(t *testing.T) {
	testenv.Root(t)
	code, _, stderr := run(t, "--test", "none")
	m := regexp.MustCompile(`completed in (\d+\.\d+) seconds`).FindStringSubmatch(stderr)
	if code != 0 || m == nil {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	// hymn times itself: its own pauses are the measurement's.
	secs, _ := strconv.ParseFloat(m[1], 64)
	testenv.Elapsed(t, "--test none, as hymn reports it", time.Duration(secs*float64(time.Second)), 2*time.Second)
}

func TestMNIperf(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "iperf3")
	code, _, stderr := run(t, "--test", "iperf")
	m := regexp.MustCompile(`\*\*\* Results: \['([\d.]+) ([KMGT]?)bits/sec', '([\d.]+) ([KMGT]?)bits/sec'\]`).FindStringSubmatch(stderr)
	if code != 0 || m == nil {
		t.Fatalf("exit %d, no iperf results line:\n%s", code, stderr)
	}
	for _, v := range []string{m[1], m[3]} {
		if f, _ := strconv.ParseFloat(v, 64); f <= 0 {
			t.Errorf("iperf rate %s is not positive", v)
		}
	}
}

func TestMNBadInput(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--topo", "foo", "--test", "pingall"}, "valid topologies are: linear, minimal, reversed, single, torus, tree"},
		{[]string{"--topo", "linear,0", "--test", "pingall"}, "k must be at least 1"},
		{[]string{"--topo", "tree,depth=-1", "--test", "pingall"}, "depth must be at least 0"},
		{[]string{"--topo", "linear,abc", "--test", "pingall"}, `k must be an integer, got "abc"`},
		{[]string{"--test", "bogus"}, "test bogus is unknown - please specify one of"},
		{[]string{"--controller", "nox", "--test", "pingall"}, `unknown kind "nox"`},
		{[]string{"--switch", "ivs", "--test", "pingall"}, "Indigo Virtual Switch is not available"},
		{[]string{"--ipbase", "10.0.0/8", "--test", "pingall"}, "not an IPv4 network"},
		{[]string{"-v", "loud"}, `unknown verbosity "loud"`},
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	}
	for _, c := range cases {
		code, _, stderr := run(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("hymn %v: exit %d, stderr %q; want exit 2 and %q", c.args, code, stderr, c.want)
		}
		if strings.Count(strings.TrimSpace(stderr), "\n") > 0 || strings.Contains(stderr, "*** Creating network") || strings.Contains(stderr, "goroutine") {
			t.Errorf("hymn %v: want one error line and nothing built, got:\n%s", c.args, stderr)
		}
	}
}

func TestMNMissingTool(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	for _, tool := range []string{"ip", "bash"} {
		p, _ := exec.LookPath(tool)
		if err := os.Symlink(p, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	// pingall needs no ping program (hymn sends its own echo requests
	// from namespace nodes), so it still works without one.
	code, _, stderr := run(t, "--test", "pingall")
	if code != 0 || !strings.Contains(stderr, "0% dropped") {
		t.Errorf("pingall without ping installed: exit %d: %s", code, stderr)
	}
	code, _, stderr = run(t, "--test", "iperf")
	if code != 2 || !strings.Contains(stderr, "iperf3 is not installed") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// buildHymn builds the hymn binary for tests that need a separate process.
func buildHymn(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hymn")
	out, err := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, "../cmd/hymn").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestNotRoot(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "setpriv")
	bin := buildHymn(t)
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "--test", "pingall")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "hymn must run as root") {
		t.Errorf("as nobody: exit %d, output %q", cmd.ProcessState.ExitCode(), out)
	}
}

// TestKillNineThenClean kills hymn in the middle of building linear,1000 and
// checks that hymn clean removes everything and that a second clean finds
// nothing of that run.
func TestKillNineThenClean(t *testing.T) {
	testenv.Root(t)
	bin := buildHymn(t)
	// linear,1000: a build of 2000 namespaces takes seconds, so the kill
	// lands mid-build (linear,200 once built and tore down between two
	// looks at its namespaces in a fresh-root run).
	cmd := exec.Command(bin, "--topo", "linear,1000", "--test", "build")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }() // killed: "signal: killed"
	// Find its run and kill it once it has made some namespaces.
	run := ""
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && run == "" {
		entries, _ := os.ReadDir(owner.StateDir)
		for _, e := range entries {
			// Only finished records: a state file is written under a
			// temporary name (.tmp-...) first and renamed, and taking that
			// name for the run waited out the deadline for namespaces of
			// no run (1 in 10 beside stall-inject).
			if strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			data, _ := os.ReadFile(filepath.Join(owner.StateDir, e.Name()))
			if strings.Contains(string(data), `"pid":`+strconv.Itoa(cmd.Process.Pid)+`,`) {
				run = strings.TrimSuffix(e.Name(), ".json")
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if run == "" {
		_ = cmd.Process.Kill() // the test fails anyway; it may have ended
		t.Fatal("hymn never recorded its run")
	}
	// Whatever fails below, the killed run's namespaces do not outlive
	// the test (a failed run once left 2000 behind).
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // gone already when the test got that far
		<-waited
		if _, _, err := owner.RemoveRun(run); err != nil {
			t.Errorf("removing run %s: %v", run, err)
		}
	})
	for time.Now().Before(deadline) {
		if ns, _ := owner.Namespaces(run); len(ns) >= 20 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-waited:
		t.Fatal("hymn finished before the test could kill it mid-build")
	default:
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Errorf("kill -9 hymn: %v", err)
	}
	<-waited
	ns, err := owner.Namespaces(run)
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) == 0 {
		t.Fatal("the killed run left no namespaces; the test did not kill it mid-build")
	}
	out, err := exec.Command(bin, "clean").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "*** Removed") {
		t.Fatalf("hymn clean: %v\n%s", err, out)
	}
	if ns, _ := owner.Namespaces(run); len(ns) > 0 {
		t.Errorf("after clean, namespaces of run %s remain: %d", run, len(ns))
	}
	links, _ := exec.Command("ip", "-o", "link").Output()
	if strings.Contains(string(links), "link-netns "+owner.NamespaceName(run, "")) {
		t.Errorf("root namespace has leftover links:\n%s", links)
	}
	out, _ = exec.Command(bin, "-c").CombinedOutput()
	if strings.Contains(string(out), run) && !strings.Contains(string(out), "still running") {
		t.Errorf("second clean touched run %s again:\n%s", run, out)
	}
	if !strings.Contains(string(out), "*** Nothing to clean") && !strings.Contains(string(out), "*** Removed") {
		t.Errorf("second clean: %s", out)
	}
}

// The walkthrough's testCustomTopo, and hymn run on every YAML example.
func TestMNCustomTopologyAndFiles(t *testing.T) {
	testenv.Root(t)
	if _, err := exec.LookPath("python3"); err == nil {
		code, _, stderr := run(t, "--custom", "../examples/topo-2sw-2host.py", "--topo", "mytopo", "--test", "pingall")
		if code != 0 || !strings.Contains(stderr, "*** Results: 0% dropped (2/2 received)") {
			t.Errorf("custom topology: exit %d\n%s", code, stderr)
		}
		code, _, stderr = run(t, "--custom", "../topo/testdata/custom-raise.py", "--topo", "x", "--test", "pingall")
		if code != 2 || strings.Contains(stderr, "*** Creating network") {
			t.Errorf("custom file that raises: exit %d\n%s", code, stderr)
		}
	}
	files, _ := filepath.Glob("../examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no YAML examples")
	}
	for _, f := range files {
		code, _, stderr := run(t, "run", f, "--test", "pingall")
		if code != 0 || !regexp.MustCompile(`\*\*\* Results: 0% dropped \((\d+)/(\d+) received\)`).MatchString(stderr) {
			t.Errorf("hymn run %s --test pingall: exit %d\n%s", f, code, stderr)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("nodes:\n  - name: h1\n    kind: host\n    colour: blue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "run", bad, "--test", "pingall")
	if code != 2 || !strings.Contains(stderr, "bad.yaml:4") || !strings.Contains(stderr, "colour") {
		t.Errorf("unknown key: exit %d: %s", code, stderr)
	}
}

// DPDK asked for in a build without the dpdk tag is a usage error.
func TestEmulateDPDKWithoutTheTag(t *testing.T) {
	if dpdkBuilt {
		t.Skip("this build has DPDK")
	}
	code, _, stderr := run(t, "emulate", "--dpdk", "--a", "net_null0,", "--b", "net_null1,", "delay", "1ms")
	if code != 2 || !strings.Contains(stderr, "rebuild with -tags dpdk") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// --switch ovsbr: Open vSwitch in userspace mode, where it is installed.
func TestMNOVSBridge(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "ovs-vswitchd")
	code, _, stderr := run(t, "--switch", "ovsbr", "--topo", "linear,3", "--test", "pingall")
	if code != 0 || !strings.Contains(stderr, "*** Results: 0% dropped (6/6 received)") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	entries, _ := os.ReadDir("/run/hymn/ovs")
	for _, e := range entries {
		if run, ok := owner.RunOfNamespace(e.Name()); ok && !owner.Alive(run) {
			t.Errorf("left behind: /run/hymn/ovs/%s", e.Name())
		}
	}
}
