package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
)

// shellPingResolution is the resolution of an RTT ping prints: the kernel
// stamps the echo request and its reply to the microsecond, and ping
// prints the difference to the thousandth of a millisecond (above 100 ms
// to the tenth: the figure here).
var shellPingResolution = testenv.Resolution{Value: 0.1, Derived: "ping's printed RTT (kernel timestamps; 0.1 ms steps above 100 ms)"}

// runShellScript runs hymn with args and the mininet> commands as its
// --post script, and returns what it printed.
func runShellScript(t *testing.T, bin string, commands []string, args ...string) string {
	t.Helper()
	post := filepath.Join(t.TempDir(), "post.txt")
	if err := os.WriteFile(post, []byte(strings.Join(commands, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "--switch", "lxbr", "--topo", "minimal", "--test", "none", "--post", post)...)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hymn %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// section is the output between the line "=== name" (printed by an echo
// in a node) and the next such line.
func section(out, name string) string {
	_, rest, ok := strings.Cut(out, "=== "+name+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "=== "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

var rttRE = regexp.MustCompile(`time=([0-9.]+) ms`)

func rtts(t *testing.T, text string) []float64 {
	var v []float64
	for _, m := range rttRE.FindAllStringSubmatch(text, -1) {
		f, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatalf("RTT %q: %v", m[1], err)
		}
		v = append(v, f)
	}
	return v
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestTCInShell: in the mininet> shell, tc in a node is hymn's by default,
// as in hymn python: netem delay 100ms on h1-eth0 delays h1's pings by
// 100 ms on this kernel without netem, netem duplicate shows duplicates
// in ping's summary, tc -s shows the qdisc and its counters, py
// h1.cmd('tc ...') finds the same tc, and del removes the delay. With
// --tc kernel the node's tc is the system's.
func TestTCInShell(t *testing.T) {
	testenv.RootAndTools(t, "bash", "ip", "ping", "tc")
	bin := buildHymn(t)
	out := runShellScript(t, bin, []string{
		"h1 echo === base",
		"h1 ping -c 20 -i 0.05 h2",
		"h1 echo === add",
		"h1 tc qdisc add dev h1-eth0 root netem delay 100ms; echo rc=$?",
		"h1 echo === delayed",
		"h1 ping -c 20 -i 0.05 h2",
		"h1 echo === show",
		"h1 tc -s qdisc show dev h1-eth0",
		"h1 echo === dup",
		"h1 tc qdisc change dev h1-eth0 root netem delay 1ms duplicate 50%; echo rc=$?",
		"h1 ping -c 40 -i 0.02 h2",
		"h1 echo === py",
		"py h1.cmd('tc qdisc show dev h1-eth0')",
		"h1 echo === del",
		"h1 tc qdisc del dev h1-eth0 root; echo rc=$?",
		"h1 ping -c 20 -i 0.05 h2",
		"h1 echo === end",
	})
	base, delayed, after := rtts(t, section(out, "base")), rtts(t, section(out, "delayed")), rtts(t, section(out, "del"))
	if len(base) < 18 || len(delayed) < 18 || len(after) < 18 {
		t.Fatalf("pings answered: %d, %d, %d of 20\n%s", len(base), len(delayed), len(after), out)
	}
	if add := section(out, "add"); !strings.Contains(add, "rc=0") {
		t.Errorf("tc qdisc add ... netem delay 100ms: %q", add)
	}
	testenv.Judge(t, testenv.Measurement{Quantity: "RTT floor through netem delay 100ms (ms)", Got: slices.Min(delayed),
		Target: 100, Tolerance: 1, Bound: testenv.AtLeast, Resolution: shellPingResolution})
	testenv.Judge(t, testenv.Measurement{Quantity: "median RTT through netem delay 100ms, less the plain median (ms)",
		Got: median(delayed) - median(base), Target: 100, Tolerance: 10, Bound: testenv.Within, Resolution: shellPingResolution})
	testenv.Judge(t, testenv.Measurement{Quantity: "median RTT after tc qdisc del (ms)", Got: median(after),
		Target: median(base), Tolerance: 10, Bound: testenv.AtMost, Resolution: shellPingResolution})
	if show := section(out, "show"); !strings.Contains(show, "qdisc netem 8001: root refcnt 2 limit 1000 delay 100ms") ||
		!regexp.MustCompile(`Sent \d+ bytes [1-9]\d* pkt`).MatchString(show) || !strings.Contains(show, "backlog") {
		t.Errorf("tc -s qdisc show dev h1-eth0:\n%s", show)
	}
	if dup := section(out, "dup"); !strings.Contains(dup, "rc=0") || !regexp.MustCompile(`\+[1-9]\d* duplicates`).MatchString(dup) {
		t.Errorf("netem duplicate 50%%: no duplicates in ping's summary:\n%s", dup)
	}
	if py := section(out, "py"); !strings.Contains(py, "qdisc netem 8001: root refcnt 2 limit 1000 delay 1ms duplicate 50%") {
		t.Errorf("py h1.cmd('tc qdisc show ...'):\n%s", py)
	}
	if del := section(out, "del"); !strings.Contains(del, "rc=0") {
		t.Errorf("tc qdisc del: %q", del)
	}

	// --tc kernel: the system's tc, which says what this kernel has.
	out = runShellScript(t, bin, []string{
		"h1 echo === env",
		"h1 echo tc=$HYMN_TC",
		"h1 echo === show",
		"h1 tc qdisc show dev h1-eth0",
		"h1 echo === end",
	}, "--tc", "kernel")
	if env := section(out, "env"); !strings.Contains(env, "tc=kernel") {
		t.Errorf("--tc kernel: the node's shell has %q", env)
	}
	if show := section(out, "show"); strings.Contains(show, "netem") || !strings.Contains(show, "qdisc ") {
		t.Errorf("--tc kernel: tc qdisc show dev h1-eth0 is not the kernel's:\n%s", show)
	}
	code, _, stderr := runHymn(t, "--tc", "fast", "--test", "none")
	if code != 2 || !strings.Contains(stderr, "give emulator or kernel") {
		t.Errorf("--tc fast: exit %d: %s", code, stderr)
	}
}
