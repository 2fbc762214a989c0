package testenv

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// CallerPause is the longest pause a test's own goroutine can suffer
// between two reads, and so the resolution of any time, or any window's
// length, that the test reads itself (time.Now, time.Since, a counter
// followed by a clock). The machines that run CI are shared VMs whose host
// now and then stops every vCPU: a failed CI run saw a 17 ms hole in a
// probe stream, internal/stallwatch records the 20-50 ms stalls of failed
// runs, and scripts/stall-inject.py imitates them with 10-25 ms stalls. A
// tolerance of ten times this (half a second) survives one such stall at
// each end of a measurement with most of the tolerance left.
const CallerPause = 50 * time.Millisecond

// TimingRule is how many resolutions a tolerance must span at least.
const TimingRule = 10

// Bound says on which side of the target a measured value may lie.
type Bound int

const (
	// Within: |got - target| <= tolerance.
	Within Bound = iota
	// AtMost: got <= target + tolerance (a wall-clock bound, a ceiling).
	AtMost
	// AtLeast: got >= target - tolerance (a floor).
	AtLeast
)

func (b Bound) String() string {
	switch b {
	case Within:
		return "within"
	case AtMost:
		return "at most"
	case AtLeast:
		return "at least"
	}
	return fmt.Sprintf("Bound(%d)", int(b))
}

// Resolution is how finely a measurement can tell two values apart, in the
// measured quantity's unit, and how that was derived. The derivation is
// part of the test's log, so that a reader can check it.
type Resolution struct {
	Value   float64
	Derived string
}

// CallerRead is the resolution of a duration the test reads with its own
// clock, in milliseconds (the unit of Timing).
func CallerRead() Resolution {
	return Resolution{
		Value:   ms(CallerPause),
		Derived: fmt.Sprintf("read by the test: one pause of the test goroutine (testenv.CallerPause, %v)", CallerPause),
	}
}

// CallerWindow is the resolution of a rate (or a count over time, or a
// ratio of such) that is value over a window whose two ends the test read
// itself: each end may be late by up to CallerPause, so the window's length
// is known to CallerPause, a fraction CallerPause/window of the value.
func CallerWindow(value float64, window time.Duration) Resolution {
	return Resolution{
		Value:   math.Abs(value) * float64(CallerPause) / float64(window),
		Derived: fmt.Sprintf("window of %v whose ends the test read: one pause (testenv.CallerPause, %v) moves its length by %.3g of it", window, CallerPause, float64(CallerPause)/float64(window)),
	}
}

// StampedWindow is the resolution of a rate that is value over a window
// whose ends were stamped where the counted events happened (the
// emulator's clock at a packet's departure, a kernel timestamp): its
// length is known to step, the spacing of those events (a trace's
// delivery slot, a probe interval); how is said in derived.
func StampedWindow(value float64, window, step time.Duration, derived string) Resolution {
	return Resolution{
		Value:   math.Abs(value) * float64(step) / float64(window),
		Derived: fmt.Sprintf("window of %v stamped where counted, to %v (%s)", window, step, derived),
	}
}

// Measurement is one judgement on a measured time, rate, count over time or
// ratio of them. Got, Target, Tolerance and Resolution share one unit,
// which Quantity names ("delivered rate (Mbit/s)", "RTT median (ms)").
type Measurement struct {
	Quantity   string
	Got        float64
	Target     float64
	Tolerance  float64
	Bound      Bound
	Resolution Resolution
}

// Judge is the one way a test judges a measured time, rate, count over
// time or ratio: it logs the quantity, the value measured, the target, the
// tolerance and the resolution with its derivation; fails the test
// (t.Errorf) when the value is out of bounds and reports whether it was
// in. A tolerance under TimingRule resolutions is the test's own mistake
// (the test would fail on the noise of its own measurement), and Judge
// stops the test with t.Fatalf naming it, whatever was measured.
func Judge(t testing.TB, m Measurement) bool {
	t.Helper()
	res := m.Resolution
	switch {
	case m.Quantity == "":
		t.Fatalf("test mistake: a timing judgement without a quantity (%+v)", m)
	case !(res.Value > 0) || math.IsInf(res.Value, 0):
		t.Fatalf("test mistake: %s: resolution %g: every measurement has a positive, finite resolution", m.Quantity, res.Value)
	case res.Derived == "":
		t.Fatalf("test mistake: %s: resolution %g without saying how it was derived", m.Quantity, res.Value)
	case math.IsNaN(m.Tolerance) || m.Tolerance < TimingRule*res.Value:
		t.Fatalf("test mistake: %s: tolerance %.4g is under %d times the measurement's resolution %.4g (%s): measure longer, stamp the window where it is counted, or judge a wider bound",
			m.Quantity, m.Tolerance, TimingRule, res.Value, res.Derived)
	}
	var ok bool
	switch m.Bound {
	case Within:
		ok = math.Abs(m.Got-m.Target) <= m.Tolerance
	case AtMost:
		ok = m.Got <= m.Target+m.Tolerance
	case AtLeast:
		ok = m.Got >= m.Target-m.Tolerance
	default:
		t.Fatalf("test mistake: %s: unknown bound %v", m.Quantity, m.Bound)
	}
	verdict := "ok"
	if !ok {
		verdict = "OUT OF BOUNDS"
	}
	line := fmt.Sprintf("timing: %s: got %.6g, target %.6g, tolerance %s %.4g, resolution %.4g (%s): %s",
		m.Quantity, m.Got, m.Target, m.Bound, m.Tolerance, res.Value, res.Derived, verdict)
	if ok {
		t.Log(line)
	} else {
		t.Error(line)
	}
	return ok
}

// Timing is a Measurement of a duration.
type Timing struct {
	Quantity   string
	Got        time.Duration
	Target     time.Duration
	Tolerance  time.Duration
	Bound      Bound
	Resolution Resolution // in milliseconds: CallerRead() or a Value in ms
}

// JudgeTime is Judge for a duration, in milliseconds.
func JudgeTime(t testing.TB, m Timing) bool {
	t.Helper()
	return Judge(t, Measurement{
		Quantity: m.Quantity + " (ms)", Got: ms(m.Got), Target: ms(m.Target),
		Tolerance: ms(m.Tolerance), Bound: m.Bound, Resolution: m.Resolution,
	})
}

// Ms is a Resolution of d, in the milliseconds Timing uses.
func Ms(d time.Duration, derived string) Resolution {
	return Resolution{Value: ms(d), Derived: derived}
}

// Elapsed judges a wall-clock bound the test timed itself: got (from
// time.Since) is at most limit. Its resolution is CallerRead.
func Elapsed(t testing.TB, quantity string, got, limit time.Duration) bool {
	t.Helper()
	return JudgeTime(t, Timing{Quantity: quantity, Got: got, Tolerance: limit, Bound: AtMost, Resolution: CallerRead()})
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// TimerSlack is the resolution of a floor on a duration the test timed
// around an event: a pause of the test or the machine only lengthens such
// a duration, so only the clock and the timers' granularity can make it
// read short.
const TimerSlack = time.Millisecond

// Floor judges that a duration the test timed around an event (started
// its clock before causing it, read it after) lasted at least floor, less
// slack: a command that must wait out a sleep, a grace period that must
// be honoured. Its resolution is TimerSlack.
func Floor(t testing.TB, quantity string, got, floor, slack time.Duration) bool {
	t.Helper()
	return JudgeTime(t, Timing{Quantity: quantity, Got: got, Target: floor, Tolerance: slack, Bound: AtLeast,
		Resolution: Ms(TimerSlack, fmt.Sprintf("a floor on a time the test read around the event: pauses only lengthen it; the clock's and timers' granularity (testenv.TimerSlack, %v)", TimerSlack))})
}
