package ui

import (
	"fmt"
	"os"
	"os/exec"
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

// TestLinkSockFollowsChanges changes interfaces between samplings, by other
// means than the sampler, in a namespace of its own: each sampling after a
// change shows it (state from the kernel's link notifications, no full
// dump in between), and an interface made or deleted meanwhile appears or
// goes.
func TestLinkSockFollowsChanges(t *testing.T) {
	testenv.RootAndTools(t, "ip")
	name := fmt.Sprintf("hymn-uitest-%d", os.Getpid())
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	ip("netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() }) // gone with its interfaces
	ip("-n", name, "link", "add", "x1", "type", "veth", "peer", "name", "x2")
	ip("-n", name, "link", "set", "x1", "up")
	ip("-n", name, "link", "set", "x2", "up")
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ns.Close() }()
	s, err := openLinkSock(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	sample := func() map[string]ifStats {
		t.Helper()
		m := map[string]ifStats{}
		if err := s.read(m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := sample(); !m["x1"].up || !m["x2"].up {
		t.Fatalf("first sampling: x1 %+v, x2 %+v, want both up", m["x1"], m["x2"])
	}
	ip("-n", name, "link", "set", "x1", "down")
	ip("-n", name, "link", "set", "x2", "down")
	if m := sample(); m["x1"].up || m["x2"].up || s.stale {
		t.Errorf("after x1, x2 down: %+v, %+v (stale %v), want both down from the notifications", m["x1"], m["x2"], s.stale)
	}
	ip("-n", name, "link", "add", "y1", "type", "veth", "peer", "name", "y2")
	ip("-n", name, "link", "del", "x1")
	m := sample()
	if _, ok := m["y1"]; !ok {
		t.Errorf("y1 made between samplings is missing: %v", m)
	}
	if _, ok := m["x1"]; ok {
		t.Errorf("x1 deleted between samplings is still there: %v", m)
	}
}
