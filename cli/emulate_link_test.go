package cli

import (
	"bytes"
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
	for _, args := range [][]string{{}, {"--a", "x"}, {"--a", "x", "--b", "x"}} {
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
	for _, want := range []string{"a>b: received 10", "sent 7", "dropped 2", "queued 1", "loss 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
