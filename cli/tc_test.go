package cli

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/emulator"
)

func TestParseTCServesQdiscsOnly(t *testing.T) {
	c, err := parseTC(strings.Fields("-s qdisc add dev h1-eth0 root handle 1: netem delay 100ms 10ms"))
	if err != nil || !c.stats || c.verb != "add" || c.dev != "h1-eth0" || c.parent != "root" || c.handle != "1:" || c.kind != "netem" ||
		strings.Join(c.args, " ") != "delay 100ms 10ms" {
		t.Fatalf("parsed %+v, %v", c, err)
	}
	c, err = parseTC(strings.Fields("q del dev s1-eth1 parent 0001:1"))
	if err != nil || c.verb != "delete" || c.parent != "1:1" {
		t.Fatalf("parsed %+v, %v", c, err)
	}
	for _, line := range []string{"filter add dev h1-eth0 parent 1: u32", "-j qdisc show", "qdisc add dev h1-eth0 ingress", "-batch f", "qdisc"} {
		if _, err := parseTC(strings.Fields(line)); !errors.Is(err, errSystemTC) {
			t.Errorf("%q: %v, want the system's tc", line, err)
		}
	}
}

func TestNetemTranslation(t *testing.T) {
	n, err := parseNetem(strings.Fields("delay 100ms 10ms 25% loss random 1% duplicate 50% limit 500"))
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(n.emulatorArgs(), " ")
	// netem's default jitter is uniform over ±10ms: σ = 10ms/√3.
	sigma := time.Duration(math.Round(float64(10*time.Millisecond) / math.Sqrt(3)))
	for _, want := range []string{"limit 500", "delay 100000000ns", "jitter " + durArg(sigma), "distribution uniform", "reorder", "loss 1%", "duplicate 50%"} {
		if !strings.Contains(args, want) {
			t.Errorf("emulator args %q lack %q", args, want)
		}
	}
	if len(n.notes) != 1 || !strings.Contains(n.notes[0], "delay correlation 25%") {
		t.Errorf("notes %q", n.notes)
	}
	if got := n.String(); got != "limit 500 delay 100ms  10ms 25% loss 1% duplicate 50%" {
		t.Errorf("shown as %q", got)
	}
	n, _ = parseNetem(strings.Fields("delay 20ms 5ms distribution normal rate 10mbit"))
	if args := strings.Join(n.emulatorArgs(), " "); !strings.Contains(args, "jitter 5000000ns distribution normal") || strings.Contains(args, "reorder") {
		t.Errorf("normal jitter with a rate: %q", args)
	}
	for line, want := range map[string]string{
		"delay 10ms foo":          `What is "foo"?`,
		"delay xx":                `Illegal "latency"`,
		"loss 120%":               `Illegal "loss percent"`,
		"distribution weird":      "No distribution data for weird",
		"rate 10furlongs":         `Illegal "rate"`,
		"loss gemodel":            `Illegal "loss gemodel p"`,
		"duplicate":               `Illegal "duplicate"`,
		"delay 10ms limit -3 gap": `Illegal "limit"`,
	} {
		_, err := parseNetem(strings.Fields(line))
		var te *tcError
		if !errors.As(err, &te) || te.code != 1 || !strings.Contains(te.msg, want) {
			t.Errorf("%q: %v, want %q with status 1", line, err, want)
		}
	}
}

func TestTreeToEmulator(t *testing.T) {
	st := &tcState{}
	run := func(line string) error {
		c, err := parseTC(strings.Fields(line))
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		return st.apply(c)
	}
	mustRun := func(line string) {
		t.Helper()
		if err := run(line); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
	}
	config := func() emulator.Config {
		t.Helper()
		args, _, err := st.emulatorArgs()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := emulator.ParseArgs(args)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	mustRun("qdisc add dev h1-eth0 root handle 1: netem delay 100ms")
	if cfg := config(); cfg.Delay != 100*time.Millisecond || cfg.Buffer != netemDefaultLimit {
		t.Errorf("netem root: %v", cfg)
	}
	if err := run("qdisc add dev h1-eth0 root netem delay 5ms"); err == nil || !strings.Contains(err.Error(), "Exclusivity flag on") {
		t.Errorf("second root add: %v", err)
	}
	// A tbf under netem shapes with its byte limit.
	mustRun("qdisc add dev h1-eth0 parent 1:1 handle 10: tbf rate 256kbit burst 1600 limit 3000")
	if cfg := config(); cfg.Delay != 100*time.Millisecond || !cfg.Space.Enabled || cfg.Space.Rate != 256000 || cfg.Space.Limit != 3000 {
		t.Errorf("netem + tbf: %v", cfg)
	}
	mustRun("qdisc change dev h1-eth0 root netem delay 50ms loss 1%")
	if cfg := config(); cfg.Delay != 50*time.Millisecond || cfg.Loss.Prob != 0.01 || cfg.Space.Rate != 256000 {
		t.Errorf("change: %v", cfg)
	}
	mustRun("qdisc del dev h1-eth0 root")
	if len(st.Qdiscs) != 0 {
		t.Errorf("del root left %+v", st.Qdiscs)
	}
	if cfg := config(); cfg.String() != emulator.DefaultConfig().String() {
		t.Errorf("after del: %v", cfg)
	}
	// Mininet's TCLink tree: htb, a class with the rate, netem under it.
	mustRun("qdisc add dev h1-eth0 root handle 5:0 htb default 1")
	mustRun("class add dev h1-eth0 parent 5:0 classid 5:1 htb rate 10Mbit burst 15k")
	mustRun("qdisc add dev h1-eth0 parent 5:1 handle 10: netem delay 5ms limit 33")
	if cfg := config(); cfg.Space.Rate != 10e6 || cfg.Delay != 5*time.Millisecond || cfg.Buffer != 33 {
		t.Errorf("htb + netem: %v", cfg)
	}
	if err := run("qdisc add dev h1-eth0 parent 7:1 netem delay 1ms"); err == nil || !strings.Contains(err.Error(), "Failed to find qdisc") {
		t.Errorf("a parent that is not there: %v", err)
	}
	if err := run("qdisc add dev h1-eth0 parent 5:1 handle 11: netem delay 1ms"); err == nil {
		t.Error("a second qdisc at one parent was taken")
	}
}

func TestTCFormats(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{tcFmtTime(100 * time.Millisecond), "100ms"},
		{tcFmtTime(1500 * time.Microsecond), "1.5ms"},
		{tcFmtTime(2 * time.Second), "2s"},
		{tcFmtRate(1e6), "1Mbit"},
		{tcFmtRate(256000), "256Kbit"},
		{tcFmtRate(1500000), "1500Kbit"},
		{tcFmtPercent("50%"), "50%"},
		{tcFmtSize(4096), "4Kb"},
		{tcFmtSize(1600), "1600b"},
		{normHandle("0001"), "1:"},
		{normHandle("1:0010"), "1:10"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
