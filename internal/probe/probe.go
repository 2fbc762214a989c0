// Package probe measures what a link does to packets: it sends timestamped,
// numbered UDP probes at a fixed rate from one network namespace to
// another and reports the one-way delay (mean, jitter as a standard
// deviation, percentiles), loss and reordering. Sender and receiver run in
// one process, so both read the same CLOCK_MONOTONIC and one-way delays
// need no clock synchronisation.
package probe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/measure"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Config describes one probe run.
type Config struct {
	// Sender and Receiver are the namespaces to send from and receive in;
	// a closed handle (-1) means the caller's namespace.
	Sender, Receiver netns.NsHandle
	Dst              netip.AddrPort // the receiver's address (port 0: 9999)
	Rate             float64        // probes per second (default 10 000)
	Duration         time.Duration  // sending time (default 5 s)
	Size             int            // UDP payload bytes, ≥ 16 (default 64)
	// Drain is how long the receiver waits after the last probe was sent
	// (default 1 s): it must exceed the largest delay on the path.
	Drain time.Duration
	// Warmup probes (sent first, before the measured ones) let ARP resolve
	// and are not counted. Default 0.2 s worth; negative: none, for runs
	// that follow one another on a path that is already warm.
	Warmup time.Duration
}

// Result is what a run measured. Times are one-way.
type Result struct {
	Sent, Received uint64
	Lost           uint64 // sent but never received
	// LossBursts counts the runs of consecutive lost probes: Lost /
	// LossBursts is the mean burst length (1/r for a Gilbert–Elliott
	// channel with h = 0).
	LossBursts       uint64
	Reordered        uint64 // received after a probe with a higher number
	Duplicates       uint64
	Delay            emulator.HistogramSummary
	SendRate         float64 // achieved probes/s
	MeanMs, JitterMs float64
	// LongGaps are the gaps between two sends of the measured probes
	// beyond LongGap past their interval, in order: times the machine
	// kept the sender from sending (it catches up in a burst after),
	// which a test of a token bucket must count, since tokens do not
	// accrue past the bucket.
	LongGaps []time.Duration
	// Delays are the one-way delays of the measured probes received, in
	// the order they arrived: exact, where Delay's percentiles are known
	// to its buckets (1.6 % of the value), too coarse for a test that
	// judges a few hundred µs on top of ms.
	Delays []time.Duration
}

// LongGap is how late a send must be, beyond its interval, to be listed
// in Result.LongGaps.
const LongGap = 10 * time.Millisecond

func (r Result) String() string {
	bursts := ""
	if r.LossBursts > 0 {
		bursts = fmt.Sprintf(" (%d bursts, mean %.2f)", r.LossBursts, float64(r.Lost)/float64(r.LossBursts))
	}
	return fmt.Sprintf("sent %d received %d lost %d%s reordered %d | delay mean %.4f ms jitter %.4f ms p50 %v p99 %v min %v max %v | %.0f probes/s",
		r.Sent, r.Received, r.Lost, bursts, r.Reordered, r.MeanMs, r.JitterMs, r.Delay.P50, r.Delay.P99, r.Delay.Min, r.Delay.Max, r.SendRate)
}

const magic = 0x68796d6e70726f62 // "hymnprob"

func monotonic() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // cannot fail for this clock
	return ts.Nano()
}

// realtime is the clock of the kernel's receive timestamps (SO_TIMESTAMPNS).
// Probes carry it so a receiver that is scheduled late measures nothing
// of its own lateness.
func realtime() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_REALTIME, &ts) // cannot fail for this clock
	return ts.Nano()
}

func inNS(ns netns.NsHandle, fn func() error) error {
	if ns < 0 {
		return fn()
	}
	return netnsx.Do(ns, fn)
}

// Run sends probes and collects them.
func Run(ctx context.Context, c Config) (Result, error) {
	if c.Rate <= 0 {
		c.Rate = 10000
	}
	if c.Duration <= 0 {
		c.Duration = 5 * time.Second
	}
	if c.Size < 24 {
		c.Size = 64
	}
	if c.Drain <= 0 {
		c.Drain = time.Second
	}
	if c.Warmup == 0 {
		c.Warmup = 200 * time.Millisecond
	}
	if c.Dst.Port() == 0 {
		c.Dst = netip.AddrPortFrom(c.Dst.Addr(), 9999)
	}
	rx, err := measure.ListenStamped(c.Receiver, c.Dst)
	if err != nil {
		return Result{}, fmt.Errorf("probe receiver on %s: %w", c.Dst, err)
	}
	defer func() { _ = rx.Close() }() // UDP sockets: nothing is lost at Close
	// 4 MB, so that a receiver scheduled late loses nothing the link
	// delivered. net.core.rmem_max caps SO_RCVBUF (212992 by default;
	// some machines raise it, and a test passing there would fail on the
	// next): FORCE, which root may use, does not depend on it.
	forceReadBuffer(rx, 4<<20)
	var tx *net.UDPConn
	err = inNS(c.Sender, func() error {
		var err error
		tx, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(c.Dst))
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("probe sender to %s: %w", c.Dst, err)
	}
	defer func() { _ = tx.Close() }()

	type recvResult struct {
		res  Result
		seen map[uint64]bool
		err  error
	}
	stopAt := make(chan int64, 1) // when the receiver may stop (monotonic ns)
	done := make(chan recvResult, 1)
	go func() {
		var r Result
		var h emulator.Histogram
		buf := make([]byte, 65536)
		oob := make([]byte, 128)
		seen := map[uint64]bool{}
		var maxSeq uint64
		var anySeen bool
		deadline := int64(-1)
		for {
			if deadline < 0 {
				select {
				case deadline = <-stopAt:
				default:
				}
			}
			if deadline >= 0 && monotonic() > deadline {
				break
			}
			_ = rx.SetReadDeadline(time.Now().Add(50 * time.Millisecond)) // fails only on a closed socket, which the read reports
			n, oobn, _, _, err := rx.ReadMsgUDP(buf, oob)
			now := measure.KernelStamp(oob[:oobn])
			if now == 0 {
				now = realtime()
			}
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					continue
				}
				done <- recvResult{err: err}
				return
			}
			if n < 24 || binary.LittleEndian.Uint64(buf) != magic {
				continue
			}
			seq := binary.LittleEndian.Uint64(buf[8:])
			if seq&(1<<63) != 0 {
				continue // warm-up probe
			}
			sent := int64(binary.LittleEndian.Uint64(buf[16:]))
			if seen[seq] {
				r.Duplicates++
				continue
			}
			seen[seq] = true
			r.Received++
			if anySeen && seq < maxSeq {
				r.Reordered++
			} else {
				maxSeq, anySeen = seq, true
			}
			h.Record(now - sent)
			r.Delays = append(r.Delays, time.Duration(now-sent))
		}
		r.Delay = h.Summary()
		r.MeanMs = h.Mean() / 1e6
		r.JitterMs = h.Std() / 1e6
		done <- recvResult{res: r, seen: seen}
	}()

	pkt := make([]byte, c.Size)
	binary.LittleEndian.PutUint64(pkt, magic)
	interval := float64(time.Second) / c.Rate
	var gaps []time.Duration
	sendLoop := func(seq uint64, d time.Duration) (uint64, error) {
		start := monotonic()
		var n uint64
		var last int64
		for i := 0; ; i++ {
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			due := start + int64(float64(i)*interval)
			if due-start >= int64(d) {
				return n, nil
			}
			if wait := due - monotonic(); wait > 0 {
				// No spinning: the sender must not take a core from the
				// forwarder it measures. Oversleeping sends a short burst,
				// which is harmless because each probe carries its own
				// send time.
				time.Sleep(time.Duration(wait))
			}
			if now := monotonic(); seq < 1<<63 {
				if gap := time.Duration(now - last); i > 0 && gap > time.Duration(interval)+LongGap {
					gaps = append(gaps, gap)
				}
				last = now
			}
			binary.LittleEndian.PutUint64(pkt[8:], seq+uint64(i))
			binary.LittleEndian.PutUint64(pkt[16:], uint64(realtime()))
			if _, err := tx.Write(pkt); err != nil && !errors.Is(err, unix.ENOBUFS) && !errors.Is(err, unix.ECONNREFUSED) {
				return n, err
			}
			n++
		}
	}
	type sendResult struct {
		n   uint64
		err error
	}
	send := func(seq uint64, d time.Duration) (uint64, error) {
		// On its own real-time thread, discarded afterwards.
		ch := make(chan sendResult, 1)
		go func() {
			emulator.RealTimeThread(0)
			n, err := sendLoop(seq, d)
			ch <- sendResult{n, err}
		}()
		r := <-ch
		return r.n, r.err
	}
	if c.Warmup > 0 {
		if _, err := send(1<<63, c.Warmup); err != nil {
			return Result{}, err
		}
	}
	t0 := monotonic()
	sent, err := send(0, c.Duration)
	elapsed := monotonic() - t0
	stopAt <- monotonic() + int64(c.Drain)
	rr := <-done
	if err != nil {
		return Result{}, err
	}
	if rr.err != nil {
		return Result{}, rr.err
	}
	r := rr.res
	r.Sent, r.LongGaps = sent, gaps
	if r.Received < sent {
		r.Lost = sent - r.Received
	}
	for seq := uint64(0); seq < sent; seq++ {
		if !rr.seen[seq] && (seq == 0 || rr.seen[seq-1]) {
			r.LossBursts++
		}
	}
	r.SendRate = float64(sent) / (float64(elapsed) / 1e9)
	return r, nil
}

// forceReadBuffer sets a socket's receive buffer beyond net.core.rmem_max
// where the privilege allows, else up to it.
func forceReadBuffer(c *net.UDPConn, bytes int) {
	raw, err := c.SyscallConn()
	forced := false
	if err == nil {
		_ = raw.Control(func(fd uintptr) { // an error leaves forced false: the fallback below
			forced = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, bytes) == nil
		})
	}
	if !forced {
		_ = c.SetReadBuffer(bytes) // best effort: a smaller buffer shows as loss in the results
	}
}
