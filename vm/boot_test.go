package vm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
	"golang.org/x/sys/unix"
)

// startWaiters starts one acquirer per name, in order (each queued before
// the next starts), and returns a channel that receives each name when it
// gets its slot.
func startWaiters(t *testing.T, s *bootSlots, ctx context.Context, names ...string) (<-chan string, <-chan error) {
	t.Helper()
	got := make(chan string, len(names))
	errs := make(chan error, len(names))
	for _, name := range names {
		queued := make(chan struct{})
		go func() {
			err := s.acquire(ctx, func() { close(queued) })
			if err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
				return
			}
			got <- name
		}()
		select {
		case <-queued:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not queue", name)
		}
	}
	return got, errs
}

func expectNone(t *testing.T, got <-chan string) {
	t.Helper()
	select {
	case name := <-got:
		t.Fatalf("%s got a slot while none was free", name)
	case <-time.After(50 * time.Millisecond):
	}
}

func expect(t *testing.T, got <-chan string, want string) {
	t.Helper()
	select {
	case name := <-got:
		if name != want {
			t.Fatalf("%s got the slot, want %s (arrival order)", name, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s got no slot", want)
	}
}

func TestBootSlotsLimitAndOrder(t *testing.T) {
	s := &bootSlots{limit: 2}
	ctx := context.Background()
	waited := 0
	for range 2 {
		if err := s.acquire(ctx, func() { waited++ }); err != nil {
			t.Fatal(err)
		}
	}
	if waited != 0 {
		t.Fatalf("onWait called %d times for free slots", waited)
	}
	got, _ := startWaiters(t, s, ctx, "h3", "h4", "h5")
	expectNone(t, got)
	if limit, used, waiting := s.state(); limit != 2 || used != 2 || waiting != 3 {
		t.Fatalf("state %d/%d/%d, want limit 2, 2 used, 3 waiting", limit, used, waiting)
	}
	s.release()
	expect(t, got, "h3")
	expectNone(t, got)
	s.release()
	expect(t, got, "h4")
	s.release()
	expect(t, got, "h5")
	for range 2 {
		s.release()
	}
	if _, used, waiting := s.state(); used != 0 || waiting != 0 {
		t.Fatalf("after releasing everything: %d used, %d waiting", used, waiting)
	}
}

// A boot whose context ends while it waits leaves the queue and takes no
// slot; the next waiter still gets the next free one.
func TestBootSlotsCancelWhileWaiting(t *testing.T) {
	s := &bootSlots{limit: 1}
	if err := s.acquire(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	_, cerrs := startWaiters(t, s, cctx, "h2")
	got, _ := startWaiters(t, s, context.Background(), "h3")
	cancel()
	select {
	case err := <-cerrs:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("canceled waiter: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("canceled waiter did not return")
	}
	if _, used, waiting := s.state(); used != 1 || waiting != 1 {
		t.Fatalf("after the cancel: %d used, %d waiting, want 1 and 1", used, waiting)
	}
	s.release()
	expect(t, got, "h3")
	s.release()
	if _, used, _ := s.state(); used != 0 {
		t.Fatalf("%d slots still used", used)
	}
}

// A waiter granted a slot just as its context ended hands the slot on
// instead of keeping it.
func TestBootSlotsGrantRacesCancel(t *testing.T) {
	for i := range 200 {
		s := &bootSlots{limit: 1}
		if err := s.acquire(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		var err error
		queued := make(chan struct{})
		go func() {
			defer wg.Done()
			err = s.acquire(cctx, func() { close(queued) })
		}()
		<-queued
		go cancel()
		s.release()
		wg.Wait()
		_, used, waiting := s.state()
		want := 0
		if err == nil {
			want = 1 // it got the slot before seeing the cancel
		}
		if used != want || waiting != 0 {
			t.Fatalf("round %d: acquire returned %v, %d used, %d waiting", i, err, used, waiting)
		}
	}
}

func TestBootSlotsSetLimit(t *testing.T) {
	s := &bootSlots{limit: 1}
	if err := s.acquire(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	got, _ := startWaiters(t, s, context.Background(), "h2", "h3", "h4")
	s.setLimit(3) // two more free slots: the first two waiters get them
	two := map[string]bool{}
	for range 2 {
		select {
		case name := <-got:
			two[name] = true
		case <-time.After(5 * time.Second):
			t.Fatal("raising the limit granted no slot")
		}
	}
	if !two["h2"] || !two["h3"] {
		t.Fatalf("raising the limit granted %v, want h2 and h3 (arrival order)", two)
	}
	expectNone(t, got)
	s.setLimit(0) // at least one; the three running boots go on
	if limit, used, _ := s.state(); limit != 1 || used != 3 {
		t.Fatalf("limit %d, %d used after lowering", limit, used)
	}
	s.release()
	s.release()
	expectNone(t, got) // still one in use, the limit
	s.release()
	expect(t, got, "h4")
}

func TestSetBootConcurrency(t *testing.T) {
	defer SetBootConcurrency(0)
	SetBootConcurrency(3)
	if n := BootConcurrency(); n != 3 {
		t.Fatalf("BootConcurrency() = %d after SetBootConcurrency(3)", n)
	}
	SetBootConcurrency(0)
	if n, want := BootConcurrency(), 2*len(hostCPUs()); n != want || n < 2 {
		t.Fatalf("default BootConcurrency() = %d, want %d (two per usable core)", n, want)
	}
}

// fakeDelays is a scripted schedstat: the run-queue waits of QEMU's
// threads at each sample.
type fakeDelays struct {
	samples []map[int]uint64
	err     error
}

func (f *fakeDelays) read() (map[int]uint64, error) {
	if f.err != nil {
		return nil, f.err
	}
	s := f.samples[0]
	f.samples = f.samples[1:]
	return s, nil
}

func TestBootClock(t *testing.T) {
	const s = uint64(time.Second)
	t0 := time.Unix(1000, 0)
	f := &fakeDelays{samples: []map[int]uint64{
		{1: 0, 2: s / 2},           // 1 s: the vCPU thread (2) waited 0.5 s since QEMU started
		{1: s / 10, 2: s / 2},      // 2 s: only the main thread (1) waited, 0.1 s
		{1: s / 10, 2: 4 * s},      // 3 s: thread 2 waited 3.5 s in 1 s (threads of several CPUs... counted as 1 s at most)
		{2: 4 * s, 3: s / 5},       // 4 s: thread 1 ended, thread 3 is new and waited 0.2 s
		{2: 4*s + s, 3: s/5 + s/4}, // 5 s: both waited; the longer wait counts, once
	}}
	c := newBootClock(t0, f.read)
	want := []time.Duration{500 * time.Millisecond, 100 * time.Millisecond, time.Second, 200 * time.Millisecond, time.Second}
	var stalled time.Duration
	for i, w := range want {
		c.sample(t0.Add(time.Duration(i+1) * time.Second))
		stalled += w
		if c.stalled != stalled {
			t.Fatalf("sample %d: stalled %v, want %v", i+1, c.stalled, stalled)
		}
	}
	if c.wall() != 5*time.Second || c.own() != 5*time.Second-stalled {
		t.Fatalf("wall %v own %v, want 5s and %v", c.wall(), c.own(), 5*time.Second-stalled)
	}
	// A sample at the same instant changes nothing (and reads nothing).
	c.sample(t0.Add(5 * time.Second))
	if c.stalled != stalled {
		t.Fatalf("a zero interval changed the stall to %v", c.stalled)
	}
}

// Without schedstat the clock is a wall clock.
func TestBootClockWithoutSchedstat(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newBootClock(t0, (&fakeDelays{err: errors.New("no schedstat")}).read)
	c.sample(t0.Add(7 * time.Second))
	if c.stalled != 0 || c.own() != 7*time.Second {
		t.Fatalf("stalled %v own %v, want 0 and 7s", c.stalled, c.own())
	}
}

func TestBootClockExpired(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const timeout = 60 * time.Second
	cases := []struct {
		wall, stalled time.Duration
		want          string // substring, "" for not expired
	}{
		{59 * time.Second, 0, ""},
		{60 * time.Second, 0, "within 1m0s of boot time (1m0s since QEMU started, 0s of it waiting for a CPU)"},
		// The starved boot of a loaded 2-core machine: 90 s on the wall
		// clock, 50 s of it waiting for a CPU, has had 40 s.
		{90 * time.Second, 50 * time.Second, ""},
		{130 * time.Second, 70 * time.Second, "within 1m0s of boot time (2m10s since QEMU started, 1m10s of it waiting for a CPU)"},
		{599 * time.Second, 590 * time.Second, ""},
		{600 * time.Second, 595 * time.Second, "within 10m0s since QEMU started (9m55s of it waiting for a CPU; the host is too busy"},
	}
	for _, tc := range cases {
		c := newBootClock(t0, nil)
		c.last, c.stalled = t0.Add(tc.wall), tc.stalled
		got := c.expired(timeout)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("wall %v stalled %v: expired = %q, want %q", tc.wall, tc.stalled, got, tc.want)
		}
	}
}

// watchBoot gives a starved boot the time it waited for a CPU and ends a
// boot that ran out of its own time with a bootTimeoutError.
func TestWatchBootStarved(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	n := &Node{cfg: &resolved{Config: Config{Name: "h3", BootTimeout: 400 * time.Millisecond,
		Logf: func(f string, a ...any) { mu.Lock(); lines = append(lines, fmt.Sprintf(f, a...)); mu.Unlock() }}}}
	// For its first second the "QEMU" waits for a CPU the whole time.
	t0 := time.Now()
	starved := time.Second
	clock := newBootClock(t0, func() (map[int]uint64, error) {
		return map[int]uint64{1: uint64(min(time.Since(t0), starved))}, nil
	})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan struct{})
	go func() { n.watchBoot(ctx, cancel, clock); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("watchBoot did not end the boot")
	}
	took := time.Since(t0)
	cause := context.Cause(ctx)
	var bt *bootTimeoutError
	if !errors.As(cause, &bt) || !errors.Is(cause, errBootTimeout) {
		t.Fatalf("cause %v, want a bootTimeoutError", cause)
	}
	// 1 s starved + 0.4 s of its own. The floor: the fake stall and the
	// boot clock read one real clock, so the boot cannot end before 1.4 s
	// of it have passed; the test's own clock starts before the watch and
	// stops after it, so a pause only lengthens what it reads, and the
	// slack is one sampling tick (the clock starts at t0, the first tick a
	// tick later). The ceiling: the watch ends at the first tick past
	// 1.4 s; a loaded machine delays ticks and the test's reads, which the
	// 2 s above it absorb (forty of the test's own pauses, CallerRead).
	want := starved + 400*time.Millisecond
	testenv.Floor(t, "time until the starved boot ended", took, want, bootTick)
	testenv.JudgeTime(t, testenv.Timing{Quantity: "time until the starved boot ended", Got: took, Target: want,
		Tolerance: 2 * time.Second, Bound: testenv.AtMost, Resolution: testenv.CallerRead()})
	if !strings.Contains(bt.msg, "of it waiting for a CPU") {
		t.Errorf("message %q", bt.msg)
	}
	t.Logf("ended after %v: %s", took, bt.msg)
}

// schedstatDelays sees a process that shares one core with another busy
// one wait for that core about half the time.
func TestSchedstatDelaysRealContention(t *testing.T) {
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skip("this kernel has no schedstat (CONFIG_SCHED_INFO)")
	}
	if testing.Short() {
		t.Skip("keeps a core busy for two seconds")
	}
	cores := hostCPUs()
	core := -1
	for c := range cores {
		if core < 0 || c < core {
			core = c
		}
	}
	var hogs []*exec.Cmd
	t.Cleanup(func() {
		// Killed, so Wait reports the signal: its error is no news.
		for _, h := range hogs {
			if err := h.Process.Kill(); err != nil {
				t.Error(err)
			}
			_ = h.Wait()
		}
	})
	for range 2 {
		h := exec.Command("sh", "-c", "while :; do :; done")
		if err := h.Start(); err != nil {
			t.Fatal(err)
		}
		hogs = append(hogs, h)
		var set unix.CPUSet
		set.Set(core)
		if err := unix.SchedSetaffinity(h.Process.Pid, &set); err != nil {
			t.Fatal(err)
		}
	}
	pid := hogs[0].Process.Pid
	t0 := time.Now()
	c := newBootClock(t0, func() (map[int]uint64, error) { return schedstatDelays(pid) })
	c.sample(t0) // a zero interval: nothing
	time.Sleep(100 * time.Millisecond)
	c.sample(time.Now()) // from here on, both share the core
	base := c.stalled
	start := c.last
	// The window's ends are the test's own reads of the clock, each
	// followed by a read of schedstat: a pause between the two moves an
	// end by up to testenv.CallerPause, so over 2 s the share is known to
	// 2.5 % of itself, and ten of that (0.125 at the expected 0.5) fits in
	// the 0.2 below it.
	const window = 2 * time.Second
	for time.Since(start) < window {
		time.Sleep(bootTick)
		c.sample(time.Now())
	}
	wall := c.last.Sub(start)
	stalled := c.stalled - base
	t.Logf("over %v the hog waited %v for its core", wall, stalled)
	// Two busy processes on one core: each waits about half the time
	// (more when other work also runs on that core): at least 30 %.
	testenv.Judge(t, testenv.Measurement{
		Quantity: "share of the window the hog waited for its core", Got: stalled.Seconds() / wall.Seconds(),
		Target: 0.5, Tolerance: 0.2, Bound: testenv.AtLeast, Resolution: testenv.CallerWindow(0.5, window),
	})
	// The clock counts at most each interval's length as stalled, so the
	// stall never exceeds the window: arithmetic, not a measurement.
	if stalled > wall {
		t.Errorf("stalled %v of %v: more than the window", stalled, wall)
	}
}

// The QMP wait runs on the same clock: a QEMU starved while it starts is
// given the time it waited for a CPU, up to bootWallFactor × qmpTimeout.
func TestQMPClock(t *testing.T) {
	t0 := time.Unix(1000, 0)
	starved := func(until time.Duration) func() (map[int]uint64, error) {
		now := t0
		return func() (map[int]uint64, error) {
			now = now.Add(time.Second)
			return map[int]uint64{1: uint64(min(now.Sub(t0), until))}, nil
		}
	}
	// Starved for its first 10 s: 25 s on the wall clock are 15 s of its own.
	c := qmpClock{newBootClock(t0, starved(10*time.Second))}
	for s := 1; s <= 30; s++ {
		exp := c.expired(t0.Add(time.Duration(s) * time.Second))
		if want := s >= 25; exp != want {
			t.Fatalf("at %d s: expired = %v, want %v (own %v)", s, exp, want, c.own())
		}
	}
	// Starved for good: the wall clock ends it.
	c = qmpClock{newBootClock(t0, starved(time.Hour))}
	bound := int(bootWallFactor * qmpTimeout / time.Second)
	for s := 1; s <= bound; s++ {
		if exp := c.expired(t0.Add(time.Duration(s) * time.Second)); exp != (s == bound) {
			t.Fatalf("at %d s (own %v): expired = %v, want it at %d s", s, c.own(), exp, bound)
		}
	}
}
