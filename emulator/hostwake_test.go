package emulator

import (
	"context"
	"testing"
	"time"
)

func TestMeasureHostWake(t *testing.T) {
	t.Setenv(CPUIdleEnv, "deep") // no PM QoS request from a unit test
	h, err := MeasureHostWake(context.Background(), HostWakeConfig{Samples: 200, Sleep: 20 * time.Microsecond, Gap: 50 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(h)
	if h.Timer.Samples != 200 {
		t.Errorf("timer samples = %d, want 200", h.Timer.Samples)
	}
	if h.Event.Samples != 200 {
		t.Errorf("event samples = %d, want 200", h.Event.Samples)
	}
	for _, s := range []WakeSummary{h.Timer, h.Event} {
		if !(s.P50 <= s.P90 && s.P90 <= s.P99 && s.P99 <= s.Max) {
			t.Errorf("percentiles out of order: %+v", s)
		}
	}
	if h.CPUs < 1 || h.Kernel == "" || h.CPUIdle != "deep" {
		t.Errorf("host description incomplete: %+v", h)
	}
}

func TestMeasureHostWakeRefusesHugeRuns(t *testing.T) {
	if _, err := MeasureHostWake(context.Background(), HostWakeConfig{Samples: 2_000_000}); err == nil {
		t.Fatal("2000000 samples accepted")
	}
}

func TestMeasureHostWakeStopsOnCancel(t *testing.T) {
	t.Setenv(CPUIdleEnv, "deep")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() {
		_, err := MeasureHostWake(ctx, HostWakeConfig{Samples: 1_000_000})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a cancelled calibration reported no error")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a cancelled calibration did not stop")
	}
}
