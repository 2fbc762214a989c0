package sriov

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hymn-net/hymn/emulator/afpacket"
	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/links"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// capture records the VLAN id of every frame that arrives at a cable end
// (-1 for untagged frames) until stopped.
type capture struct {
	mu    sync.Mutex
	vlans map[int]int
	stop  chan struct{}
	done  chan struct{}
}

func startCapture(t *testing.T, ns links.Namespace, ifname string) *capture {
	t.Helper()
	p, err := afpacket.OpenIn(ns.NsHandle(), ifname, afpacket.Options{RxFrames: 256, TxFrames: 64})
	if err != nil {
		t.Fatal(err)
	}
	c := &capture{vlans: map[int]int{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer func() { _ = p.Close() }() // a receive-only port: nothing is lost
		bufs, lens := make([][]byte, 16), make([]int, 16)
		for i := range bufs {
			bufs[i] = make([]byte, 2048)
		}
		stamps := make([]int64, 16)
		for {
			select {
			case <-c.stop:
				return
			default:
			}
			// A poll's result is no news: RecvBatch finds what came
			// (nothing from a port that failed), and c.stop ends the loop.
			_ = p.Wait(20 * time.Millisecond)
			n, _ := p.RecvBatch(bufs, lens, stamps)
			c.mu.Lock()
			for i := 0; i < n; i++ {
				f := bufs[i][:lens[i]]
				if isTagged(f) {
					c.vlans[int(f[14]&0x0f)<<8|int(f[15])]++
				} else {
					c.vlans[-1]++
				}
			}
			c.mu.Unlock()
		}
	}()
	return c
}

func (c *capture) result() map[int]int {
	close(c.stop)
	<-c.done
	return c.vlans
}

func ping(ns, addr string) error {
	return exec.Command("ip", "netns", "exec", ns, "ping", "-c", "2", "-i", "0.2", "-W", "1", addr).Run()
}

// TestSimVLANIsolation runs real frames over the simulated NIC: a VF pair
// on one VLAN reaches its peer, a VF on another VLAN does not, and the
// cable carries the frames tagged with exactly the VLANs the allocator
// chose.
func TestSimVLANIsolation(t *testing.T) {
	testenv.RootAndTools(t, "ping")
	run := owner.NewRunID()
	sim, err := NewSimNIC(SimConfig{Namespace: owner.NamespaceName(run, "sriov"), Dir: filepath.Join(t.TempDir(), "sim"), VFs: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := sim.Close(); err != nil {
			t.Error(err)
		}
		if names, _ := owner.Namespaces(run); len(names) != 0 {
			t.Errorf("namespaces left behind: %v", names)
		}
	}()
	alloc, err := NewAllocator(AllocatorConfig{Inventory: &Inventory{Cables: sim.Cables()}, SysFS: sim.SysFS(), Conf: sim, NeedNetdev: true})
	if err != nil {
		t.Fatal(err)
	}
	var pairs []*Pair
	for i := 0; i < 4; i++ {
		p, err := alloc.Allocate("link")
		if err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, p)
	}
	p402, p403 := pairs[2], pairs[3]
	if p402.VLAN != 402 || p403.VLAN != 403 {
		t.Fatalf("VLANs %d, %d; want 402, 403", p402.VLAN, p403.VLAN)
	}
	nsList := map[string]*links.HelperNS{}
	for _, n := range []string{"a", "b", "c"} {
		h, err := links.CreateHelperNS(owner.NamespaceName(run, n))
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := h.Delete(); err != nil {
				t.Error(err)
			}
		}()
		nsList[n] = h
	}
	take := func(ns string, netdev, name, ip string) {
		t.Helper()
		takeVF(t, sim, nsList[ns], netdev, name, ip)
	}
	// a and b hold the two VFs of the VLAN 402 pair; c holds the far VF of
	// the VLAN 403 pair, on the same IP subnet, so only the VLAN keeps it
	// apart from a.
	take("a", p402.A.Netdev, "a-eth0", "10.77.0.1/24")
	take("b", p402.B.Netdev, "b-eth0", "10.77.0.2/24")
	take("c", p403.B.Netdev, "c-eth0", "10.77.0.3/24")

	capA := startCapture(t, sim.Home(), p402.Cable.A)
	if err := ping(nsList["a"].Name(), "10.77.0.2"); err != nil {
		t.Fatalf("VF on VLAN 402 cannot reach its peer: %v", err)
	}
	if err := ping(nsList["c"].Name(), "10.77.0.1"); err == nil {
		t.Fatal("a VF on VLAN 403 reached a VF on VLAN 402")
	}
	if err := ping(nsList["a"].Name(), "10.77.0.3"); err == nil {
		t.Fatal("a VF on VLAN 402 reached a VF on VLAN 403")
	}
	seen := capA.result()
	var ids []int
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	t.Logf("frames on cable end %s by VLAN: %v; stats %+v", p402.Cable.A, seen, sim.Stats())
	if seen[402] == 0 || seen[403] == 0 {
		t.Fatalf("cable capture saw VLANs %v, want frames tagged 402 (b's replies) and 403 (c's ARP)", ids)
	}
	for _, id := range ids {
		if id != 402 && id != 403 {
			t.Fatalf("cable carried a frame with VLAN %d (-1: untagged); hymn allocated 402 and 403", id)
		}
	}
	if st := sim.Stats(); st.Tagged == 0 || st.Untagged == 0 {
		t.Fatalf("the cable neither tagged nor untagged: %+v", st)
	}
	// The pair's VFs follow their settings: disabling b's VF cuts the wire.
	st, _ := sim.GetVF(p402.Cable.B, p402.B.Index)
	st.LinkState = LinkDisable
	if err := sim.SetVF(p402.Cable.B, p402.B.Index, st); err != nil {
		t.Fatal(err)
	}
	if err := ping(nsList["a"].Name(), "10.77.0.2"); err == nil {
		t.Fatal("ping crossed a VF whose link state is disable")
	}
}

// takeVF moves a simulated VF into ns as name with address ip, as a link
// does, and waits until it is up.
func takeVF(t *testing.T, sim *SimNIC, ns *links.HelperNS, netdev, name, ip string) {
	t.Helper()
	end := links.End{NS: ns, Name: name, IP: netip.MustParsePrefix(ip)}
	if err := links.TakeInterface(sim.Home(), netdev, end); err != nil {
		t.Fatal(err)
	}
	if err := links.DisableOffloads(end.NS, name); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := links.WaitOperUp(ctx, end.NS, name); err != nil {
		t.Fatal(err)
	}
}

// simPair starts a simulated NIC and puts the two VFs of one pair into
// namespaces a (10.78.0.1) and b (10.78.0.2); everything goes in
// t.Cleanup, which also checks that nothing is left.
func simPair(t *testing.T) (sim *SimNIC, p *Pair, a, b *links.HelperNS) {
	t.Helper()
	run := owner.NewRunID()
	sim, err := NewSimNIC(SimConfig{Namespace: owner.NamespaceName(run, "sriov"), Dir: filepath.Join(t.TempDir(), "sim"), VFs: 2})
	if err != nil {
		t.Fatal(err)
	}
	var made []*links.HelperNS
	t.Cleanup(func() {
		for _, h := range made {
			if err := h.Delete(); err != nil {
				t.Error(err)
			}
		}
		if err := sim.Close(); err != nil {
			t.Error(err)
		}
		if names, _ := owner.Namespaces(run); len(names) != 0 {
			t.Errorf("namespaces left behind: %v", names)
		}
	})
	alloc, err := NewAllocator(AllocatorConfig{Inventory: &Inventory{Cables: sim.Cables()}, SysFS: sim.SysFS(), Conf: sim, NeedNetdev: true})
	if err != nil {
		t.Fatal(err)
	}
	if p, err = alloc.Allocate("link"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		h, err := links.CreateHelperNS(owner.NamespaceName(run, n))
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, h)
	}
	a, b = made[0], made[1]
	takeVF(t, sim, a, p.A.Netdev, "a-eth0", "10.78.0.1/24")
	takeVF(t, sim, b, p.B.Netdev, "b-eth0", "10.78.0.2/24")
	return sim, p, a, b
}

// udpSocket opens a UDP socket bound to port in ns.
func udpSocket(t *testing.T, ns links.Namespace, port int) int {
	t.Helper()
	var fd int
	err := netnsx.Do(ns.NsHandle(), func() error {
		var err error
		if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrInet4{Port: port})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Close(fd); err != nil {
			t.Error(err)
		}
	})
	return fd
}

// TestSimRecoversAfterOverload floods a VF far beyond what the simulated
// NIC forwards on this machine, then checks that the path carries a
// moderate flow without loss at once: a NIC that blocked on a full queue
// (the first design could, on a socket that never drained) would carry
// nothing.
func TestSimRecoversAfterOverload(t *testing.T) {
	testenv.Root(t)
	sim, _, a, b := simPair(t)
	tx := udpSocket(t, a, 0)
	rx := udpSocket(t, b, 7000)
	if err := unix.SetsockoptInt(rx, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20); err != nil {
		t.Fatal(err)
	}
	to := &unix.SockaddrInet4{Port: 7000, Addr: [4]byte{10, 78, 0, 2}}
	payload := make([]byte, 18)
	// ARP first, so the flood is all UDP.
	if err := ping(a.Name(), "10.78.0.2"); err != nil {
		t.Fatalf("no path before the flood: %v", err)
	}
	// The flood: as fast as one thread sends, for a second, from several
	// threads at once so the NIC's one thread cannot keep up.
	var wg sync.WaitGroup
	var sent atomic.Uint64
	end := time.Now().Add(time.Second)
	for range 2 {
		wg.Go(func() {
			dst := *to // Sendto writes into its address
			for time.Now().Before(end) {
				for range 64 {
					if unix.Sendto(tx, payload, unix.MSG_DONTWAIT, &dst) == nil {
						sent.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	drain(rx)
	during := sim.Stats()
	t.Logf("flood: %d datagrams sent in 1 s; NIC %+v", sent.Load(), during)
	// The check: 200 numbered datagrams, 1 ms apart, all arrive.
	const n = 200
	for i := range n {
		binary.BigEndian.PutUint32(payload, uint32(i))
		if err := unix.Sendto(tx, payload, 0, to); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		time.Sleep(time.Millisecond)
	}
	got := map[uint32]bool{}
	deadline := time.Now().Add(2 * time.Second)
	buf := make([]byte, 64)
	for len(got) < n && time.Now().Before(deadline) {
		k, _, err := unix.Recvfrom(rx, buf, unix.MSG_DONTWAIT)
		if err != nil {
			time.Sleep(time.Millisecond)
			continue
		}
		if k == len(payload) {
			got[binary.BigEndian.Uint32(buf)] = true
		}
	}
	if len(got) != n {
		t.Fatalf("after the flood %d of %d datagrams sent 1 ms apart arrived; NIC %+v", len(got), n, sim.Stats())
	}
}

// drain reads everything queued on a non-blocking read of fd.
func drain(fd int) {
	buf := make([]byte, 2048)
	for {
		if _, _, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT); err != nil {
			return
		}
	}
}

// TestSimSpoofAndTaggedDrops sends raw frames from a VF: with spoofchk on
// and an administrative MAC, a frame with another source MAC is dropped;
// a tagged frame from a VF with a port VLAN is dropped; a frame from the
// VF's own MAC reaches the peer.
func TestSimSpoofAndTaggedDrops(t *testing.T) {
	testenv.Root(t)
	sim, p, a, b := simPair(t)
	var mac net.HardwareAddr
	err := a.Netlink(func(h *netlink.Handle) error {
		l, err := h.LinkByName("a-eth0")
		if err == nil {
			mac = l.Attrs().HardwareAddr
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := sim.GetVF(p.Cable.A, p.A.Index)
	st.SpoofChk, st.MAC = true, mac
	if err := sim.SetVF(p.Cable.A, p.A.Index, st); err != nil {
		t.Fatal(err)
	}
	send, err := afpacket.OpenIn(a.NsHandle(), "a-eth0", afpacket.Options{RxFrames: 64, TxFrames: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := send.Close(); err != nil {
			t.Error(err)
		}
	}()
	recv := startCapture(t, b, "b-eth0")
	frame := func(src []byte, tagged bool) []byte {
		f := append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, src...)
		if tagged {
			f = append(f, 0x81, 0x00, 0x00, 0x07)
		}
		f = append(f, 0x88, 0xb5) // local experimental EtherType
		return append(f, make([]byte, 46)...)
	}
	other := []byte{0x02, 0, 0, 0, 0, 0x99}
	before := sim.Stats()
	if _, err := send.SendBatch([][]byte{frame(other, false), frame(mac, true), frame(mac, false)}); err != nil {
		t.Fatal(err)
	}
	waitStats := func() SimStats {
		deadline := time.Now().Add(2 * time.Second)
		for {
			s := sim.Stats()
			if s.DropSpoof > before.DropSpoof && s.DropTagged > before.DropTagged && s.Tagged > before.Tagged || time.Now().After(deadline) {
				return s
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	after := waitStats()
	time.Sleep(50 * time.Millisecond)
	seen := recv.result()
	if after.DropSpoof-before.DropSpoof != 1 || after.DropTagged-before.DropTagged != 1 {
		t.Errorf("drops: spoof %d, tagged %d; want 1 each (%+v)", after.DropSpoof-before.DropSpoof, after.DropTagged-before.DropTagged, after)
	}
	if seen[-1] != 1 || len(seen) != 1 {
		t.Errorf("the peer received %v (VLAN → count, -1 untagged); want the one frame from the VF's own MAC, untagged", seen)
	}
}

// TestSimIdleGC: a garbage collection while the NIC has nothing to carry.
// The switch thread waits in a raw system call, which is no preemption
// point; a stop-the-world that it did not answer would hang the process
// (the test binary runs into its timeout) until a frame arrives, and a
// NIC whose VFs no node holds never sees one.
func TestSimIdleGC(t *testing.T) {
	testenv.Root(t)
	sim, err := NewSimNIC(SimConfig{Namespace: owner.NamespaceName(owner.NewRunID(), "sriov"), Dir: filepath.Join(t.TempDir(), "sim"), VFs: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := sim.Close(); err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(50 * time.Millisecond) // the switch is in its wait
	for range 3 {
		runtime.GC()
	}
}
