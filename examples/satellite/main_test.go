package main

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hymn-net/hymn/hymntest"
	"github.com/hymn-net/hymn/mnlog"
)

// TestSatelliteSteps compresses the 15 s handovers to 1 s and sends a UDP
// echo every 50 ms for two periods. Every echo's RTT must be nearest to the
// schedule's out-and-back delay (20+20, 20+40, 40+40 or 40+20 ms): the
// levels are 20 ms apart, so within ±10 ms. A late forwarder or a slow
// stack on a loaded machine adds to the RTT, so up to three echoes may be
// later than that, or, within 30 ms of a step, earlier (delivered to the
// forwarder after the step, they took its new delay); -1 ms covers the forwarder's conversion of kernel
// stamps, whose clock offset is read just after the monotonic clock.
// Echoes whose path crosses a step within 2 ms are left out (send and
// receive times are known to µs, but a late forwarder moves a frame's
// departure). None is lost or reordered, and every step was applied within
// 1 ms of its time. A stall of the machine across a step's time makes it
// late by what is left of the stall: a run with a step more than 1 ms late
// is repeated (at most three runs; the log says so) when a stall watcher
// overslept at least that much beyond 1 ms in it; a late step with no
// such oversleep, or late in every run, fails. Every run's echoes are judged.
func TestSatelliteSteps(t *testing.T) {
	hymntest.RequireRoot(t)
	const attempts = 3
	for attempt := 1; ; attempt++ {
		watch := hymntest.WatchStalls()
		res := runSatellite(t)
		stalls := watch.Stop()
		if res.Late <= time.Millisecond {
			return
		}
		// The watcher's longest oversleep, stall or not: on a loaded
		// machine a 3 ms lateness came with a 3.6 ms oversleep, below
		// the 5 ms that counts as a stall, and is explained all the same.
		if attempt == attempts || stalls.Worst < res.Late-time.Millisecond {
			t.Errorf("%d points applied, at most %v late; want ≥ 2 within 1 ms (attempt %d; machine: %v)", res.Applied, res.Late, attempt, stalls)
			return
		}
		if t.Failed() {
			t.Logf("attempt %d: a step applied %v late while the machine stalled (%v); not repeated, the run failed already", attempt, res.Late, stalls)
			return
		}
		t.Logf("attempt %d: a step applied %v late while the machine stalled (%v): again", attempt, res.Late, stalls)
	}
}

// runSatellite runs the example once and judges its echoes and how many
// steps it applied; the caller judges how late they were.
func runSatellite(t *testing.T) Result {
	t.Helper()
	const count = 80
	res, err := Run(context.Background(), 1.0/15, count, 50*time.Millisecond, mnlog.New(io.Discard, mnlog.Output))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Echoes) != count {
		t.Fatalf("%d of %d echoes came back", len(res.Echoes), count)
	}
	s := res.Schedule
	// within reports whether x is less than w from a step (the period's
	// end is one too).
	within := func(x, w time.Duration) bool {
		x %= s.Repeat
		for _, p := range s.Points {
			if d := x - p.At; d > -w && d < w {
				return true
			}
		}
		return x > s.Repeat-w
	}
	nearStep := func(x time.Duration) bool { return within(x, 2*time.Millisecond) }
	checked := map[time.Duration]int{}
	slow := 0
	var stalled []string
	for i, e := range res.Echoes {
		if e.Seq != i+1 {
			t.Fatalf("echo %d came back as the %d-th", e.Seq, i+1)
		}
		out := DelayAt(s, 20*time.Millisecond, e.Sent)
		if nearStep(e.Sent) || nearStep(e.Sent+out+e.Hold) {
			continue
		}
		want := Expected(s, e.Sent, e.Hold)
		d := e.RTT - want
		switch {
		case d < -time.Millisecond && (within(e.Sent, 30*time.Millisecond) || within(e.Sent+out+e.Hold, 30*time.Millisecond)):
			// A frame the kernel stamped before a step but delivered to
			// the forwarder's ring only after it (its softirq ran late)
			// takes the new delay: the machine stalled across the step.
			stalled = append(stalled, fmt.Sprintf("echo %d sent at %v: RTT %v, the schedule says %v, within 30 ms of a step", e.Seq, e.Sent, e.RTT, want))
		case d < -time.Millisecond:
			t.Errorf("echo %d sent at %v: RTT %v, earlier than the schedule's %v", e.Seq, e.Sent, e.RTT, want)
		case d >= 10*time.Millisecond:
			stalled = append(stalled, fmt.Sprintf("echo %d sent at %v: RTT %v, the schedule says %v", e.Seq, e.Sent, e.RTT, want))
		case d > 5*time.Millisecond:
			slow++
		}
		checked[want]++
	}
	t.Logf("echoes checked per predicted RTT: %v (%d more than 5 ms above, %d more than 10 ms); %d points applied, at most %v late", checked, slow, len(stalled), res.Applied, res.Late)
	// A stall of the machine (a shared host can take the VM away for
	// 10-30 ms) makes the one echo in flight late by that much, or, across
	// a step, gives it the step's other delay: with echoes 50 ms apart,
	// one stall spoils one or two. A schedule that is wrong spoils every
	// echo of a level: dozens.
	if len(stalled) > 3 {
		for _, m := range stalled {
			t.Error(m)
		}
	} else {
		for _, m := range stalled {
			t.Log("late (a stall?): " + m)
		}
	}
	if checked[40*time.Millisecond] < 20 || checked[80*time.Millisecond] < 20 {
		t.Errorf("the run did not cover both delays: %v", checked)
	}
	if res.Applied < 2 {
		t.Errorf("%d points applied, at most %v late; want ≥ 2 within 1 ms", res.Applied, res.Late)
	}
	return res
}
