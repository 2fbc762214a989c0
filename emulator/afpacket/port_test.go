package afpacket

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/vishvananda/netlink"
)

// vethPair makes a namespace with a veth pair x0–x1 (both up) and removes
// it when the test ends.
func vethPair(t *testing.T) (string, func(string) *Port) {
	t.Helper()
	testenv.Root(t)
	name := fmt.Sprintf("hymntest-afp-%d", os.Getpid())
	if err := netnsx.Create(name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := netnsx.Delete(name); err != nil {
			t.Error(err)
		}
	})
	ns, err := netnsx.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.Close(); err != nil {
			t.Error(err)
		}
	})
	// No IPv6: its neighbour discovery would put frames of its own on
	// the wire.
	err = netnsx.Do(ns, func() error {
		for _, k := range []string{"default", "all"} {
			if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+k+"/disable_ipv6", []byte("1"), 0o644); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "x0"}, PeerName: "x1"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"x0", "x1"} {
		l, err := h.LinkByName(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond) // carrier
	open := func(ifname string) *Port {
		p, err := OpenIn(ns, ifname, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := p.Close(); err != nil {
				t.Error(err)
			}
		})
		return p
	}
	return name, open
}

func testFrame(i, size int, ethType uint16) []byte {
	f := make([]byte, size)
	copy(f, []byte{0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1})
	f[12], f[13] = byte(ethType>>8), byte(ethType)
	for j := 14; j < size; j++ {
		f[j] = byte(i + j)
	}
	return f
}

// recvAll collects frames from p until want arrived or a second passed.
func recvAll(t *testing.T, p *Port, want int) ([][]byte, []int64) {
	t.Helper()
	bufs := make([][]byte, 16)
	for i := range bufs {
		bufs[i] = make([]byte, 2048)
	}
	lens, stamps := make([]int, 16), make([]int64, 16)
	var got [][]byte
	var st []int64
	deadline := time.Now().Add(time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		n, err := p.RecvBatch(bufs, lens, stamps)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			got = append(got, append([]byte(nil), bufs[i][:lens[i]]...))
			st = append(st, stamps[i])
		}
		if n == 0 {
			if err := p.Wait(10 * time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
	}
	return got, st
}

func TestPortBatches(t *testing.T) {
	_, open := vethPair(t)
	a, b := open("x0"), open("x1")
	var frames [][]byte
	for i := 0; i < 100; i++ {
		frames = append(frames, testFrame(i, 60+i*10, 0x88b5)) // local experimental EtherType
	}
	before := time.Now().UnixNano()
	for i := 0; i < len(frames); i += 16 {
		n, err := a.SendBatch(frames[i:min(i+16, len(frames))])
		if err != nil || n != min(16, len(frames)-i) {
			t.Fatalf("SendBatch: %d, %v", n, err)
		}
	}
	got, stamps := recvAll(t, b, len(frames))
	if len(got) != len(frames) {
		t.Fatalf("received %d of %d frames", len(got), len(frames))
	}
	for i := range frames {
		if !bytes.Equal(got[i], frames[i]) {
			t.Fatalf("frame %d differs", i)
		}
		if stamps[i] < before-int64(time.Second) || stamps[i] > time.Now().UnixNano() {
			t.Errorf("frame %d: stamp %d is not a recent CLOCK_REALTIME time", i, stamps[i])
		}
	}
	// The sender's own RX ring must not see what it sent.
	if echo, _ := recvAll(t, a, 1); len(echo) != 0 {
		t.Errorf("port saw %d of its own frames (PACKET_IGNORE_OUTGOING)", len(echo))
	}
	// A frame longer than the caller's buffer is dropped and counted.
	big := testFrame(0, 1514, 0x88b5)
	if _, err := a.SendBatch([][]byte{big}); err != nil {
		t.Fatal(err)
	}
	small := [][]byte{make([]byte, 100)}
	time.Sleep(20 * time.Millisecond)
	if n, _ := b.RecvBatch(small, make([]int, 1), make([]int64, 1)); n != 0 || b.Stats().RxTruncated != 1 {
		t.Errorf("oversized frame: n=%d, truncated=%d", n, b.Stats().RxTruncated)
	}
	if s := a.Stats(); s.TxFrames != 101 {
		t.Errorf("tx stats %+v", s)
	}
}

// TestPortVLAN: a tagged frame comes out tagged, although the kernel moves
// the tag into the ring header.
func TestPortVLAN(t *testing.T) {
	_, open := vethPair(t)
	a, b := open("x0"), open("x1")
	f := testFrame(1, 100, 0x8100)
	f[14], f[15] = 0x20, 0x2a // PCP 1, VID 42
	f[16], f[17] = 0x88, 0xb5
	if _, err := a.SendBatch([][]byte{f}); err != nil {
		t.Fatal(err)
	}
	got, _ := recvAll(t, b, 1)
	if len(got) != 1 || !bytes.Equal(got[0], f) {
		t.Fatalf("VLAN frame: got %x\nwant %x", got, f)
	}
}

func TestPortWaitWakes(t *testing.T) {
	_, open := vethPair(t)
	a, b := open("x0"), open("x1")
	go func() {
		time.Sleep(20 * time.Millisecond)
		if _, err := a.SendBatch([][]byte{testFrame(0, 60, 0x88b5)}); err != nil {
			t.Error(err)
		}
	}()
	t0 := time.Now()
	if err := b.Wait(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	// Not the 2 s timeout: when the frame came.
	testenv.Elapsed(t, "Wait until a frame comes", time.Since(t0), time.Second)
	go func() { time.Sleep(10 * time.Millisecond); b.Interrupt() }()
	t0 = time.Now()
	if _, err := b.RecvBatch([][]byte{make([]byte, 2048)}, make([]int, 1), make([]int64, 1)); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("Interrupt did not end Wait (%v)", d)
	}
}

// TestPortWaitWith: one wait covers two ports, so one thread can serve
// both directions of a link: a frame arriving on the second port and the
// second port's Interrupt each end it, and a port does not pair with
// itself.
func TestPortWaitWith(t *testing.T) {
	_, open := vethPair(t)
	a, b := open("x0"), open("x1")
	if a.PairsWith(a) || !a.PairsWith(b) {
		t.Fatalf("PairsWith: itself %v, the other port %v; want false, true", a.PairsWith(a), a.PairsWith(b))
	}
	if err := a.WaitWith(a, time.Millisecond); err == nil {
		t.Error("a port waited with itself")
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		// From x0 to x1: the frame arrives on b, the second port of the wait.
		if _, err := a.SendBatch([][]byte{testFrame(0, 60, 0x88b5)}); err != nil {
			t.Error(err)
		}
	}()
	t0 := time.Now()
	if err := a.WaitWith(b, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	testenv.Elapsed(t, "WaitWith until a frame comes to the second port", time.Since(t0), time.Second)
	recvAll(t, b, 1)
	go func() { time.Sleep(10 * time.Millisecond); b.Interrupt() }()
	t0 = time.Now()
	if err := a.WaitWith(b, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("the second port's Interrupt did not end WaitWith (%v)", d)
	}
}
