package ui

import (
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// TestLinkSockMatchesNetlink reads this namespace's interfaces both ways:
// the sampler's dump agrees with the netlink package on names and state,
// and its counters are not behind.
func TestLinkSockMatchesNetlink(t *testing.T) {
	testenv.Root(t)
	ns, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	s, err := openLinkSock(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	list, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ifStats{}
	if err := s.dump(got); err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		a := l.Attrs()
		g, ok := got[a.Name]
		if !ok {
			t.Errorf("%s missing from the dump", a.Name)
			continue
		}
		if a.Statistics != nil && (g.rxPackets < a.Statistics.RxPackets || g.txBytes < a.Statistics.TxBytes) {
			t.Errorf("%s: dump %+v behind netlink's %+v", a.Name, g, *a.Statistics)
		}
		if up := a.Flags&1 != 0 && a.OperState != netlink.OperDown; up != g.up {
			t.Errorf("%s: up %v, netlink says %v", a.Name, g.up, up)
		}
	}
}

func BenchmarkLinkList(b *testing.B) {
	h, err := netlink.NewHandle()
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	for b.Loop() {
		if _, err := h.LinkList(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLinkSock(b *testing.B) {
	ns, _ := netns.Get()
	s, err := openLinkSock(ns)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	m := map[string]ifStats{}
	for b.Loop() {
		clear(m)
		if err := s.dump(m); err != nil {
			b.Fatal(err)
		}
	}
}
