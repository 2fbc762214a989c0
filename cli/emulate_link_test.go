package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/emulator"
)

func TestEmulateLinkConfigs(t *testing.T) {
	c, err := emulateLinkConfigs([]string{"delay", "10ms", "jitter", "1ms"}, "loss 1%", "space 10mbit")
	if err != nil {
		t.Fatal(err)
	}
	if c[0].Delay != 10*time.Millisecond || c[1].Delay != 10*time.Millisecond {
		t.Errorf("shared delay not in both directions: %v %v", c[0].Delay, c[1].Delay)
	}
	if c[0].Loss.Prob != 0.01 || c[1].Loss.Prob != 0 || !c[1].Space.Enabled || c[0].Space.Enabled {
		t.Errorf("per-direction params mixed up: %+v / %+v", c[0], c[1])
	}
	if _, err := emulateLinkConfigs([]string{"delay", "soon"}, "", ""); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "delay") {
		t.Errorf("bad delay: %v", err)
	}
	if _, err := emulateLinkConfigs(nil, "frobnicate 1", ""); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "a>b") {
		t.Errorf("bad --ab: %v", err)
	}
}

func TestEmulateLinkNeedsTwoInterfaces(t *testing.T) {
	for _, args := range [][]string{{}, {"--a", "x"}, {"--a", "x", "--b", "x"}, {"--a", "x", "--b", "y", "--coalesce", "-1us"}} {
		cmd := NewEmulateLinkCmd()
		cmd.SetArgs(args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		if err := cmd.Execute(); !errors.Is(err, ErrUsage) {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
}

func TestWriteDirectionStats(t *testing.T) {
	var b bytes.Buffer
	WriteDirectionStats(&b, "a>b", emulator.DirectionStats{Emulator: emulator.Stats{Received: 10, Sent: 7, Lost: 2, Queued: 1}})
	out := b.String()
	for _, want := range []string{"a>b: received 10", "sent 7", "dropped 2", "queued 1", "loss 2", "accounting: offered "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// idlePort is a port that never receives anything.
type idlePort struct{}

func (idlePort) Name() string                                    { return "idle" }
func (idlePort) RecvBatch([][]byte, []int, []int64) (int, error) { return 0, nil }
func (idlePort) SendBatch(f [][]byte) (int, error)               { return len(f), nil }
func (idlePort) Wait(d time.Duration) error {
	time.Sleep(min(max(d, 0), time.Millisecond))
	return nil
}
func (idlePort) Interrupt()                {}
func (idlePort) Stats() emulator.PortStats { return emulator.PortStats{} }
func (idlePort) Close() error              { return nil }

// TestEmulateLinkJSON: --json reports each interval and the end as one
// JSON object per line, per direction, named after the interfaces.
func TestEmulateLinkJSON(t *testing.T) {
	var b bytes.Buffer
	cfg := emulator.DefaultConfig()
	cfg.Delay = 3 * time.Millisecond
	err := forwardUntilDone(context.Background(), &b, "e1", "e2", idlePort{}, idlePort{},
		emulator.ForwarderConfig{AtoB: cfg, BtoA: emulator.DefaultConfig()},
		EmulateOutput{Every: 40 * time.Millisecond, Duration: 100 * time.Millisecond, JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("want interval and final lines, got:\n%s", b.String())
	}
	for i, line := range lines {
		var v struct {
			Final      bool
			Directions map[string]emulator.DirectionStats
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i, err, line)
		}
		if _, ok := v.Directions["e1>e2"]; !ok || len(v.Directions) != 2 || v.Final != (i == len(lines)-1) {
			t.Errorf("line %d: %s", i, line)
		}
	}
}
