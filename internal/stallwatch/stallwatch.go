package stallwatch

import (
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Threshold is the oversleep that counts as a stall. A 1 ms sleep on these
// VMs oversleeps by tens of µs, and under the race detector by a few ms at
// worst; 5 ms is beyond both and below the stalls that break tests.
const Threshold = 5 * time.Millisecond

// Stall is an interval in which the watcher should have run and did not:
// from when its sleep was due to end to when it woke.
type Stall struct {
	From, To time.Time
}

// Len is how long the stall lasted.
func (s Stall) Len() time.Duration { return s.To.Sub(s.From) }

// Watcher watches for stalls until Stop.
type Watcher struct {
	done chan struct{}
	exit chan struct{}

	mu     sync.Mutex
	worst  time.Duration
	stalls []Stall
}

// Start starts a watcher. Without the privilege for SCHED_FIFO it runs as
// a normal thread, which sees the same machine-wide stalls and more.
func Start() *Watcher {
	w := &Watcher{done: make(chan struct{}), exit: make(chan struct{})}
	go w.run()
	return w
}

func (w *Watcher) run() {
	defer close(w.exit)
	// The goroutine ends without UnlockOSThread: the thread, with its
	// priority, is discarded rather than handed to other goroutines.
	runtime.LockOSThread()
	param := struct{ prio int32 }{1}
	// Without the privilege it fails and the thread stays normal (Start).
	_, _, _ = unix.RawSyscall(unix.SYS_SCHED_SETSCHEDULER, 0, uintptr(unix.SCHED_FIFO), uintptr(unsafe.Pointer(&param)))
	ts := unix.NsecToTimespec(int64(time.Millisecond))
	for {
		select {
		case <-w.done:
			return
		default:
		}
		due := time.Now().Add(time.Millisecond)
		// A raw nanosleep: the Go scheduler's timers would add their own
		// lateness, and the thread must sleep where the forwarders do.
		// Interrupted (EINTR), it wakes early: never counted as a stall.
		_, _, _ = unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
		woke := time.Now()
		late := woke.Sub(due)
		w.mu.Lock()
		w.worst = max(w.worst, late)
		if late > Threshold {
			w.stalls = append(w.stalls, Stall{From: due, To: woke})
		}
		w.mu.Unlock()
	}
}

// Stop stops the watcher and returns what it saw. Calling it again
// returns the same.
func (w *Watcher) Stop() Report {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	<-w.exit
	w.mu.Lock()
	defer w.mu.Unlock()
	return Report{Worst: w.worst, Stalls: append([]Stall(nil), w.stalls...)}
}

// Report is what a watcher saw.
type Report struct {
	Worst  time.Duration // the longest oversleep, stall or not
	Stalls []Stall       // the oversleeps beyond Threshold, in order
}

// Stalled reports whether the machine stalled at all.
func (r Report) Stalled() bool { return len(r.Stalls) > 0 }

// String says what was seen, for a test's log.
func (r Report) String() string {
	if !r.Stalled() {
		return "no stall (longest oversleep " + r.Worst.Round(time.Microsecond).String() + ")"
	}
	return "stalls " + formatStalls(r.Stalls) + " (longest " + r.Worst.Round(time.Microsecond).String() + ")"
}

func formatStalls(ss []Stall) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ", "
		}
		if i == 8 {
			return out + "..."
		}
		out += s.Len().Round(100 * time.Microsecond).String()
	}
	return out
}
