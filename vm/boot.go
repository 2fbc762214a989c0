package vm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Booting many VMs at once on few cores is what made five TCG guests miss
// a fixed 60 s agent timeout on a 2-core machine at load average 24-31:
// every guest got a sliver of a core, none finished, and all failed
// together. Two things keep such boots reliable:
//
//   - Boot slots: at most two boots per usable host core run at a time
//     (from QEMU's start until the agent answers; a booted guest gives its
//     slot back), so a large network does not starve every guest at once
//     (a starved guest kernel trips its own timing checks: the IO-APIC
//     timer panic that no_timer_check now skips was one) and the first
//     guests are ready, and their errors known, sooner. Not one per core:
//     a TCG boot also waits (timers, the agent's start). On 2 busy cores
//     (load 8-10), runs alternating the slot count had five guests all
//     ready in 26-27 s with 4 or 5 slots and 31-33 s with 2 (the first at
//     13 s instead of 25 s), seven in 44-48 s with 4 and 50-52 s with 2.
//   - A boot clock that stops while the host keeps QEMU off the CPU:
//     BootTimeout is measured as wall-clock time minus the time QEMU's
//     threads waited on a run queue (/proc/PID/task/*/schedstat), so a
//     guest starved by other work is given the time it did not get,
//     while a guest that runs and still does not answer (no agent in a
//     custom image, a hung init) fails after BootTimeout as before. The
//     wall clock is still bounded, by bootWallFactor × BootTimeout.

// bootWallFactor bounds a boot's wall-clock time at this many times its
// BootTimeout, however starved QEMU was: a machine that slow cannot run the
// network anyway.
const bootWallFactor = 10

// bootProgressEvery is how often a long boot reports that it is still
// going (and how much of its time it waited for a CPU).
const bootProgressEvery = 30 * time.Second

// bootTick is how often a boot's clock samples QEMU's scheduler
// statistics.
const bootTick = 200 * time.Millisecond

// bootSlots is a FIFO counting semaphore whose limit can change while it
// is in use (SetBootConcurrency).
type bootSlots struct {
	mu      sync.Mutex
	limit   int
	used    int
	waiters []chan struct{} // in arrival order; closed when granted a slot
}

// acquire waits for a slot, in arrival order, until ctx ends. onWait,
// when not nil, is called once if the caller has to wait.
func (s *bootSlots) acquire(ctx context.Context, onWait func()) error {
	s.mu.Lock()
	if s.used < s.limit && len(s.waiters) == 0 {
		s.used++
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	s.mu.Unlock()
	if onWait != nil {
		onWait()
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, w := range s.waiters {
		if w == ch {
			s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
			return ctx.Err()
		}
	}
	// Granted while ctx ended: the slot is ours, so hand it on.
	s.used--
	s.grantLocked()
	return ctx.Err()
}

// release gives a slot back.
func (s *bootSlots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used--
	s.grantLocked()
}

// setLimit changes the number of slots; waiters are granted slots that
// became free at once, and boots beyond a lowered limit finish normally.
func (s *bootSlots) setLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = max(n, 1)
	s.grantLocked()
}

func (s *bootSlots) grantLocked() {
	for s.used < s.limit && len(s.waiters) > 0 {
		close(s.waiters[0])
		s.waiters = s.waiters[1:]
		s.used++
	}
}

// state returns the limit, the slots in use and the number waiting.
func (s *bootSlots) state() (limit, used, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limit, s.used, len(s.waiters)
}

// boots are the process's boot slots, shared by every VM it boots.
var boots = &bootSlots{limit: defaultBootConcurrency()}

// defaultBootConcurrency is two boots per core this process may run on.
func defaultBootConcurrency() int { return 2 * max(len(hostCPUs()), 1) }

// SetBootConcurrency sets how many VMs of this process boot at the same
// time (from QEMU's start until the guest agent answers); n < 1 restores
// the default, two per host core this process may use. Further VMs wait
// for a slot, and the wait does not count against their BootTimeout.
func SetBootConcurrency(n int) {
	if n < 1 {
		n = defaultBootConcurrency()
	}
	boots.setLimit(n)
}

// BootConcurrency returns how many VMs boot at the same time.
func BootConcurrency() int {
	limit, _, _ := boots.state()
	return limit
}

// bootClock measures how long a boot has had: wall-clock time minus the
// time the host kept QEMU waiting for a CPU.
type bootClock struct {
	start, last time.Time
	stalled     time.Duration
	delays      map[int]uint64 // thread id -> run-queue wait so far (ns)
	// read returns the run-queue wait of each of QEMU's threads;
	// schedstatDelays, or a fake in tests. An error (no schedstat in
	// this kernel) leaves the clock a wall clock.
	read func() (map[int]uint64, error)
}

func newBootClock(start time.Time, read func() (map[int]uint64, error)) *bootClock {
	return &bootClock{start: start, last: start, delays: map[int]uint64{}, read: read}
}

// sample reads QEMU's threads at now and adds the interval's wait for a
// CPU to the stalled time. The interval's stall is that of the thread
// that waited longest (a 1-vCPU TCG guest progresses as fast as its vCPU
// thread runs; summing threads would count one interval several times),
// and at most the interval. Threads seen for the first time count with
// their whole wait: they were created during the boot.
func (c *bootClock) sample(now time.Time) {
	interval := now.Sub(c.last)
	if interval <= 0 {
		return
	}
	c.last = now
	cur, err := c.read()
	if err != nil {
		return
	}
	var worst uint64
	for tid, d := range cur {
		if prev := c.delays[tid]; d > prev && d-prev > worst {
			worst = d - prev
		}
	}
	c.delays = cur
	c.stalled += min(time.Duration(worst), interval)
}

// wall is the wall-clock time since the boot started.
func (c *bootClock) wall() time.Duration { return c.last.Sub(c.start) }

// own is the time the boot has had: wall-clock time less the stalls.
func (c *bootClock) own() time.Duration { return c.wall() - c.stalled }

// expired says why the boot has run out of time ("" while it has not).
func (c *bootClock) expired(timeout time.Duration) string {
	switch {
	case c.own() >= timeout:
		return fmt.Sprintf("the guest agent did not answer within %v of boot time (%v since QEMU started, %v of it waiting for a CPU)",
			timeout, c.wall().Round(100*time.Millisecond), c.stalled.Round(100*time.Millisecond))
	case c.wall() >= bootWallFactor*timeout:
		return fmt.Sprintf("the guest agent did not answer within %v since QEMU started (%v of it waiting for a CPU; the host is too busy to boot VMs)",
			c.wall().Round(100*time.Millisecond), c.stalled.Round(100*time.Millisecond))
	}
	return ""
}

// schedstatDelays reads the run-queue wait (the second field of
// schedstat, in ns) of every thread of process pid.
func schedstatDelays(pid int) (map[int]uint64, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[int]uint64, len(entries))
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(dir + "/" + e.Name() + "/schedstat")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // the thread ended
			}
			return nil, err
		}
		f := strings.Fields(string(data))
		if len(f) < 2 {
			return nil, fmt.Errorf("%s/%s/schedstat: %q", dir, e.Name(), data)
		}
		d, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s/%s/schedstat: %q", dir, e.Name(), data)
		}
		out[tid] = d
	}
	return out, nil
}

// errBootTimeout marks a boot that ran out of time; the message says how.
var errBootTimeout = errors.New("boot timeout")

type bootTimeoutError struct{ msg string }

func (e *bootTimeoutError) Error() string { return e.msg }
func (e *bootTimeoutError) Unwrap() error { return errBootTimeout }

// watchBoot samples the boot clock until ctx ends, prints a progress line
// every bootProgressEvery and cancels the boot with a bootTimeoutError
// when its time is up.
func (n *Node) watchBoot(ctx context.Context, cancel context.CancelCauseFunc, clock *bootClock) {
	tick := time.NewTicker(bootTick)
	defer tick.Stop()
	nextReport := bootProgressEvery
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			clock.sample(now)
			if msg := clock.expired(n.cfg.BootTimeout); msg != "" {
				cancel(&bootTimeoutError{msg})
				return
			}
			if clock.wall() >= nextReport {
				nextReport += bootProgressEvery
				n.cfg.logf("*** VM %s still booting after %.0f s (%.0f s of it waiting for a CPU)\n",
					n.cfg.Name, clock.wall().Seconds(), clock.stalled.Seconds())
			}
		}
	}
}
