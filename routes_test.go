package hymn

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/routing"
	"github.com/hymn-net/hymn/topo"
)

func TestRoutingOptionsAreChecked(t *testing.T) {
	router := func(params topo.Params) *topo.Topo {
		tp := topo.New()
		tp.AddRouter("r1", params)
		tp.AddHost("h1")
		tp.AddLink("r1", "h1")
		return tp
	}
	hostWithRouting := topo.New()
	hostWithRouting.AddHost("h1", topo.Params{"routing": "static"})
	for _, c := range []struct {
		name string
		t    *topo.Topo
		opts Options
		want string
	}{
		{"mode", router(nil), Options{Routing: "rip"}, `unknown routing "rip"`},
		{"param", router(topo.Params{"routing": "bgp"}), Options{}, "router r1: routing bgp: routing daemons (FRR) are not supported yet"},
		{"host", hostWithRouting, Options{}, "node h1: routing applies to routers only"},
		{"base6", router(nil), Options{IPBase6: netip.MustParsePrefix("fd00:1::/48")}, "ipbase6 is set but IPv6 is off"},
		{"small", router(nil), Options{Routing: RoutingStatic, IPBase: netip.MustParsePrefix("10.0.0.0/24")}, "needs an IPv4 base of /22 or larger"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.t, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New = %v, want %q", err, c.want)
			}
		})
	}
	// A router's own routing wins over the network's.
	n, err := New(router(topo.Params{"routing": "none"}), Options{Routing: RoutingStatic})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.routes.static) != 0 || n.Plan().Node("h1").IP.String() != "10.0.0.1/8" {
		t.Fatalf("routing=none router: static %v, h1 %s", n.routes.static, n.Plan().Node("h1").IP)
	}
}

// pingMin runs ping in a node and returns the smallest RTT it saw: ping
// stamps each reply in the kernel, so a pause of the test lengthens a
// sample but never shortens one.
func pingMin(t *testing.T, net *Network, src, dst string, count int) time.Duration {
	t.Helper()
	node, err := net.Node(src)
	if err != nil {
		t.Fatal(err)
	}
	ip, err := net.IP(dst)
	if err != nil {
		t.Fatal(err)
	}
	res, err := node.Exec(context.Background(), "ping", "-q", "-n", "-c", strconv.Itoa(count), "-i", "0.2", ip.String())
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`= ([0-9.]+)/`).FindStringSubmatch(string(res.Stdout))
	if m == nil {
		t.Fatalf("ping %s -> %s: %s%s", src, dst, res.Stdout, res.Stderr)
	}
	ms, _ := strconv.ParseFloat(m[1], 64)
	return time.Duration(ms * float64(time.Millisecond))
}

func TestStaticRoutingZooMap(t *testing.T) {
	testenv.RootAndTools(t, "ping")
	tp, fo, err := topo.LoadZoo("topo/testdata/abilene.graphml", topo.ZooOptions{})
	if err != nil {
		t.Fatal(err)
	}
	net := startNet(t, tp, Options{Routing: RoutingMode(fo.Routing)})
	if loss, err := net.PingAll(context.Background(), 0); err != nil || loss != 0 {
		t.Fatalf("PingAll = %v%%, %v", loss, err)
	}
	// Seattle to New York: five backbone links, each the fibre delay of
	// its great circle; the hosts' LAN links add none.
	cost, ok := routing.PathCost(net.Plan(), nil, "hSeattle", "hNewYork")
	if !ok || cost.Hops != 7 {
		t.Fatalf("path hSeattle-hNewYork: %+v %v (%v)", cost, ok, routing.Path(net.Plan(), nil, "hSeattle", "hNewYork"))
	}
	want := 2 * cost.Delay
	testenv.JudgeTime(t, testenv.Timing{
		Quantity: "minimum RTT hSeattle-hNewYork over the map's fibre delays", Got: pingMin(t, net, "hSeattle", "hNewYork", 10),
		Target: want, Tolerance: want / 20, Bound: testenv.Within,
		Resolution: testenv.Ms(100*time.Microsecond, "the minimum of 10 RTTs ping stamped in the kernel (1 µs printed): a pause of the test cannot shorten it; 0.1 ms bounds the forwarding of 10 emulated directions and 14 veth hops"),
	})
}

// routedRing is r1..r4 in a ring, a host on each.
func routedRing() *topo.Topo {
	tp := topo.New()
	for i := 1; i <= 4; i++ {
		tp.AddRouter(fmt.Sprintf("r%d", i))
		tp.AddHost(fmt.Sprintf("h%d", i))
		tp.AddLink(fmt.Sprintf("r%d", i), fmt.Sprintf("h%d", i))
	}
	for i := 1; i <= 4; i++ {
		tp.AddLink(fmt.Sprintf("r%d", i), fmt.Sprintf("r%d", i%4+1))
	}
	return tp
}

func routeTo(net *Network, node, dst string) string {
	for _, r := range net.StaticRoutes()[node] {
		if r.Dst.String() == dst {
			return r.Dev
		}
	}
	return ""
}

func TestStaticRoutingFollowsLinkStatus(t *testing.T) {
	testenv.Root(t)
	net := startNet(t, routedRing(), Options{Routing: RoutingStatic, IPv6: true})
	ctx := context.Background()
	if loss, err := net.PingAll(ctx, 0); err != nil || loss != 0 {
		t.Fatalf("PingAll = %v%%, %v", loss, err)
	}
	h2 := net.Plan().Node("h2").DefaultIntf()
	lan4, lan6 := h2.IP.Masked().String(), h2.IP6.Masked().String()
	if dev := routeTo(net, "r1", lan4); dev != "r1-eth1" {
		t.Fatalf("r1 reaches h2's LAN by %q, want r1-eth1", dev)
	}
	if err := net.ConfigLinkStatus("r1", "r2", "down"); err != nil {
		t.Fatal(err)
	}
	if dev, dev6 := routeTo(net, "r1", lan4), routeTo(net, "r1", lan6); dev != "r1-eth2" || dev6 != "r1-eth2" {
		t.Fatalf("with r1-r2 down r1 reaches h2's LAN by %q and %q, want r1-eth2", dev, dev6)
	}
	if loss, err := net.Ping(ctx, []string{"h1", "h2"}, 2*time.Second); err != nil || loss != 0 {
		t.Fatalf("h1<->h2 the long way round: %v%%, %v", loss, err)
	}
	if err := net.ConfigLinkStatus("r1", "r2", "up"); err != nil {
		t.Fatal(err)
	}
	if dev := routeTo(net, "r1", lan4); dev != "r1-eth1" {
		t.Fatalf("after r1-r2 up r1 reaches h2's LAN by %q", dev)
	}
	// Both families again, through the link that came back.
	if results, loss, err := net.PingResults(ctx, nil, 0); err != nil || loss != 0 {
		logLost(t, results)
		t.Fatalf("PingAll after up = %v%%, %v", loss, err)
	}
}

// logLost names the pairs of a dual-stack ping matrix that got no answer
// (the IPv4 half first, then the IPv6 half).
func logLost(t *testing.T, results []PingResult) {
	for i, r := range results {
		if r.Received == 0 {
			family := "IPv4"
			if i >= len(results)/2 {
				family = "IPv6"
			}
			t.Logf("lost: %s %s -> %s", family, r.Src, r.Dst)
		}
	}
}

func TestDualStackPingAll(t *testing.T) {
	testenv.Root(t)
	for _, kind := range []SwitchKind{SwitchLinuxBridge, SwitchBPF} {
		t.Run(string(kind), func(t *testing.T) {
			net := startNet(t, mustTopo(t, "tree,2,2"), Options{Switch: kind, IPv6: true})
			results, loss, err := net.PingResults(context.Background(), nil, 0)
			if err != nil || loss != 0 || len(results) != 2*4*3 {
				logLost(t, results)
				t.Fatalf("PingResults: %d results, %v%%, %v", len(results), loss, err)
			}
			if ip, err := net.IP6("h3"); err != nil || ip.String() != "fd00::3" {
				t.Fatalf("IP6(h3) = %v, %v", ip, err)
			}
		})
	}
}
