package topo

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// linkStrings renders links as "n1:p1-n2:p2" in the given order.
func linkStrings(ls []*Link) []string {
	var out []string
	for _, l := range ls {
		out = append(out, fmt.Sprintf("%s:%d-%s:%d", l.Node1, l.Port1, l.Node2, l.Port2))
	}
	return out
}

func nodeNames(ns []*Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return out
}

func mustSpec(t *testing.T, s string) *Topo {
	t.Helper()
	top, err := FromSpecString(s)
	if err != nil {
		t.Fatalf("FromSpecString(%q): %v", s, err)
	}
	return top
}

// The expected wiring below is Mininet 2.3's, read from its topo.py and
// topolib.py: port numbers follow addLink order, switches count from 1.
func TestBuiltinWiring(t *testing.T) {
	cases := []struct {
		spec     string
		hosts    []string
		switches []string
		links    []string // in addLink order
	}{
		{"minimal", []string{"h1", "h2"}, []string{"s1"}, []string{"h1:0-s1:1", "h2:0-s1:2"}},
		{"single,3", []string{"h1", "h2", "h3"}, []string{"s1"}, []string{"h1:0-s1:1", "h2:0-s1:2", "h3:0-s1:3"}},
		{"reversed,3", []string{"h1", "h2", "h3"}, []string{"s1"}, []string{"h1:0-s1:3", "h2:0-s1:2", "h3:0-s1:1"}},
		{"linear,3", []string{"h1", "h2", "h3"}, []string{"s1", "s2", "s3"},
			[]string{"h1:0-s1:1", "h2:0-s2:1", "s2:2-s1:2", "h3:0-s3:1", "s3:2-s2:3"}},
		{"linear,2,2", []string{"h1s1", "h1s2", "h2s1", "h2s2"}, []string{"s1", "s2"},
			[]string{"h1s1:0-s1:1", "h2s1:0-s1:2", "h1s2:0-s2:1", "h2s2:0-s2:2", "s2:3-s1:3"}},
		{"tree,depth=2,fanout=2", []string{"h1", "h2", "h3", "h4"}, []string{"s1", "s2", "s3"},
			[]string{"s2:1-h1:0", "s2:2-h2:0", "s1:1-s2:3", "s3:1-h3:0", "s3:2-h4:0", "s1:2-s3:3"}},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			top := mustSpec(t, c.spec)
			if got := nodeNames(top.Hosts()); !slices.Equal(got, c.hosts) {
				t.Errorf("hosts = %v, want %v", got, c.hosts)
			}
			if got := nodeNames(top.Switches()); !slices.Equal(got, c.switches) {
				t.Errorf("switches = %v, want %v", got, c.switches)
			}
			if got := linkStrings(top.Links()); !slices.Equal(got, c.links) {
				t.Errorf("links = %v, want %v", got, c.links)
			}
		})
	}
}

func TestTorus(t *testing.T) {
	top := mustSpec(t, "torus,3,3")
	if len(top.Hosts()) != 9 || len(top.Switches()) != 9 || len(top.Links()) != 9+18 {
		t.Fatalf("torus,3,3: %d hosts %d switches %d links, want 9 9 27", len(top.Hosts()), len(top.Switches()), len(top.Links()))
	}
	s := top.Node("s2x3")
	if s == nil || s.Params["dpid"] != "203" || s.Params["stp"] != "1" {
		t.Fatalf("s2x3 = %+v, want dpid 203 (0x2*256+3 in hex) and stp", s)
	}
	// The wrap-around link of row 1: s1x3 to s1x1.
	found := false
	for _, l := range top.Links() {
		found = found || l.Node1 == "s1x3" && l.Node2 == "s1x1"
	}
	if !found {
		t.Error("torus lacks the wrap-around link s1x3-s1x1")
	}
	top = mustSpec(t, "torus,3,3,2")
	if top.Node("h2x2x2") == nil {
		t.Error("torus with n=2 should name hosts h<i>x<j>x<k>")
	}
}

func TestNaturalOrder(t *testing.T) {
	names := []string{"h10", "h2", "h1", "s1", "h1s2", "h1s10", "h1s1"}
	slices.SortFunc(names, naturalCompare)
	want := []string{"h1", "h1s1", "h1s2", "h1s10", "h2", "h10", "s1"}
	if !slices.Equal(names, want) {
		t.Fatalf("natural sort = %v, want %v", names, want)
	}
}

func TestSortedLinksIsMininetCreationOrder(t *testing.T) {
	top := mustSpec(t, "linear,3")
	want := []string{"h1:0-s1:1", "h2:0-s2:1", "h3:0-s3:1", "s2:2-s1:2", "s3:2-s2:3"}
	if got := linkStrings(top.SortedLinks()); !slices.Equal(got, want) {
		t.Fatalf("sorted links = %v, want %v", got, want)
	}
}

func TestParseSpec(t *testing.T) {
	s, err := ParseSpec("tc,bw=10,delay=5ms")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "tc" || len(s.Args) != 0 || len(s.Kwargs) != 2 {
		t.Fatalf("ParseSpec = %+v", s)
	}
	if v, _ := s.Get("delay"); v != "5ms" {
		t.Errorf("delay = %q", v)
	}
	if s.String() != "tc,bw=10,delay=5ms" {
		t.Errorf("String() = %q", s.String())
	}
	s, err = ParseSpec("linear,3,2")
	if err != nil || s.Name != "linear" || !slices.Equal(s.Args, []string{"3", "2"}) {
		t.Fatalf("ParseSpec(linear,3,2) = %+v, %v", s, err)
	}
	for _, bad := range []string{"", ",3", "linear,,3", "linear,=3", "tree,depth=2,3"} {
		t.Run(fmt.Sprintf("invalid %q", bad), func(t *testing.T) {
			t.Parallel()
			if _, err := ParseSpec(bad); !errors.Is(err, ErrBadSpec) {
				t.Errorf("ParseSpec(%q) err = %v, want ErrBadSpec", bad, err)
			}
		})
	}
}

func TestBadTopologySpecs(t *testing.T) {
	cases := map[string]string{
		"foo":              "valid topologies are: linear, minimal, reversed, single, torus, tree",
		"linear,0":         "k must be at least 1, got 0",
		"linear,abc":       `k must be an integer, got "abc"`,
		"tree,depth=-1":    "depth must be at least 0, got -1",
		"tree,fanout=0":    "fanout must be at least 1",
		"linear,1,2,3":     "takes at most 2 arguments (k, n), got 3",
		"linear,k=2,x=3":   `has no parameter "x"`,
		"linear,2,k=3":     "parameter k is given twice",
		"torus,2,3":        "x and y must be at least 3",
		"torus,3":          "needs parameter y",
		"single,k=1.5":     `k must be an integer, got "1.5"`,
		"minimal,2":        "takes at most 0 arguments",
		"reversed,-3":      "k must be at least 1",
		"linear,n=0":       "n must be at least 1",
		"torus,3,3,n=zero": `n must be an integer`,
	}
	for spec, want := range cases {
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			_, err := FromSpecString(spec)
			if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrBadSpec) {
				t.Errorf("FromSpecString(%q) = %v, want an ErrBadSpec containing %q", spec, err, want)
			}
		})
	}
}

func TestAddressPlan(t *testing.T) {
	top := mustSpec(t, "single,3")
	plan, err := Resolve(top, AddressOptions{AutoMAC: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range plan.Hosts() {
		want := fmt.Sprintf("10.0.0.%d/8", i+1)
		if h.IP.String() != want {
			t.Errorf("%s ip = %s, want %s", h.Name, h.IP, want)
		}
		if wantMAC := fmt.Sprintf("00:00:00:00:00:%02x", i+1); h.MAC.String() != wantMAC {
			t.Errorf("%s mac = %s, want %s", h.Name, h.MAC, wantMAC)
		}
		if d := h.DefaultIntf(); d.Name != h.Name+"-eth0" || d.IP != h.IP {
			t.Errorf("%s default intf = %+v", h.Name, d)
		}
	}
	s1 := plan.Node("s1")
	var intfs []string
	for _, i := range s1.Intfs {
		intfs = append(intfs, i.Name+":"+i.Link.Peer(i).Name)
	}
	if want := []string{"s1-eth1:h1-eth0", "s1-eth2:h2-eth0", "s1-eth3:h3-eth0"}; !slices.Equal(intfs, want) {
		t.Errorf("s1 intfs = %v, want %v", intfs, want)
	}
}

func TestAddressPlanIPBaseAndOverrides(t *testing.T) {
	top := New()
	s1 := top.AddSwitch("s1")
	top.AddLink(top.AddHost("h1"), s1)
	top.AddLink(top.AddHost("h2", Params{"ip": "192.168.9.9/24"}), s1)
	top.AddLink(top.AddHost("h3"), s1)
	top.AddLink(top.AddHost("h4", Params{"ip": "none"}), s1)
	plan, err := Resolve(top, AddressOptions{IPBase: netip.MustParsePrefix("172.16.5.0/24")})
	if err != nil {
		t.Fatal(err)
	}
	// The counter advances for h2 even though it has its own ip, as in Mininet.
	want := map[string]string{"h1": "172.16.5.1/24", "h2": "192.168.9.9/24", "h3": "172.16.5.3/24", "h4": "invalid Prefix"}
	for name, ip := range want {
		if got := plan.Node(name).IP.String(); got != ip {
			t.Errorf("%s ip = %s, want %s", name, got, ip)
		}
	}
	// A base with a host part starts counting there.
	plan, err = Resolve(top, AddressOptions{IPBase: netip.MustParsePrefix("10.0.0.10/8")})
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Node("h1").IP.String(); got != "10.0.0.10/8" {
		t.Errorf("h1 ip with base 10.0.0.10/8 = %s", got)
	}
}

func TestAddressPlanRunsOut(t *testing.T) {
	top := mustSpec(t, "single,3")
	_, err := Resolve(top, AddressOptions{IPBase: netip.MustParsePrefix("10.0.0.0/31")})
	if err == nil || !strings.Contains(err.Error(), "has no room for host") {
		t.Fatalf("Resolve with a /31 base = %v, want 'has no room'", err)
	}
}

func TestValidation(t *testing.T) {
	top := New()
	top.AddHost("h1")
	top.AddHost("h1")
	if err := top.Err(); !errors.Is(err, ErrDuplicateNode) {
		t.Errorf("duplicate host: err = %v", err)
	}
	if _, err := Resolve(top, AddressOptions{}); !errors.Is(err, ErrDuplicateNode) {
		t.Errorf("Resolve must refuse a topology with errors, got %v", err)
	}

	top = New()
	top.AddLink(top.AddHost("h1"), "s9")
	if err := top.Err(); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("link to unknown node: err = %v", err)
	}

	top = New()
	top.AddLink(top.AddHost("averyveryverylongname"), top.AddSwitch("s1"))
	_, err := Resolve(top, AddressOptions{})
	if err == nil || !strings.Contains(err.Error(), "Linux allows at most 15") {
		t.Errorf("long interface name: err = %v", err)
	}

	top = New()
	top.AddSwitch("bridge")
	_, err = Resolve(top, AddressOptions{})
	if err == nil || !strings.Contains(err.Error(), "datapath ID") {
		t.Errorf("switch without digits: err = %v", err)
	}

	top = New()
	top.AddHost("h 1")
	if err := top.Err(); err == nil || !strings.Contains(err.Error(), "only letters") {
		t.Errorf("bad name: err = %v", err)
	}

	top = New()
	h := top.AddHost("h1")
	top.AddLink(h, h)
	if err := top.Err(); err == nil {
		t.Error("self link accepted")
	}

	top = New()
	s := top.AddSwitch("s1")
	top.AddLinkPorts(top.AddHost("h1"), s, 0, 1)
	top.AddLinkPorts(top.AddHost("h2"), s, 0, 1)
	if err := top.Err(); err == nil || !strings.Contains(err.Error(), "port 1 is used twice") {
		t.Errorf("port used twice: err = %v", err)
	}

	top = New()
	top.AddLink(top.AddHost("h1", Params{"ip": "10.0.0.300"}), top.AddSwitch("s1"))
	if _, err := Resolve(top, AddressOptions{}); err == nil || !strings.Contains(err.Error(), "node h1: ip") {
		t.Errorf("bad ip: err = %v", err)
	}
}

func TestExplicitPortsAdvanceCounter(t *testing.T) {
	top := New()
	s := top.AddSwitch("s1")
	top.AddLinkPorts(top.AddHost("h1"), s, -1, 5)
	l := top.AddLink(top.AddHost("h2"), s)
	if l.Port2 != 6 {
		t.Errorf("after an explicit port 5 the next automatic port is %d, want 6", l.Port2)
	}
}

func TestRoutedLine(t *testing.T) {
	for _, n := range []int{-1, 0, 1, 255} {
		if _, err := RoutedLine(n); !errors.Is(err, ErrBadSpec) {
			t.Errorf("RoutedLine(%d) = %v; want ErrBadSpec", n, err)
		}
	}
	line, err := RoutedLine(7)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(line.Links()); got != 6 {
		t.Fatalf("%d links, want 6", got)
	}
	for i, node := range []string{"h1", "h2", "h4", "h7"} {
		want := KindRouter
		if i == 0 || i == 3 {
			want = KindHost
		}
		if k := line.Node(node).Kind; k != want {
			t.Errorf("%s is a %v, want %v", node, k, want)
		}
	}
	// h4 (10.0.3.2 and 10.0.4.1) reaches 10.0.1/2 to the left via h3 and
	// 10.0.5/6 to the right via h5.
	want := "10.0.1.0/24 via 10.0.3.1;10.0.2.0/24 via 10.0.3.1;10.0.5.0/24 via 10.0.4.2;10.0.6.0/24 via 10.0.4.2"
	if got := line.Node("h4").Params["routes"]; got != want {
		t.Errorf("h4 routes %q, want %q", got, want)
	}
	plan, err := Resolve(line, AddressOptions{})
	if err != nil {
		t.Fatalf("the routed line does not resolve: %v", err)
	}
	if len(plan.Hosts()) != 7 {
		t.Errorf("plan has %d hosts, want 7", len(plan.Hosts()))
	}
}
