package hymn

import (
	"errors"
	"fmt"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/topo"
)

// Schedules and delivery traces of links (docs/schedules.md).
//
// A link's `schedule` parameter (or `a>b.schedule`, `b>a.schedule`) names
// a schedule file, or holds one inline as topo's YAML loader writes it; the
// `trace` parameter names a Mahimahi delivery trace that becomes the
// direction's rate. Both are read and checked when the network is made
// (New), before anything is built. Schedules start together when Build
// finishes: that instant is their time zero.
//
// Each scheduled direction is driven by its link's own forwarding thread:
// the emulator knows the next point's time and the thread wakes for it as
// for a departure (a real-time thread, so on a loaded machine a change
// lands within tens of µs; a timer goroutine may be late by milliseconds).
// The points are applied through Reconfigure, the same live-change path as
// SetLinkParams. Stopping the network stops the forwarders and with them
// the schedules.

// ScheduleParam is the link parameter that holds a schedule.
const ScheduleParam = "schedule"

// LoadScheduleParam reads a schedule parameter: inline text (as
// emulator.Schedule.Encode writes it) or a file name, the local user's
// (relative to the working directory). linkparams.LoadSchedule reads one
// from other input.
func LoadScheduleParam(v string) (*emulator.Schedule, error) {
	return linkparams.LoadSchedule(topo.LocalFiles(""), ScheduleParam, v)
}

// directionParam returns the value of key for link direction i (0 = a→b),
// the direction's own key winning over the common one.
func directionParam(p topo.Params, i int, key string) (string, bool) {
	if v, ok := p[emulator.Direction(i).String()+"."+key]; ok {
		return v, true
	}
	v, ok := p[key]
	return v, ok
}

// loadScheduleParams is EmulatorConfigs' part: the schedules of both
// directions read and checked against the configurations they modify.
func loadScheduleParams(p topo.Params, cfgs [2]*emulator.Config, files topo.Files) (scheds [2]*emulator.Schedule, err error) {
	for i := range cfgs {
		v, ok := directionParam(p, i, ScheduleParam)
		if !ok {
			continue
		}
		s, err := linkparams.LoadSchedule(files, ScheduleParam, v)
		if err == nil {
			err = s.CheckAgainst(*cfgs[i])
		}
		if err != nil {
			return scheds, fmt.Errorf("%w: %s.schedule: %v", ErrLinkParams, emulator.Direction(i), err)
		}
		scheds[i] = s
	}
	return scheds, nil
}

// startLinkSchedules installs the schedules New loaded from the link
// parameters, with time zero at zero. Build calls it last.
func (n *Network) startLinkSchedules(zero time.Time) error {
	for _, l := range n.links {
		emu, el := n.emulation(l.plan), n.emulatedLink(l)
		if emu == nil || el == nil {
			continue
		}
		for i, s := range emu.schedules {
			if s == nil {
				continue
			}
			if err := el.Fwd.SetSchedule(emulator.Direction(i), s, zero); err != nil {
				return fmt.Errorf("link %s: %s.schedule: %w", l.plan, emulator.Direction(i), err)
			}
		}
	}
	return nil
}

// SetLinkSchedule runs s on the link between node1 and node2 in direction
// dir (relative to the order of the names), replacing any schedule there,
// with time zero now; it returns that instant. A link without an emulator
// gets one. The schedule is checked against the direction's current
// configuration first; nothing changes if it does not fit.
func (n *Network) SetLinkSchedule(node1, node2 string, dir Direction, s *emulator.Schedule) (time.Time, error) {
	if s == nil {
		return time.Time{}, errors.New("no schedule")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	fw, touch, err := n.scheduleTarget(node1, node2, dir, true)
	if err != nil {
		return time.Time{}, err
	}
	for i := range touch {
		if touch[i] {
			if err := s.CheckAgainst(fw.Config(emulator.Direction(i))); err != nil {
				return time.Time{}, fmt.Errorf("link %s-%s: %w", node1, node2, err)
			}
		}
	}
	zero := time.Now()
	for i := range touch {
		if touch[i] {
			if err := fw.SetSchedule(emulator.Direction(i), s, zero); err != nil {
				return time.Time{}, fmt.Errorf("link %s-%s: %w", node1, node2, err)
			}
		}
	}
	return zero, nil
}

// StopLinkSchedule removes the schedules of a link (the parameters stay
// as the last point left them).
func (n *Network) StopLinkSchedule(node1, node2 string, dir Direction) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	fw, touch, err := n.scheduleTarget(node1, node2, dir, false)
	if err != nil {
		return err
	}
	var errs []error
	for i := range touch {
		if touch[i] {
			errs = append(errs, fw.SetSchedule(emulator.Direction(i), nil, time.Time{}))
		}
	}
	return errors.Join(errs...)
}

// StopAllSchedules removes every link's schedules.
func (n *Network) StopAllSchedules() error {
	var errs []error
	for _, ls := range n.LinkSchedules() {
		errs = append(errs, n.StopLinkSchedule(ls.Node1, ls.Node2, BothDirections))
	}
	return errors.Join(errs...)
}

func (n *Network) scheduleTarget(node1, node2 string, dir Direction, insert bool) (fw *emulator.Forwarder, touch [2]bool, err error) {
	if !n.built || n.stopped {
		return nil, touch, ErrNotBuilt
	}
	l, fwd, err := n.findLink(node1, node2)
	if err != nil {
		return nil, touch, err
	}
	if !dir.Valid() {
		return nil, touch, fmt.Errorf("unknown direction %d", dir)
	}
	touch = linkDirections(dir, fwd)
	e := n.emulatedLink(l)
	if e == nil {
		if !insert {
			return nil, touch, fmt.Errorf("%w: %s-%s", ErrNoEmulator, node1, node2)
		}
		if err := n.insertEmulator(l, emulator.DefaultConfig(), emulator.DefaultConfig()); err != nil {
			return nil, touch, err
		}
		if e = n.emulatedLink(l); e == nil {
			return nil, touch, fmt.Errorf("%w: %s-%s", ErrNoEmulator, node1, node2)
		}
	}
	return e.Fwd, touch, nil
}

// LinkSchedule is the schedule progress of one link, per direction seen
// from the order of Node1 and Node2.
type LinkSchedule struct {
	Node1, Node2     string
	Forward, Reverse emulator.ScheduleStatus
	// Start is the wall-clock time zero of the forward schedule (or of
	// the reverse one if only it has a schedule).
	Start time.Time
}

func scheduleStart(fw *emulator.Forwarder, ls *LinkSchedule) {
	zero := ls.Forward.Zero
	if ls.Forward.Points == 0 {
		zero = ls.Reverse.Zero
	}
	now := time.Now()
	ls.Start = now.Add(-time.Duration(fw.Since(now) - zero))
}

// LinkScheduleStatus reports the schedules of the link between two nodes.
func (n *Network) LinkScheduleStatus(node1, node2 string) (LinkSchedule, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.built || n.stopped {
		return LinkSchedule{}, ErrNotBuilt
	}
	l, fwd, err := n.findLink(node1, node2)
	if err != nil {
		return LinkSchedule{}, err
	}
	el := n.emulatedLink(l)
	if el == nil {
		return LinkSchedule{}, fmt.Errorf("%w: %s-%s", ErrNoEmulator, node1, node2)
	}
	f, r := emulator.AtoB, emulator.BtoA
	if !fwd {
		f, r = r, f
	}
	ls := LinkSchedule{Node1: node1, Node2: node2, Forward: el.Fwd.ScheduleStatus(f), Reverse: el.Fwd.ScheduleStatus(r)}
	scheduleStart(el.Fwd, &ls)
	return ls, nil
}

// LinkSchedules lists the links that have (or had) a schedule, in link
// order, named as the topology names them.
func (n *Network) LinkSchedules() []LinkSchedule {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.built || n.stopped {
		return nil
	}
	var out []LinkSchedule
	for _, l := range n.links {
		el := n.emulatedLink(l)
		if el == nil {
			continue
		}
		ls := LinkSchedule{Node1: l.plan.Intf1.Node, Node2: l.plan.Intf2.Node,
			Forward: el.Fwd.ScheduleStatus(emulator.AtoB), Reverse: el.Fwd.ScheduleStatus(emulator.BtoA)}
		if ls.Forward.Points > 0 || ls.Reverse.Points > 0 {
			scheduleStart(el.Fwd, &ls)
			out = append(out, ls)
		}
	}
	return out
}

// TraceStart reports when the delivery trace of the direction node1→node2
// started (its time zero: the first packet that reached it).
func (n *Network) TraceStart(node1, node2 string) (time.Time, bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.built || n.stopped {
		return time.Time{}, false, ErrNotBuilt
	}
	l, fwd, err := n.findLink(node1, node2)
	if err != nil {
		return time.Time{}, false, err
	}
	el := n.emulatedLink(l)
	if el == nil {
		return time.Time{}, false, fmt.Errorf("%w: %s-%s", ErrNoEmulator, node1, node2)
	}
	dir := emulator.AtoB
	if !fwd {
		dir = emulator.BtoA
	}
	t, ok := el.Fwd.TraceStart(dir)
	return t, ok, nil
}
