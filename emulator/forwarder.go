package emulator

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// ForwarderConfig configures a Forwarder. AtoB and BtoA are the emulator
// configurations of the two directions; the rest has working defaults.
type ForwarderConfig struct {
	AtoB, BtoA Config
	// MaxBuffered bounds the frames held in memory per direction (each
	// in a slot of SlotSize bytes). It defaults to the emulator's Buffer
	// plus two batches, capped at FrameBufferBytes of slots (65 536 with
	// 2 KiB slots, 8192 with the 16 KiB of a 9000-byte MTU), so memory is
	// bounded by the configuration and not by the traffic.
	MaxBuffered int
	// MTU is the links' MTU (0: unknown). With it every frame buffer holds
	// a frame of MTU + 18 bytes (Ethernet header and a VLAN tag), and the
	// emulators' MaxFrame is that frame: a larger max-frame is an error,
	// the default or a smaller one is raised to it, so jumbo frames are
	// neither truncated nor mis-accounted.
	MTU int
	// SlotSize is the size of one frame buffer; 0 picks SlotSize(MaxFrame).
	SlotSize int
	// BusyPoll is how long a direction keeps polling its RX ring after
	// the last frame before it sleeps in poll. It saves the wake-up
	// latency (about 20 µs here) inside bursts, but on a machine with few
	// cores the polling takes CPU from the hosts that send and receive the
	// traffic, so it is off by default (0 or negative).
	BusyPoll time.Duration
	// Coalesce is the longest a direction sleeps on a timer, instead of
	// waiting to be woken by the next frame, while traffic is dense (the
	// last wake-up found more than one frame): the receive-interrupt
	// moderation of a NIC (ethtool -C rx-usecs). On a VM every wake-up
	// by an arriving frame is a cross-CPU interrupt that the sender pays
	// for; at 200 kpps they cost more than the forwarding. Arrival times
	// come from the kernel's stamps, so a frame read up to Coalesce late
	// is still delayed from when it really arrived; only a zero-delay link
	// adds up to Coalesce of latency, and only under load (a sparse flow,
	// one frame per wake-up, is woken at once). Default 30 µs; negative
	// turns it off.
	Coalesce time.Duration
	// Spin is the initial margin before a departure time at which the
	// transmitter stops sleeping and spins. It adapts to the oversleep the
	// kernel actually shows (5–200 µs, and at most a quarter of the time
	// since the direction last sent). Default 20 µs.
	Spin time.Duration
	// Scheduling of the forwarding threads. A forwarder is a tiny
	// real-time task: its only job is to be on time, and on a machine
	// shared with the traffic it forwards (iperf, VMs, compilers) an
	// ordinary thread waits milliseconds for a CPU. So each thread runs
	// under SCHED_FIFO at priority 1 (it sleeps whenever nothing is due, so
	// it takes CPU only in proportion to its traffic); with NoRealTime, or
	// when SCHED_FIFO is refused, it runs at Nice instead (default -10).
	NoRealTime bool
	Nice       int
	// NoPlacement leaves the forwarding threads where the scheduler puts
	// them; by default a busy thread moves off a CPU it shares with the
	// sender of its frames (forwarder_place.go).
	NoPlacement bool
	// Poll is how a thread whose link has a delay shorter than a wake-up
	// polls its rings for arrivals instead of sleeping until a frame
	// wakes it (arrivalspin.go). PollDefault takes HYMN_FORWARDER_POLL,
	// else PollAdaptive: within bursts and around the predicted time of a
	// regular stream's next frame, within a fifth of a CPU per thread.
	// Forwarder.ArrivalPoll reports what the polling spent.
	Poll PollMode
	// ThreadPerDirection gives each direction a forwarding thread of its
	// own. By default one thread serves both directions, when the ports
	// can wait for each other in one call (PairPort: AF_PACKET ports do).
	// Traffic that goes one way has its answers come back the other way
	// (TCP's ACKs, a ping's reply), and the frame a thread sends is
	// delivered at once, in that thread's own system call (veth_xmit →
	// netif_rx → the far end's softirq), so the answer is often waiting in
	// the other direction's ring by the time the send returns: one thread
	// picks it up without a wake-up. With a thread per direction each
	// answer costs a wake-up and a context switch on CPUs the hosts share
	// (bench/README.md: TCP on 2 vCPUs ran a sixth slower). A thread per
	// direction lets the two directions run on two CPUs at once; with one
	// thread, a frame may wait behind a batch of the other direction.
	ThreadPerDirection bool
}

const (
	// chunkBytes is the frame memory allocated at a time as a queue
	// grows (256 slots of 2 KiB): an idle link holds one chunk.
	chunkBytes = 512 << 10
	minSpin    = 5 * time.Microsecond
	// The spin margin may not exceed spinShare of the time since the
	// direction last sent (nor maxSpin): spinning longer than a share of
	// the gap between departures would turn a forwarder into a busy loop
	// that starves the very hosts and softirqs whose traffic it carries,
	// while before a departure that follows a long silence a long spin is
	// cheap, and needed: a thread waking from an idle CPU on a VM
	// oversleeps 35-90 us (measured here: p50 52 us, p90 90 us after a
	// 5 ms sleep), so a margin capped at 50 us left sparse traffic (ping)
	// 10-15 us late at the median. baseSpin is what any gap allows.
	spinShare = 4 // at most a quarter of the gap
	baseSpin  = 50 * time.Microsecond
	maxSpin   = 200 * time.Microsecond
	// idleWait bounds a sleep with nothing queued so a lost wake-up can
	// never stall a link for long.
	idleWait = 100 * time.Millisecond
	// defaultCoalesce: long enough that a wake-up at 200 kpps collects
	// a handful of frames, short against the 50 µs (p50) that a
	// zero-delay link may add.
	defaultCoalesce = 30 * time.Microsecond
)

// Forwarder runs an emulated link between two ports: a goroutine locked
// to its own OS thread receives a batch, runs it through that direction's
// Emulator and transmits what is due (the one-thread mapping of
// docs/emulator-spec.md §1), for both directions in turn; or one such
// thread per direction (ForwarderConfig.ThreadPerDirection, and ports
// that cannot wait together). When nothing is due soon it sleeps in the
// ports' poll, with a timeout that ends shortly before the next departure
// (while traffic is dense, on a short timer instead: see
// ForwarderConfig.Coalesce), and spins for the last microseconds so the
// realised delay matches the configured one rather than the timer's
// granularity.
type Forwarder struct {
	a, b      Port
	dirs      [2]*direction
	threads   []*worker
	start     time.Time
	linkFrame int // largest frame of the link (MTU + 18), 0: unknown
	stop      atomic.Bool

	mu      sync.Mutex
	running bool
	stopped bool
}

// DirectionStats are the counters of one direction: the emulator's (for
// which Received = Sent + Dropped() + Queued holds) plus what happened
// around it.
type DirectionStats struct {
	Emulator Stats
	// NoBuffer counts frames read from the RX ring but discarded because
	// every frame buffer was in use (MaxBuffered reached); the emulator
	// never saw them.
	NoBuffer uint64
	// Discarded counts frames still queued when the forwarder stopped.
	Discarded uint64
	// RxPort and TxPort are the counters of the receiving and sending
	// ports (each port serves both directions: only the RX side of RxPort
	// and the TX side of TxPort belong to this direction).
	RxPort, TxPort PortStats
}

// Accounting follows every frame of one direction from the receiving
// port to the sending one. Offered = Delivered + Dropped() + Queued holds
// exactly whenever no frame is in flight inside the forwarder (between
// batches, e.g. after traffic stops); Balanced checks it.
type Accounting struct {
	// Offered: frames that reached the receiving port's socket or queue:
	// read, cut (too long) or dropped by the kernel for a full RX ring.
	Offered uint64
	// Delivered: frames the sending port handed on and that were not
	// dropped after that (TxFrames − TxFailed).
	Delivered uint64
	// Queued: frames in the emulator (after Stop: discarded).
	Queued uint64
	// Duplicated: twins the emulator made (NetEm's duplicate), which
	// are delivered, queued or dropped like the frames offered.
	Duplicated uint64
	// Drops by cause, in path order.
	RxRingDrops   uint64 // the kernel's RX ring was full
	RxTruncated   uint64 // longer than the frame buffers
	NoBuffer      uint64 // every frame buffer in use
	Policed       uint64 // token bucket
	SpacerDropped uint64 // spacer fill limit
	Lost          uint64 // loss model
	BufferFull    uint64 // emulator buffer full
	TxDropped     uint64 // sending port refused (TX ring full)
	TxFailed      uint64 // dropped after the sending port took it
}

// Dropped is the sum of every drop cause.
func (a Accounting) Dropped() uint64 {
	return a.RxRingDrops + a.RxTruncated + a.NoBuffer + a.Policed + a.SpacerDropped + a.Lost + a.BufferFull + a.TxDropped + a.TxFailed
}

// Balanced reports whether Offered + Duplicated = Delivered + Dropped() +
// Queued.
func (a Accounting) Balanced() bool {
	return a.Offered+a.Duplicated == a.Delivered+a.Dropped()+a.Queued
}

func (a Accounting) String() string {
	return fmt.Sprintf("offered %d = delivered %d + queued %d + dropped %d (rx ring %d, truncated %d, no buffer %d, policed %d, spacer %d, lost %d, buffer full %d, tx refused %d, tx failed %d)",
		a.Offered, a.Delivered, a.Queued, a.Dropped(), a.RxRingDrops, a.RxTruncated, a.NoBuffer, a.Policed, a.SpacerDropped, a.Lost, a.BufferFull, a.TxDropped, a.TxFailed)
}

// Accounting sums up the direction end to end; see Accounting.
func (s *DirectionStats) Accounting() Accounting {
	e := &s.Emulator
	return Accounting{
		Offered:     s.RxPort.RxFrames + s.RxPort.RxTruncated + s.RxPort.RxRingDrops,
		Delivered:   s.TxPort.TxFrames - min(s.TxPort.TxFailed, s.TxPort.TxFrames),
		Queued:      uint64(e.Queued),
		Duplicated:  e.Duplicated,
		RxRingDrops: s.RxPort.RxRingDrops, RxTruncated: s.RxPort.RxTruncated, NoBuffer: s.NoBuffer,
		Policed: e.Policed, SpacerDropped: e.SpacerDropped, Lost: e.Lost, BufferFull: e.BufferFull,
		TxDropped: s.TxPort.TxDropped, TxFailed: min(s.TxPort.TxFailed, s.TxPort.TxFrames),
	}
}

// NewForwarder prepares a forwarder between ports a and b; Start runs it.
func NewForwarder(a, b Port, cfg ForwarderConfig) (*Forwarder, error) {
	if a == nil || b == nil {
		return nil, errors.New("forwarder needs two ports")
	}
	if cfg.MTU < 0 || cfg.MTU > MaxFrameLimit {
		return nil, fmt.Errorf("forwarder: MTU %d is outside 0..%d", cfg.MTU, MaxFrameLimit)
	}
	f := &Forwarder{a: a, b: b, start: time.Now(), linkFrame: linkFrame(cfg.MTU)}
	if portOffloads(a) != portOffloads(b) {
		return nil, fmt.Errorf("forwarder: ports %s and %s must both carry offloads or neither", a.Name(), b.Name())
	}
	for i, c := range []Config{cfg.AtoB, cfg.BtoA} {
		c, err := f.fitFrame(c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Direction(i), err)
		}
		d, err := newDirection(f, Direction(i), c, cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Direction(i), err)
		}
		f.dirs[i] = d
	}
	f.dirs[AtoB].in, f.dirs[AtoB].out = a, b
	f.dirs[BtoA].in, f.dirs[BtoA].out = b, a
	if pa, ok := a.(PairPort); ok && !cfg.ThreadPerDirection && pa.PairsWith(b) {
		f.threads = []*worker{newWorker(f, cfg, f.dirs[AtoB], f.dirs[BtoA])}
	} else {
		f.threads = []*worker{newWorker(f, cfg, f.dirs[AtoB]), newWorker(f, cfg, f.dirs[BtoA])}
	}
	return f, nil
}

// ArrivalPoll is the CPU time the forwarding threads have spent polling
// for expected arrivals (ForwarderConfig.NoArrivalPoll); it is updated as
// they poll and when they stop.
func (f *Forwarder) ArrivalPoll() time.Duration {
	var t int64
	for _, w := range f.threads {
		t += w.spun.Load()
	}
	return time.Duration(t)
}

// Threads is how many forwarding threads the link runs: 1 or 2.
func (f *Forwarder) Threads() int { return len(f.threads) }

func portOffloads(p Port) bool {
	o, ok := p.(OffloadPort)
	return ok && o.Offloads()
}

// offloads returns the receiving port of direction dir if the link
// carries offload state.
func (f *Forwarder) offloads(dir Direction) (OffloadPort, bool) {
	in := f.a
	if dir == BtoA {
		in = f.b
	}
	if !portOffloads(in) {
		return nil, false
	}
	return in.(OffloadPort), true
}

// l2Header is what a frame adds to the MTU: Ethernet header and one
// 802.1Q tag (the FCS is not part of frames on a packet socket).
const l2Header = 14 + 4

func linkFrame(mtu int) int {
	if mtu <= 0 {
		return 0
	}
	return min(mtu+l2Header, MaxFrameLimit)
}

// fitFrame makes c's MaxFrame the link's largest frame when the MTU is
// known (see ForwarderConfig.MTU) and validates the result.
func (f *Forwarder) fitFrame(c Config) (Config, error) {
	if lf := f.linkFrame; lf > 0 {
		if c.MaxFrame > lf && c.MaxFrame != DefaultMaxFrame {
			return c, fieldErr("max-frame", "%d bytes exceeds the link's largest frame of %d bytes (MTU %d + %d bytes of Ethernet header and VLAN tag)",
				c.MaxFrame, lf, lf-l2Header, l2Header)
		}
		c.MaxFrame = lf
	}
	return c, c.Validate()
}

// Start launches the forwarding threads.
func (f *Forwarder) Start() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running || f.stopped {
		return
	}
	f.running = true
	addProcs(len(f.threads))
	for _, w := range f.threads {
		go w.run()
	}
}

// Stop ends the threads and waits for them. Frames still queued are
// discarded (and counted). The ports stay open; the caller closes them.
func (f *Forwarder) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.stopped = true
	if !f.running {
		return
	}
	f.stop.Store(true)
	for _, d := range f.dirs {
		d.in.Interrupt()
	}
	for _, w := range f.threads {
		<-w.done
	}
	addProcs(-len(f.threads))
}

// Reconfigure changes one direction at once (between two batches).
// Queued frames keep their departure times; in FIFO mode later frames
// never overtake them, so a change of delay reorders nothing.
func (f *Forwarder) Reconfigure(dir Direction, cfg Config) error {
	if dir != AtoB && dir != BtoA {
		return fmt.Errorf("unknown direction %d", dir)
	}
	cfg, err := f.fitFrame(cfg)
	if err != nil {
		return err
	}
	d := f.dirs[dir]
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.emu.Reconfigure(cfg, false); err != nil {
		return err
	}
	d.maxSlots.Store(int64(maxSlotsFor(cfg, d.maxCap)))
	return nil
}

// Config returns the configuration in force in one direction.
func (f *Forwarder) Config(dir Direction) Config {
	d := f.dirs[dir&1]
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.emu.Config()
}

// Stats returns a snapshot of one direction. The counters are read one
// after another while frames may flow, so the sums of Accounting hold
// exactly only for a quiet link.
func (f *Forwarder) Stats(dir Direction) DirectionStats {
	d := f.dirs[dir&1]
	d.mu.Lock()
	s := DirectionStats{Emulator: d.emu.Stats()}
	d.mu.Unlock()
	s.NoBuffer = d.noBuffer.Load()
	s.Discarded = d.discarded.Load()
	s.RxPort, s.TxPort = d.in.Stats(), d.out.Stats()
	return s
}

// direction is one direction of the link: its emulator, its frame pool
// and its timing state. A worker thread runs it.
type direction struct {
	f       *Forwarder
	dir     Direction
	in, out Port

	mu  sync.Mutex // guards emu against Stats/Reconfigure from other goroutines
	emu *Emulator

	// Frame pool: slots live in chunks that are allocated as the queue
	// first grows and then reused, so the steady state allocates nothing.
	// With offloads (vnet) a second pool of OffloadSlotSize slots holds
	// GSO super-frames; their handles carry bigHandle.
	vnet     bool
	inOff    OffloadPort
	frameLen []uint32 // with vnet: buffer length (header included) per slot
	big      bigPool
	slotSize int
	chunk    int // slots per chunk
	chunks   [][]byte
	free     []uint32 // stack of free slot indices
	nSlots   int
	maxSlots atomic.Int64
	maxCap   int

	// Per-batch scratch, allocated once.
	rxBufs  [][]byte
	rxLens  []int
	rxStamp []int64
	lastArr int64 // last arrival passed to the emulator: times never go back
	pkts    []Packet
	dropped []Packet
	outPkts []Packet
	txBufs  [][]byte
	scratch []byte

	spin     time.Duration // current spin margin
	oversl   float64       // EWMA of the kernel's oversleep, ns
	lastSent int64         // when the last batch was sent (d.now), for spinFor

	noBuffer  atomic.Uint64
	discarded atomic.Uint64
}

func maxSlotsFor(c Config, cap int) int {
	n := c.Buffer + 2*MaxBatch
	if cap > 0 && n > cap {
		n = cap
	}
	return n
}

func newDirection(f *Forwarder, dir Direction, c Config, fc ForwarderConfig) (*direction, error) {
	emu, err := New(c)
	if err != nil {
		return nil, err
	}
	slot := fc.SlotSize
	if slot == 0 {
		slot = SlotSize(c.MaxFrame)
	}
	capSlots := fc.MaxBuffered
	if capSlots <= 0 {
		capSlots = max(FrameBufferBytes/slot, 2*MaxBatch)
	}
	d := &direction{
		f: f, dir: dir, emu: emu, slotSize: slot, maxCap: capSlots, chunk: max(chunkBytes/slot, MaxBatch),
		rxBufs: make([][]byte, MaxBatch), rxLens: make([]int, MaxBatch), rxStamp: make([]int64, MaxBatch),
		pkts: make([]Packet, MaxBatch), dropped: make([]Packet, 0, MaxBatch),
		outPkts: make([]Packet, MaxBatch), txBufs: make([][]byte, MaxBatch),
		scratch: make([]byte, slot), spin: fc.Spin,
	}
	if off, ok := f.offloads(dir); ok {
		d.vnet, d.inOff = true, off
		// Small slots hold the header too; super-frames go to big ones.
		if fc.SlotSize == 0 {
			d.slotSize = SlotSize(c.MaxFrame + VnetHdrLen)
			d.chunk = max(chunkBytes/d.slotSize, MaxBatch)
			d.maxCap = max(FrameBufferBytes/d.slotSize, 2*MaxBatch)
			if fc.MaxBuffered > 0 {
				d.maxCap = fc.MaxBuffered
			}
		}
		d.scratch = make([]byte, OffloadSlotSize)
		d.big.max = max(FrameBufferBytes/OffloadSlotSize, MaxBatch)
	}
	if d.spin <= 0 {
		d.spin = 20 * time.Microsecond
	}
	d.maxSlots.Store(int64(maxSlotsFor(c, d.maxCap)))
	d.grow()
	emu.SetCloner(d.cloneFrame)
	return d, nil
}

func (d *direction) now() int64 { return int64(time.Since(d.f.start)) }

func (d *direction) slot(i uint32) []byte {
	if i&bigHandle != 0 {
		return d.big.slot(i &^ bigHandle)
	}
	c := d.chunks[int(i)/d.chunk]
	off := int(i) % d.chunk * d.slotSize
	return c[off : off+d.slotSize : off+d.slotSize]
}

// grow adds one chunk of slots if the limit allows; it is the only place
// the forwarding loop allocates, and only while the queue reaches a new
// maximum.
func (d *direction) grow() bool {
	if d.nSlots > 0 && d.nSlots >= int(d.maxSlots.Load()) {
		return false
	}
	d.chunks = append(d.chunks, make([]byte, d.chunk*d.slotSize))
	for i := d.chunk - 1; i >= 0; i-- {
		d.free = append(d.free, uint32(d.nSlots+i))
	}
	d.nSlots += d.chunk
	if d.vnet {
		d.frameLen = append(d.frameLen, make([]uint32, d.chunk)...)
	}
	return true
}

// release returns a slot to its pool.
func (d *direction) release(h uint32) {
	if h&bigHandle != 0 {
		d.big.free = append(d.big.free, h&^bigHandle)
		return
	}
	d.free = append(d.free, h)
}

// bigHandle marks a handle of the super-frame pool.
const bigHandle = 1 << 31

// bigChunkSlots is how many super-frame slots are allocated at a time
// (1.1 MiB): a link that never sees a super-frame allocates none.
const bigChunkSlots = 16

// bigPool holds OffloadSlotSize slots for GSO super-frames, allocated as
// they are first needed, up to max.
type bigPool struct {
	chunks [][]byte
	free   []uint32
	lens   []uint32
	n, max int
}

func (b *bigPool) slot(i uint32) []byte {
	c := b.chunks[int(i)/bigChunkSlots]
	off := int(i) % bigChunkSlots * OffloadSlotSize
	return c[off : off+OffloadSlotSize : off+OffloadSlotSize]
}

// get takes a free slot, growing the pool if it may.
func (b *bigPool) get() (uint32, bool) {
	if len(b.free) == 0 {
		if b.n >= b.max {
			return 0, false
		}
		b.chunks = append(b.chunks, make([]byte, bigChunkSlots*OffloadSlotSize))
		for i := bigChunkSlots - 1; i >= 0; i-- {
			b.free = append(b.free, uint32(b.n+i))
		}
		b.lens = append(b.lens, make([]uint32, bigChunkSlots)...)
		b.n += bigChunkSlots
	}
	i := b.free[len(b.free)-1]
	b.free = b.free[:len(b.free)-1]
	return i, true
}

// setLen records a received buffer's length (vnet mode) and returns the
// packet the emulator sees: the wire bytes and segments of the frame.
func (d *direction) packet(h uint32, buf []byte) Packet {
	if h&bigHandle != 0 {
		d.big.lens[h&^bigHandle] = uint32(len(buf))
	} else {
		d.frameLen[h] = uint32(len(buf))
	}
	if len(buf) < VnetHdrLen {
		return Packet{Handle: uint64(h), Len: uint32(len(buf))}
	}
	segs, wire := SuperFrame(ParseVnetHdr(buf), buf[VnetHdrLen:])
	return Packet{Handle: uint64(h), Len: uint32(wire), Segs: uint32(segs)}
}

// txFrame is the buffer to send for a released packet.
func (d *direction) txFrame(p *Packet) []byte {
	h := uint32(p.Handle)
	if !d.vnet {
		return d.slot(h)[:p.Len]
	}
	if h&bigHandle != 0 {
		return d.big.slot(h &^ bigHandle)[:d.big.lens[h&^bigHandle]]
	}
	return d.slot(h)[:d.frameLen[h]]
}

// worker is one forwarding thread: it serves one direction, or both.
type worker struct {
	f         *Forwarder
	dirs      []*direction
	done      chan struct{}
	place     placement
	placeOn   bool
	forwarded uint64 // frames received, for placement
	busyPoll  time.Duration
	coalesce  time.Duration // 0: off
	realTime  bool
	nice      int
	arrivals  arrivalSpin
	spun      atomic.Int64 // arrivals.spun, readable from other goroutines
}

func newWorker(f *Forwarder, fc ForwarderConfig, dirs ...*direction) *worker {
	w := &worker{f: f, dirs: dirs, done: make(chan struct{}), placeOn: !fc.NoPlacement, busyPoll: fc.BusyPoll, coalesce: fc.Coalesce,
		realTime: !fc.NoRealTime, nice: fc.Nice}
	if w.nice == 0 {
		w.nice = -10
	}
	switch {
	case w.coalesce == 0:
		w.coalesce = defaultCoalesce
	case w.coalesce < 0:
		w.coalesce = 0
	}
	// Polling for arrivals pays off only where a frame's delay is shorter
	// than a wake-up (arrivalspin.go): in any direction the thread serves.
	mode := PollOff
	for _, d := range dirs {
		if d.emu.Config().Delay < arrivalSpinDelay {
			mode = pollModeFromEnv(fc.Poll)
		}
	}
	w.arrivals = newArrivalSpin(mode)
	return w
}

func (w *worker) run() {
	defer close(w.done)
	// Locked and never unlocked: the thread's priority and timer slack
	// die with it instead of leaking to the scheduler's pool.
	runtime.LockOSThread()
	// The default 50 µs timer slack would add up to 50 µs to every
	// sleep; the spin margin then has to cover less.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0) // cannot fail for a valid value; without it only less punctual
	w.schedule()
	if w.placeOn {
		w.place.init()
		defer w.place.close()
	} else {
		w.place.disabled = true
	}
	first := w.dirs[0]
	lastWork := first.now()
	// found counts the frames read since the last wait ended: more than
	// one means the traffic is dense enough to coalesce wake-ups.
	found := 0
	w.arrivals.tickAt = lastWork
	for !w.f.stop.Load() {
		worked, got := false, 0
		for _, d := range w.dirs {
			n := d.receive()
			got += n
			w.forwarded += uint64(n)
			if n > 0 {
				worked = true
			}
			if d.transmit() {
				worked = true
			}
		}
		found += got
		now := first.now()
		w.arrivals.tick(now)
		w.arrivals.woke(now, got > 0)
		if got > 0 {
			w.arrivals.arrived(now)
		}
		if worked {
			w.arrivals.idle()
			lastWork = now
			w.place.check(now, w.forwarded)
			continue
		}
		// The thread sleeps until the earliest departure of its
		// directions, and spins when one is close.
		timeout := idleWait
		var next *direction
		spinning := false
		for _, d := range w.dirs {
			d.mu.Lock()
			due, queued := d.emu.NextDue()
			d.mu.Unlock()
			if !queued {
				continue
			}
			spin := d.spinFor(due)
			if due-now <= int64(spin) {
				spinning = true
				break
			}
			if t := time.Duration(due-now) - spin; next == nil || t < timeout {
				timeout, next = t, d
			}
		}
		if spinning {
			continue
		}
		if w.busyPoll > 0 && now-lastWork < int64(w.busyPoll) {
			continue // traffic just passed: poll the ring a little longer
		}
		poll, t := w.arrivals.decide(now, timeout)
		if poll {
			w.spun.Store(w.arrivals.spun)
			continue // the next frame is expected now: poll for it
		}
		if t < timeout {
			timeout, next = t, nil // wake early to poll for a predicted frame
		}
		dense := found > 1
		found = 0
		if dense && w.coalesce > 0 {
			// Moderated: let a batch gather instead of being woken by
			// its first frame.
			sleep := min(w.coalesce, timeout)
			ThreadSleep(sleep)
			if next != nil && sleep == timeout {
				next.learnOversleep(next.now() - (now + int64(timeout)))
			}
			continue
		}
		if err := w.wait(timeout); err != nil {
			break
		}
		if next != nil {
			next.learnOversleep(next.now() - (now + int64(timeout)))
		}
	}
	w.arrivals.idle()
	w.spun.Store(w.arrivals.spun)
	for _, d := range w.dirs {
		d.mu.Lock()
		s := d.emu.Stats()
		d.mu.Unlock()
		d.discarded.Store(uint64(s.Queued))
	}
}

// wait sleeps until a frame may be waiting in one of the worker's
// directions, the timeout passes or the forwarder is stopped.
func (w *worker) wait(timeout time.Duration) error {
	if len(w.dirs) == 1 {
		return w.dirs[0].in.Wait(timeout)
	}
	// NewForwarder gave one worker both directions only for ports that pair.
	return w.dirs[0].in.(PairPort).WaitWith(w.dirs[1].in, timeout)
}

// schedule raises the thread's priority (see ForwarderConfig.NoRealTime).
// Failures are ignored: without privileges the forwarder still works, only
// less punctually. The thread is discarded on exit (no UnlockOSThread), so
// the priority never leaks to other goroutines.
func (w *worker) schedule() {
	if w.realTime {
		RealTimeThread(w.nice)
		return
	}
	if w.nice != 0 {
		_ = unix.Setpriority(unix.PRIO_PROCESS, 0, w.nice)
	}
}

// learnOversleep adapts the spin margin to how late the kernel wakes us:
// about twice the average oversleep (early wake-ups, a frame
// arrived, say nothing about it).
func (d *direction) learnOversleep(late int64) {
	if late < 0 {
		return
	}
	const w = 0.05
	d.oversl = (1-w)*d.oversl + w*float64(late)
	s := time.Duration(2*d.oversl) + minSpin
	d.spin = min(max(s, minSpin), maxSpin)
}

// spinFor is the spin margin before a departure at due: the learned one,
// within a share of the time since this direction last sent.
func (d *direction) spinFor(due int64) time.Duration {
	limit := max(baseSpin, time.Duration(due-d.lastSent)/spinShare)
	return min(d.spin, limit)
}

// receive moves one batch from the RX ring into the emulator and returns
// how many frames it read.
func (d *direction) receive() int {
	if len(d.free) < MaxBatch && d.nSlots < int(d.maxSlots.Load()) {
		d.grow()
	}
	k := min(len(d.free), MaxBatch)
	if k == 0 {
		// No buffer left: drain one frame so the ring does not stall, and
		// count it.
		d.rxBufs[0] = d.scratch
		n, _ := d.in.RecvBatch(d.rxBufs[:1], d.rxLens[:1], d.rxStamp[:1])
		d.noBuffer.Add(uint64(n))
		return n
	}
	top := len(d.free) - 1
	for i := 0; i < k; i++ {
		d.rxBufs[i] = d.slot(d.free[top-i])
	}
	n, err := d.in.RecvBatch(d.rxBufs[:k], d.rxLens[:k], d.rxStamp[:k])
	if err != nil {
		return 0
	}
	if d.vnet {
		for i := 0; i < n; i++ {
			d.pkts[i] = d.packet(d.free[top-i], d.rxBufs[i][:d.rxLens[i]])
		}
		d.free = d.free[:len(d.free)-n]
		if n < k {
			n += d.receiveBig(n)
		}
	} else {
		for i := 0; i < n; i++ {
			d.pkts[i] = Packet{Handle: uint64(d.free[top-i]), Len: uint32(d.rxLens[i])}
		}
		d.free = d.free[:len(d.free)-n]
	}
	if n == 0 {
		return 0
	}
	// Kernel stamps are CLOCK_REALTIME; the forwarder runs on the
	// monotonic clock. The offset between them converts one to the other
	// (unless the wall clock is stepped, and then the sanity bounds below
	// fall back to now). Both come from one reading: read one after the
	// other, an interrupt between the two reads (200 us and more under
	// load) made the offset that much too large and released frames that
	// much early.
	wall := time.Now()
	now := int64(wall.Sub(d.f.start))
	offset := wall.UnixNano() - now
	d.dropped = d.dropped[:0]
	d.mu.Lock()
	for i := 0; i < n; {
		t := now
		if st := d.rxStamp[i]; st != 0 {
			if a := st - offset; a <= now && a > now-int64(time.Second) {
				t = a
			}
		}
		t = max(t, d.lastArr)
		// Frames stamped alike go to the emulator together, so a burst
		// is still one call; a backlog read late keeps its real times.
		j := i + 1
		for j < n && d.rxStamp[j] == d.rxStamp[i] {
			j++
		}
		d.markECT(d.pkts[i:j])
		d.dropped = d.emu.Receive(t, d.pkts[i:j], d.dropped)
		d.lastArr = t
		i = j
	}
	d.mu.Unlock()
	for _, p := range d.dropped {
		d.release(uint32(p.Handle))
	}
	return n
}

// receiveBig reads the super-frame RecvBatch stopped before, if any, into
// a big slot as packet i of the batch; without a free big slot it drains
// it into scratch and counts it as NoBuffer.
func (d *direction) receiveBig(i int) int {
	need := d.inOff.NextLen()
	if need <= d.slotSize {
		return 0
	}
	h, ok := d.big.get()
	if !ok {
		d.rxBufs[0] = d.scratch
		n, _ := d.in.RecvBatch(d.rxBufs[:1], d.rxLens[:1], d.rxStamp[:1])
		d.noBuffer.Add(uint64(n))
		return 0
	}
	d.rxBufs[i] = d.big.slot(h)
	n, err := d.in.RecvBatch(d.rxBufs[i:i+1], d.rxLens[i:i+1], d.rxStamp[i:i+1])
	if n == 0 || err != nil {
		d.big.free = append(d.big.free, h)
		return 0
	}
	d.pkts[i] = d.packet(h|bigHandle, d.rxBufs[i][:d.rxLens[i]])
	return 1
}

// transmit sends every frame that is due, a batch at a time.
func (d *direction) transmit() bool {
	sent := false
	for {
		now := d.now()
		d.mu.Lock()
		k := d.emu.Release(now, d.outPkts)
		d.mu.Unlock()
		if k == 0 {
			return sent
		}
		for i := 0; i < k; i++ {
			d.txBufs[i] = d.txFrame(&d.outPkts[i])
			ApplyMarks(&d.outPkts[i], d.txBufs[i], d.vnet)
		}
		// Frames the port does not take are counted in its TxDropped; a
		// port closed under us ends the loop at its next Wait.
		_, _ = d.out.SendBatch(d.txBufs[:k])
		d.lastSent = now
		for i := 0; i < k; i++ {
			d.release(uint32(d.outPkts[i].Handle))
		}
		sent = true
		if k < len(d.outPkts) {
			return sent
		}
	}
}
