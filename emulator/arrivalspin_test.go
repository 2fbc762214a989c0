package emulator

import (
	"testing"
	"time"
)

// These tests drive arrivalSpin on a virtual clock (integer ns that the
// test advances itself), so every comparison is exact arithmetic on the
// test's own numbers, not a measurement of the machine.

const us = int64(time.Microsecond)

// feed records arrivals on a schedule of period p starting at t0, each
// late by late(i), and returns the last arrival's time.
func feed(a *arrivalSpin, t0, p int64, n int, late func(i int) int64) int64 {
	var t int64
	for i := 0; i < n; i++ {
		t = t0 + int64(i)*p + late(i)
		a.tick(t)
		a.arrived(t)
	}
	return t
}

func TestArrivalSpinPredictsASchedule(t *testing.T) {
	a := newArrivalSpin(PollAdaptive)
	const p = 1000 * us
	// Sent every millisecond, each 0-40 µs late (a sender's timer).
	last := feed(&a, 1000*us, p, 200, func(i int) int64 { return int64(i*7%5) * 10 * us })
	next := 1000*us + 200*p // the schedule's next point
	// Right after a frame: sleep, but only until shortly before the next.
	poll, sleep := a.decide(last+50*us, idleWait)
	if poll {
		t.Fatal("polled right after a frame of a millisecond schedule")
	}
	wake := last + 50*us + int64(sleep)
	lead := next - wake
	if lead <= 0 || lead > 200*us {
		t.Fatalf("sleep ends %d µs before the next frame is due, want within (0, 200]", lead/us)
	}
	// In the window: poll.
	a.tick(wake)
	a.woke(wake, false)
	if poll, _ := a.decide(next-5*us, idleWait); !poll {
		t.Fatal("did not poll 5 µs before the next frame is due")
	}
	// Long after the window: the frame is late; sleep until it comes.
	a.tick(next + 500*us)
	if poll, s := a.decide(next+500*us, idleWait); poll || s != idleWait {
		t.Fatalf("at +500 µs: poll %v, sleep %v; want a plain sleep", poll, s)
	}
}

func TestArrivalSpinIgnoresIrregularTraffic(t *testing.T) {
	a := newArrivalSpin(PollAdaptive)
	// Gaps alternating 200 µs and 3 ms: no schedule to predict.
	last := int64(0)
	for i := 0; i < 100; i++ {
		if i%2 == 0 {
			last += 200 * us
		} else {
			last += 3000 * us
		}
		a.tick(last)
		a.arrived(last)
	}
	for _, at := range []int64{10 * us, 150 * us, 190 * us, 1000 * us} {
		if poll, s := a.decide(last+at, idleWait); poll || s != idleWait {
			t.Fatalf("irregular gaps, +%d µs: poll %v, sleep %v; want a plain sleep", at/us, poll, s)
		}
	}
}

func TestArrivalSpinPollsWithinBursts(t *testing.T) {
	a := newArrivalSpin(PollAdaptive)
	last := feed(&a, 0, 10*us, 50, func(int) int64 { return 0 })
	if poll, _ := a.decide(last+5*us, idleWait); !poll {
		t.Fatal("did not poll 5 µs after a frame of a 10 µs burst")
	}
	if poll, _ := a.decide(last+40*us, idleWait); poll {
		t.Fatal("still polling four gaps after the burst's last frame")
	}
}

func TestArrivalSpinOffAndIdle(t *testing.T) {
	for _, m := range []PollMode{PollOff, PollAdaptive, PollAlways} {
		a := newArrivalSpin(m)
		if poll, _ := a.decide(5*us, idleWait); poll {
			t.Fatalf("%v: polled before any frame", m)
		}
		last := feed(&a, 0, 10*us, 50, func(int) int64 { return 0 })
		poll, _ := a.decide(last+5*us, idleWait)
		if poll != (m != PollOff) {
			t.Fatalf("%v: poll %v within a burst", m, poll)
		}
		// An idle link: long after the last frame nothing polls.
		idle := last + int64(idleAfter) + 1
		a.tick(idle)
		if poll, s := a.decide(idle, idleWait); poll || s != idleWait {
			t.Fatalf("%v: idle link: poll %v, sleep %v", m, poll, s)
		}
	}
}

// TestArrivalSpinBudget polls at every chance for a second of virtual
// time and checks the share of it spent polling against the mode's
// budget (plus the initial burst).
func TestArrivalSpinBudget(t *testing.T) {
	for _, tc := range []struct {
		mode  PollMode
		share float64
	}{{PollAdaptive, adaptiveShare}, {PollAlways, alwaysShare}} {
		a := newArrivalSpin(tc.mode)
		const step = 2 * us
		now := int64(0)
		nextFrame := int64(0)
		end := int64(time.Second)
		for now < end {
			a.tick(now)
			a.woke(now, false)
			if now >= nextFrame {
				a.arrived(now)
				nextFrame += 30 * us // a burst that never ends
			}
			poll, sleep := a.decide(now, idleWait)
			if poll {
				now += step
				continue
			}
			now = min(now+int64(sleep), nextFrame)
		}
		a.tick(now)
		limit := tc.share*float64(now) + float64(spinBurst)
		if float64(a.spun) > limit {
			t.Errorf("%v: polled %v of %v, budget %v", tc.mode, time.Duration(a.spun), time.Duration(now), time.Duration(limit))
		}
		if a.spun == 0 {
			t.Errorf("%v: never polled within an endless burst", tc.mode)
		}
	}
}

func TestParsePollMode(t *testing.T) {
	for s, want := range map[string]PollMode{"": PollDefault, "adaptive": PollAdaptive, "always": PollAlways, "off": PollOff} {
		if m, err := ParsePollMode(s); err != nil || m != want {
			t.Errorf("ParsePollMode(%q) = %v, %v; want %v", s, m, err, want)
		}
	}
	if _, err := ParsePollMode("spin"); err == nil {
		t.Error("ParsePollMode(spin) accepted")
	}
	t.Setenv(ForwarderPollEnv, "bogus")
	if err := CheckCPUIdleEnv(); err == nil {
		t.Errorf("CheckCPUIdleEnv accepted %s=bogus", ForwarderPollEnv)
	}
	if m := pollModeFromEnv(PollDefault); m != PollAdaptive {
		t.Errorf("a malformed %s resolves to %v, want adaptive", ForwarderPollEnv, m)
	}
	t.Setenv(ForwarderPollEnv, "off")
	if m := pollModeFromEnv(PollDefault); m != PollOff {
		t.Errorf("%s=off resolves to %v", ForwarderPollEnv, m)
	}
	if m := pollModeFromEnv(PollAlways); m != PollAlways {
		t.Errorf("an explicit mode resolves to %v", m)
	}
}

// TestArrivalSpinPollersBound: with one slot, a second thread that would
// poll sleeps instead until the first stops polling.
func TestArrivalSpinPollersBound(t *testing.T) {
	saved := maxPollers
	maxPollers = 1
	defer func() { maxPollers = saved }()
	a, b := newArrivalSpin(PollAdaptive), newArrivalSpin(PollAdaptive)
	la := feed(&a, 0, 10*us, 50, func(int) int64 { return 0 })
	lb := feed(&b, 0, 10*us, 50, func(int) int64 { return 0 })
	if poll, _ := a.decide(la+5*us, idleWait); !poll {
		t.Fatal("the first thread did not poll within its burst")
	}
	if poll, s := b.decide(lb+5*us, idleWait); poll || s != idleWait {
		t.Fatalf("the second thread: poll %v, sleep %v with the only slot taken", poll, s)
	}
	a.idle()
	if poll, _ := b.decide(lb+6*us, idleWait); !poll {
		t.Fatal("the second thread did not poll once the slot was free")
	}
	b.idle()
	if n := pollers.Load(); n != 0 {
		t.Fatalf("%d slots still held after both stopped", n)
	}
}
