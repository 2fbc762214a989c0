package emulator

// Packet is a reference to a frame the caller owns. The emulator never
// reads the frame: it needs only the length, and hands the Handle back
// unchanged, so a port can store a TPACKET ring slot, a DPDK mbuf address
// or an index in it and forward without allocating.
type Packet struct {
	Handle uint64 // caller's reference, returned untouched
	Len    uint32 // frame length in bytes, without Config.Overhead

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
