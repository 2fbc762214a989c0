package emulator

import (
	"encoding/binary"
	"math"
	"testing"
	"time"
)

// drain releases everything queued in e, in order, at each due time.
func drain(e *Emulator) []Packet {
	var all []Packet
	out := make([]Packet, MaxBatch)
	for {
		t, ok := e.NextDue()
		if !ok {
			return all
		}
		n := e.Release(t, out)
		all = append(all, out[:n]...)
	}
}

// binomialWithin checks k successes of n trials against probability p,
// within 5 standard deviations (a false alarm once in 1.7 million runs;
// the seeds are fixed, so it is decided once).
func binomialWithin(t *testing.T, what string, k, n uint64, p float64) {
	t.Helper()
	mean := float64(n) * p
	sd := math.Sqrt(float64(n) * p * (1 - p))
	if math.Abs(float64(k)-mean) > 5*sd {
		t.Errorf("%s: %d of %d, want %.0f ± %.0f (5σ of Binomial(%d, %g))", what, k, n, mean, 5*sd, n, p)
	}
}

func TestNetemGrammar(t *testing.T) {
	for _, s := range []string{"duplicate 50%", "corrupt 1%", "slot 1ms 2ms packets 10", "slot 1ms", "slot 3ms 5ms packets 4 bytes 64kb", "loss 1% ecn", "ecn", "delay 5ms loss 3% ecn duplicate 2% corrupt 0.5% slot 1ms 2ms bytes 3000"} {
		c := mustParse(t, s)
		back, err := Parse(c.String())
		if err != nil || back != c {
			t.Errorf("%q → %q → %+v (%v), want %+v", s, c.String(), back, err, c)
		}
	}
	c := mustParse(t, "slot 3ms 5ms packets 4 bytes 64kb duplicate 50% corrupt 1% loss 1% ecn")
	if c.Slot != (SlotConfig{Enabled: true, Min: 3 * time.Millisecond, Max: 5 * time.Millisecond, Packets: 4, Bytes: 65536}) ||
		c.Duplicate != 0.5 || c.Corrupt != 0.01 || !c.ECN || c.Loss.Prob != 0.01 {
		t.Fatalf("parsed %+v", c)
	}
	for _, bad := range []string{"duplicate 120%", "corrupt -1%", "duplicate 5% 25%", "slot 5ms 1ms", "slot", "slot distribution pareto 1ms 1ms", "slot 1ms packets -1"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if c := mustParse(t, "slot 1ms noslot ecn noecn"); c.Slot.Enabled || c.ECN {
		t.Errorf("noslot/noecn: %+v", c)
	}
}

// Duplicate: each packet gets a twin with probability P, a twin never
// gets one (so at 100% exactly N twins), and everything is delivered.
func TestDuplicate(t *testing.T) {
	for _, c := range []struct {
		p string
		f float64
	}{{"10%", 0.1}, {"100%", 1}} {
		e, err := New(mustParse(t, "seed 7 duplicate "+c.p))
		if err != nil {
			t.Fatal(err)
		}
		const n = 100000
		for i := range n {
			e.Receive(int64(i)*1000, []Packet{{Handle: uint64(i), Len: 100}}, nil)
		}
		got := drain(e)
		st := e.Stats()
		if c.f == 1 && st.Duplicated != n {
			t.Errorf("duplicate 100%%: %d twins of %d", st.Duplicated, n)
		}
		binomialWithin(t, "duplicate "+c.p, st.Duplicated, n, c.f)
		if uint64(len(got)) != n+st.Duplicated || st.Received != n+st.Duplicated || st.Sent != st.Received {
			t.Errorf("duplicate %s: sent %d, received %d, twins %d", c.p, len(got), st.Received, st.Duplicated)
		}
	}
}

// A twin is impaired on its own: with loss L and duplicate D, a packet
// offered gives 1+D copies on average, each lost with L.
func TestDuplicateTwinLoss(t *testing.T) {
	e, err := New(mustParse(t, "seed 3 duplicate 50% loss 20%"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 100000
	for i := range n {
		e.Receive(int64(i)*1000, []Packet{{Handle: uint64(i), Len: 100}}, nil)
	}
	drain(e)
	st := e.Stats()
	binomialWithin(t, "twins", st.Duplicated, n, 0.5)
	binomialWithin(t, "lost of all copies", st.Lost, n+st.Duplicated, 0.2)
}

// Corrupt: with probability P one bit, uniform over the frame, is set to
// flip; ApplyMarks flips exactly that bit.
func TestCorrupt(t *testing.T) {
	e, err := New(mustParse(t, "seed 11 corrupt 5%"))
	if err != nil {
		t.Fatal(err)
	}
	const n, size = 200000, 64
	for i := range n {
		e.Receive(int64(i)*1000, []Packet{{Handle: uint64(i), Len: size}}, nil)
	}
	got := drain(e)
	var k uint64
	var sum, sum2 float64
	for _, p := range got {
		if p.Corrupt != 0 {
			k++
			b := float64(p.Corrupt - 1)
			if b >= size*8 {
				t.Fatalf("bit %v beyond a %d-byte frame", b, size)
			}
			sum += b
			sum2 += b * b
		}
	}
	st := e.Stats()
	if k != st.Corrupted {
		t.Errorf("%d corrupted packets, Stats says %d", k, st.Corrupted)
	}
	binomialWithin(t, "corrupt 5%", k, n, 0.05)
	// Uniform over 0..8·size−1: mean (8·size−1)/2, σ = √((8·size)²−1)/√12.
	bits := float64(size * 8)
	mean, sd := (bits-1)/2, math.Sqrt((bits*bits-1)/12)
	if m := sum / float64(k); math.Abs(m-mean) > 5*sd/math.Sqrt(float64(k)) {
		t.Errorf("mean corrupted bit %.1f, want %.1f ± %.1f", m, mean, 5*sd/math.Sqrt(float64(k)))
	}
	frame := make([]byte, size)
	p := Packet{Len: size, Corrupt: 1 + 8*10 + 3}
	ApplyMarks(&p, frame, false)
	for i, b := range frame {
		if want := map[bool]byte{true: 0x10, false: 0}[i == 10]; b != want {
			t.Fatalf("byte %d is %#x, want %#x", i, b, want)
		}
	}
	// A super-frame cannot carry a detectable flipped bit: lost.
	e2, _ := New(mustParse(t, "seed 1 corrupt 100%"))
	e2.Receive(0, []Packet{{Len: 30000, Segs: 20}}, nil)
	if st := e2.Stats(); st.Lost != 1 || st.Corrupted != 1 || st.Queued != 0 {
		t.Errorf("super-frame drawn for corruption: %+v", st)
	}
}

// udpFrame is an Ethernet/IPv4/UDP frame with the given ECN field and the
// checksums the sender's stack would leave: the IPv4 header's complete,
// the UDP one either complete or (partial) the pseudo-header sum only.
func udpFrame(ecn byte, partial bool) []byte {
	f := make([]byte, 14+20+8+32)
	binary.BigEndian.PutUint16(f[12:], etherTypeIPv4)
	ip := f[14:]
	ip[0], ip[1], ip[8], ip[9] = 0x45, ecn, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	binary.BigEndian.PutUint16(ip[10:], ^sum16(ip[:20], 0))
	udp := ip[20:]
	binary.BigEndian.PutUint16(udp[0:], 5000)
	binary.BigEndian.PutUint16(udp[2:], 5001)
	binary.BigEndian.PutUint16(udp[4:], uint16(len(udp)))
	for i := 8; i < len(udp); i++ {
		udp[i] = byte(i * 7)
	}
	pseudo := sum16(ip[12:20], 17+uint32(len(udp)))
	if partial {
		binary.BigEndian.PutUint16(udp[6:], pseudo)
	} else {
		binary.BigEndian.PutUint16(udp[6:], ^sum16(udp, uint32(pseudo)))
	}
	return f
}

func sum16(b []byte, s uint32) uint16 {
	for len(b) >= 2 {
		s += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// udpValid verifies both checksums as a receiver does.
func udpValid(f []byte) bool {
	ip := f[14:34]
	udp := f[34:]
	return sum16(ip, 0) == 0xffff && sum16(udp, uint32(sum16(ip[12:20], 17+uint32(len(udp))))) == 0xffff
}

// A frame whose checksum the sender left to offload gets it completed
// before the bit is flipped, so the receiver sees the corruption.
func TestCorruptOffloadedChecksum(t *testing.T) {
	f := udpFrame(0, true)
	h := VnetHdr{Flags: VnetFlagNeedsCsum, CsumStart: 34, CsumOffset: 6}
	buf := make([]byte, VnetHdrLen+len(f))
	h.Put(buf)
	copy(buf[VnetHdrLen:], f)
	p := Packet{Len: uint32(len(f)), Corrupt: 0} // completing only: Corrupt 0 leaves the frame alone
	ApplyMarks(&p, buf, true)
	if ParseVnetHdr(buf).Flags&VnetFlagNeedsCsum == 0 {
		t.Fatal("a frame without marks was changed")
	}
	p.Corrupt = 1 + 8*60 // a payload bit
	ApplyMarks(&p, buf, true)
	if ParseVnetHdr(buf).Flags&VnetFlagNeedsCsum != 0 {
		t.Fatal("the pending checksum was left to the receiver, which would cover the flipped bit")
	}
	if udpValid(buf[VnetHdrLen:]) {
		t.Fatal("the corrupted frame passes the receiver's checksum")
	}
	buf[VnetHdrLen+60] ^= 0x80 // undo the flip: the completed checksum is right
	if !udpValid(buf[VnetHdrLen:]) {
		t.Fatal("the completed checksum is wrong")
	}
}

// ECN: a packet the loss model picks is marked CE instead of dropped when
// it is ECN-capable, dropped otherwise; marking keeps the IPv4 header
// checksum valid.
func TestECN(t *testing.T) {
	for _, ect := range []bool{true, false} {
		e, err := New(mustParse(t, "seed 5 loss 20% ecn"))
		if err != nil {
			t.Fatal(err)
		}
		const n = 100000
		var fl uint8
		if ect {
			fl = FlagECT
		}
		for i := range n {
			e.Receive(int64(i)*1000, []Packet{{Handle: uint64(i), Len: 100, Flags: fl}}, nil)
		}
		got := drain(e)
		st := e.Stats()
		var ce uint64
		for _, p := range got {
			if p.Flags&FlagCE != 0 {
				ce++
			}
		}
		if ect {
			if st.Lost != 0 || ce != st.Marked {
				t.Errorf("ECT: lost %d, marked %d, CE flags %d", st.Lost, st.Marked, ce)
			}
			binomialWithin(t, "ECT marked", st.Marked, n, 0.2)
		} else {
			if st.Marked != 0 || ce != 0 {
				t.Errorf("not ECT: marked %d", st.Marked)
			}
			binomialWithin(t, "not ECT lost", st.Lost, n, 0.2)
		}
	}
	for _, ecn := range []byte{0, 1, 2, 3} {
		f := udpFrame(ecn, false)
		if FrameECT(f) != (ecn != 0) {
			t.Errorf("ECN field %d: FrameECT %v", ecn, FrameECT(f))
		}
		MarkCE(f)
		if f[15]&3 != 3 || !udpValid(f) {
			t.Errorf("ECN field %d marked: %#x, checksums valid %v", ecn, f[15], udpValid(f))
		}
	}
	v6 := make([]byte, 14+40)
	binary.BigEndian.PutUint16(v6[12:], etherTypeIPv6)
	v6[14], v6[15] = 0x60, 0x10 // traffic class 0x01: ECT(1)
	if !FrameECT(v6) {
		t.Error("IPv6 ECT(1) not seen")
	}
	MarkCE(v6)
	if v6[15]>>4&3 != 3 || v6[14] != 0x60 {
		t.Errorf("IPv6 CE: %#x %#x", v6[14], v6[15])
	}
}

// Slot: a burst leaves in groups of `packets` at the slots' openings, one
// gap apart; an idle link's first packet waits one gap after it arrives.
func TestSlotDeterministic(t *testing.T) {
	e, err := New(mustParse(t, "seed 1 slot 10ms packets 4"))
	if err != nil {
		t.Fatal(err)
	}
	burst := make([]Packet, 20)
	for i := range burst {
		burst[i] = Packet{Handle: uint64(i), Len: 100}
	}
	e.Receive(0, burst, nil)
	got := drain(e)
	if len(got) != 20 {
		t.Fatalf("%d of 20 sent", len(got))
	}
	for i, p := range got {
		if want := int64(i/4+1) * int64(10*time.Millisecond); p.Due != want {
			t.Fatalf("packet %d left at %v, want %v", i, time.Duration(p.Due), time.Duration(want))
		}
	}
	at := int64(time.Second)
	e.Receive(at, []Packet{{Handle: 99, Len: 100}}, nil)
	if got := drain(e); len(got) != 1 || got[0].Due != at+int64(10*time.Millisecond) {
		t.Fatalf("after an idle second: %+v", got)
	}
	// A byte budget closes the slot as well: 250 bytes are 3 packets of
	// 100 (the third overdraws it, as in NetEm).
	e, _ = New(mustParse(t, "seed 1 slot 10ms bytes 250"))
	e.Receive(0, burst[:6], nil)
	got = drain(e)
	for i, p := range got {
		if want := int64(i/3+1) * int64(10*time.Millisecond); p.Due != want {
			t.Fatalf("bytes: packet %d left at %v, want %v", i, time.Duration(p.Due), time.Duration(want))
		}
	}
}

// Slot gaps are uniform in [MIN, MAX]: with one packet per slot a backlog
// leaves one gap apart, the mean gap (MIN+MAX)/2 within 5σ/√n.
func TestSlotGapsUniform(t *testing.T) {
	e, err := New(mustParse(t, "seed 9 slot 5ms 15ms packets 1"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	burst := make([]Packet, n)
	for i := range burst {
		burst[i] = Packet{Handle: uint64(i), Len: 100}
	}
	e.Receive(0, burst, nil)
	got := drain(e)
	if len(got) != n {
		t.Fatalf("%d of %d sent", len(got), n)
	}
	var sum float64
	lo, hi := int64(5*time.Millisecond), int64(15*time.Millisecond)
	for i := 1; i < n; i++ {
		g := got[i].Due - got[i-1].Due
		if g < lo || g > hi {
			t.Fatalf("gap %v outside [5ms, 15ms]", time.Duration(g))
		}
		sum += float64(g)
	}
	mean := sum / (n - 1)
	sd := float64(hi-lo) / math.Sqrt(12)
	if tol := 5 * sd / math.Sqrt(n-1); math.Abs(mean-float64(lo+hi)/2) > tol {
		t.Errorf("mean gap %v, want 10ms ± %v", time.Duration(mean), time.Duration(tol))
	}
}
