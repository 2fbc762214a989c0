package emulator

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"time"
)

// NetEm's per-packet impairments beside delay and loss
// (docs/emulator-spec.md §6a): duplication, corruption, ECN marking in
// place of loss, and slotted delivery. The engine decides; the port layer
// (forwarder) copies and changes frames, since only it holds their bytes.

// SlotConfig releases packets in slots, as NetEm's `slot` does: a slot
// opens a uniform random time in [Min, Max] after the previous one closed
// (or after the packet at the head of the queue reached it, when the link
// was idle past the slot's opening), and lets out at most Packets packets
// and Bytes bytes (0: no limit) before it closes.
type SlotConfig struct {
	Enabled  bool
	Min, Max time.Duration
	Packets  int
	Bytes    int
}

// Packet.Flags bits.
const (
	// FlagECT is set by the port on a packet whose IP header says
	// ECN-capable transport (ECT(0), ECT(1) or already CE).
	FlagECT uint8 = 1 << iota
	// FlagCE asks the port to mark the packet Congestion Experienced:
	// the loss model chose it and Config.ECN is on.
	FlagCE
	// flagClone marks a duplicate, which NetEm does not duplicate again.
	flagClone
)

// Cloner copies the frame of p for a duplicate and returns the copy's
// packet (its own Handle); false when there is no room, and no duplicate
// is made. A nil Cloner makes duplicates that share the original's Handle,
// for callers that keep no frame per handle (simulations, tests).
type Cloner func(p *Packet) (Packet, bool)

// SetCloner sets how duplicates get their frames.
func (e *Emulator) SetCloner(c Cloner) { e.clone = c }

// netemCounters are the stages' counters (Stats).
type netemCounters struct {
	duplicated, corrupted, marked uint64
}

// duplicate decides, NetEm's way, whether p gets a twin: a clone that
// enters the emulator after it and is impaired on its own (its own delay,
// loss and corruption) but never duplicated again.
func (e *Emulator) duplicate(p *Packet) bool {
	return e.cfg.Duplicate > 0 && p.Flags&flagClone == 0 && e.rng.Float64() < e.cfg.Duplicate
}

// makeClone returns p's twin, or false when the port has no room for it.
func (e *Emulator) makeClone(p *Packet) (Packet, bool) {
	q := Packet{Handle: p.Handle, Len: p.Len, Segs: p.Segs}
	if e.clone != nil {
		var ok bool
		if q, ok = e.clone(p); !ok {
			return Packet{}, false
		}
	}
	q.Flags = p.Flags&FlagECT | flagClone
	return q, true
}

// corrupt decides whether p, which will be sent, gets one bit flipped, and
// which: uniform over its frame's bits. It reports false when p is a GSO
// super-frame, which must then be dropped (see docs/emulator-spec.md §6a).
func (e *Emulator) corrupt(p *Packet) bool {
	if e.cfg.Corrupt <= 0 || p.Len == 0 || e.rng.Float64() >= e.cfg.Corrupt {
		return true
	}
	if p.Segs > 1 {
		return false
	}
	p.Corrupt = 1 + uint32(e.rng.IntN(int(p.Len)*8))
	return true
}

// slotGate is the slot stage: when the next slot opens and what it may
// still let out.
type slotGate struct {
	on         bool
	cfg        SlotConfig
	open       int64 // when the current slot opens (0: never drawn)
	pkts       int64 // left in the current slot
	bytes      int64
	lastOut    int64 // departure of the last packet sent
	headSeq    uint64
	headGate   int64
	headCached bool
}

func (s *slotGate) configure(c SlotConfig) {
	if !c.Enabled {
		*s = slotGate{}
		return
	}
	if !s.on || s.cfg != c {
		s.open, s.headCached = 0, false
	}
	s.on, s.cfg = true, c
}

func (s *slotGate) budget() {
	s.pkts, s.bytes = int64(s.cfg.Packets), int64(s.cfg.Bytes)
	if s.pkts <= 0 {
		s.pkts = math.MaxInt64
	}
	if s.bytes <= 0 {
		s.bytes = math.MaxInt64
	}
}

func (s *slotGate) gap(rng *rand.Rand) int64 {
	lo, hi := int64(s.cfg.Min), int64(s.cfg.Max)
	if hi <= lo {
		return lo
	}
	return lo + rng.Int64N(hi-lo+1)
}

// departure is when the head packet p leaves: at its due time, or when the
// slot opens if that is later. A slot that opened before p was due (the
// link idled past it) is drawn again from the moment p became the head,
// the later of its arrival and the previous departure, as NetEm draws it
// when it dequeues. The answer is kept per head, so asking twice draws
// once.
func (s *slotGate) departure(p *Packet, rng *rand.Rand) int64 {
	if s.headCached && s.headSeq == p.Seq {
		return s.headGate
	}
	if s.open == 0 || s.open < p.Due {
		s.open = max(p.Arrival, s.lastOut) + s.gap(rng)
		s.budget()
	}
	s.headSeq, s.headGate, s.headCached = p.Seq, max(p.Due, s.open), true
	return s.headGate
}

// sent books p, which left at t, into the slot; a slot whose budget is
// spent closes and the next opens after a new gap.
func (s *slotGate) sent(p *Packet, t int64, rng *rand.Rand) {
	s.headCached = false
	s.lastOut = t
	s.pkts--
	s.bytes -= int64(p.Len)
	if s.pkts <= 0 || s.bytes <= 0 {
		s.open = t + s.gap(rng)
		s.budget()
	}
}

// ---- frames (for ports) ----

const (
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86dd
	etherTypeVLAN = 0x8100
)

// ipHeader returns the offset of the IP header in an Ethernet frame and
// its version (4 or 6), or 0, 0.
func ipHeader(frame []byte) (int, int) {
	off := 12
	for range 2 {
		if len(frame) < off+2 {
			return 0, 0
		}
		switch binary.BigEndian.Uint16(frame[off:]) {
		case etherTypeVLAN:
			off += 4
			continue
		case etherTypeIPv4:
			if len(frame) >= off+2+20 && frame[off+2]>>4 == 4 {
				return off + 2, 4
			}
		case etherTypeIPv6:
			if len(frame) >= off+2+40 && frame[off+2]>>4 == 6 {
				return off + 2, 6
			}
		}
		return 0, 0
	}
	return 0, 0
}

// FrameECT reports whether an Ethernet frame carries an IP packet of an
// ECN-capable transport (its ECN field is not Not-ECT).
func FrameECT(frame []byte) bool {
	ip, v := ipHeader(frame)
	switch v {
	case 4:
		return frame[ip+1]&3 != 0
	case 6:
		return (binary.BigEndian.Uint16(frame[ip:])>>4)&3 != 0
	}
	return false
}

// MarkCE sets an IP packet's ECN field to Congestion Experienced, updating
// the IPv4 header checksum incrementally (RFC 1624).
func MarkCE(frame []byte) {
	ip, v := ipHeader(frame)
	switch v {
	case 4:
		old := binary.BigEndian.Uint16(frame[ip:])
		frame[ip+1] |= 3
		sum := binary.BigEndian.Uint16(frame[ip+10:])
		binary.BigEndian.PutUint16(frame[ip+10:], csumUpdate(sum, old, binary.BigEndian.Uint16(frame[ip:])))
	case 6:
		frame[ip+1] |= 3 << 4
	}
}

// csumUpdate is HC' = ~(~HC + ~m + m') (RFC 1624, eqn. 3).
func csumUpdate(hc, m, m2 uint16) uint16 {
	s := uint32(^hc) + uint32(^m) + uint32(m2)
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// FlipBit flips bit k (0 = the first byte's most significant bit) of
// frame, if it lies inside it.
func FlipBit(frame []byte, k uint32) {
	if int(k/8) < len(frame) {
		frame[k/8] ^= 0x80 >> (k % 8)
	}
}

// finishChecksum completes a checksum the sender left to offload
// (VIRTIO_NET_HDR_F_NEEDS_CSUM) in software, so that a bit corrupted
// afterwards is caught by the receiver's check, as NetEm completes it
// before corrupting. The field holds the pseudo-header sum already.
func finishChecksum(h *VnetHdr, frame []byte) {
	if h.Flags&VnetFlagNeedsCsum == 0 {
		return
	}
	start, at := int(h.CsumStart), int(h.CsumStart)+int(h.CsumOffset)
	if start >= len(frame) || at+2 > len(frame) {
		return
	}
	var s uint64
	b := frame[start:]
	for len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	binary.BigEndian.PutUint16(frame[at:], ^uint16(s))
	h.Flags &^= VnetFlagNeedsCsum
}

// ApplyMarks changes a frame as the emulator decided for p: CE set, a
// bit flipped. vnet says whether frame starts with a virtio-net header
// (offload ports); the header's pending checksum is completed first.
func ApplyMarks(p *Packet, frame []byte, vnet bool) {
	if p.Flags&FlagCE == 0 && p.Corrupt == 0 {
		return
	}
	var h VnetHdr
	full := frame
	if vnet {
		if len(frame) < VnetHdrLen {
			return
		}
		h = ParseVnetHdr(frame)
		frame = frame[VnetHdrLen:]
	}
	if p.Flags&FlagCE != 0 {
		MarkCE(frame)
	}
	if p.Corrupt != 0 {
		if vnet {
			finishChecksum(&h, frame)
		}
		FlipBit(frame, p.Corrupt-1)
	}
	if vnet {
		h.Put(full)
	}
}

// markInstead reports whether a packet the loss model chose is marked CE
// instead of dropped: ECN is on and the packet is ECN-capable.
func (e *Emulator) markInstead(p *Packet) bool {
	if !e.cfg.ECN || p.Flags&FlagECT == 0 {
		return false
	}
	p.Flags |= FlagCE
	e.nc.marked++
	return true
}

// dropTwin hands a dropped twin's frame back to the caller (Receive's
// dropped); a twin without a frame of its own has nothing to free.
func (e *Emulator) dropTwin(p Packet) {
	if e.clone != nil {
		e.twinDrops = append(e.twinDrops, p)
	}
}

// StageCounts names what the stages did besides dropping, for views that
// list them without knowing each: a stage that adds a counter adds it
// here.
func (s *Stats) StageCounts() map[string]uint64 {
	return map[string]uint64{"duplicated": s.Duplicated, "corrupted": s.Corrupted, "ce_marked": s.Marked}
}
