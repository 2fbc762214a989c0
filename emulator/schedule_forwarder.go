package emulator

import (
	"fmt"
	"time"
)

// SetSchedule installs a schedule on one direction with its time zero at
// zero (wall-clock; the zero time.Time means now), replacing any schedule;
// nil removes it. The forwarding thread applies each point itself at its
// time (it wakes for it as for a departure), so the change lands within
// the thread's timing precision, not a timer goroutine's.
func (f *Forwarder) SetSchedule(dir Direction, s *Schedule, zero time.Time) error {
	if dir != AtoB && dir != BtoA {
		return fmt.Errorf("unknown direction %d", dir)
	}
	d := f.dirs[dir]
	d.mu.Lock()
	z := d.now()
	if !zero.IsZero() {
		z = int64(zero.Sub(f.start))
	}
	err := d.emu.SetSchedule(s, z)
	if err == nil && s != nil {
		// Points already due (time zero itself) take effect now, not when
		// the thread next wakes.
		d.emu.runSchedule(d.now())
	}
	d.mu.Unlock()
	if err != nil {
		return err
	}
	// The thread may be asleep for up to idleWait; make it look at the
	// new first point.
	d.in.Interrupt()
	return nil
}

// ScheduleStatus reports the progress of one direction's schedule.
func (f *Forwarder) ScheduleStatus(dir Direction) ScheduleStatus {
	d := f.dirs[dir&1]
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.emu.ScheduleStatus()
}

// Since converts a wall-clock instant to the forwarder's emulator time.
func (f *Forwarder) Since(t time.Time) int64 { return int64(t.Sub(f.start)) }

// TraceStart reports the wall-clock time zero of one direction's delivery
// trace, once its first packet has started it.
func (f *Forwarder) TraceStart(dir Direction) (time.Time, bool) {
	d := f.dirs[dir&1]
	d.mu.Lock()
	t0, ok := d.emu.TraceStart()
	d.mu.Unlock()
	if !ok {
		return time.Time{}, false
	}
	return f.start.Add(time.Duration(t0)), true
}
