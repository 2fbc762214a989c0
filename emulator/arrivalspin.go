package emulator

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

// Waiting for a frame without depending on a wake-up.
//
// A zero-delay link adds to every frame the time its host takes to run
// the forwarding thread that the frame woke. Where waking a thread on
// another CPU is a trip through the hypervisor (a paravirtualised guest
// without a polling cpuidle driver, where the CPU_DMA_LATENCY request of
// wakelatency.go changes nothing), that is most of what the link adds:
// measured on such a 2-vCPU guest, a frame waited 35-60 µs at the median
// in the RX ring for a thread that slept in poll (perf sched: 5-80 µs
// from the wake-up to the thread running), against 5 µs for one that was
// polling the ring. The timer is no better (hymn calibrate: a 50 µs sleep
// ends 20-30 µs late there).
//
// Polling all the time costs a CPU per forwarding thread, and under
// SCHED_FIFO a thread that never sleeps has the kernel's RT throttling
// (or its fair server) stop it for tens of milliseconds each second: a
// p99 of 25-33 ms where the p50 fell to 10 µs. So the forwarder polls
// within a budget that refills at a share of the wall time, and sleeps
// whenever it is spent, which bounds its CPU and lets its CPU's other
// tasks run. HYMN_FORWARDER_POLL chooses where it polls:
//
//   - adaptive (the default): only where the next frame is expected.
//     After a frame, while frames come closer together than postSpinMax,
//     it polls a few gaps' worth instead of sleeping, so a burst is read
//     without a wake-up per frame; and when frames come on a schedule (a
//     probe stream, a request every millisecond), it sleeps on a timer
//     until shortly before the next one is due (early by twice the
//     timer's learned lateness) and polls until a little after it. A
//     fifth of a CPU at most per thread; an idle link polls not at all.
//   - always: whenever nothing is due, within a budget of 9/10 of a CPU
//     per thread: the lowest latency the host allows, for a CPU per
//     link that carries traffic (after idleAfter without a frame the
//     thread sleeps as in adaptive mode, so idle links still cost
//     nothing).
//   - off: sleep whenever nothing is due.
//
// However many links a process runs, at most half its CPUs' worth of
// threads (at least one) poll at a time (pollers): a hundred links each
// carrying a regular stream must not turn into a hundred fifths of a CPU
// on a machine of two, and a thread that finds no slot free sleeps as
// with polling off.
//
// Arrival polling is only for directions whose delay is shorter than a
// wake-up (arrivalSpinDelay): a frame that waits a millisecond in the
// emulator anyway loses nothing by being read 50 µs late, since its delay
// counts from its kernel arrival stamp.

// ForwarderPollEnv is the environment variable that chooses how the
// forwarding threads of every emulated link of the process poll for
// arrivals: adaptive (default), always or off.
const ForwarderPollEnv = "HYMN_FORWARDER_POLL"

// PollMode is how a forwarding thread polls for arrivals (see
// ForwarderConfig.Poll).
type PollMode int

const (
	// PollDefault takes HYMN_FORWARDER_POLL, else PollAdaptive.
	PollDefault PollMode = iota
	// PollAdaptive polls within bursts and around a regular stream's
	// next frame, within a fifth of a CPU.
	PollAdaptive
	// PollAlways polls whenever nothing is due and the link carried a
	// frame in the last idleAfter, within 9/10 of a CPU.
	PollAlways
	// PollOff never polls for arrivals.
	PollOff
)

func (m PollMode) String() string {
	switch m {
	case PollAdaptive:
		return "adaptive"
	case PollAlways:
		return "always"
	case PollOff:
		return "off"
	}
	return "default"
}

// ParsePollMode reads a HYMN_FORWARDER_POLL value ("" is PollDefault).
func ParsePollMode(s string) (PollMode, error) {
	switch s {
	case "":
		return PollDefault, nil
	case "adaptive":
		return PollAdaptive, nil
	case "always":
		return PollAlways, nil
	case "off":
		return PollOff, nil
	}
	return PollDefault, fmt.Errorf("%s=%q: use adaptive (poll for expected frames within a fifth of a CPU per link, the default), always (poll whenever a busy link has nothing due: a CPU per link) or off", ForwarderPollEnv, s)
}

// pollModeFromEnv resolves PollDefault; a malformed value counts as the
// default (commands report it at start: CheckCPUIdleEnv).
func pollModeFromEnv(m PollMode) PollMode {
	if m != PollDefault {
		return m
	}
	if e, err := ParsePollMode(os.Getenv(ForwarderPollEnv)); err == nil && e != PollDefault {
		return e
	}
	return PollAdaptive
}

const (
	// arrivalSpinDelay: a direction whose mean delay is at least this
	// long never polls for arrivals.
	arrivalSpinDelay = 100 * time.Microsecond
	// postSpinMax: frames closer together than this count as a burst
	// worth polling for; postSpinGaps gaps is how long to poll for the
	// next one.
	postSpinMax  = 50 * time.Microsecond
	postSpinGaps = 3
	// Predicted arrivals: gaps between predictMin and predictMax whose
	// mean deviation is under 1/predictRegular of the gap count as a
	// schedule. The poll ends predictTail plus twice the usual lateness
	// after the schedule's next point.
	predictMin     = 50 * time.Microsecond
	predictMax     = 20 * time.Millisecond
	predictRegular = 2
	predictTail    = 20 * time.Microsecond
	// Budgets: the share of the wall time a thread may poll (adaptive,
	// always), up to spinBurst of polling at once.
	adaptiveShare = 0.2
	alwaysShare   = 0.9
	spinBurst     = 2 * time.Millisecond
	// idleAfter: in always mode, a thread whose link carried nothing for
	// this long sleeps until the next frame.
	idleAfter = 100 * time.Millisecond
	// initialTimerLate seeds the learned timer lateness: what a slow host
	// shows (hymn calibrate's p50 on a paravirtualised guest is 20-30 µs).
	initialTimerLate = 30 * time.Microsecond
	maxTimerLead     = 300 * time.Microsecond
)

// pollers counts the threads polling for arrivals now, in the process;
// maxPollers bounds it.
var (
	pollers    atomic.Int32
	maxPollers = int32(max(1, runtime.NumCPU()/2))
)

// arrivalSpin predicts a worker's next arrival and accounts its polling.
// Times are the forwarder's clock (ns). One worker owns it.
type arrivalSpin struct {
	mode  PollMode // PollAdaptive, PollAlways or PollOff
	share float64  // budget refill, CPU share

	last int64   // time of the last batch that brought frames
	gap  float64 // EWMA of the gaps between batches, ns
	dev  float64 // EWMA of |gap − mean|, ns
	n    int     // gaps seen since the last reset
	// A regular stream's schedule: frames are sent every gap, each a
	// little late or on time, never early. anchor is a point of the
	// schedule (the earliest phase seen, drifting later slowly), late the
	// EWMA of how far behind it frames arrive.
	anchor int64
	late   float64

	timerLate float64 // EWMA of how late a predictive timer fired, ns
	target    int64   // when the pending predictive sleep should end (0: none)

	tokens   int64 // polling budget, ns
	tickAt   int64 // last tick
	spinning bool  // polling (and holding a pollers slot) since tickAt
	spun     int64 // total polling time, ns
}

// poll starts (or goes on) polling if a pollers slot is free; it
// reports whether the thread polls.
func (a *arrivalSpin) poll() bool {
	if a.spinning {
		return true
	}
	if pollers.Add(1) > maxPollers {
		pollers.Add(-1)
		return false
	}
	a.spinning = true
	return true
}

// idle ends polling and frees the slot.
func (a *arrivalSpin) idle() {
	if a.spinning {
		a.spinning = false
		pollers.Add(-1)
	}
}

func newArrivalSpin(mode PollMode) arrivalSpin {
	a := arrivalSpin{mode: mode, share: adaptiveShare, timerLate: float64(initialTimerLate), tokens: int64(spinBurst)}
	if mode == PollAlways {
		a.share = alwaysShare
	}
	return a
}

// tick charges the time since the last tick to the budget (if it was
// spent polling) and refills it.
func (a *arrivalSpin) tick(now int64) {
	el := now - a.tickAt
	a.tickAt = now
	if el <= 0 {
		return
	}
	if a.spinning {
		a.tokens -= el
		a.spun += el
	}
	a.tokens = min(a.tokens+int64(float64(el)*a.share), int64(spinBurst))
}

// arrived records a batch of frames read at now.
func (a *arrivalSpin) arrived(now int64) {
	if a.last > 0 {
		g := float64(now - a.last)
		switch {
		case g > float64(predictMax):
			a.gap, a.dev, a.n = 0, 0, 0 // a pause: start afresh
		case a.n == 0:
			a.gap, a.dev, a.n = g, g/2, 1
		default:
			const w = 1.0 / 8
			d := g - a.gap
			if d < 0 {
				d = -d
			}
			a.gap += w * (g - a.gap)
			a.dev += w * (d - a.dev)
			a.n++
		}
	}
	a.last = now
	a.target = 0
	a.lock(now)
}

// lock places the arrival at now on the stream's schedule.
func (a *arrivalSpin) lock(now int64) {
	p := int64(a.gap)
	if a.n < 4 || p < int64(predictMin) {
		a.anchor, a.late = now, 0
		return
	}
	// Offset from the nearest point of the schedule, in [-p/2, p/2).
	o := (now - a.anchor + p/2) % p
	if o < 0 {
		o += p
	}
	o -= p / 2
	if o < 0 {
		// Earlier than the schedule: the schedule was late; move it.
		a.anchor = now
		a.late = max(a.late+float64(o)/8, 0)
		return
	}
	a.anchor = now - o + o/64 // drift later slowly
	const w = 1.0 / 8
	a.late += w * (float64(o) - a.late)
}

// woke records the end of a sleep that was to end at target: a sleep
// that found no frame and ended late teaches the timer's lateness.
func (a *arrivalSpin) woke(now int64, gotFrames bool) {
	if a.target == 0 {
		return
	}
	if !gotFrames && now >= a.target {
		const w = 1.0 / 8
		late := float64(now - a.target)
		a.timerLate += w * (min(late, float64(maxTimerLead)) - a.timerLate)
	}
	a.target = 0
}

// decide is called when the worker has nothing to do at now and would
// sleep for timeout. It returns poll (keep polling instead of sleeping)
// or a timeout, never longer than the given one, that ends the sleep in
// time to poll for a predicted frame or when the budget allows polling
// again.
func (a *arrivalSpin) decide(now int64, timeout time.Duration) (poll bool, sleep time.Duration) {
	poll, sleep = a.choose(now, timeout)
	if poll && !a.poll() {
		return false, timeout // every slot taken: sleep as with polling off
	}
	if !poll {
		a.idle()
	}
	return poll, sleep
}

func (a *arrivalSpin) choose(now int64, timeout time.Duration) (poll bool, sleep time.Duration) {
	if a.mode == PollOff || a.last == 0 {
		return false, timeout
	}
	since := now - a.last
	if a.mode == PollAlways && since < int64(idleAfter) {
		if a.tokens > 0 {
			return true, timeout
		}
		// Spent: sleep until the budget is back, or a frame comes.
		back := time.Duration(float64(-a.tokens)/a.share) + minSpin
		return false, min(timeout, back)
	}
	if a.n == 0 || a.tokens <= 0 {
		return false, timeout
	}
	gap := int64(a.gap)
	// A burst: poll for its next frame.
	if gap < int64(postSpinMax) && since < postSpinGaps*max(gap, int64(5*time.Microsecond)) {
		return true, timeout
	}
	if gap < int64(predictMin) || gap > int64(predictMax) || a.n < 4 || int64(a.dev)*predictRegular > gap {
		return false, timeout
	}
	// The schedule's next point after the last arrival, and the window
	// from a timer's lateness before it to the usual lateness after it.
	next := a.anchor + ((a.last-a.anchor)/gap+1)*gap
	lead := int64(a.timerLate)*2 + int64(minSpin)
	start, end := next-lead, next+2*int64(a.late)+int64(predictTail)
	switch {
	case now >= end:
		return false, timeout // missed: wait for the frame
	case now >= start:
		return true, timeout
	}
	if t := time.Duration(start - now); t < timeout {
		a.target = start
		return false, t
	}
	return false, timeout
}
