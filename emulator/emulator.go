package emulator

import (
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Emulator is one direction of an emulated link. It is not safe for
// concurrent use: one goroutine (the port's emulation thread) owns it and
// calls Receive, Release, Stats and Reconfigure between batches. Another
// goroutine may hand over a new configuration with RequestReconfigure; it
// takes effect at the start of the next Receive.
type Emulator struct {
	cfg    Config
	delay  delayer
	police policer
	space  spacer
	trace  traceStage // trace-driven rate (trace.go), instead of the spacer
	loss   lossState
	slot   slotGate // netem.go
	clone  Cloner
	// twinDrops are duplicates' twins dropped in this Receive, whose
	// frames the caller frees with the others.
	twinDrops []Packet
	nc        netemCounters
	fifo      ring
	heap      calendar
	useHeap   bool
	ghosts    ghostQueue // slots of lost packets not yet started (spacer on)
	// queuedSegs is the wire packets queued: a GSO super-frame (a TCP
	// sender's 64 KB write carried whole) counts as its segments, so a
	// buffer of N packets holds N packets' worth of a bulk flow, not N
	// super-frames (100 of them held 2.6 s of a 12 Mbit/s trace).
	queuedSegs int

	pcg *rand.PCG
	rng *rand.Rand

	seq        uint64
	lastDue    int64 // FIFO rule t_tx,i = max(t_tx,i−1, ...)
	maxSentSeq uint64
	anySent    bool
	lossRun    bool // the loss model dropped the last packet it judged

	c         counters
	delayHist Histogram
	lateHist  Histogram

	pending atomic.Pointer[pendingChange]
	sched   *scheduleRun // schedule_run.go
}

type pendingChange struct {
	cfg   Config
	reset bool
}

type counters struct {
	received, receivedBytes uint64
	sent, sentBytes         uint64
	lastSentDue             int64 // Due of the last packet sent
	policed, spacerDropped  uint64
	lost, bufferFull        uint64
	lossBursts              uint64 // runs of packets the loss model dropped in a row
	reordered               uint64
	maxQueue                int
}

// New validates cfg and returns an emulator ready for its first packet.
func New(cfg Config) (*Emulator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.SeedSet {
		// Reproducibility matters more than secrecy: the chosen seed is
		// reported in Stats so a run can be repeated.
		cfg.Seed, cfg.SeedSet = rand.Uint64(), true
	}
	e := &Emulator{pcg: rand.NewPCG(0, 0)}
	e.rng = rand.New(e.pcg)
	e.seedRNG(cfg.Seed)
	e.apply(cfg, true)
	return e, nil
}

func (e *Emulator) seedRNG(seed uint64) {
	// The second PCG word is a fixed odd mix of the seed so that seeds 0
	// and 1 give unrelated streams.
	e.pcg.Seed(seed, seed^0x9e3779b97f4a7c15)
}

func (e *Emulator) apply(cfg Config, reset bool) {
	old := e.cfg
	e.cfg = cfg
	if reset {
		e.delay.reset()
	}
	e.delay.configure(&e.cfg)
	e.police.configure(cfg.Police)
	e.space.configure(cfg.Space)
	e.trace.configure(cfg.Trace)
	if !cfg.Space.Enabled && cfg.Trace.Trace == nil {
		e.ghosts.reset() // without a spacer lost packets hold no slot
	}
	e.loss.configure(cfg.Loss)
	e.slot.configure(cfg.Slot)
	if cfg.Seed != old.Seed || reset {
		e.seedRNG(cfg.Seed)
	}
	heap := cfg.Reorder && !cfg.Space.Enabled && cfg.Trace.Trace == nil
	if heap != e.useHeap {
		// Move what is queued to the other discipline; nothing is lost.
		if heap {
			for e.fifo.len() > 0 {
				e.heap.push(e.fifo.pop())
			}
		} else {
			for e.heap.len() > 0 {
				p := e.heap.pop()
				e.fifo.push(p, int(^uint(0)>>1))
				e.lastDue = max(e.lastDue, p.Due)
			}
		}
		e.useHeap = heap
	}
}

// Config returns the configuration in force (with the seed filled in).
func (e *Emulator) Config() Config { return e.cfg }

// Reconfigure changes the parameters between batches. Queued packets keep
// their departure times. The delay state and rate estimate continue unless
// resetDelay is set, so a change of jitter does not cause a jump.
func (e *Emulator) Reconfigure(cfg Config, resetDelay bool) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if !cfg.SeedSet {
		cfg.Seed, cfg.SeedSet = e.cfg.Seed, true
	}
	e.apply(cfg, resetDelay)
	return nil
}

// RequestReconfigure validates cfg and hands it to the owning goroutine,
// which applies it before its next batch. Safe from any goroutine.
func (e *Emulator) RequestReconfigure(cfg Config, resetDelay bool) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	e.pending.Store(&pendingChange{cfg: cfg, reset: resetDelay})
	return nil
}

func (e *Emulator) queued() int {
	if e.useHeap {
		return e.heap.len()
	}
	return e.fifo.len()
}

// Receive takes a burst that arrived at now (ns on the emulator's clock)
// and queues each packet for its departure time. It fills in Seq, Arrival,
// Delay and Due of the packets in `in` (so the caller sees the decisions)
// and copies them into the buffer; `in` may be reused at once. Dropped packets are
// appended to dropped, which is returned, so the caller can free their
// buffers; pass a slice with capacity ≥ len(in) to avoid allocating.
func (e *Emulator) Receive(now int64, in []Packet, dropped []Packet) []Packet {
	if pc := e.pending.Load(); pc != nil && e.pending.CompareAndSwap(pc, nil) {
		_ = e.Reconfigure(pc.cfg, pc.reset) // validated when requested
	}
	if e.sched != nil {
		e.runSchedule(now)
	}
	if len(in) == 0 {
		return dropped
	}
	e.delay.arrive(now, len(in))
	for i := range in {
		if !e.receiveOne(now, &in[i]) {
			dropped = append(dropped, in[i])
		}
	}
	if len(e.twinDrops) > 0 {
		dropped = append(dropped, e.twinDrops...)
		e.twinDrops = e.twinDrops[:0]
	}
	return dropped
}

// receiveOne runs delayer → limiter → dropper → tx-time → buffer for one
// packet whose burst has already been counted by the rate estimator.
func (e *Emulator) receiveOne(now int64, p *Packet) bool {
	if !e.duplicate(p) {
		return e.admit(now, p)
	}
	// NetEm decides the twin before the original's loss and hands it
	// back to the start: it follows the original through every stage.
	twin, ok := e.makeClone(p)
	kept := e.admit(now, p)
	if ok {
		e.nc.duplicated++
		if !e.admit(now, &twin) {
			e.dropTwin(twin)
		}
	}
	return kept
}

// admit runs the stages for one packet (or a duplicate's twin).
func (e *Emulator) admit(now int64, p *Packet) bool {
	c := &e.c
	c.received++
	c.receivedBytes += uint64(p.Len)
	p.Seq = e.seq
	e.seq++
	p.Arrival = now
	d := int64(e.delay.next(now, e.rng))
	p.Delay = d
	segs := max(int(p.Segs), 1)
	wire := int(p.Len) + segs*e.cfg.Overhead
	if e.police.on && !e.police.pass(now, wire, segs > 1) {
		c.policed++
		return false
	}
	// The buffer is checked before the spacer: a packet dropped because
	// the buffer is full must not book serialisation time, or a flood
	// into a small buffer pushes the spacer's T_free ever further out and
	// blocks the link long after the flood ends.
	if e.occupancy(now) >= e.cfg.Buffer { // one super-frame may overfill by its segments less one
		c.bufferFull++
		return false
	}
	due := now + d
	if e.space.on {
		start, ok := e.space.schedule(due, wire)
		if !ok {
			c.spacerDropped++
			return false
		}
		due = start
	} else if e.trace.on {
		start, ok := e.trace.schedule(due, int(p.Len))
		if !ok {
			c.spacerDropped++
			return false
		}
		due = start
	}
	if e.loss.cfg.Model != NoLoss {
		if e.loss.lost(e.rng) && !e.markInstead(p) {
			c.lost++
			if !e.lossRun {
				c.lossBursts++
			}
			e.lossRun = true
			if e.space.on || e.trace.on {
				// Lost on the wire (docs/emulator-spec.md §1.4, §5.2): the packet used its
				// slot, so it holds its place in the buffer until the slot
				// starts, like the frames around it. Counting it keeps the
				// time booked for lost packets bounded by the buffer.
				e.ghosts.push(due)
			}
			return false
		}
		e.lossRun = false
	}
	if !e.corrupt(p) {
		// A super-frame cannot carry a detectable flipped bit: lost.
		e.nc.corrupted++
		c.lost++
		return false
	}
	if p.Corrupt != 0 {
		e.nc.corrupted++
	}
	e.queuedSegs += segs
	if e.useHeap {
		p.Due = due
		e.heap.push(*p)
		if n := e.heap.len(); n > c.maxQueue {
			c.maxQueue = n
		}
		return true
	}
	due = max(due, e.lastDue)
	p.Due = due
	e.fifo.push(*p, int(^uint(0)>>1)) // capacity checked above
	e.lastDue = due
	if n := e.fifo.len(); n > c.maxQueue {
		c.maxQueue = n
	}
	return true
}

// occupancy is the number of buffer places in use at now: queued wire
// packets (a super-frame's segments) plus packets lost on the wire whose
// slot has not started yet.
func (e *Emulator) occupancy(now int64) int {
	e.ghosts.expire(now)
	return e.queuedSegs + e.ghosts.len()
}

// NextDue reports the departure time of the next packet, if any, so a
// transmitter can sleep until then.
func (e *Emulator) NextDue() (int64, bool) {
	if t, ok := e.scheduleDue(); ok {
		// A schedule point wakes the transmitter too (Release applies it).
		due, queued := e.queueDue()
		if !queued || t < due {
			return t, true
		}
		return due, true
	}
	return e.queueDue()
}

func (e *Emulator) queueDue() (int64, bool) {
	if e.useHeap {
		if e.heap.len() == 0 {
			return 0, false
		}
		if e.slot.on {
			return e.slot.departure(e.heap.peek(), e.rng), true
		}
		return e.heap.peekDue(), true
	}
	if e.fifo.len() == 0 {
		return 0, false
	}
	if e.slot.on {
		return e.slot.departure(e.fifo.peek(), e.rng), true
	}
	return e.fifo.peek().Due, true
}

// Release fills out with packets due at or before now, in departure order,
// and returns how many it wrote. It never sends early; ports pass an out of
// MaxBatch packets.
func (e *Emulator) Release(now int64, out []Packet) int {
	if e.sched != nil {
		e.runSchedule(now)
	}
	n := 0
	for n < len(out) {
		var p Packet
		if e.slot.on {
			t, ok := e.queueDue()
			if !ok || t > now {
				break
			}
			if e.useHeap {
				p = e.heap.pop()
			} else {
				p = e.fifo.pop()
			}
			// The slot's wait is part of the packet's delay.
			p.Due = t
			e.slot.sent(&p, t, e.rng)
		} else if e.useHeap {
			if e.heap.len() == 0 || e.heap.peekDue() > now {
				break
			}
			p = e.heap.pop()
		} else {
			if e.fifo.len() == 0 || e.fifo.peek().Due > now {
				break
			}
			p = e.fifo.pop()
		}
		e.queuedSegs -= max(int(p.Segs), 1)
		e.sent(now, &p)
		out[n] = p
		n++
	}
	return n
}

func (e *Emulator) sent(now int64, p *Packet) {
	c := &e.c
	c.sent++
	c.sentBytes += uint64(p.Len)
	c.lastSentDue = p.Due
	if e.anySent && p.Seq < e.maxSentSeq {
		c.reordered++
	} else {
		e.maxSentSeq, e.anySent = p.Seq, true
	}
	e.delayHist.Record(p.Due - p.Arrival)
	e.lateHist.Record(now - p.Due)
}

// Stats is a snapshot of one direction's counters and gauges (docs/emulator-spec.md §8).
// Received = Sent + Dropped() + Queued always holds.
type Stats struct {
	Received, ReceivedBytes uint64
	Sent, SentBytes         uint64
	Policed                 uint64 // dropped by the token bucket
	SpacerDropped           uint64 // dropped by the spacer's fill limit
	Lost                    uint64 // dropped by the loss model
	LossBursts              uint64 // runs of consecutive packets the loss model dropped
	BufferFull              uint64 // dropped because the buffer was full
	Reordered               uint64 // sent after a later-arrived packet
	Queued, MaxQueued       int

	SpacerFree int64 // time (ns) at which the spacer's bucket is empty; backlog = SpacerFree − now
	LossState  uint8 // Gilbert–Elliott: 0 good, 1 bad; 4-state model: 1..4

	// NetEm's impairments (netem.go): twins made (each also counted in
	// Received), packets sent with a flipped bit (a super-frame drawn for
	// it is counted in Lost too), packets marked CE instead of lost.
	Duplicated, Corrupted, Marked uint64

	// LastSentDue is the due time (the emulator's clock, ns) of the last
	// packet sent: SentBytes counts exactly the packets due up to it, so
	// two snapshots give a rate over a window stamped where the packets
	// were scheduled, which no pause of the reader or of the machine moves.
	LastSentDue int64

	Rate   float64 // packet-rate estimate of the last closed interval, pkt/s
	Weight float64 // current a
	SigmaC time.Duration
	D      time.Duration // current (unclamped) delay state
	Seed   uint64

	Delay    HistogramSummary // applied delay t_tx − t_arr of sent packets
	Lateness HistogramSummary // send time − t_tx
}

// Dropped is the sum of all drop causes.
func (s *Stats) Dropped() uint64 { return s.Policed + s.SpacerDropped + s.Lost + s.BufferFull }

// HistogramSummary condenses a Histogram into the numbers people read.
type HistogramSummary struct {
	Count                         uint64
	Mean, Std                     time.Duration
	Min, P50, P90, P99, P999, Max time.Duration
}

// Summary computes the percentiles of h.
func (h *Histogram) Summary() HistogramSummary {
	return HistogramSummary{
		Count: h.n, Mean: time.Duration(h.Mean()), Std: time.Duration(h.Std()),
		Min: time.Duration(h.min), P50: time.Duration(h.Quantile(0.5)), P90: time.Duration(h.Quantile(0.9)),
		P99: time.Duration(h.Quantile(0.99)), P999: time.Duration(h.Quantile(0.999)), Max: time.Duration(h.max),
	}
}

// Stats returns a snapshot; call it from the owning goroutine.
func (e *Emulator) Stats() Stats {
	c := &e.c
	return Stats{
		Received: c.received, ReceivedBytes: c.receivedBytes,
		Sent: c.sent, SentBytes: c.sentBytes, LastSentDue: c.lastSentDue,
		Policed: c.policed, SpacerDropped: c.spacerDropped, Lost: c.lost, LossBursts: c.lossBursts, BufferFull: c.bufferFull,
		Reordered: c.reordered, Queued: e.queued(), MaxQueued: c.maxQueue,
		Duplicated: e.nc.duplicated, Corrupted: e.nc.corrupted, Marked: e.nc.marked,
		SpacerFree: e.space.tFree, LossState: e.loss.state,
		Rate: e.delay.rate, Weight: 1 - e.delay.x, SigmaC: time.Duration(e.delay.sigmaC),
		D: time.Duration(e.delay.D), Seed: e.cfg.Seed,
		Delay: e.delayHist.Summary(), Lateness: e.lateHist.Summary(),
	}
}

// DelayHistogram returns a copy of the applied-delay histogram.
func (e *Emulator) DelayHistogram() Histogram { return e.delayHist }
