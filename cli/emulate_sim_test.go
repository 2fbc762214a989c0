package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func runEmulateSimForTest(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewEmulateSimCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestEmulateSimJSON(t *testing.T) {
	out, err := runEmulateSimForTest(t, "--rate", "1gbit", "--duration", "200ms", "--json", "delay", "10ms", "1ms", "distribution", "normal", "half-life", "21ms")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, k := range []string{"packets", "mean_delay_ms", "jitter_ms", "mean_deviation_pct", "jitter_deviation_pct", "extra_delay_us", "swaps_per_packet", "dropped"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if p, _ := m["packets"].(float64); p < 10000 {
		t.Errorf("packets = %v", m["packets"])
	}
}

func TestEmulateSimTable(t *testing.T) {
	out, err := runEmulateSimForTest(t, "--duration", "50ms", "delay", "5ms", "1ms", "reorder")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mean delay", "jitter", "swaps/packet", "extra delay"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestEmulateSimUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--bogus"},
		{"delay", "-1ms"},
		{"delay", "10ms", "1ms", "25%"},
		{"--traffic", "poisson", "delay", "1ms"},
		{"--rate", "fast", "delay", "1ms"},
		{"--duration", "0s", "delay", "1ms"},
	} {
		_, err := runEmulateSimForTest(t, args...)
		if !errors.Is(err, ErrUsage) {
			t.Errorf("%v: error %v, want ErrUsage", args, err)
		}
	}
}

func TestEmulateBenchJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a one-second benchmark")
	}
	cmd := NewEmulateBenchCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--json", "--scenario", "constant"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	var rs []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil || len(rs) != 1 {
		t.Fatalf("%v: %s", err, out.String())
	}
	for _, k := range []string{"scenario", "ns_per_packet", "allocs_per_packet"} {
		if _, ok := rs[0][k]; !ok {
			t.Errorf("bench JSON lacks %q", k)
		}
	}
}
