package emulator

import (
	"time"
)

// AppliedChange records one schedule point taking effect.
type AppliedChange struct {
	Point int           // index in Schedule.Points
	Cycle int64         // repetition, from 0
	Due   time.Duration // when the schedule says, from its time zero
	At    time.Duration // when the emulator applied it, from time zero
}

// Late is how much after its time a change took effect.
func (a AppliedChange) Late() time.Duration { return a.At - a.Due }

// ScheduleStatus is the progress of a direction's schedule.
type ScheduleStatus struct {
	Active   bool   // a schedule is installed and has points left
	Source   string // its file name
	Zero     int64  // emulator time of its time zero, ns
	Elapsed  time.Duration
	Cycle    int64
	Next     int           // index of the next point
	NextAt   time.Duration // its time, from time zero
	Points   int
	Repeat   time.Duration
	Applied  uint64        // points applied so far
	Skipped  uint64        // points skipped because the emulator was idle past whole periods
	Failed   uint64        // points refused by the emulator (a later manual change made them invalid)
	MaxLate  time.Duration // largest At − Due of the applied points
	LastErr  string
	Recent   []AppliedChange // the last applied points, oldest first (at most maxRecent)
	Finished bool            // every point was applied (no repeat)
	// Updated is when the schedule last changed the parameters (a point,
	// or a step of a ramp, which advances as packets arrive), from time
	// zero (for a point, its time); Current holds the delay, jitter, rate
	// and loss then in force.
	Updated time.Duration
	Current ScheduleParams
}

const maxRecent = 1024

// scheduleRun executes a Schedule on the emulator's own clock: the owner
// goroutine advances it at every Receive and Release, and NextDue reports
// the next point so a sleeping transmitter wakes for it. Each point goes
// through Reconfigure (the live-change path: queued packets keep their
// departure times, FIFO order holds, nothing is reset).
type scheduleRun struct {
	s        *Schedule
	zero     int64
	cycle    int64
	idx      int
	next     int64 // emulator time of point idx
	done     bool
	segStart int64  // when the segment ending at point idx began
	from     Config // parameters at segStart
	lastRamp int64
	rampOn   bool

	applied, skipped, failed uint64
	maxLate                  int64
	lastErr                  string
	updated                  int64
	recent                   []AppliedChange
	recentPos                int
	now                      int64
}

// SetSchedule installs s on this direction with time zero at zero (on the
// emulator's clock, ns), replacing any schedule; nil removes it. Points
// already past are applied at the next Receive or Release, each recorded
// as late. The schedule is checked against the current configuration.
// Call it from the owning goroutine (Forwarder.SetSchedule does).
func (e *Emulator) SetSchedule(s *Schedule, zero int64) error {
	if s == nil {
		e.sched = nil
		return nil
	}
	if err := s.CheckAgainst(e.cfg); err != nil {
		return err
	}
	r := &scheduleRun{s: s, zero: zero, segStart: zero, from: e.cfg, lastRamp: zero}
	r.next = zero + int64(s.Points[0].At)
	e.sched = r
	return nil
}

// runSchedule applies every point due at now and moves a ramp along.
func (e *Emulator) runSchedule(now int64) {
	r := e.sched
	if now > r.now {
		r.now = now
	}
	for !r.done && now >= r.next {
		p := &r.s.Points[r.idx]
		cfg := e.cfg
		p.Params.overlay(&cfg)
		if err := e.Reconfigure(cfg, false); err != nil {
			r.failed++
			r.lastErr = err.Error()
		} else {
			r.updated = r.next // the parameters are the schedule's values of that instant
			r.record(AppliedChange{Point: r.idx, Cycle: r.cycle, Due: time.Duration(r.next - r.zero), At: time.Duration(now - r.zero)})
		}
		r.segStart, r.from, r.rampOn = r.next, e.cfg, false
		r.idx++
		if r.idx == len(r.s.Points) {
			if r.s.Repeat <= 0 {
				r.done = true
				break
			}
			r.idx = 0
			r.cycle++
		}
		r.next = r.zero + r.cycle*int64(r.s.Repeat) + int64(r.s.Points[r.idx].At)
		if rep := int64(r.s.Repeat); rep > 0 && now-r.next >= rep {
			// Idle past whole periods (no forwarder woke for them):
			// skip them rather than replay each point late.
			k := (now - r.next) / rep
			r.cycle += k
			r.next += k * rep
			r.skipped += uint64(k) * uint64(len(r.s.Points))
		}
	}
	if r.done {
		return
	}
	p := &r.s.Points[r.idx]
	// A ramp is evaluated at the time given, also one earlier than the
	// last evaluation: a frame stamped by the kernel before the forwarder
	// got to read it (a loaded machine) gets the parameters of when it
	// arrived, not of when a Release moved the ramp on.
	if d := now - r.lastRamp; !p.Ramp || now <= r.segStart || (d < int64(rampStep) && d > -int64(rampStep)) {
		return
	}
	r.lastRamp = now
	f := float64(now-r.segStart) / float64(r.next-r.segStart)
	cfg := e.cfg
	interpolate(&cfg, &r.from, &p.Params, f)
	if err := e.Reconfigure(cfg, false); err != nil {
		r.failed++
		r.lastErr = err.Error()
	} else {
		r.updated = now
	}
}

// interpolate sets the fields of to in c at fraction f of the way from
// the values in from. A rate or loss that had no value before (no spacer,
// a Gilbert–Elliott model) cannot ramp and changes at the point instead.
func interpolate(c *Config, from *Config, to *ScheduleParams, f float64) {
	lerp := func(a, b float64) float64 { return a + (b-a)*f }
	if to.Set&SetDelay != 0 {
		c.Delay = time.Duration(lerp(float64(from.Delay), float64(to.Delay)))
	}
	if to.Set&SetJitter != 0 {
		c.Jitter = time.Duration(lerp(float64(from.Jitter), float64(to.Jitter)))
	}
	if to.Set&SetRate != 0 && from.Space.Enabled {
		c.Space.Rate = uint64(max(1, lerp(float64(from.Space.Rate), float64(to.Rate))))
	}
	if to.Set&SetLoss != 0 {
		var p0 float64
		switch from.Loss.Model {
		case NoLoss:
		case RandomLoss:
			p0 = from.Loss.Prob
		default:
			return
		}
		c.Loss = LossConfig{Model: RandomLoss, Prob: min(1, max(0, lerp(p0, to.Loss)))}
	}
}

func (r *scheduleRun) record(a AppliedChange) {
	r.applied++
	if l := int64(a.Late()); l > r.maxLate {
		r.maxLate = l
	}
	if len(r.recent) < maxRecent {
		r.recent = append(r.recent, a)
		return
	}
	r.recent[r.recentPos] = a
	r.recentPos = (r.recentPos + 1) % maxRecent
}

// scheduleDue is the emulator time of the next schedule point.
func (e *Emulator) scheduleDue() (int64, bool) {
	if e.sched == nil || e.sched.done {
		return 0, false
	}
	return e.sched.next, true
}

// ScheduleStatus reports the progress of the installed schedule; call it
// from the owning goroutine.
func (e *Emulator) ScheduleStatus() ScheduleStatus {
	r := e.sched
	if r == nil {
		return ScheduleStatus{}
	}
	st := ScheduleStatus{
		Active: !r.done, Source: r.s.Source, Zero: r.zero, Elapsed: time.Duration(max(0, r.now-r.zero)),
		Cycle: r.cycle, Next: r.idx, Points: len(r.s.Points), Repeat: r.s.Repeat,
		Applied: r.applied, Skipped: r.skipped, Failed: r.failed, MaxLate: time.Duration(r.maxLate),
		LastErr: r.lastErr, Finished: r.done, Updated: time.Duration(r.updated - r.zero),
		Current: ScheduleParams{Set: SetDelay | SetJitter | SetLoss, Delay: e.cfg.Delay, Jitter: e.cfg.Jitter},
	}
	if e.cfg.Space.Enabled {
		st.Current.Set |= SetRate
		st.Current.Rate = e.cfg.Space.Rate
	}
	if e.cfg.Loss.Model == RandomLoss {
		st.Current.Loss = e.cfg.Loss.Prob
	}
	if !r.done {
		st.NextAt = time.Duration(r.next - r.zero)
	}
	st.Recent = make([]AppliedChange, 0, len(r.recent))
	st.Recent = append(st.Recent, r.recent[r.recentPos:]...)
	st.Recent = append(st.Recent, r.recent[:r.recentPos]...)
	return st
}
