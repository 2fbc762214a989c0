package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/hymntest"
	"github.com/hymn-net/hymn/measure"
)

func TestPickVariants(t *testing.T) {
	if v, err := pick("ns-veth,vm-sriov"); err != nil || len(v) != 2 || v[1].Paper != 850 {
		t.Errorf("%v %v", v, err)
	}
	if v, err := pick("all"); err != nil || len(v) != len(Variants) {
		t.Errorf("%v %v", v, err)
	}
	for _, bad := range []string{"", "ns-vet", "ns-veth,"} {
		if _, err := pick(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestLineMeasured runs the namespace/veth variant and the emulated one
// briefly and checks the files a user gets.
func TestLineMeasured(t *testing.T) {
	hymntest.RequireRoot(t)
	o := Options{Rates: []float64{20000}, Duration: 300 * time.Millisecond,
		ZeroLoss: measure.ZeroLossConfig{Max: 100000, Trial: 300 * time.Millisecond, Resolution: 0.25, MaxTrials: 4}}
	var outcomes []Outcome
	for _, v := range []Variant{Variants[0], Variants[4]} {
		rep, err := RunVariant(context.Background(), v, o)
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		r := rep.Results[0]
		if r.Received == 0 || r.Latency.P50 <= 0 {
			t.Errorf("%s: %+v", v.Name, r)
		}
		// Every row carries its generator's own rate, so its headroom.
		if rep.Generator == "" || rep.GeneratorPPS <= 0 || rep.Headroom() <= 0 {
			t.Errorf("%s: generator %q at %.0f packets/s, headroom %.2f", v.Name, rep.Generator, rep.GeneratorPPS, rep.Headroom())
		}
		outcomes = append(outcomes, Outcome{v, rep, nil})
	}
	dir := t.TempDir()
	run := Run{Command: "cimininet -rates 20k", Start: time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC), End: time.Date(2026, 11, 30, 15, 1, 2, 0, time.UTC),
		LoadStart: "1.00 2.00 3.00 1/100 42", LoadEnd: LoadAvg()}
	if err := WriteResults(dir, run, outcomes); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"hdr-ns-veth.svg", "hdr-ns-veth-emu.svg", "ns-veth.json", "zero-loss.md", "zero-loss.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "zero-loss.md"))
	if !strings.Contains(string(md), "| ns-veth | netns | veth |") || !strings.Contains(string(md), "| 270 |") || !strings.Contains(string(md), "× |") ||
		!strings.Contains(string(md), "Run: `cimininet -rates 20k`, 2026-11-30 15:00:00 to 2026-11-30 15:01:02 UTC; /proc/loadavg at the start `1.00 2.00 3.00 1/100 42`") {
		t.Errorf("table:\n%s", md)
	}
	js, _ := os.ReadFile(filepath.Join(dir, "ns-veth.json"))
	if !strings.Contains(string(js), `"command": "cimininet -rates 20k"`) || !strings.Contains(string(js), `"loadavg_start": "1.00 2.00 3.00 1/100 42"`) {
		t.Errorf("JSON has no run record:\n%.400s", js)
	}
}

func TestQuoteArgs(t *testing.T) {
	got := strings.Join(quoteArgs([]string{"-variants", "vm-veth", "-emu", "delay 5ms", "", "it's"}), " ")
	if want := `-variants vm-veth -emu 'delay 5ms' '' 'it'\''s'`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
