package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/hymn-net/hymn/examples/internal/twin"
	"github.com/hymn-net/hymn/hymntest"
	"github.com/hymn-net/hymn/internal/testenv"
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
//
// Resolutions (testenv.Judge): an echo's RTT is the kernel's receive
// stamp less the send time read just before sending (ns); a step's
// lateness is stamped by the emulator where it applied the step, against
// the schedule's time on the same clock (ns): 1 µs for both, generously.
// A pause of the machine really makes an echo or a step late; the
// echoes' budget of three and the repeated runs are what absorb it, not
// the resolution.
func TestSatelliteSteps(t *testing.T) {
	hymntest.RequireRoot(t)
	const attempts = 3
	judgeLate := func(res Result, attempt int, stalls hymntest.Stalls) {
		t.Helper()
		testenv.JudgeTime(t, testenv.Timing{Quantity: fmt.Sprintf("latest of %d steps applied after its time (attempt %d; machine: %v)", res.Applied, attempt, stalls),
			Got: res.Late, Tolerance: time.Millisecond, Bound: testenv.AtMost, Resolution: stampRes})
	}
	for attempt := 1; ; attempt++ {
		watch := hymntest.WatchStalls()
		res, stalls := runSatellite(t, watch)
		if res.Late <= time.Millisecond {
			judgeLate(res, attempt, stalls) // in bounds: logs the judgement
			return
		}
		// The watcher's longest oversleep, stall or not: on a loaded
		// machine a 3 ms lateness came with a 3.6 ms oversleep, below
		// the 5 ms that counts as a stall, and is explained all the same.
		if attempt == attempts || stalls.Worst < res.Late-time.Millisecond {
			judgeLate(res, attempt, stalls) // out of bounds: fails the test
			return
		}
		if t.Failed() {
			t.Logf("attempt %d: a step applied %v late while the machine stalled (%v); not repeated, the run failed already", attempt, res.Late, stalls)
			return
		}
		t.Logf("attempt %d: a step applied %v late while the machine stalled (%v): again", attempt, res.Late, stalls)
	}
}

// runSatellite runs the example once, stops the stall watcher, and
// judges its echoes and how many steps it applied; the caller judges how
// late they were. An echo later than the schedule whose way out and back
// a recorded stall overlaps is the machine's (stallwatch): it is logged
// and left out of the budget of three; nothing excuses an early one.
// stampRes is the resolution of the times judged here: kernel receive
// stamps less send stamps, and the emulator's own stamps, all in ns.
var stampRes = testenv.Ms(time.Microsecond, "kernel receive stamps less the send time read just before sending, and the emulator's own stamps of a step, in ns; a pause only lengthens")

func runSatellite(t *testing.T, watch *hymntest.StallWatcher) (Result, hymntest.Stalls) {
	t.Helper()
	const count = 80
	res, err := Run(context.Background(), 1.0/15, count, 50*time.Millisecond, mnlog.New(io.Discard, mnlog.Output))
	stalls := watch.Stop()
	if err != nil {
		t.Fatal(err)
	}
	// stalledAcross reports whether a recorded stall overlaps an echo's
	// time from its send to its reply's arrival.
	stalledAcross := func(e twin.Echo) bool {
		from := res.Zero.Add(e.Sent)
		to := from.Add(e.RTT + e.Hold)
		for _, st := range stalls.Stalls {
			if st.From.Before(to) && st.To.After(from) {
				return true
			}
		}
		return false
	}
	excused := 0
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
	// lowest is the lowest RTT − schedule of the echoes no step can
	// explain; off holds each echo's distance from the schedule's level
	// (an echo early by a step's new delay counts by how far).
	lowest := time.Duration(math.MaxInt64)
	var off []time.Duration
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
		if d > time.Millisecond && stalledAcross(e) {
			excused++
			t.Logf("echo %d sent at %v: RTT %v, the schedule says %v; a recorded stall overlaps it", e.Seq, e.Sent, e.RTT, want)
			continue
		}
		off = append(off, d.Abs())
		nearStep30 := within(e.Sent, 30*time.Millisecond) || within(e.Sent+out+e.Hold, 30*time.Millisecond)
		if d >= -time.Millisecond || !nearStep30 {
			lowest = min(lowest, d)
		}
		switch {
		case d < -time.Millisecond && nearStep30:
			// A frame the kernel stamped before a step but delivered to
			// the forwarder's ring only after it (its softirq ran late)
			// takes the new delay: the machine stalled across the step.
			stalled = append(stalled, fmt.Sprintf("echo %d sent at %v: RTT %v, the schedule says %v, within 30 ms of a step", e.Seq, e.Sent, e.RTT, want))
		case d < -time.Millisecond:
			t.Logf("echo %d sent at %v: RTT %v, earlier than the schedule's %v", e.Seq, e.Sent, e.RTT, want)
		case d >= 10*time.Millisecond:
			stalled = append(stalled, fmt.Sprintf("echo %d sent at %v: RTT %v, the schedule says %v", e.Seq, e.Sent, e.RTT, want))
		case d > 5*time.Millisecond:
			slow++
		}
		checked[want]++
	}
	t.Logf("echoes checked per predicted RTT: %v (%d more than 5 ms above, %d off the level; %d late beside a recorded stall, left out); %d points applied, at most %v late",
		checked, slow, len(stalled), excused, res.Applied, res.Late)
	// A stall of the machine (a shared host can take the VM away for
	// 10-30 ms) makes the one echo in flight late by that much, or, across
	// a step, gives it the step's other delay: with echoes 50 ms apart,
	// one stall spoils one or two. A schedule that is wrong spoils every
	// echo of a level: dozens. So the fourth farthest echo from its
	// level must be nearest to it (within 10 ms: levels are 20 apart).
	if lowest == math.MaxInt64 {
		t.Fatal("no echo was checked")
	}
	testenv.JudgeTime(t, testenv.Timing{Quantity: "lowest RTT − schedule of the echoes a step does not explain",
		Got: lowest, Tolerance: time.Millisecond, Bound: testenv.AtLeast, Resolution: stampRes})
	for _, m := range stalled {
		t.Log("off the schedule's level (a stall?): " + m)
	}
	slices.Sort(off)
	if len(off) >= 4 {
		testenv.JudgeTime(t, testenv.Timing{Quantity: fmt.Sprintf("fourth largest |RTT − schedule| of %d echoes", len(off)),
			Got: off[len(off)-4], Tolerance: 10 * time.Millisecond, Bound: testenv.AtMost, Resolution: stampRes})
	}
	if checked[40*time.Millisecond] < 20 || checked[80*time.Millisecond] < 20 {
		t.Errorf("the run did not cover both delays: %v", checked)
	}
	if res.Applied < 2 {
		t.Errorf("%d points applied, at most %v late; want ≥ 2 within 1 ms", res.Applied, res.Late)
	}
	return res, stalls
}
