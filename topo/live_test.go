package topo

import (
	"errors"
	"net/netip"
	"testing"
)

// livePlan resolves Single(2): h1, h2 (10.0.0.1, .2) on s1.
func livePlan(t *testing.T, opts AddressOptions) *Plan {
	t.Helper()
	top, err := Single(2)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Resolve(top, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// shape is what a test compares to see that a plan did not change.
func shape(p *Plan) (nodes, links int, intfs map[string]int) {
	intfs = map[string]int{}
	for _, n := range p.Nodes {
		intfs[n.Name] = len(n.Intfs)
	}
	return len(p.Nodes), len(p.Links), intfs
}

func sameShape(t *testing.T, what string, p *Plan, nodes, links int, intfs map[string]int) {
	t.Helper()
	n2, l2, i2 := shape(p)
	if n2 != nodes || l2 != links || len(i2) != len(intfs) {
		t.Fatalf("%s changed the plan it was called on: %d nodes %d links, want %d %d", what, n2, l2, nodes, links)
	}
	for name, c := range intfs {
		if i2[name] != c {
			t.Fatalf("%s changed %s's interfaces: %d, want %d", what, name, i2[name], c)
		}
	}
}

func TestLivePlansLeaveTheOldPlanAlone(t *testing.T) {
	p0 := livePlan(t, AddressOptions{AutoMAC: true})
	nodes, links, intfs := shape(p0)

	p1, h3, err := p0.WithNode("h3", KindHost, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameShape(t, "WithNode", p0, nodes, links, intfs)
	if p0.Node("h3") != nil || p1.Node("h3") != h3 {
		t.Fatal("h3 is in the old plan, or not in the new one")
	}
	if h3.IP != netip.MustParsePrefix("10.0.0.3/8") || h3.MAC.String() != "00:00:00:00:00:03" {
		t.Errorf("h3 got %s %s, want the plan's next address and MAC (10.0.0.3/8, 00:00:00:00:00:03)", h3.IP, h3.MAC)
	}

	p2, l, err := p1.WithLink("h3", "s1", Params{"ip1": "10.9.0.3/24", "mac1": "02:00:00:00:00:33"})
	if err != nil {
		t.Fatal(err)
	}
	sameShape(t, "WithNode", p0, nodes, links, intfs)
	if len(p1.Node("s1").Intfs) != 2 || len(p2.Node("s1").Intfs) != 3 {
		t.Fatalf("s1 has %d interfaces in the plan before the link and %d after, want 2 and 3", len(p1.Node("s1").Intfs), len(p2.Node("s1").Intfs))
	}
	if l.Intf1.Name != "h3-eth0" || l.Intf2.Name != "s1-eth3" {
		t.Errorf("the new link joins %s and %s, want h3-eth0 and s1-eth3", l.Intf1.Name, l.Intf2.Name)
	}
	// The link's own addresses win, as Resolve lets them.
	if l.Intf1.IP != netip.MustParsePrefix("10.9.0.3/24") || l.Intf1.MAC.String() != "02:00:00:00:00:33" {
		t.Errorf("h3-eth0 has %s %s, want the link's ip1 and mac1", l.Intf1.IP, l.Intf1.MAC)
	}

	p3, err := p2.WithoutLink(l)
	if err != nil {
		t.Fatal(err)
	}
	if len(p2.Links) != links+1 || len(p3.Links) != links || len(p2.Node("h3").Intfs) != 1 || len(p3.Node("h3").Intfs) != 0 {
		t.Fatal("WithoutLink changed the plan it was called on, or kept the link")
	}
	p4, err := p3.WithoutNode("h3")
	if err != nil {
		t.Fatal(err)
	}
	if p3.Node("h3") == nil || p4.Node("h3") != nil {
		t.Fatal("WithoutNode changed the plan it was called on, or kept the node")
	}
	// The address h3 had is not given again.
	_, h4, err := p4.WithNode("h4", KindHost, Params{"mac": "02:00:00:00:00:44"})
	if err != nil {
		t.Fatal(err)
	}
	if h4.IP != netip.MustParsePrefix("10.0.0.4/8") || h4.MAC.String() != "02:00:00:00:00:44" {
		t.Errorf("h4 got %s %s, want 10.0.0.4/8 and its own mac=", h4.IP, h4.MAC)
	}
}

func TestLivePlanRefusals(t *testing.T) {
	p := livePlan(t, AddressOptions{})
	p1, _, err := p.WithNode("h3", KindHost, Params{"ip": "10.0.0.1/8"})
	if err != nil {
		t.Fatal(err) // a node alone has no interface yet
	}
	for _, c := range []struct {
		name string
		err  func() error
		want error
	}{
		{"node twice", func() error { _, _, err := p.WithNode("h1", KindHost, nil); return err }, ErrDuplicateNode},
		{"unknown node", func() error { _, _, err := p.WithLink("h1", "h9", nil); return err }, ErrUnknownNode},
		{"an address the segment has", func() error { _, _, err := p1.WithLink("h3", "s1", nil); return err }, ErrDuplicateAddress},
		{"a bad mac", func() error { _, _, err := p.WithNode("h5", KindHost, Params{"mac": "ff:ff:ff:ff:ff:ff"}); return err }, nil},
		{"a bad ip1", func() error { _, _, err := p.WithLink("h1", "h2", Params{"ip1": "nope"}); return err }, nil},
		{"a node with links", func() error { _, err := p.WithoutNode("h1"); return err }, nil},
	} {
		err := c.err()
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: %v, want an error (%v)", c.name, err, c.want)
		}
	}
	nodes, links, intfs := shape(livePlan(t, AddressOptions{}))
	sameShape(t, "a refused change", p, nodes, links, intfs)
}
