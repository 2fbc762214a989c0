package emulator

// The forwarder's part of NetEm's impairments (netem.go): it holds the
// frames, so it copies a duplicate's, says which packets are ECN-capable
// and applies the marks the emulator chose when it sends.

// cloneFrame copies p's frame into a free slot for a duplicate's twin.
// Called by the emulator inside Receive, with d.mu held, on the thread
// that owns the slots.
func (d *direction) cloneFrame(p *Packet) (Packet, bool) {
	h := uint32(p.Handle)
	q := Packet{Len: p.Len, Segs: p.Segs}
	if h&bigHandle != 0 {
		n, ok := d.big.get()
		if !ok {
			return Packet{}, false
		}
		l := d.big.lens[h&^bigHandle]
		copy(d.big.slot(n), d.big.slot(h &^ bigHandle)[:l])
		d.big.lens[n] = l
		q.Handle = uint64(n | bigHandle)
		return q, true
	}
	if len(d.free) == 0 && !d.grow() {
		return Packet{}, false
	}
	n := d.free[len(d.free)-1]
	d.free = d.free[:len(d.free)-1]
	size := p.Len
	if d.vnet {
		size = d.frameLen[h]
		d.frameLen[n] = size
	}
	copy(d.slot(n), d.slot(h)[:size])
	q.Handle = uint64(n)
	return q, true
}

// markECT flags the ECN-capable packets of a batch, when the emulator
// marks instead of dropping them (d.mu held).
func (d *direction) markECT(pkts []Packet) {
	if !d.emu.cfg.ECN {
		return
	}
	for i := range pkts {
		f := d.txFrame(&pkts[i])
		if d.vnet && len(f) >= VnetHdrLen {
			f = f[VnetHdrLen:]
		}
		if FrameECT(f) {
			pkts[i].Flags |= FlagECT
		}
	}
}
