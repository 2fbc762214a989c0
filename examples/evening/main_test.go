package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/hymn-net/hymn/hymntest"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/mnlog"
)

func TestScheduleModel(t *testing.T) {
	s, err := Schedule(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		h     float64
		delay time.Duration
		loss  float64
	}{{3, 10 * time.Millisecond, 0}, {17, 10 * time.Millisecond, 0}, {18.5, 30 * time.Millisecond, 0.01},
		{20, 50 * time.Millisecond, 0.02}, {21.5, 30 * time.Millisecond, 0.01}, {23.5, 10 * time.Millisecond, 0}, {24 + 19, 10*time.Millisecond + 40*time.Millisecond*2/3, 0.02 * 2 / 3}} {
		t.Run(fmt.Sprintf("%vh", c.h), func(t *testing.T) {
			t.Parallel()
			d, p := At(s, time.Duration(c.h*float64(time.Hour)))
			if (d-c.delay).Abs() > time.Microsecond || math.Abs(p-c.loss) > 1e-9 {
				t.Errorf("%v %v, want %v %v", d, p, c.delay, c.loss)
			}
		})
	}
}

// TestEveningDay compresses a day to 2.4 s (an hour is 100 ms) and sends
// a UDP echo every 10 ms across it (twin.UDPEcho: exact send times). The schedule ramps the delay by 40 ms over 300 ms
// (0.13 ms per ms), so the parameters recomputed every 100 µs put the
// prediction within 0.02 ms; the rest is the
// machine, which can only add: the median error of the echoes sent during
// the ramps within 1 ms, and no echo more than 1 ms below the schedule
// (the forwarder's stamp conversion, see the satellite example). The
// prediction takes the reply's way back from when the responder sent it:
// a responder held up 37 ms by a loaded machine meets a ramp-down 5 ms
// lower, which before this correction looked like echoes faster than the
// schedule. Echoes may be lost (2 % at the peak), never reordered.
// The loss and delay in force, read every 12 ms with the time the schedule
// set them, must be the schedule's values at that time (the ramp is
// computed exactly there): loss within 10⁻⁹, delay within 1 µs (on the
// emulator's clock: no real time is read there).
//
// Resolutions (testenv.Judge): an echo's RTT is the kernel's receive
// stamp less the send time read just before sending, both in ns; a pause
// only lengthens it, so the floor's resolution is the stamps' (1 µs
// here, generously). The median over the ramps is also moved by the
// prediction's 0.02 ms, and by pauses only if they lengthen half of the
// echoes (30 of them, 300 ms, six times the longest pause,
// testenv.CallerPause): 0.02 ms.
func TestEveningDay(t *testing.T) {
	hymntest.RequireRoot(t)
	const interval = 10 * time.Millisecond
	res, err := Run(context.Background(), 100*time.Millisecond, interval, mnlog.New(io.Discard, mnlog.Output))
	if err != nil {
		t.Fatal(err)
	}
	s := res.Schedule
	if len(res.Echoes) < res.Sent*95/100 {
		t.Fatalf("%d of %d echoes came back", len(res.Echoes), res.Sent)
	}
	var errs, ramp []time.Duration
	below := 0
	last := 0
	for _, e := range res.Echoes {
		if e.Seq <= last {
			t.Fatalf("echo %d came back after %d", e.Seq, last)
		}
		last = e.Seq
		d := e.RTT - Expected(s, e.Sent, e.Hold)
		errs = append(errs, d)
		if d < -time.Millisecond {
			below++
			t.Logf("echo %d sent at %.2fh: RTT %v, below the schedule's %v", e.Seq, float64(e.Sent%s.Repeat)/float64(100*time.Millisecond), e.RTT, Expected(s, e.Sent, e.Hold))
		}
		if h := float64(e.Sent%s.Repeat) / float64(100*time.Millisecond); h > 17 && h < 23 {
			ramp = append(ramp, d.Abs())
		}
	}
	sort.Slice(ramp, func(i, j int) bool { return ramp[i] < ramp[j] })
	if len(ramp) < 40 {
		t.Fatalf("only %d echoes during the ramps", len(ramp))
	}
	testenv.JudgeTime(t, testenv.Timing{Quantity: fmt.Sprintf("median |RTT − schedule| of the %d echoes during the ramps", len(ramp)),
		Got: ramp[len(ramp)/2], Tolerance: time.Millisecond, Bound: testenv.AtMost,
		Resolution: testenv.Ms(20*time.Microsecond, "the prediction's 0.02 ms; kernel receive stamps less send stamps (ns); a pause moves the median only if it lengthens half of the echoes")})
	sort.Slice(errs, func(i, j int) bool { return errs[i] < errs[j] })
	p90 := errs[len(errs)*9/10]
	t.Logf("%d echoes, RTT − schedule: median %v, p90 %v, max %v; %d more than 1 ms below", len(errs), errs[len(errs)/2], p90, errs[len(errs)-1], below)
	testenv.JudgeTime(t, testenv.Timing{Quantity: "lowest RTT − schedule of all echoes (the forwarder's stamp conversion may make one early)",
		Got: errs[0], Tolerance: time.Millisecond, Bound: testenv.AtLeast,
		Resolution: testenv.Ms(time.Microsecond, "kernel receive stamp less the send time read just before sending (ns); a pause only lengthens an RTT")})

	inRamp := map[time.Duration]bool{}
	for _, l := range res.Loss {
		d, p := At(s, l.Updated)
		if math.Abs(l.Prob-p) > 1e-9 || (l.Delay-d).Abs() > time.Microsecond {
			t.Errorf("at %v the schedule set loss %.6f%% delay %v; it says %.6f%% %v", l.Updated, 100*l.Prob, l.Delay, 100*p, d)
		}
		if p > 0 && p < 0.02 {
			inRamp[l.Updated] = true
		}
	}
	t.Logf("%d samples, %d distinct ramp updates; emulator lost %d of %d", len(res.Loss), len(inRamp), res.Stats.Forward.Emulator.Lost, res.Stats.Forward.Emulator.Received)
	if len(inRamp) < 10 {
		t.Errorf("only %d distinct parameter updates seen during the ramps", len(inRamp))
	}
}
