package emulator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// An emulated link's punctuality is bounded by how fast its host runs a
// thread that was asleep: a forwarding thread sleeps in poll until a frame
// arrives and in nanosleep until a departure is due. On bare metal both
// wake-ups take a few microseconds; on a paravirtualised guest an idle
// vCPU halts, and the host must schedule it again before the thread runs,
// which can take tens to hundreds of microseconds and varies from machine
// to machine of the same kind. Figures taken on two hosts are only
// comparable beside the hosts' own wake-up latencies, so benchmarks and
// `hymn measure` measure them first (MeasureHostWake) and report them.

// HostWake is a host's measured thread wake-up latency, in microseconds,
// as a forwarding thread sees it: under the forwarders' scheduling class
// and with the same CPU idle request in force (HYMN_CPU_IDLE).
type HostWake struct {
	CPUs   int    `json:"cpus"`
	Kernel string `json:"kernel"`
	// RealTime says whether the probe threads ran under SCHED_FIFO, as
	// forwarders do when they may.
	RealTime bool `json:"realtime"`
	// CPUIdle is the idle policy in force (HYMN_CPU_IDLE: poll or deep).
	CPUIdle string `json:"cpu_idle"`
	// Timer is how late a thread that sleeps TimerSleepUS in nanosleep
	// runs: the transmitter's wait for a departure.
	TimerSleepUS float64     `json:"timer_sleep_us"`
	Timer        WakeSummary `json:"timer_late_us"`
	// Event is the time from one thread signalling an eventfd to the
	// thread blocked on it running: the receiver's wait for a frame.
	Event WakeSummary `json:"event_wake_us"`
}

// WakeSummary summarises wake-up latencies in microseconds.
type WakeSummary struct {
	Samples int     `json:"samples"`
	P50     float64 `json:"p50"`
	P90     float64 `json:"p90"`
	P99     float64 `json:"p99"`
	Max     float64 `json:"max"`
}

func summarise(ns []int64) WakeSummary {
	if len(ns) == 0 {
		return WakeSummary{}
	}
	slices.Sort(ns)
	at := func(q float64) float64 {
		i := int(q * float64(len(ns)-1))
		return float64(ns[i]) / 1e3
	}
	return WakeSummary{Samples: len(ns), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: float64(ns[len(ns)-1]) / 1e3}
}

// String is one line for people: both wake-ups' p50/p99/max.
func (h HostWake) String() string {
	return fmt.Sprintf("host: %d CPUs, kernel %s, idle %s%s; timer wake-up late by p50 %.1f / p99 %.1f / max %.0f µs (%d sleeps of %.0f µs); event wake-up p50 %.1f / p99 %.1f / max %.0f µs (%d)",
		h.CPUs, h.Kernel, h.CPUIdle, map[bool]string{true: ", SCHED_FIFO", false: ", no SCHED_FIFO"}[h.RealTime],
		h.Timer.P50, h.Timer.P99, h.Timer.Max, h.Timer.Samples, h.TimerSleepUS,
		h.Event.P50, h.Event.P99, h.Event.Max, h.Event.Samples)
}

// HostWakeConfig sets the calibration's size. Zero values take the
// defaults: 2000 samples of each kind and a 50 µs sleep (a few frames'
// time on a fast link), about a quarter of a second in all on a quiet host.
type HostWakeConfig struct {
	Samples int
	Sleep   time.Duration
	// Gap is the pause between two event signals, long enough that the
	// waiting CPU goes idle as it would between sparse frames (default
	// 200 µs).
	Gap time.Duration
}

// MeasureHostWake measures the host's wake-up latencies (HostWake). It
// holds the same CPU idle request the forwarders hold while it runs.
func MeasureHostWake(ctx context.Context, cfg HostWakeConfig) (HostWake, error) {
	if cfg.Samples <= 0 {
		cfg.Samples = 2000
	}
	if cfg.Sleep <= 0 {
		cfg.Sleep = 50 * time.Microsecond
	}
	if cfg.Gap <= 0 {
		cfg.Gap = 200 * time.Microsecond
	}
	if cfg.Samples > 1_000_000 || cfg.Sleep > 10*time.Millisecond || cfg.Gap > 10*time.Millisecond {
		return HostWake{}, fmt.Errorf("%w: host calibration: at most 1000000 samples and 10ms sleeps", ErrInvalidConfig)
	}
	deep, err := deepIdleFromEnv()
	if err != nil {
		return HostWake{}, err
	}
	release := holdCPUWakeLatency()
	defer release()
	h := HostWake{CPUs: runtime.NumCPU(), Kernel: kernelRelease(), CPUIdle: map[bool]string{true: "deep", false: "poll"}[deep], TimerSleepUS: float64(cfg.Sleep) / 1e3}

	var rt atomic.Bool
	timer := make(chan []int64, 1)
	go func() {
		rt.Store(RealTimeThread(0)) // the thread is discarded when the goroutine ends
		late := make([]int64, 0, cfg.Samples)
		for i := 0; i < cfg.Samples && ctx.Err() == nil; i++ {
			t0 := time.Now()
			ThreadSleep(cfg.Sleep)
			late = append(late, int64(time.Since(t0)-cfg.Sleep))
		}
		timer <- late
	}()
	h.Timer = summarise(<-timer)
	h.RealTime = rt.Load()

	ev, err := measureEventWake(ctx, cfg)
	if err != nil {
		return h, err
	}
	h.Event = summarise(ev)
	if err := ctx.Err(); err != nil {
		return h, err
	}
	return h, nil
}

// measureEventWake has one thread block in read(2) on an eventfd while
// another writes it after a pause; the reader records how long after the
// write it ran.
func measureEventWake(ctx context.Context, cfg HostWakeConfig) ([]int64, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("host calibration: eventfd: %w", err)
	}
	var sentAt atomic.Int64 // ns since base, written before each signal
	var taken atomic.Int64  // signals the reader has taken
	base := time.Now()
	out := make(chan []int64, 1)
	ready := make(chan struct{})
	go func() {
		RealTimeThread(0)
		close(ready)
		var buf [8]byte
		wake := make([]int64, 0, cfg.Samples)
		for len(wake) < cfg.Samples {
			if _, err := unix.Read(fd, buf[:]); err != nil {
				if errors.Is(err, unix.EINTR) {
					continue
				}
				break
			}
			s := sentAt.Load()
			if s < 0 { // the writer's stop signal
				break
			}
			wake = append(wake, int64(time.Since(base))-s)
			taken.Add(1)
		}
		out <- wake
	}()
	<-ready
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	for i := 0; i < cfg.Samples && ctx.Err() == nil; i++ {
		ThreadSleep(cfg.Gap)
		sentAt.Store(int64(time.Since(base)))
		if _, err := unix.Write(fd, one); err != nil {
			_ = unix.Close(fd)
			return nil, fmt.Errorf("host calibration: eventfd write: %w", err)
		}
		// The next signal waits until the reader took this one, so two
		// never merge into one sample however late the reader runs.
		for taken.Load() <= int64(i) && ctx.Err() == nil {
			ThreadSleep(cfg.Gap / 4)
		}
	}
	sentAt.Store(-1)
	_, _ = unix.Write(fd, one)
	wake := <-out
	_ = unix.Close(fd)
	return wake, nil
}

func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}
