package emulator

import "slices"

// Packet is a reference to a frame the caller owns. The emulator never
// reads the frame: it needs only the length, and hands the Handle back
// unchanged, so a port can store a TPACKET ring slot, a DPDK mbuf address
// or an index in it and forward without allocating.
type Packet struct {
	Handle uint64 // caller's reference, returned untouched
	// Len is the frame length as the NIC reports it (DPDK's pkt_len,
	// AF_PACKET's snaplen: without FCS); Config.Overhead (default 24 B:
	// FCS, preamble, SFD, inter-frame gap) is added for rate accounting.
	Len uint32
	// Segs is how many frames on the wire the packet stands for: a GSO
	// super-frame carried with its offload state (see OffloadPort) is
	// Segs segments whose frames add up to Len bytes; Overhead is added
	// once per segment. 0 and 1 both mean one frame.
	Segs uint32
	// Corrupt, when not 0, is 1 + the bit of the frame the port flips
	// when it sends the packet (set by the emulator: Config.Corrupt).
	Corrupt uint32
	// Flags carry the port's word on the frame (FlagECT) and the
	// emulator's on what to change in it (FlagCE).
	Flags uint8

	// Set by Receive; kept so ports and the simulator can measure.
	Seq     uint64 // arrival sequence number on this emulator
	Arrival int64  // ns, the time passed to Receive
	Delay   int64  // drawn delay max(D, 0), ns
	Due     int64  // departure time t_tx, ns
}

// ring is the FIFO buffer. It grows by doubling up to its capacity so an
// idle link does not pin the full 262 144-slot array, and never shrinks, so
// steady state allocates nothing.
type ring struct {
	buf  []Packet
	head int
	n    int
}

func (r *ring) len() int { return r.n }

func (r *ring) push(p Packet, capacity int) bool {
	if r.n >= capacity {
		return false
	}
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = p
	r.n++
	return true
}

func (r *ring) grow() {
	size := max(64, 2*len(r.buf))
	nb := make([]Packet, size)
	for i := 0; i < r.n; i++ {
		nb[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = nb, 0
}

func (r *ring) peek() *Packet { return &r.buf[r.head] }

func (r *ring) pop() Packet {
	p := r.buf[r.head]
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return p
}

// ghostQueue holds the departure times of packets the loss model dropped
// after the spacer booked their slot. Times are pushed in non-decreasing
// order (the spacer's starts are), so expiry pops from the front. It grows
// to at most the buffer capacity and then allocates nothing.
type ghostQueue struct {
	t    []int64
	head int
}

func (g *ghostQueue) len() int { return len(g.t) - g.head }

func (g *ghostQueue) push(t int64) {
	if g.head > 0 && len(g.t) == cap(g.t) {
		// Reuse the consumed front instead of growing.
		n := copy(g.t, g.t[g.head:])
		g.t, g.head = g.t[:n], 0
	}
	g.t = append(g.t, t)
}

// expire forgets the packets whose slot started at or before now.
func (g *ghostQueue) expire(now int64) {
	for g.head < len(g.t) && g.t[g.head] <= now {
		g.head++
	}
	if g.head == len(g.t) {
		g.t, g.head = g.t[:0], 0
	}
}

func (g *ghostQueue) reset() { g.t, g.head = g.t[:0], 0 }

// pktHeap is the reordering buffer: a 4-ary min-heap of packets keyed by
// (departure time, arrival sequence), so ties keep arrival order. Four
// children per node halve the depth of a binary heap (about 8 levels at
// 100 000 packets), and the deletion walks the hole down with one
// comparison chain per level before placing the former last element, which
// roughly halves the comparisons of the textbook sift-down.
type pktHeap struct {
	a []Packet
}

func before(x, y *Packet) bool {
	return x.Due < y.Due || (x.Due == y.Due && x.Seq < y.Seq)
}

func (h *pktHeap) len() int { return len(h.a) }

func (h *pktHeap) push(p Packet) {
	h.a = append(h.a, p)
	a := h.a
	i := len(a) - 1
	for i > 0 {
		parent := (i - 1) / 4
		if !before(&p, &a[parent]) {
			break
		}
		a[i] = a[parent]
		i = parent
	}
	a[i] = p
}

// peekDue is the departure time of the first packet; the heap must not be empty.
func (h *pktHeap) peekDue() int64 { return h.a[0].Due }

func (h *pktHeap) pop() Packet {
	a := h.a
	top := a[0]
	last := len(a) - 1
	x := a[last]
	h.a = a[:last]
	a = a[:last]
	if last == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= last {
			break
		}
		m := c
		end := min(c+4, last)
		for j := c + 1; j < end; j++ {
			if before(&a[j], &a[m]) {
				m = j
			}
		}
		a[i] = a[m]
		i = m
	}
	for i > 0 {
		parent := (i - 1) / 4
		if !before(&x, &a[parent]) {
			break
		}
		a[i] = a[parent]
		i = parent
	}
	a[i] = x
	return top
}

// calendar is the reordering buffer used by the emulator: a timing wheel
// of buckets 1.024 µs wide covering 67 ms, plus pktHeap for packets due
// beyond that horizon. A push appends to its bucket's list (O(1)); when
// the transmitter reaches a bucket, its few packets are sorted by
// (Due, Seq) and served in order. Because departure times cluster around
// "now + delay", the buckets being filled and drained are close together
// in memory, unlike the root-to-leaf walks of a heap over 100 000 packets,
// whose cache misses dominated the cost. Packets live in a slab reused
// through a free list, so steady state allocates nothing.
type calendar struct {
	head, tail []int32 // per bucket, -1 when empty
	slab       []Packet
	next       []int32
	free       []int32
	far        pktHeap // due beyond the horizon of cur
	cur        int64   // absolute number of the bucket being served
	open       []Packet
	pos        int  // next packet of open to serve
	isOpen     bool // open holds bucket cur, sorted
	inWheel    int  // packets in bucket lists (not counting open and far)
	n          int
	started    bool
}

const (
	calShift   = 10 // bucket width 1024 ns
	calBuckets = 1 << 16
	calMask    = calBuckets - 1
)

func (c *calendar) len() int { return c.n }

func (c *calendar) init() {
	c.head = make([]int32, calBuckets)
	c.tail = make([]int32, calBuckets)
	for i := range c.head {
		c.head[i], c.tail[i] = -1, -1
	}
}

func (c *calendar) push(p Packet) {
	if c.head == nil {
		c.init()
	}
	b := p.Due >> calShift
	if !c.started || (c.n == 0 && !c.isOpen) {
		// An empty calendar restarts at the new packet, so idle periods
		// never have to be walked bucket by bucket.
		c.started, c.cur = true, b
	}
	c.n++
	switch {
	case b <= c.cur:
		c.openCur()
		c.insertOpen(p)
	case b < c.cur+calBuckets:
		c.append(b, p)
	default:
		c.far.push(p)
	}
}

func (c *calendar) append(b int64, p Packet) {
	var slot int32
	if k := len(c.free); k > 0 {
		slot = c.free[k-1]
		c.free = c.free[:k-1]
		c.slab[slot] = p
		c.next[slot] = -1
	} else {
		slot = int32(len(c.slab))
		c.slab = append(c.slab, p)
		c.next = append(c.next, -1)
	}
	i := b & calMask
	if c.tail[i] < 0 {
		c.head[i] = slot
	} else {
		c.next[c.tail[i]] = slot
	}
	c.tail[i] = slot
	c.inWheel++
}

// insertOpen adds p to the sorted, partly served open bucket.
func (c *calendar) insertOpen(p Packet) {
	c.open = append(c.open, p)
	i := len(c.open) - 1
	for i > c.pos && before(&p, &c.open[i-1]) {
		c.open[i] = c.open[i-1]
		i--
	}
	c.open[i] = p
}

// openCur moves bucket cur's list into open and sorts it.
func (c *calendar) openCur() {
	if c.isOpen {
		return
	}
	c.open, c.pos, c.isOpen = c.open[:0], 0, true
	i := c.cur & calMask
	for s := c.head[i]; s >= 0; {
		c.open = append(c.open, c.slab[s])
		c.free = append(c.free, s)
		c.inWheel--
		s = c.next[s]
	}
	c.head[i], c.tail[i] = -1, -1
	o := c.open
	if len(o) > 64 {
		slices.SortFunc(o, func(x, y Packet) int {
			if before(&x, &y) {
				return -1
			}
			if before(&y, &x) {
				return 1
			}
			return 0
		})
		return
	}
	// Arrival order is usually nearly sorted by Due (delays vary slowly),
	// so insertion sort is close to linear here.
	for j := 1; j < len(o); j++ {
		x := o[j]
		k := j
		for k > 0 && before(&x, &o[k-1]) {
			o[k] = o[k-1]
			k--
		}
		o[k] = x
	}
}

// advance moves to the next bucket that holds packets, pulling packets from
// the far heap as the horizon moves. The calendar must not be empty.
func (c *calendar) advance() {
	c.isOpen = false
	for {
		if c.inWheel == 0 {
			// Only far packets remain: jump straight to the first one.
			c.cur = max(c.cur+1, c.far.peekDue()>>calShift)
		} else {
			c.cur++
		}
		for c.far.len() > 0 && c.far.peekDue()>>calShift < c.cur+calBuckets {
			p := c.far.pop()
			if b := p.Due >> calShift; b <= c.cur {
				c.openCur()
				c.insertOpen(p)
			} else {
				c.append(b, p)
			}
		}
		if c.isOpen || c.head[c.cur&calMask] >= 0 {
			c.openCur()
			return
		}
	}
}

// peekDue is the departure time of the next packet; the calendar must not
// be empty.
func (c *calendar) peekDue() int64 {
	c.openCur()
	for c.pos >= len(c.open) {
		c.advance()
	}
	return c.open[c.pos].Due
}

// peek is the next packet; the calendar must not be empty.
func (c *calendar) peek() *Packet {
	c.peekDue()
	return &c.open[c.pos]
}

func (c *calendar) pop() Packet {
	c.peekDue()
	p := c.open[c.pos]
	c.pos++
	c.n--
	return p
}
