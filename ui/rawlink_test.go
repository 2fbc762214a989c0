package ui

import (
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
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
	defer func() { _ = ns.Close() }() // the test's own handle
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
	// The counters-only dump (RTM_GETSTATS) names the same interfaces
	// with the state of the full one, and counters not behind it.
	stats := map[string]ifStats{}
	if err := s.request(unix.RTM_GETSTATS, sizeofIfStatsMsg, stats); err != nil {
		t.Fatal(err)
	}
	if len(stats) != len(got) {
		t.Errorf("stats dump has %d interfaces, the full one %d", len(stats), len(got))
	}
	for name, g := range got {
		st, ok := stats[name]
		if !ok || st.up != g.up || st.rxPackets < g.rxPackets || st.txBytes < g.txBytes {
			t.Errorf("%s: stats dump %+v (found %v), full dump %+v", name, st, ok, g)
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

func BenchmarkLinkSockStats(b *testing.B) {
	ns, _ := netns.Get()
	s, err := openLinkSock(ns)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	m := map[string]ifStats{}
	if err := s.dump(m); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		clear(m)
		if err := s.request(unix.RTM_GETSTATS, sizeofIfStatsMsg, m); err != nil {
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
