package sriov

import (
	"context"
	"net/netip"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/hymn-net/hymn/emulator/afpacket"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/links"
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
		defer p.Close()
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
			p.Wait(20 * time.Millisecond)
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
		defer h.Delete()
		nsList[n] = h
	}
	take := func(ns string, netdev, name, ip string) {
		t.Helper()
		end := links.End{NS: nsList[ns], Name: name, IP: netip.MustParsePrefix(ip)}
		if err := TakeVF(sim.Home(), netdev, end); err != nil {
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
	sim.SetVF(p402.Cable.B, p402.B.Index, st)
	if err := ping(nsList["a"].Name(), "10.77.0.2"); err == nil {
		t.Fatal("ping crossed a VF whose link state is disable")
	}
}
