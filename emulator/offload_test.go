package emulator

import (
	"encoding/binary"
	"testing"
	"time"
)

// tcpFrame builds an Ethernet + IPv4 + TCP frame with a TCP header of
// tcpHdr bytes and payload bytes of data, and the header a sender's GSO
// would put before it.
func tcpFrame(tcpHdr, payload int, gsoSize uint16) (VnetHdr, []byte) {
	f := make([]byte, 14+20+tcpHdr+payload)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	f[14] = 0x45
	f[14+20+12] = byte(tcpHdr/4) << 4
	h := VnetHdr{Flags: VnetFlagNeedsCsum, GSOType: VnetGSOTCPv4, GSOSize: gsoSize, CsumStart: 34, CsumOffset: 16,
		HdrLen: uint16(14 + 20 + tcpHdr + 200)} // the kernel's hdr_len: the linear part, payload included
	return h, f
}

func TestSuperFrameWire(t *testing.T) {
	h, f := tcpFrame(32, 10*1448+100, 1448)
	segs, wire := SuperFrame(h, f)
	// 11 segments, each with the 66 bytes of headers: the frame plus 10
	// more copies of them.
	if segs != 11 || wire != len(f)+10*66 {
		t.Errorf("TCP super-frame of %d B: %d segments, %d B; want 11, %d", len(f), segs, wire, len(f)+10*66)
	}
	// Exactly whole segments.
	h, f = tcpFrame(20, 44*1460, 1460)
	if segs, wire := SuperFrame(h, f); segs != 44 || wire != 44*(54+1460) {
		t.Errorf("44 full segments: %d, %d B; want 44, %d", segs, wire, 44*(54+1460))
	}
	// ECN flag does not change the type.
	h.GSOType |= VnetGSOECN
	if segs, _ := SuperFrame(h, f); segs != 44 {
		t.Errorf("with ECN: %d segments", segs)
	}
	// Not GSO (checksum offload only): one frame of its own length.
	h, f = tcpFrame(20, 100, 0)
	h.GSOType = VnetGSONone
	if segs, wire := SuperFrame(h, f); segs != 1 || wire != len(f) {
		t.Errorf("plain frame: %d, %d", segs, wire)
	}
	// UDP GSO (UDP_SEGMENT): an 8-byte header after csum_start.
	f = make([]byte, 14+40+8+3*1200+7)
	h = VnetHdr{Flags: VnetFlagNeedsCsum, GSOType: VnetGSOUDPL4, GSOSize: 1200, CsumStart: 54, CsumOffset: 6}
	if segs, wire := SuperFrame(h, f); segs != 4 || wire != len(f)+3*62 {
		t.Errorf("UDP GSO: %d, %d; want 4, %d", segs, wire, len(f)+3*62)
	}
	// A header that points outside the frame counts as one frame.
	h = VnetHdr{Flags: VnetFlagNeedsCsum, GSOType: VnetGSOTCPv4, GSOSize: 1000, CsumStart: 5000}
	if segs, wire := SuperFrame(h, make([]byte, 3000)); segs != 1 || wire != 3000 {
		t.Errorf("bad csum_start: %d, %d", segs, wire)
	}
}

func TestVnetHdrRoundTrip(t *testing.T) {
	h := VnetHdr{Flags: 1, GSOType: 4, HdrLen: 300, GSOSize: 1428, CsumStart: 54, CsumOffset: 16}
	b := make([]byte, VnetHdrLen)
	h.Put(b)
	if g := ParseVnetHdr(b); g != h {
		t.Fatalf("round trip: %+v, want %+v", g, h)
	}
}

// TestSuperFrameSpacerAndPolicer: the spacer books the wire time of every
// segment (frames plus per-segment overhead), the byte counters count
// segment bytes, and a policer whose bucket is smaller than a super-frame
// still passes one when full, then holds the debt.
func TestSuperFrameSpacerAndPolicer(t *testing.T) {
	c := DefaultConfig()
	c.Space = SpacerConfig{Enabled: true, Rate: 1e9} // 8 ns per byte
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	h, f := tcpFrame(32, 10*1448+100, 1448)
	segs, wire := SuperFrame(h, f)
	in := []Packet{{Handle: 1, Len: uint32(wire), Segs: uint32(segs)}, {Handle: 2, Len: 100}}
	e.Receive(0, in, nil)
	out := make([]Packet, MaxBatch)
	n := e.Release(1e9, out)
	if n != 2 {
		t.Fatalf("released %d", n)
	}
	want := int64(8 * (wire + segs*c.Overhead))
	if out[1].Due != want {
		t.Errorf("second frame starts at %d ns, want %d (the super-frame's %d segments on the wire)", out[1].Due, want, segs)
	}
	if s := e.Stats(); s.SentBytes != uint64(wire+100) {
		t.Errorf("sent bytes %d, want %d", s.SentBytes, wire+100)
	}

	c = DefaultConfig()
	c.Police = PolicerConfig{Enabled: true, Rate: 8e6, Burst: 32768} // 1 byte per µs
	if e, err = New(c); err != nil {
		t.Fatal(err)
	}
	h, f = tcpFrame(20, 44*1460, 1460)
	segs, wire = SuperFrame(h, f)
	big := Packet{Len: uint32(wire), Segs: uint32(segs)}
	if d := e.Receive(0, []Packet{big}, nil); len(d) != 0 {
		t.Fatal("a super-frame larger than the full bucket was policed")
	}
	// The bucket is in debt by wire+overhead-32768 bytes: a small frame
	// passes only once that is repaid.
	debt := int64(wire + segs*c.Overhead - 32768)
	if d := e.Receive((debt-10)*1000, []Packet{{Len: 100}}, nil); len(d) != 1 {
		t.Error("a frame passed while the bucket was still in debt")
	}
	if d := e.Receive((debt+200)*1000, []Packet{{Len: 100}}, nil); len(d) != 0 {
		t.Error("a frame was policed after the debt was repaid")
	}
}

// TestSuperFrameBufferCountsSegments: a buffer of N packets holds N wire
// packets of a bulk flow, not N super-frames. With a 20-packet buffer and
// a 1 s delay, two 10-segment super-frames fill it: the third is dropped,
// a fourth fits once the first two have left, and one super-frame always
// fits an empty buffer whatever its segments.
func TestSuperFrameBufferCountsSegments(t *testing.T) {
	c := DefaultConfig()
	c.Delay = time.Second
	c.Buffer = 20
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	sf := func() Packet { return Packet{Len: 10 * 1514, Segs: 10} }
	if d := e.Receive(0, []Packet{sf(), sf()}, nil); len(d) != 0 {
		t.Fatalf("two 10-segment frames into 20 places: %d dropped", len(d))
	}
	if d := e.Receive(1, []Packet{sf()}, nil); len(d) != 1 {
		t.Errorf("a third into the full buffer: %d dropped, want 1", len(d))
	}
	out := make([]Packet, MaxBatch)
	if n := e.Release(int64(time.Second)+1, out); n != 2 {
		t.Fatalf("released %d, want 2", n)
	}
	if d := e.Receive(int64(time.Second)+2, []Packet{{Len: 44 * 1514, Segs: 44}}, nil); len(d) != 0 {
		t.Error("a 44-segment frame into the empty 20-place buffer was dropped")
	}
	if s := e.Stats(); s.BufferFull != 1 {
		t.Errorf("buffer-full drops %d, want 1", s.BufferFull)
	}
}
