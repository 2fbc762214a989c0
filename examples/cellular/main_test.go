package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"testing"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/hymntest"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/mnlog"
)

func TestTraceFile(t *testing.T) {
	tr, err := emulator.ParseDeliveryTrace("cellular", []byte(Trace()))
	if err != nil {
		t.Fatal(err)
	}
	// 24·4 + 6·5 + 12·7 = 210 Mbit over 20 s.
	if tr.Period() != 20*time.Second || math.Abs(tr.MeanRate(1500)-10.5e6) > 1 {
		t.Fatalf("period %v, mean %v bit/s", tr.Period(), tr.MeanRate(1500))
	}
}

// TestCellularFollowsTrace runs TCP over one 20 s period of the trace and
// compares what the emulator delivered, read every 250 ms, with the trace:
//   - never more than the trace allows: the bytes delivered by the time a
//     counter was read are at most 1514 B per opportunity since the
//     trace's time zero (frames never leave early);
//   - nothing during an outage: an interval read entirely after the
//     outage began plus the forwarder's largest lateness, and before it
//     ended, delivers 0 B;
//   - in each segment, from 1 s after it starts (TCP's recovery from the
//     outage's spurious timeouts) to its end, TCP fills at least 70 % of
//     the capacity (a 100-packet buffer rides out the sender's stalls on a
//     loaded machine; this is TCP's behaviour, not a closed form).
//
// Resolutions (testenv.Judge). The first two are judged in trace time.
// A counter is read between the test's Before and After, and the trace's
// time zero is the forwarder's own clock: a pause of the test only moves
// After later (raising what the trace allows) and Before earlier
// (narrowing what counts as inside an outage), so neither can read
// against the emulator; what is left is the clock's granularity,
// testenv.TimerSlack, and 10 ms is allowed: frames at most 10 ms early,
// or leaving at most 10 ms beyond the forwarder's largest lateness into an
// outage. The third is a share over windows whose ends the test read, 3 s
// at the shortest: testenv.CallerWindow, 1.7 % of it, ten of which fit in
// the 30 % allowed.
func TestCellularFollowsTrace(t *testing.T) {
	hymntest.RequireRoot(t)
	hymntest.RequireTools(t, "iperf3")
	// A forwarder more than one sampling interval late means the machine
	// stopped the forwarding thread (a shared VM was seen pausing threads
	// for up to 2 s): the samples then say nothing about the emulator,
	// so the period is measured once more, and the second run is judged
	// whatever its lateness.
	var res Result
	for attempt := 1; ; attempt++ {
		var err error
		res, err = Run(context.Background(), t.TempDir(), 20*time.Second, 250*time.Millisecond, mnlog.New(io.Discard, mnlog.Output))
		if err != nil {
			t.Fatal(err)
		}
		if res.MaxLate <= 250*time.Millisecond || attempt == 2 {
			break
		}
		t.Logf("forwarder lateness %v: the machine stalled; measuring the period again", res.MaxLate)
	}
	t.Logf("iperf3: %s", res.Iperf.ServerText)
	type acc struct {
		got, cap float64
		window   time.Duration
	}
	steady := map[int]*acc{}
	const frame = 1514.0 // bytes of frame per opportunity
	tr, err := emulator.ParseDeliveryTrace("cellular", []byte(Trace()))
	if err != nil {
		t.Fatal(err)
	}
	opps := tr.Opportunities()
	oppsUntil := func(at time.Duration) float64 { // opportunities in (0, at]
		per := at / tr.Period()
		rest := at % tr.Period()
		k := 0
		for k < len(opps) && time.Duration(opps[k])*time.Millisecond <= rest {
			k++
		}
		return float64(int(per)*len(opps) + k)
	}
	// allowedBy is the earliest trace time by which the trace allows
	// bytes (whole ms: the trace's opportunities fall on them).
	allowedBy := func(bytes uint64) time.Duration {
		n := float64(bytes) / frame
		lo, hi := time.Duration(0), time.Duration(0)
		for oppsUntil(hi) < n {
			hi += tr.Period()
		}
		for hi-lo > time.Millisecond { // oppsUntil grows with its argument
			mid := (lo + hi) / 2 / time.Millisecond * time.Millisecond
			if oppsUntil(mid) >= n {
				hi = mid
			} else {
				lo = mid
			}
		}
		return hi
	}
	capacity := func(from, to time.Duration) float64 { // bytes the trace allows over (from, to]
		var n float64
		for ts := from; ts < to; ts += time.Millisecond / 10 {
			n += float64(CapacityAt(ts)) / 12 / 10 // opportunities per 0.1 ms
		}
		return n * frame
	}
	// segmentAt is the segment trace time x lies in and how far into it.
	segmentAt := func(x time.Duration) (int, time.Duration) {
		x %= 20 * time.Second
		for k, s := range Segments {
			if x < s.Length {
				return k, x
			}
			x -= s.Length
		}
		return len(Segments) - 1, Segments[len(Segments)-1].Length
	}
	const slack = 10 * time.Millisecond // ten of testenv.TimerSlack
	clockRes := testenv.Ms(testenv.TimerSlack, "a counter read between the test's two clock reads, in trace time from the forwarder's clock: a pause only widens the bracket; the clock's granularity (testenv.TimerSlack)")
	t.Logf("forwarder lateness at most %v", res.MaxLate)
	outageChecks := 0
	// early is how far ahead of the trace the delivered bytes were at
	// worst (negative: behind it at every sample); intoOutage how far
	// into an outage frames were seen leaving (0: never).
	early, earlyAt := time.Duration(math.MinInt64), time.Duration(0)
	var intoOutage time.Duration
	for i := 1; i < len(res.Samples); i++ {
		a, b := res.Samples[i-1], res.Samples[i]
		got := float64(b.Bytes - a.Bytes)
		if e := allowedBy(b.Bytes) - b.After; e > early {
			early, earlyAt = e, b.After
		}
		if capacity(a.Before-res.MaxLate-slack, b.After) == 0 {
			outageChecks++
			if got != 0 {
				// The bytes left after a's counter was read, after
				// a.Before: at least that far into the outage.
				_, into := segmentAt(a.Before)
				intoOutage = max(intoOutage, into)
				t.Logf("%v..%v: %v B delivered during an outage", a.At, b.At, got)
			}
		}
		capBytes := capacity(a.At, b.At)
		// The segment this interval lies in, and how far into it.
		seg, into := segmentAt(a.At)
		if Segments[seg].Mbps > 0 && into >= time.Second && into+(b.At-a.At) <= Segments[seg].Length {
			if steady[seg] == nil {
				steady[seg] = &acc{}
			}
			steady[seg].got += got
			steady[seg].cap += capBytes
			steady[seg].window += b.At - a.At
		}
	}
	if len(res.Samples) < 2 {
		t.Fatalf("%d samples", len(res.Samples))
	}
	testenv.JudgeTime(t, testenv.Timing{Quantity: fmt.Sprintf("how far the delivered bytes were ahead of the trace, at worst (at %v)", earlyAt),
		Got: early, Tolerance: slack, Bound: testenv.AtMost, Resolution: clockRes})
	t.Logf("%d intervals inside outages", outageChecks)
	if outageChecks < 2 {
		t.Errorf("only %d intervals fell inside an outage", outageChecks)
	}
	testenv.JudgeTime(t, testenv.Timing{Quantity: "how far into an outage frames were still leaving (0: none seen)",
		Got: intoOutage, Target: res.MaxLate, Tolerance: slack, Bound: testenv.AtMost, Resolution: clockRes})
	for k, s := range Segments {
		if s.Mbps == 0 {
			continue
		}
		a := steady[k]
		if a == nil {
			t.Errorf("segment %d (%d Mbit/s) was not covered", k, s.Mbps)
			continue
		}
		testenv.Judge(t, testenv.Measurement{
			Quantity: fmt.Sprintf("segment %d (%d Mbit/s): TCP's share of the trace's capacity over %v", k, s.Mbps, a.window),
			Got:      a.got / a.cap, Target: 1, Tolerance: 0.3, Bound: testenv.AtLeast, Resolution: testenv.CallerWindow(1, a.window),
		})
	}
}
