package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/partition"
	"github.com/vishvananda/netlink"
)

// Two runs of one topology get different VNIs; within a run every cut
// link has its own, in range, the same for every worker; an explicit base
// still numbers them base+i; a spec with neither key nor base is refused.
func TestVNIsPerRun(t *testing.T) {
	vnisOf := func(specs []*Spec) map[string]int {
		out := map[string]int{}
		for _, s := range specs {
			r, err := s.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range r.Cut {
				if v, ok := out[c.Link.String()]; ok && v != c.VNI {
					t.Errorf("%s: worker %d says VNI %d, another %d", c.Link, s.Worker, c.VNI, v)
				}
				out[c.Link.String()] = c.VNI
			}
		}
		return out
	}
	a, res, err := NewSpec("torus,6,6", "", "", false, 3, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := NewSpec("torus,6,6", "", "", false, 3, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	va, vb := vnisOf(a), vnisOf(b)
	if len(va) != res.CutSize() || len(vb) != res.CutSize() {
		t.Fatalf("%d and %d VNIs for %d cut links", len(va), len(vb), res.CutSize())
	}
	seen, same := map[int]bool{}, 0
	for link, v := range va {
		if v < 1 || v > MaxVNI || seen[v] {
			t.Errorf("%s: VNI %d out of range or taken twice", link, v)
		}
		seen[v] = true
		if vb[link] == v {
			same++
		}
	}
	// 20 links with 24-bit VNIs: two runs sharing even one is a 1 in
	// 40 000 chance; all of them, never.
	if same > 1 {
		t.Errorf("%d of %d VNIs equal across two runs: %v and %v", same, len(va), va, vb)
	}
	t.Logf("run 1: %v\nrun 2: %v", va, vb)

	for _, s := range a {
		s.VNIBase = 4200
	}
	nLinks := len(a[0].Assign) * 4 // more than torus,6,6's 72 links
	for link, v := range vnisOf(a) {
		if v < 4200 || v >= 4200+nLinks {
			t.Errorf("vni_base 4200: %s has VNI %d", link, v)
		}
	}
	s := *b[0]
	s.VNIKey = ""
	if _, err := s.Resolve(); err == nil || !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), "vni_key") {
		t.Errorf("no key, no base: %v", err)
	}
	s.VNIKey = "zz"
	if _, err := s.Resolve(); err == nil || !strings.Contains(err.Error(), "vni_key must be") {
		t.Errorf("bad key: %v", err)
	}
}

// The filter installs, replaces and removes its table in a namespace,
// leaving nothing.
func TestTunnelFilterTable(t *testing.T) {
	testenv.RootAndTools(t, "nft")
	ns, err := netnsx.CreateNamed(owner.NamespaceName(owner.NewRunID(), "@nft"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.Delete(); err != nil {
			t.Error(err)
		}
	})
	f := &tunnelFilter{ns: ns, table: filterTable("0123456789abcdef"), port: 4789}
	list := func() (string, error) { return nftList(ns) }
	v4 := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	if err := f.set([]filterRule{{VNI: 77, Local: v4("10.9.0.2"), Remote: v4("10.9.0.1")}, {VNI: 0x123456, Local: v4("10.9.0.2"), Remote: v4("10.9.0.3")}}); err != nil {
		t.Fatal(err)
	}
	out, err := list()
	if err != nil {
		t.Fatal(err, out)
	}
	for _, want := range []string{"table inet hymn-0123456789abcdef-vxlan", "hook input",
		"udp dport 4789 @th,96,24 0x4d ip saddr != 10.9.0.1 counter packets 0 bytes 0 drop", "udp dport 4789 @th,96,24 0x4d ip daddr != 10.9.0.2 counter packets 0 bytes 0 drop",
		"@th,96,24 0x123456 ip saddr != 10.9.0.3 counter", "meta nfproto ipv6 udp dport 4789 @th,96,24 0x4d counter packets 0 bytes 0 drop"} {
		if !strings.Contains(out, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, out)
		}
	}
	// Replaced in one go: the old peer's rule is gone.
	if err := f.set([]filterRule{{VNI: 77, Local: v4("10.9.0.2"), Remote: v4("10.9.0.9")}}); err != nil {
		t.Fatal(err)
	}
	if out, _ = list(); strings.Contains(out, "10.9.0.1") || strings.Contains(out, "0x123456") || !strings.Contains(out, "ip saddr != 10.9.0.9") {
		t.Errorf("after replacing:\n%s", out)
	}
	if err := f.set([]filterRule{{VNI: 77, Local: v4("10.9.0.2"), Remote: netip.MustParseAddr("fd00::1")}}); err == nil {
		t.Error("mixed families accepted")
	}
	for range 2 { // removing twice is not an error
		if err := f.remove(); err != nil {
			t.Fatal(err)
		}
	}
	if out, _ = list(); strings.TrimSpace(out) != "" {
		t.Errorf("left behind:\n%s", out)
	}
}

// nftList prints namespace ns's nftables ruleset.
func nftList(ns links.Namespace) (string, error) {
	cmd := exec.Command("nft", "list", "ruleset")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := netnsx.Launch(ns.NsHandle(), cmd.Start); err != nil {
		return "", err
	}
	err := cmd.Wait()
	return out.String(), err
}

// nftDropped sums the packets counted by namespace ns's rules.
func nftDropped(t *testing.T, ns links.Namespace) uint64 {
	t.Helper()
	out, err := nftList(ns)
	if err != nil {
		t.Fatal(err, out)
	}
	var sum uint64
	for _, m := range regexp.MustCompile(`counter packets (\d+)`).FindAllStringSubmatch(out, -1) {
		n, _ := strconv.ParseUint(m[1], 10, 64)
		sum += n
	}
	return sum
}

// vxlanFrame is a VXLAN packet's UDP payload: the header with vni and a
// broadcast Ethernet frame of an experimental type.
func vxlanFrame(vni int) []byte {
	b := make([]byte, 8, 8+60)
	b[0] = 0x08 // I: the VNI is valid
	binary.BigEndian.PutUint32(b[4:], uint32(vni)<<8)
	b = append(b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 0x66, 0x88, 0xb5)
	return append(b, bytes.Repeat([]byte("intruder"), 6)...)
}

// sendFrom sends n copies of payload over UDP from namespace ns to dst.
func sendFrom(t *testing.T, ns links.Namespace, dst netip.AddrPort, payload []byte, n int) {
	t.Helper()
	var conn *net.UDPConn
	err := netnsx.Do(ns.NsHandle(), func() error {
		var err error
		conn, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(dst))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }() // only sent on
	for range n {
		if _, err := conn.Write(payload); err != nil {
			t.Fatal(err)
		}
	}
}

// A cut link takes frames only from its peer worker, at its worker's
// address: the same frames with the link's own VNI, sent to worker 1's
// tunnel port from a third machine on the same underlay, or from the
// peer to another address of worker 1, are not delivered; from the peer
// to its address they are (the control).
func TestCutLinkRefusesStrangers(t *testing.T) {
	testenv.RootAndTools(t, "ip", "nft")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, c, _ := startTwo(ctx, t, "linear,4", "")
	// A third machine on the hub: 10.251.0.200.
	intruder, err := netnsx.CreateNamed(owner.NamespaceName(l.run, "@intruder"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := intruder.Delete(); err != nil {
			t.Error(err)
		}
	})
	if _, err := links.CreateVeth(links.End{NS: intruder, Name: "eth0", IP: netip.MustParsePrefix("10.251.0.200/16"), MTU: LocalMTU},
		links.End{NS: l.hub, Name: "mx", MTU: LocalMTU}); err != nil {
		t.Fatal(err)
	}
	err = l.hub.Netlink(func(h *netlink.Handle) error {
		p, err := h.LinkByName("mx")
		if err != nil {
			return err
		}
		br, err := h.LinkByName("hub")
		if err != nil {
			return err
		}
		return h.LinkSetMaster(p, br)
	})
	if err != nil {
		t.Fatal(err)
	}
	// A second address of worker 1's machine.
	m1 := l.machines[1].ns
	err = m1.Netlink(func(h *netlink.Handle) error {
		eth, err := h.LinkByName("eth0")
		if err != nil {
			return err
		}
		return h.AddrAdd(eth, &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(10, 251, 7, 7), Mask: net.CIDRMask(16, 32)}})
	})
	if err != nil {
		t.Fatal(err)
	}
	rx := func() (uint64, int) {
		st, err := c.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(st[1].Cut) != 1 {
			t.Fatalf("worker 1 stats: %+v", st[1])
		}
		return st[1].Cut[0].Tunnel.RxPackets, st[1].Cut[0].VNI
	}
	const n = 200
	before, vni := rx()
	frame := vxlanFrame(vni)
	w1 := netip.AddrPortFrom(l.Address(1), DefaultPort)
	dropped := nftDropped(t, m1)
	for _, tc := range []struct {
		name    string
		from    links.Namespace
		to      netip.AddrPort
		deliver bool
	}{
		{"third machine", intruder, w1, false},
		{"peer, to another address", l.machines[0].ns, netip.AddrPortFrom(netip.MustParseAddr("10.251.7.7"), DefaultPort), false},
		{"peer (control)", l.machines[0].ns, w1, true},
	} {
		sendFrom(t, tc.from, tc.to, frame, n)
		var after uint64
		deadline := time.Now().Add(2 * time.Second)
		for {
			after, _ = rx()
			if after-before >= n || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		got := after - before
		t.Logf("%s: %d frames with VNI %d sent, the tunnel received %d", tc.name, n, vni, got)
		// Other traffic on the link may add a few; the frames sent are n.
		if tc.deliver && got < n {
			t.Errorf("%s: %d of %d frames delivered; the control should deliver all", tc.name, got, n)
		}
		if !tc.deliver && got >= n/2 {
			t.Errorf("%s: %d of %d frames delivered to the cut link", tc.name, got, n)
		}
		// Dropped by worker 1's filter, each of them.
		d := nftDropped(t, m1)
		if want := dropped; !tc.deliver {
			want += n
			if d != want {
				t.Errorf("%s: the filter dropped %d frames, want %d", tc.name, d-dropped, n)
			}
		} else if d != want {
			t.Errorf("%s: the filter dropped %d of the peer's frames", tc.name, d-dropped)
		}
		before, dropped = after, d
	}
	if out, err := nftList(m1); err == nil {
		t.Logf("worker 1's filter:\n%s", out)
	}
	// The hosts still reach each other across the filtered tunnel.
	pingAll(ctx, t, c)
}
