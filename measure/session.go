package measure

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/hymn-net/hymn/emulator"
	"golang.org/x/sys/unix"
)

// Histogram range: 1 ns to 60 s at 3 significant digits (0.1 % error).
const (
	histMax     = int64(60 * time.Second)
	histSigFigs = 3
	warmFlag    = uint64(1) << 63
)

// NewHistogram returns an empty latency histogram (ns) of the geometry
// every Result uses, so histograms can be merged.
func NewHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMax, histSigFigs) }

// Session holds the sockets of an experiment: one receiver and one sender
// socket per flow, reused by every trial.
type Session struct {
	cfg  Config
	rx   int
	tx   []int
	snd  sender
	tag  atomic.Uint32
	seed uint64
	// fallback says why the generator is not the fastest one (auto).
	fallback string
}

// Open validates cfg and creates the sockets in their namespaces.
func Open(cfg Config) (*Session, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	s := &Session{cfg: cfg, rx: -1, seed: cfg.Seed}
	s.tag.Store(uint32(rand.Uint64()))
	in := func(f RunFunc, fn func() error) error {
		if f == nil {
			return fn()
		}
		return f(fn)
	}
	dst := &unix.SockaddrInet4{Port: int(cfg.Dst.Port()), Addr: cfg.Dst.Addr().As4()}
	err := in(cfg.InReceiver, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		s.rx = fd
		// A deep buffer so a receiver that is scheduled late loses nothing
		// the link delivered; FORCE needs CAP_NET_ADMIN, else the limit.
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20) != nil {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 64<<20) // capped by rmem_max at worst; receiver_drops says what that cost
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			return fmt.Errorf("SO_TIMESTAMPNS: %w", err)
		}
		// Drops at the receiving socket are the measurement's, not the
		// path's: count them apart.
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1) // without it receiver_drops stays 0: the loss is still counted
		tv := unix.NsecToTimeval(int64(20 * time.Millisecond))
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return err
		}
		return unix.Bind(fd, dst)
	})
	if err != nil {
		_ = s.Close() // always nil
		return nil, fmt.Errorf("measure receiver on %s: %w", cfg.Dst, err)
	}
	err = in(cfg.InSender, func() error {
		for range cfg.Flows {
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			s.tx = append(s.tx, fd)
			if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 4<<20) != nil {
				_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20) // capped by wmem_max at worst: send errors count what that costs
			}
			if err := unix.Connect(fd, dst); err != nil {
				return err
			}
		}
		s.snd, s.fallback, err = openSender(cfg.Generator, s.tx, cfg.Dst, cfg.Frame, cfg.Batch)
		return err
	})
	if err != nil {
		_ = s.Close() // always nil
		return nil, fmt.Errorf("measure sender to %s: %w", cfg.Dst, err)
	}
	return s, nil
}

// Generator is the generator the session's trials send with.
func (s *Session) Generator() Generator { return s.snd.kind() }

// Fallback says why the session does not use the fastest generator
// ("" when it does or one was asked for).
func (s *Session) Fallback() string { return s.fallback }

// Close releases the sockets.
func (s *Session) Close() error {
	if s.rx >= 0 {
		_ = unix.Close(s.rx) // nothing is buffered for the caller
		s.rx = -1
	}
	if s.snd != nil {
		s.snd.close()
		s.snd = nil
	}
	for _, fd := range s.tx {
		_ = unix.Close(fd) // send-only: nothing to flush
	}
	s.tx = nil
	return nil
}

// Sample is one packet of a delay time series.
type Sample struct {
	Sent  int64 // send time, ns CLOCK_REALTIME
	Delay int64 // one-way delay, ns
}

type sendStats struct {
	sent, errs uint64
	planned    uint64 // measured packets due before the end
	firstReal  int64  // CLOCK_REALTIME of the first measured send
	err        error
}

// Trial offers rate packets/s for d (plus the warm-up) and returns what
// arrived.
func (s *Session) Trial(ctx context.Context, rate float64, d time.Duration) (*Result, error) {
	if err := checkRate(rate); err != nil {
		return nil, err
	}
	c := &s.cfg
	tag := uint16(s.tag.Add(1))
	expected := int(math.Min(rate*d.Seconds()*1.05+float64(c.Batch), 1<<31))
	rx := newReceiver(tag, expected, c.Series)
	stop := make(chan int64, 1)
	rxDone := make(chan error, 1)
	go func() {
		receiverThread()
		rxDone <- rx.run(s.rx, stop)
	}()
	sdone := make(chan sendStats, 1)
	go func() {
		if !c.NoRealTime {
			emulator.RealTimeThread(0)
		} else {
			// Locked, so nanosleep and the socket calls stay on one
			// thread; the thread is discarded afterwards.
			lockThread()
		}
		sdone <- s.send(ctx, rate, d, tag)
	}()
	st := <-sdone
	stop <- monotonic() + int64(c.Drain)
	rerr := <-rxDone
	if st.err != nil {
		return nil, st.err
	}
	if rerr != nil {
		return nil, rerr
	}
	r := rx.result()
	r.Rate = rate
	r.RateBps = rate * WireBits(c.Frame)
	r.Pattern = c.Pattern.String()
	r.Frame = c.Frame
	r.Flows = c.Flows
	r.DurationS = d.Seconds()
	r.Sent = st.sent
	r.Planned = st.planned
	r.SendErrors = st.errs
	// Every measured packet is due, and sent, inside the measured window
	// of length d (the loop stops at its end): the average rate over it.
	r.SentPPS = float64(st.sent) / d.Seconds()
	if r.Received < r.Sent {
		r.Lost = r.Sent - r.Received
	}
	if r.Sent > 0 {
		r.Loss = float64(r.Lost) / float64(r.Sent)
		r.ReceivedPPS = float64(r.Received) / d.Seconds()
	}
	r.startReal = st.firstReal
	return r, nil
}

func (s *Session) send(ctx context.Context, rate float64, d time.Duration, tag uint16) sendStats {
	c := &s.cfg
	interval := 1e9 / rate
	var warmN uint64
	if c.Warmup > 0 {
		warmN = uint64(rate * c.Warmup.Seconds())
	}
	rng := rand.New(rand.NewPCG(s.seed, uint64(rate)))
	s.seed++
	start := monotonic() + int64(50*time.Microsecond)
	measureStart := start + int64(float64(warmN)*interval)
	end := measureStart + int64(d)
	var st sendStats
	var i uint64
	nextDue := float64(start)
	due := func(i uint64) float64 {
		switch c.Pattern {
		case Bursts:
			burst := uint64(c.Burst)
			return float64(start) + float64(i/burst*burst)*interval
		case Poisson:
			return nextDue
		}
		return float64(start) + float64(i)*interval
	}
	flow := 0
	for {
		if ctx.Err() != nil {
			st.err = ctx.Err()
			return st
		}
		now := monotonic()
		if now >= end {
			// What the schedule held until the end, sent or not: a
			// generator that fell behind shows as sent < planned.
			for n := 0; due(i) < float64(end) && n < 1e8; n++ {
				i++
				if c.Pattern == Poisson {
					nextDue += rng.ExpFloat64() * interval
				}
			}
			if i > warmN {
				st.planned = i - warmN
			}
			return st
		}
		next := due(i)
		if wait := int64(next) - now; wait > 0 {
			if wait > 3000 {
				ts := unix.NsecToTimespec(wait)
				_ = unix.Nanosleep(&ts, nil) // EINTR: the loop reads the clock again
			}
			continue
		}
		// The send time is read after the slots are found (a ring may
		// have had to be drained) and just before the payloads are
		// written and handed over.
		room := s.snd.prepare(c.Batch, flow)
		stamp := realtime()
		flow = (flow + 1) % len(s.tx)
		k := 0
		for k < room && due(i) <= float64(now) {
			buf := s.snd.payload(k)
			seq := i - warmN
			if i < warmN {
				seq = i | warmFlag
			}
			binary.LittleEndian.PutUint64(buf, seq)
			binary.LittleEndian.PutUint64(buf[8:], uint64(stamp))
			binary.LittleEndian.PutUint16(buf[16:], tag)
			k++
			i++
			if c.Pattern == Poisson {
				nextDue += rng.ExpFloat64() * interval
			}
		}
		if k == 0 {
			// No slot free (a ring the kernel has not drained): the due
			// packets stay due; a generator that cannot catch up shows as
			// sent < planned. Sleep a little, so the softirq that drains
			// it can run (see xdpSender.kick).
			emulator.ThreadSleep(busyWait)
			continue
		}
		taken := 0
		err := s.snd.commit(k, func(buf []byte) {
			taken++
			if binary.LittleEndian.Uint64(buf)&warmFlag == 0 {
				if st.sent == 0 {
					st.firstReal = stamp
				}
				st.sent++
			}
		})
		st.errs += uint64(k - taken)
		if err != nil {
			st.err = err
			return st
		}
	}
}

// receiver counts one trial's packets.
type receiver struct {
	tag         uint16
	seen        []uint64 // bitset of sequence numbers
	maxSeq      uint64
	any         bool
	received    uint64
	reordered   uint64
	dups        uint64
	hist        *hdrhistogram.Histogram
	series      []Sample
	seriesEvery uint64
	seriesMax   int
	// socket drop counter (SO_RXQ_OVFL) when the trial's first and last
	// packets arrived; -1 until seen.
	dropsFirst, dropsLast int64
}

func newReceiver(tag uint16, expected, series int) *receiver {
	r := &receiver{tag: tag, seen: make([]uint64, expected/64+1), hist: NewHistogram(), seriesMax: series, dropsFirst: -1, dropsLast: -1}
	if series > 0 {
		r.seriesEvery = uint64(expected/series) + 1
		r.series = make([]Sample, 0, min(series+1, expected+1))
	}
	return r
}

// maxSeqTracked bounds the bitset (2^31 packets, 256 MiB).
const maxSeqTracked = 1 << 31

func (r *receiver) add(seq uint64, delay int64, sent int64) {
	if seq >= maxSeqTracked {
		return
	}
	w := seq / 64
	for w >= uint64(len(r.seen)) {
		r.seen = append(r.seen, make([]uint64, len(r.seen)+1)...)
	}
	bit := uint64(1) << (seq % 64)
	if r.seen[w]&bit != 0 {
		r.dups++
		return
	}
	r.seen[w] |= bit
	r.received++
	if r.any && seq < r.maxSeq {
		r.reordered++
	} else {
		r.maxSeq, r.any = seq, true
	}
	if delay < 0 {
		delay = 0
	}
	if delay > histMax {
		delay = histMax
	}
	_ = r.hist.RecordValue(delay) // clamped to [0, histMax] above: always in range
	if r.seriesEvery > 0 && seq%r.seriesEvery == 0 && len(r.series) < r.seriesMax {
		r.series = append(r.series, Sample{Sent: sent, Delay: delay})
	}
}

func (r *receiver) run(fd int, stop <-chan int64) error {
	b := newBatch(64, 2048, 128)
	deadline := int64(-1)
	for {
		if deadline < 0 {
			select {
			case deadline = <-stop:
			default:
			}
		}
		if deadline >= 0 && monotonic() > deadline {
			return nil
		}
		b.resetRecv()
		n, err := recvmmsg(fd, b)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("receiving: %w", err)
		}
		fallback := int64(0)
		for j := range n {
			l := int(b.msgs[j].len)
			if l < headerLen {
				continue
			}
			buf := b.bufs[j]
			if binary.LittleEndian.Uint16(buf[16:]) != r.tag {
				continue
			}
			seq := binary.LittleEndian.Uint64(buf)
			if seq&warmFlag != 0 {
				continue
			}
			sent := int64(binary.LittleEndian.Uint64(buf[8:]))
			at, drops := controlInfo(b.oobs[j][:b.msgs[j].hdr.Controllen])
			if drops >= 0 {
				if r.dropsFirst < 0 {
					r.dropsFirst = drops
				}
				r.dropsLast = drops
			}
			if at == 0 {
				if fallback == 0 {
					fallback = realtime()
				}
				at = fallback
			}
			r.add(seq, at-sent, sent)
		}
	}
}

func (r *receiver) result() *Result {
	res := &Result{Received: r.received, Reordered: r.reordered, Duplicates: r.dups, Hist: r.hist, Series: r.series}
	if r.dropsFirst >= 0 && r.dropsLast >= r.dropsFirst {
		// The counter only rises; drops before this trial's first packet
		// belong to an earlier one. (Drops after its last packet are not
		// seen: the socket reports the counter only with a packet.)
		res.ReceiverDrops = uint64(r.dropsLast - r.dropsFirst)
	}
	res.Latency = latencyOf(r.hist)
	return res
}
