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

// pktHeap is a binary min-heap keyed by (Due, Seq): ties keep arrival
// order. Sifts move a hole instead of swapping, halving the copies of the
// 48-byte elements.
type pktHeap struct {
	a []Packet
}

func before(x, y *Packet) bool {
	return x.Due < y.Due || (x.Due == y.Due && x.Seq < y.Seq)
}

func (h *pktHeap) len() int { return len(h.a) }

func (h *pktHeap) push(p Packet) {
	h.a = append(h.a, p)
	i := len(h.a) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !before(&p, &h.a[parent]) {
			break
		}
		h.a[i] = h.a[parent]
		i = parent
	}
	h.a[i] = p
}

func (h *pktHeap) peek() *Packet { return &h.a[0] }

func (h *pktHeap) pop() Packet {
	top := h.a[0]
	last := len(h.a) - 1
	x := h.a[last]
	h.a = h.a[:last]
	if last == 0 {
		return top
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= last {
			break
		}
		if c+1 < last && before(&h.a[c+1], &h.a[c]) {
			c++
		}
		if !before(&h.a[c], &x) {
			break
		}
		h.a[i] = h.a[c]
		i = c
	}
	h.a[i] = x
	return top
}
