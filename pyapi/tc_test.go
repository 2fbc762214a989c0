package pyapi_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/internal/testenv"
)

// pingResolution is the resolution of an RTT ping prints: the kernel
// stamps the echo request and its reply to the microsecond, and ping
// prints the difference to the thousandth of a millisecond (above 100 ms
// to the tenth: the figure here).
var pingResolution = testenv.Resolution{Value: 0.1, Derived: "ping's printed RTT (kernel timestamps; 0.1 ms steps above 100 ms)"}

// TestTCInNodes runs tc in a node's shell and popen the way scripts do
// (testdata/tc/netem.py): netem on a host's interface delays its egress
// by what it says, on this kernel without netem; tc -s shows the qdisc
// and its counters in tc's format; a second add, an unknown option and
// a del answer as tc does; a tbf under a netem on a switch port shows
// both; the loopback is the system's tc's.
func TestTCInNodes(t *testing.T) {
	testenv.RootAndTools(t, "python3", "bash", "ip", "ping", "tc")
	script, err := filepath.Abs("testdata/tc/netem.py")
	if err != nil {
		t.Fatal(err)
	}
	text := runPython(t, t.TempDir(), 5*time.Minute, script)
	var out struct {
		Base, Delayed, After                             []float64
		Add, Show, ShowAll, Again, Unknown, Dup, DupPing string
		Del, Switch, Lo                                  string
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &out); err != nil {
		t.Fatalf("the script's output: %v\n%s", err, text)
	}
	median := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	if len(out.Base) < 95 || len(out.Delayed) < 95 || len(out.After) < 18 {
		t.Fatalf("pings answered: %d, %d, %d of 100, 100, 20\n%s", len(out.Base), len(out.Delayed), len(out.After), text)
	}
	if !strings.Contains(out.Add, "rc=0") {
		t.Errorf("tc qdisc add ... netem delay 100ms: %q", out.Add)
	}
	base := median(out.Base)
	testenv.Judge(t, testenv.Measurement{Quantity: "RTT floor through netem delay 100ms (ms)", Got: slices.Min(out.Delayed),
		Target: 100, Tolerance: 1, Bound: testenv.AtLeast, Resolution: pingResolution})
	testenv.Judge(t, testenv.Measurement{Quantity: "median RTT through netem delay 100ms, less the plain median (ms)",
		Got: median(out.Delayed) - base, Target: 100, Tolerance: 10, Bound: testenv.Within, Resolution: pingResolution})
	testenv.Judge(t, testenv.Measurement{Quantity: "median RTT after tc qdisc del (ms)", Got: median(out.After),
		Target: base, Tolerance: 10, Bound: testenv.AtMost, Resolution: pingResolution})
	if !strings.HasPrefix(out.Show, "qdisc netem 8001: root refcnt 2 limit 1000 delay 100ms") ||
		!strings.Contains(out.Show, " Sent ") || !strings.Contains(out.Show, " backlog ") {
		t.Errorf("tc -s qdisc show dev h1-eth0:\n%s", out.Show)
	}
	if !strings.Contains(out.ShowAll, "qdisc netem 8001: dev h1-eth0 root refcnt 2 limit 1000 delay 100ms") ||
		!strings.Contains(out.ShowAll, "dev lo") {
		t.Errorf("tc qdisc show:\n%s", out.ShowAll)
	}
	if !strings.Contains(out.Again, "Error: Exclusivity flag on, cannot modify.") || !strings.Contains(out.Again, "rc=2") {
		t.Errorf("a second root add: %q", out.Again)
	}
	if !strings.Contains(out.Unknown, `What is "frobnicate"?`) || !strings.Contains(out.Unknown, "Usage: ... netem") ||
		!strings.Contains(out.Unknown, "rc=1") {
		t.Errorf("an unknown netem option: %q", out.Unknown)
	}
	if _, err := emulator.ParseArgs([]string{"duplicate", "50%"}); err == nil {
		if !strings.Contains(out.Dup, "rc=0") || !strings.Contains(out.DupPing, "duplicates") {
			t.Errorf("netem duplicate 50%%: %q; ping: %q", out.Dup, out.DupPing)
		}
	} else if !strings.Contains(out.Dup, "rc=2") || !strings.Contains(out.Dup, "duplicate") {
		// The emulator has no duplication: tc says so, as a kernel
		// without the option would.
		t.Errorf("netem duplicate 50%% on an emulator without it: %q", out.Dup)
	}
	if !strings.Contains(out.Del, "rc=0") || strings.Contains(out.Del, "netem") {
		t.Errorf("tc qdisc del: %q", out.Del)
	}
	if !strings.Contains(out.Switch, "qdisc netem 1: root refcnt 2 limit 1000 delay 10ms") ||
		!strings.Contains(out.Switch, "qdisc tbf 10: parent 1:1 rate 1Mbit burst 1600b lat ") {
		t.Errorf("a switch port's tree:\n%s", out.Switch)
	}
	if !strings.Contains(out.Lo, "qdisc noqueue 0: root") || !strings.Contains(out.Lo, "rc=0") {
		t.Errorf("the loopback (the system's tc): %q", out.Lo)
	}
}
