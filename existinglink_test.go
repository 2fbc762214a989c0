package hymn

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/topo"
	"github.com/vishvananda/netlink"
)

// hostVeth makes a veth pair in the host namespace, as another tool would
// have made the interfaces an existing-interface link takes, with a MAC
// and MTU of its own; t's cleanup deletes it.
func hostVeth(t *testing.T, tag string) (a, b string, macA net.HardwareAddr) {
	t.Helper()
	a, b = fmt.Sprintf("hx%s%da", tag, os.Getpid()%100000), fmt.Sprintf("hx%s%db", tag, os.Getpid()%100000)
	macA = net.HardwareAddr{0x02, 0x68, 0x79, 0x6d, 0x6e, 0x01}
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: a, MTU: 1400, HardwareAddr: macA}, PeerName: b}
	if err := netlink.LinkAdd(v); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(a); err == nil {
			if err := netlink.LinkDel(l); err != nil {
				t.Error(err)
			}
		}
	})
	return a, b, macA
}

// TestExistingLink: kind=existing moves two interfaces of the host into
// the nodes under their own names, with the planned addresses, and Stop
// gives them back as they were (down, no addresses, their MAC and MTU).
func TestExistingLink(t *testing.T) {
	testenv.Root(t)
	a, b, macA := hostVeth(t, "e")
	top := topo.New()
	top.AddHost("h1")
	top.AddHost("h2")
	top.AddLink("h1", "h2", topo.Params{"kind": "existing", "intfName1": a, "intfName2": b, "mtu": "1500"})
	n := startNet(t, top, Options{})
	if !hasIntf(t, n, "h1", a) || !hasIntf(t, n, "h2", b) {
		t.Fatalf("want %s in h1 and %s in h2", a, b)
	}
	if _, err := netlink.LinkByName(a); err == nil {
		t.Errorf("%s is still in the host namespace while the network runs", a)
	}
	if loss := pingLoss(t, n, "h1", "h2"); loss != 0 {
		t.Errorf("h1 <-> h2 over existing interfaces: %v%% dropped", loss)
	}
	if err := n.SetLinkParams("h1", "h2", BothDirections, "delay 5ms"); err == nil || !strings.Contains(err.Error(), "kind=existing") {
		t.Errorf("an emulator inserted live into an existing-interface link: %v, want refused", err)
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{a, b} {
		l, err := netlink.LinkByName(name)
		if err != nil {
			t.Fatalf("%s is not back in the host namespace after Stop: %v", name, err)
		}
		attrs := l.Attrs()
		addrs, _ := netlink.AddrList(l, netlink.FAMILY_V4)
		if attrs.Flags&net.FlagUp != 0 || len(addrs) != 0 || attrs.MTU != 1400 {
			t.Errorf("%s after Stop: flags %v, addresses %v, MTU %d; want down, none, 1400", name, attrs.Flags, addrs, attrs.MTU)
		}
		if name == a && attrs.HardwareAddr.String() != macA.String() {
			t.Errorf("%s after Stop: MAC %s, want its own %s back", a, attrs.HardwareAddr, macA)
		}
	}
}

// TestExistingLinkAddedLive: AddLink with kind=existing takes the
// interfaces into a running network, DeleteLink gives them back.
func TestExistingLinkAddedLive(t *testing.T) {
	testenv.Root(t)
	// Made before the network, so that their cleanup runs after Stop
	// gave them back.
	a, b, _ := hostVeth(t, "l")
	c, d, _ := hostVeth(t, "m")
	n := startNet(t, mustTopo(t, "single,2"), Options{})
	ctx := context.Background()
	if _, err := n.AddLink(ctx, "h1", "h2", topo.Params{"kind": "existing", "intfName1": a, "intfName2": b}); err != nil {
		t.Fatal(err)
	}
	if !hasIntf(t, n, "h1", a) || !hasIntf(t, n, "h2", b) {
		t.Fatalf("want %s in h1 and %s in h2", a, b)
	}
	if _, err := n.AddLink(ctx, "h1", "h2", topo.Params{"kind": "existing", "intfName1": a + "x", "intfName2": b + "x"}); err == nil || !strings.Contains(err.Error(), "no interface") {
		t.Errorf("a live link over an interface that does not exist: %v", err)
	}
	if _, err := n.AddLink(ctx, "h1", "h2", topo.Params{"kind": "existing", "intfName1": c, "intfName2": d}); err != nil {
		t.Fatalf("a second live existing-interface link: %v", err)
	}
	if _, err := n.AddLink(ctx, "h2", "h1", topo.Params{"kind": "existing", "intfName1": a, "intfName2": "hxother0"}); err == nil || !strings.Contains(err.Error(), "is taken by link") {
		t.Errorf("a live link over an interface another link took: %v", err)
	}
	if err := n.DeleteLink(ctx, "h1", "h2", a); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{a, b} {
		if _, err := netlink.LinkByName(name); err != nil {
			t.Errorf("%s is not back in the host namespace after DeleteLink: %v", name, err)
		}
	}
}

// TestExistingLinkRefusals: New refuses, before anything exists, an
// existing-interface link over an interface that is missing, the
// loopback, one carrying a host address, one taken twice, or with
// emulation parameters, naming the interface.
func TestExistingLinkRefusals(t *testing.T) {
	testenv.Root(t)
	a, b, _ := hostVeth(t, "r")
	addressed, _, _ := hostVeth(t, "s")
	l, err := netlink.LinkByName(addressed)
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: net.IP{10, 213, 0, 1}, Mask: net.CIDRMask(24, 32)}}); err != nil {
		t.Fatal(err)
	}
	enslaved, _, _ := hostVeth(t, "p")
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: fmt.Sprintf("hxbr%d", os.Getpid()%100000)}}
	if err := netlink.LinkAdd(br); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := netlink.LinkDel(br); err != nil {
			t.Error(err)
		}
	})
	if port, err := netlink.LinkByName(enslaved); err != nil {
		t.Fatal(err)
	} else if err := netlink.LinkSetMaster(port, br); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		params topo.Params
		want   string
	}{
		{"missing", topo.Params{"intfName1": "hxnosuch0", "intfName2": b}, "no interface hxnosuch0 in the host namespace"},
		{"loopback", topo.Params{"intfName1": "lo", "intfName2": b}, "lo is a loopback interface"},
		{"host address", topo.Params{"intfName1": addressed, "intfName2": b}, "has the host's address 10.213.0.1/24"},
		{"emulated", topo.Params{"intfName1": a, "intfName2": b, "delay": "5ms"}, "takes no emulation parameters"},
		{"bridge port", topo.Params{"intfName1": enslaved, "intfName2": b}, "is a port of another interface"},
		{"twice", nil, "is taken by link"},
	} {
		t.Run(c.name, func(t *testing.T) {
			top := topo.New()
			top.AddHost("h1")
			top.AddHost("h2")
			top.AddHost("h3")
			if c.params == nil {
				top.AddLink("h1", "h2", topo.Params{"kind": "existing", "intfName1": a, "intfName2": b})
				top.AddLink("h1", "h3", topo.Params{"kind": "existing", "intfName1": "hxother0", "intfName2": a})
			} else {
				c.params["kind"] = "existing"
				top.AddLink("h1", "h2", c.params)
			}
			before, _ := netnsx.List("hymn-")
			_, err := New(top, Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New = %v, want an error saying %q", err, c.want)
			}
			if after, _ := netnsx.List("hymn-"); len(after) != len(before) {
				t.Errorf("New made namespaces: %d before, %d after", len(before), len(after))
			}
		})
	}
}
