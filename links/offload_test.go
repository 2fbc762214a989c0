package links

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/testenv"
)

// offloadNet is a ─ [emulator in helper e] ─ b, each in its own namespace.
type offloadNet struct {
	a, b *netnsx.Named
	link *EmulatedLink
}

var offloadSeq int

func newOffloadNet(t *testing.T, offloads bool, cfg emulator.Config) *offloadNet {
	t.Helper()
	testenv.Root(t)
	offloadSeq++
	prefix := fmt.Sprintf("hymntest-off%d-%d", os.Getpid(), offloadSeq)
	o := &offloadNet{a: testNamespace(t, prefix+"a"), b: testNamespace(t, prefix+"b")}
	helper, err := CreateHelperNS(prefix + "e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := helper.Delete(); err != nil {
			t.Error(err)
		}
	})
	saved := NoOffloads
	NoOffloads = !offloads
	defer func() { NoOffloads = saved }()
	l, err := CreateEmulated(helper,
		End{NS: o.a, Name: "a0", IP: netip.MustParsePrefix("10.201.0.1/24")},
		End{NS: o.b, Name: "b0", IP: netip.MustParsePrefix("10.201.0.2/24")},
		"e1", "e2", emulator.ForwarderConfig{AtoB: cfg, BtoA: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Stop(); err != nil {
			t.Error(err)
		}
	})
	o.link = l
	if l.Offloads != offloads {
		t.Fatalf("link offloads = %v, want %v", l.Offloads, offloads)
	}
	return o
}

// listen and dial open sockets inside a namespace; they stay there.
func listen(t *testing.T, ns *netnsx.Named, network, addr string) (ln net.Listener, pc net.PacketConn) {
	t.Helper()
	err := netnsx.Do(ns.NsHandle(), func() error {
		var err error
		if network == "udp" {
			pc, err = net.ListenPacket(network, addr)
		} else {
			ln, err = net.Listen(network, addr)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ln, pc
}

func dial(t *testing.T, ns *netnsx.Named, network, addr string) net.Conn {
	t.Helper()
	var c net.Conn
	err := netnsx.Do(ns.NsHandle(), func() error {
		var err error
		c, err = net.DialTimeout(network, addr, 5*time.Second)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// linkRate is a rate the emulator stamped: bytes it sent between two
// readings of its counters, over the due times of the last frames sent at
// each (emulator.Stats.LastSentDue), so no pause of the reader moves it.
type linkRate struct {
	bytes uint64        // bytes sent in the window
	due   time.Duration // the window, on the emulator's clock
}

func (r linkRate) bitsPerSecond() float64 { return float64(r.bytes) * 8 / r.due.Seconds() }

// tcpRate sends as fast as it can from a to b for d and returns the bytes
// per second the receiver read (over a window the test read: logged only)
// and the rate the emulator sent a to b from 200 ms into the transfer
// until the sender's last write.
func (o *offloadNet) tcpRate(t *testing.T, d time.Duration) (float64, linkRate) {
	ln, _ := listen(t, o.b, "tcp", "10.201.0.2:0")
	defer func() {
		if err := ln.Close(); err != nil {
			t.Error(err)
		}
	}()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- 0
			return
		}
		defer func() { _ = c.Close() }() // read to EOF; and the test may have ended by now
		n, _ := io.Copy(io.Discard, c)
		got <- n
	}()
	c := dial(t, o.a, "tcp", ln.Addr().String())
	buf := make([]byte, 256<<10)
	read := func() emulator.Stats { return o.link.Fwd.Stats(emulator.AtoB).Emulator }
	var first emulator.Stats
	sampled := false
	start := time.Now()
	if err := c.SetWriteDeadline(start.Add(d)); err != nil {
		t.Fatal(err)
	}
	for el := time.Duration(0); el < d; el = time.Since(start) { // the transfer's length, not a measurement
		if !sampled && el >= 200*time.Millisecond {
			first, sampled = read(), true // past the slow start
		}
		if _, err := c.Write(buf); err != nil {
			break
		}
	}
	last := read()
	if err := c.Close(); err != nil {
		t.Error(err)
	}
	n := <-got
	if !sampled || last.LastSentDue <= first.LastSentDue {
		t.Fatalf("the emulator sent nothing between 200 ms into the transfer and its end: %+v, then %+v", first, last)
	}
	return float64(n) / time.Since(start).Seconds(), linkRate{last.SentBytes - first.SentBytes, time.Duration(last.LastSentDue - first.LastSentDue)}
}

// TestEmulatedOffloadsTCPRate: TCP through a zero-delay emulated link
// that carries super-frames must clearly beat the same link with offloads
// off. Without offloads every 1448-byte segment pays the per-packet path
// (sender stack, RX ring, forwarder, TX ring, receiver stack); with them
// one frame carries up to 44 segments, and what is left is mostly the
// copies of each byte. How much that gains is bounded by what offloads
// gain a plain veth pair, where the per-packet part is smaller: 2.2× on
// the 2-core development VM (bench/emulated.sh: 13.3 Gbit/s with, 6.1
// without). Through the emulator the gain measured 1.9–2.6× (loads 3 to
// 19), with ±25 % between single runs on the shared machine; so the test
// asks for 1.5×, the plain link's gain less that noise. Both variants take
// turns (on, off, on, off, ...: the machine's load moves both alike), and
// the median of the 5 pairs' ratios is judged: a stall or a burst of load
// from elsewhere spoils the one or two pairs it lands in, not the median.
//
// The rates are the emulator's, stamped where counted (frame bytes over
// their due times, see linkRate): each is known to one frame of its
// bytes, where a rate over a window the test read would be known only to
// testenv.CallerPause in 1.2 s, 4 %. Frame bytes count the headers, 4.6 %
// of a 1514-byte frame and next to nothing of a super-frame: the ratio
// reads that much under the goodputs'.
func TestEmulatedOffloadsTCPRate(t *testing.T) {
	on := newOffloadNet(t, true, emulator.DefaultConfig())
	off := newOffloadNet(t, false, emulator.DefaultConfig())
	var rOn, rOff, gOn, gOff, ratios []float64
	worst := 0.0 // the largest share of its bytes one frame is, over both rates of a pair
	for range 5 {
		ga, a := on.tcpRate(t, 1200*time.Millisecond)
		gb, b := off.tcpRate(t, 1200*time.Millisecond)
		gOn, gOff = append(gOn, ga), append(gOff, gb)
		rOn, rOff = append(rOn, a.bitsPerSecond()/8), append(rOff, b.bitsPerSecond()/8)
		ratios = append(ratios, a.bitsPerSecond()/max(b.bitsPerSecond(), 1))
		worst = max(worst, 65536/float64(max(a.bytes, 1))+1514/float64(max(b.bytes, 1)))
	}
	sorted := slices.Sorted(slices.Values(ratios))
	median := sorted[len(sorted)/2]
	t.Logf("TCP through a zero-delay emulated link, interleaved: offloads on %v Gbit/s, off %v Gbit/s of frames as the emulator sent them (receiver's goodput %v and %v); ratios %s: median %.2f×",
		gbits(rOn), gbits(rOff), gbits(gOn), gbits(gOff), ratioList(ratios), median)
	testenv.Judge(t, testenv.Measurement{
		Quantity: "median of 5 pairs' rate ratio, offloads on / off (the emulator's stamped rates)", Got: median, Target: 2.2, Tolerance: 0.7,
		Bound: testenv.AtLeast,
		Resolution: testenv.Resolution{Value: median * worst,
			Derived: fmt.Sprintf("each rate is the bytes the emulator sent over its frames' due times (LastSentDue): known to one frame (64 KiB with offloads, 1514 B without), at most %.2g of a pair's ratio", worst)},
	})
	st := on.link.Fwd.Stats(emulator.AtoB)
	if st.Emulator.Sent == 0 || st.Emulator.SentBytes/st.Emulator.Sent < 3000 {
		t.Errorf("offloads on: %d frames, %d bytes: no super-frames went through", st.Emulator.Sent, st.Emulator.SentBytes)
	}
}

func ratioList(r []float64) string {
	var s []string
	for _, v := range r {
		s = append(s, fmt.Sprintf("%.2f", v))
	}
	return strings.Join(s, " ")
}

func gbits(r []float64) []string {
	var s []string
	for _, v := range r {
		s = append(s, fmt.Sprintf("%.2f", v*8/1e9))
	}
	return s
}

// TestEmulatedOffloadsData: with offloads carried, checksums left for the
// NIC must stay right: a TCP transfer arrives byte for byte, and UDP
// datagrams of every size (small, MTU-sized and fragmented) arrive whole.
// A header lost on the way (CHECKSUM_PARTIAL turned into "complete")
// makes the receiver verify an unfinished checksum and drop everything.
func TestEmulatedOffloadsData(t *testing.T) {
	o := newOffloadNet(t, true, emulator.DefaultConfig())

	// TCP: 64 MiB of pseudo-random bytes, hashed on both sides.
	ln, _ := listen(t, o.b, "tcp", "10.201.0.2:0")
	defer func() {
		if err := ln.Close(); err != nil {
			t.Error(err)
		}
	}()
	type result struct {
		sum [32]byte
		n   int64
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{}
			return
		}
		defer func() { _ = c.Close() }() // read to EOF; and the test may have ended by now
		h := sha256.New()
		n, _ := io.Copy(h, c)
		var r result
		copy(r.sum[:], h.Sum(nil))
		r.n = n
		got <- r
	}()
	c := dial(t, o.a, "tcp", ln.Addr().String())
	rng := rand.NewChaCha8([32]byte{16})
	h := sha256.New()
	const total = 64 << 20
	buf := make([]byte, 1<<20)
	for sent := 0; sent < total; sent += len(buf) {
		_, _ = rng.Read(buf) // ChaCha8's Read never fails
		h.Write(buf)
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.n != total || !bytes.Equal(r.sum[:], h.Sum(nil)) {
			t.Fatalf("TCP: received %d bytes (want %d), hashes equal %v", r.n, total, bytes.Equal(r.sum[:], h.Sum(nil)))
		}
	case <-time.After(60 * time.Second):
		t.Fatal("TCP transfer did not finish in 60 s")
	}

	// UDP: datagrams of many sizes, each filled from its sequence number.
	_, pc := listen(t, o.b, "udp", "10.201.0.2:0")
	defer func() {
		if err := pc.Close(); err != nil {
			t.Error(err)
		}
	}()
	u := dial(t, o.a, "udp", pc.LocalAddr().String())
	defer func() {
		if err := u.Close(); err != nil {
			t.Error(err)
		}
	}()
	sizes := []int{1, 18, 100, 1000, 1472, 1473, 3000, 8000, 20000, 65507}
	const rounds = 20
	var wg sync.WaitGroup
	wg.Add(1)
	okCount, bad := 0, 0
	go func() {
		defer wg.Done()
		rb := make([]byte, 70000)
		for {
			_ = pc.SetReadDeadline(time.Now().Add(2 * time.Second)) // fails only once closed, which ReadFrom reports
			n, _, err := pc.ReadFrom(rb)
			if err != nil {
				return
			}
			if n < 4 || !bytes.Equal(rb[:n], udpPayload(binary.BigEndian.Uint32(rb), n)) {
				bad++
				continue
			}
			okCount++
		}
	}()
	seq := uint32(0)
	for range rounds {
		for _, sz := range sizes {
			if _, err := u.Write(udpPayload(seq, max(sz, 4))); err != nil {
				t.Fatal(err)
			}
			seq++
			time.Sleep(200 * time.Microsecond) // no receive-buffer overflow
		}
	}
	wg.Wait()
	if bad > 0 || okCount < int(seq)*9/10 {
		t.Fatalf("UDP: %d of %d datagrams intact, %d corrupt", okCount, seq, bad)
	}
	t.Logf("UDP: %d of %d datagrams intact", okCount, seq)
}

func udpPayload(seq uint32, n int) []byte {
	b := make([]byte, n)
	binary.BigEndian.PutUint32(b, seq)
	for i := 4; i < n; i++ {
		b[i] = byte(seq*31 + uint32(i)*7)
	}
	return b
}
