package routing

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/topo"
)

// ring builds r1..rN in a ring with a host hK on each rK; delays[i] is
// the delay of the link r(i+1)-r(i+2), "" for none.
func ring(t *testing.T, delays ...string) *topo.Plan {
	t.Helper()
	tp := topo.New()
	n := len(delays)
	for i := 1; i <= n; i++ {
		tp.AddRouter(fmt.Sprintf("r%d", i))
		tp.AddHost(fmt.Sprintf("h%d", i))
		tp.AddLink(fmt.Sprintf("r%d", i), fmt.Sprintf("h%d", i))
	}
	for i := 1; i <= n; i++ {
		p := topo.Params{}
		if d := delays[i-1]; d != "" {
			p["delay"] = d
		}
		tp.AddLink(fmt.Sprintf("r%d", i), fmt.Sprintf("r%d", i%n+1), p)
	}
	plan, err := topo.Resolve(tp, topo.AddressOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func addrs(plan *topo.Plan, node string) string {
	var out []string
	for _, i := range plan.Node(node).Intfs {
		out = append(out, i.Name+"="+i.IP.String())
		if i.IP6.IsValid() {
			out = append(out, i.IP6.String())
		}
	}
	return strings.Join(out, " ")
}

func TestAddressRoutedRing(t *testing.T) {
	plan := ring(t, "", "", "", "")
	if err := Address(plan, AddressOptions{Routed: true, IPv6: true}); err != nil {
		t.Fatal(err)
	}
	// r1's LAN is the first /24 after the base's first; the links get /30s
	// of the upper half in segment order (r1-r2, then r4-r1, whose first
	// end r4 is .5), the /64s follow the same order over all segments.
	for node, want := range map[string]string{
		"r1": "r1-eth0=10.0.1.1/24 fd00::1/64 r1-eth1=10.128.0.1/30 fd00:0:0:1::1/64 r1-eth2=10.128.0.6/30 fd00:0:0:2::2/64",
		"h1": "h1-eth0=10.0.1.2/24 fd00::2/64",
		"h4": "h4-eth0=10.0.4.2/24 fd00:0:0:7::2/64",
		"r4": "r4-eth0=10.0.4.1/24 fd00:0:0:7::1/64 r4-eth1=10.128.0.14/30 fd00:0:0:6::2/64 r4-eth2=10.128.0.5/30 fd00:0:0:2::1/64",
	} {
		if got := addrs(plan, node); got != want {
			t.Errorf("%s:\n got %s\nwant %s", node, got, want)
		}
	}
	if plan.Node("h1").IP.String() != "10.0.1.2/24" {
		t.Errorf("h1's address %s", plan.Node("h1").IP)
	}
}

func TestAddressKeepsExplicitSegments(t *testing.T) {
	tp := topo.New()
	tp.AddRouter("r1")
	tp.AddRouter("r2")
	tp.AddLink("r1", "r2", topo.Params{"ip1": "192.168.9.1/24", "ip2": "192.168.9.2/24"})
	tp.AddHost("h1")
	tp.AddLink("h1", "r1")
	plan, err := topo.Resolve(tp, topo.AddressOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Address(plan, AddressOptions{Routed: true}); err != nil {
		t.Fatal(err)
	}
	if got := addrs(plan, "r1"); got != "r1-eth0=192.168.9.1/24 r1-eth1=10.0.1.1/24" {
		t.Fatalf("r1: %s", got)
	}
}

func TestAddressFlatIPv6FollowsMininetNumbers(t *testing.T) {
	tp, err := topo.FromSpecString("tree,2,2")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := topo.Resolve(tp, topo.AddressOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Address(plan, AddressOptions{IPv6: true}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		h := plan.Node(fmt.Sprintf("h%d", i))
		if want := fmt.Sprintf("fd00::%d/64", i); h.DefaultIntf().IP6.String() != want || h.IP.String() != fmt.Sprintf("10.0.0.%d/8", i) {
			t.Errorf("h%d: %s %s, want %s", i, h.IP, h.DefaultIntf().IP6, want)
		}
	}
	if err := Address(plan, AddressOptions{IPv6: true, IPBase6: netip.MustParsePrefix("10.0.0.0/8")}); err == nil {
		t.Error("an IPv4 ipbase6 was accepted")
	}
}

func routesOf(tables Tables, node string) string {
	var out []string
	for _, r := range tables[node] {
		out = append(out, r.String())
	}
	return strings.Join(out, "; ")
}

func TestComputeHopCountAndDelay(t *testing.T) {
	// Four routers in a ring, no delays: r1 reaches r3's LAN over two
	// hops either way; the tie goes to the smaller interface (r1-eth1,
	// toward r2).
	plan := ring(t, "", "", "", "")
	if err := Address(plan, AddressOptions{Routed: true}); err != nil {
		t.Fatal(err)
	}
	tables := Compute(plan, Options{})
	if got, want := routesOf(tables, "h1"), "0.0.0.0/0 via 10.0.1.1 dev h1-eth0"; got != want {
		t.Errorf("h1: %s, want %s", got, want)
	}
	r1 := routesOf(tables, "r1")
	for _, want := range []string{"10.0.2.0/24 via 10.128.0.2 dev r1-eth1", "10.0.3.0/24 via 10.128.0.2 dev r1-eth1", "10.0.4.0/24 via 10.128.0.5 dev r1-eth2"} {
		if !strings.Contains(r1, want) {
			t.Errorf("r1 lacks %q: %s", want, r1)
		}
	}
	if strings.Contains(r1, "10.0.1.0/24") {
		t.Errorf("r1 routes its own LAN: %s", r1)
	}
	// A slow r1-r2 link (100ms, the rest 1ms) sends r1's traffic to r2's
	// LAN the long way round.
	plan = ring(t, "100ms", "1ms", "1ms", "1ms")
	if err := Address(plan, AddressOptions{Routed: true}); err != nil {
		t.Fatal(err)
	}
	tables = Compute(plan, Options{})
	if r1 := routesOf(tables, "r1"); !strings.Contains(r1, "10.0.2.0/24 via 10.128.0.5 dev r1-eth2") {
		t.Errorf("r1 with a slow link to r2: %s", r1)
	}
	if p := Path(plan, nil, "h1", "h2"); !slices.Equal(p, []string{"h1", "r1", "r4", "r3", "r2", "h2"}) {
		t.Errorf("path h1-h2 %v", p)
	}
	if c, ok := PathCost(plan, nil, "r1", "r2"); !ok || c.Delay.String() != "3ms" || c.Hops != 3 {
		t.Errorf("cost r1-r2 %+v %v", c, ok)
	}
}

func TestComputeLinkDownAndHostsDoNotTransit(t *testing.T) {
	plan := ring(t, "", "", "", "")
	if err := Address(plan, AddressOptions{Routed: true, IPv6: true}); err != nil {
		t.Fatal(err)
	}
	var r1r2 *topo.PlannedLink
	for _, l := range plan.Links {
		if l.Intf1.Node == "r1" && l.Intf2.Node == "r2" {
			r1r2 = l
		}
	}
	tables := Compute(plan, Options{Down: map[*topo.PlannedLink]bool{r1r2: true}, IPv6: true})
	r1 := routesOf(tables, "r1")
	if !strings.Contains(r1, "10.0.2.0/24 via 10.128.0.5 dev r1-eth2") {
		t.Errorf("r1 with r1-r2 down: %s", r1)
	}
	// The down link's subnet is nobody's: no route to it.
	if strings.Contains(r1, "10.128.0.0/30") {
		t.Errorf("r1 routes the down link's subnet: %s", r1)
	}
	if !strings.Contains(r1, "fd00:0:0:7::/64 via fd00:0:0:2::1 dev r1-eth2") {
		t.Errorf("r1's IPv6 routes: %s", r1)
	}
	if h1 := routesOf(tables, "h1"); h1 != "0.0.0.0/0 via 10.0.1.1 dev h1-eth0; ::/0 via fd00::1 dev h1-eth0" {
		t.Errorf("h1: %s", h1)
	}
	// A host with two routers' LANs does not carry traffic between them.
	tp := topo.New()
	tp.AddRouter("r1")
	tp.AddRouter("r2")
	tp.AddHost("h1")
	tp.AddLink("h1", "r1")
	tp.AddLink("h1", "r2")
	plan, err := topo.Resolve(tp, topo.AddressOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Address(plan, AddressOptions{Routed: true}); err != nil {
		t.Fatal(err)
	}
	tables = Compute(plan, Options{})
	if len(tables["r1"]) != 0 || len(tables["r2"]) != 0 {
		t.Errorf("routers route through a host: %v", tables)
	}
}

func TestComputeDeterministic(t *testing.T) {
	plan := ring(t, "", "", "", "", "", "")
	if err := Address(plan, AddressOptions{Routed: true}); err != nil {
		t.Fatal(err)
	}
	first := fmt.Sprint(Compute(plan, Options{}))
	for range 20 {
		if got := fmt.Sprint(Compute(plan, Options{})); got != first {
			t.Fatal("two runs differ")
		}
	}
}

func TestLinkDelay(t *testing.T) {
	for v, want := range map[string]string{"10ms": "10ms", "1500us": "1.5ms", "250": "250µs", "5ms 1ms": "5ms", "2msec": "2ms", "": "0s", "bad": "0s"} {
		if got := linkDelay(topo.Params{"delay": v}, "a>b.").String(); got != want {
			t.Errorf("delay=%q: %s, want %s", v, got, want)
		}
	}
	if got := linkDelay(topo.Params{"delay": "1ms", "b>a.delay": "7ms"}, "b>a."); got.String() != "7ms" {
		t.Errorf("direction's own delay: %v", got)
	}
}

func TestComputeIPv6OnlyForSomeNodes(t *testing.T) {
	plan := ring(t, "", "", "", "")
	if err := Address(plan, AddressOptions{Routed: true, IPv6: true}); err != nil {
		t.Fatal(err)
	}
	// A router whose IPv4 routes are the topology's still gets IPv6 ones.
	tables := Compute(plan, Options{IPv6: true,
		Include:  func(p *topo.PlannedNode) bool { return p.Name != "r1" },
		Include6: func(*topo.PlannedNode) bool { return true }})
	for _, r := range tables["r1"] {
		if r.Dst.Addr().Is4() {
			t.Fatalf("r1 got an IPv4 route: %v", r)
		}
	}
	if len(tables["r1"]) != 5 || len(tables["r2"]) != 10 {
		t.Fatalf("r1 %d routes, r2 %d; want 5 and 10", len(tables["r1"]), len(tables["r2"]))
	}
}
