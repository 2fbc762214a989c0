package hymn

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/sriov"
	"github.com/hymn-net/hymn/topo"
	"github.com/vishvananda/netlink"
)

func TestLinksSpecErrors(t *testing.T) {
	for _, bad := range []string{"sriv", "veth,vlans=400-401", "sriov,vlans=400-500,foo=1", "sriov,vlans=5-1", "sriov,pairs=enp1", "sriov,sim=maybe", "sriov,vlans=400-500,450-600"} {
		if err := checkLinksSpec(bad); err == nil {
			t.Errorf("--links %s accepted", bad)
		}
	}
	for _, good := range []string{"", "veth", "sriov", "sriov,pairs=a:b+c:d,vlans=400-499,sim=on,vfs=4"} {
		if err := checkLinksSpec(good); err != nil {
			t.Errorf("--links %s: %v", good, err)
		}
	}
	err := checkLinksSpec("sriov,inventory=/nonexistent/inv.yaml")
	if !errors.Is(err, sriov.ErrInventory) {
		t.Errorf("missing inventory file: %v", err)
	}
	if err := CheckLinks(Options{Links: "sriov,sim=on"}); err == nil {
		t.Errorf("Options.Links with SR-IOV settings accepted (they belong in Options.SRIOV)")
	}
}

// checkLinksSpec is what the CLI does with --links: parse it into typed
// options and check them.
func checkLinksSpec(spec string) error {
	backend, cfg, err := ParseLinkBackend(spec)
	if err != nil {
		return err
	}
	return CheckLinks(Options{Links: backend, SRIOV: &cfg})
}

// simSRIOV is --links sriov,sim=on.
var simSRIOV = Options{Links: LinksSRIOV, SRIOV: &sriov.Config{Simulate: sriov.SimAlways}}

// assertSRIOVGone checks that a run left no SR-IOV state: no hidden
// namespace, no state directory, no VF netdev in the root namespace.
func assertSRIOVGone(t *testing.T, run string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(owner.StateDir, run+"-sriov")); err == nil {
		t.Errorf("run %s left %s-sriov behind", run, run)
	}
	list, _ := netlink.LinkList()
	for _, l := range list {
		if strings.HasPrefix(l.Attrs().Name, "enp33s0f0v") || strings.HasPrefix(l.Attrs().Name, "enp100s0f0v") {
			t.Errorf("simulated VF %s in the root namespace", l.Attrs().Name)
		}
	}
}

// startSRIOVNet is startNet that also checks, after Stop, that no SR-IOV
// state is left.
func startSRIOVNet(t *testing.T, top *topo.Topo, opts Options) *Network {
	t.Helper()
	var run string
	t.Cleanup(func() {
		if run != "" {
			assertSRIOVGone(t, run)
		}
	})
	net := startNet(t, top, opts)
	run = net.RunID()
	return net
}

// TestSRIOVLinearPingAll is `hymn --topo linear,4 --links sriov --test
// pingall` through the Go API, on the simulated NIC.
func TestSRIOVLinearPingAll(t *testing.T) {
	testenv.Root(t)
	net := startSRIOVNet(t, mustTopo(t, "linear,4"), simSRIOV)
	loss, err := net.PingAll(context.Background(), 0)
	if err != nil || loss != 0 {
		t.Fatalf("PingAll: %v%% lost, %v", loss, err)
	}
	pairs := net.SRIOVPairs()
	if len(pairs) != 7 {
		t.Fatalf("%d VF pairs for 7 links", len(pairs))
	}
	// Links are built in parallel, but pairs and VLANs follow the plan's
	// order, so a link's VLAN is the same in every run.
	for i, p := range pairs {
		if want := net.Plan().Links[i].String(); p.Link != want || p.VLAN != 400+i || p.Index != i {
			t.Fatalf("pair %d = %s vf %d VLAN %d, want %s vf %d VLAN %d", i, p.Link, p.Index, p.VLAN, want, i, 400+i)
		}
	}
	// The topology's names, in the nodes, as with veth links.
	h1, _ := net.Node("h1")
	out, err := h1.Cmd(context.Background(), "ip -o link show h1-eth0")
	if err != nil || !strings.Contains(out, "h1-eth0") {
		t.Fatalf("h1-eth0 in h1: %q, %v", out, err)
	}
	st, err := sriov.ReadState(filepath.Join(owner.StateDir, net.RunID()+"-sriov", "state.json"))
	if err != nil || !st.Simulated || len(st.Pairs) != 7 {
		t.Fatalf("state file: %+v, %v", st, err)
	}
}

// TestSRIOVPerLinkKind mixes backends: only the link with kind sriov takes
// a VF pair; hosts still reach each other across both kinds.
func TestSRIOVPerLinkKind(t *testing.T) {
	testenv.Root(t)
	top := topo.New()
	top.AddHost("h1", nil)
	top.AddHost("h2", nil)
	top.AddSwitch("s1", nil)
	top.AddLink("h1", "s1", topo.Params{"kind": "sriov"})
	top.AddLink("h2", "s1", nil)
	net := startSRIOVNet(t, top, Options{SRIOV: &sriov.Config{Simulate: sriov.SimAlways, VLANs: "3000-3001"}})
	if loss, err := net.PingAll(context.Background(), 0); err != nil || loss != 0 {
		t.Fatalf("PingAll: %v%% lost, %v", loss, err)
	}
	pairs := net.SRIOVPairs()
	if len(pairs) != 1 || pairs[0].VLAN != 3000 || pairs[0].Link != "h1-eth0<->s1-eth1" {
		t.Fatalf("pairs %+v", pairs)
	}
}

// TestSRIOVLine7 is the CIMininet line (routers, per-link /24s, no
// switches) over VF pairs, with an iperf run across every hop when iperf3
// is installed (TCP over the simulated cable needs complete checksums).
func TestSRIOVLine7(t *testing.T) {
	testenv.Root(t)
	top := line(t, 7)
	net := startSRIOVNet(t, top, simSRIOV)
	if loss, err := net.PingAll(context.Background(), 0); err != nil || loss != 0 {
		t.Fatalf("PingAll: %v%% lost, %v", loss, err)
	}
	if _, err := exec.LookPath("iperf3"); err == nil {
		r, err := net.Iperf(context.Background(), "h1", "h7", time.Second)
		if err != nil || r.ServerBps <= 0 {
			t.Fatalf("iperf h1->h7: %+v, %v", r, err)
		}
		t.Logf("iperf h1->h7 over 6 simulated VF pairs: %.0f Mbit/s", r.ServerBps/1e6)
	}
}

// line builds examples/line7's topology (kept here so the root package
// does not import an example).
func line(t *testing.T, n int) *topo.Topo {
	t.Helper()
	top := topo.New()
	for k := 1; k <= n; k++ {
		p := topo.Params{}
		if k == 1 {
			p["ip"] = "10.0.1.1/24"
		} else {
			p["ip"] = "10.0." + strconv.Itoa(k-1) + ".2/24"
		}
		var routes []string
		for j := 1; j < n; j++ {
			switch {
			case j < k-1:
				routes = append(routes, "10.0."+strconv.Itoa(j)+".0/24 via 10.0."+strconv.Itoa(k-1)+".1")
			case j > k:
				routes = append(routes, "10.0."+strconv.Itoa(j)+".0/24 via 10.0."+strconv.Itoa(k)+".2")
			}
		}
		p["routes"] = strings.Join(routes, ";")
		name := "h" + strconv.Itoa(k)
		if k > 1 && k < n {
			top.AddRouter(name, p)
		} else {
			top.AddHost(name, p)
		}
	}
	for k := 1; k < n; k++ {
		top.AddLink("h"+strconv.Itoa(k), "h"+strconv.Itoa(k+1), topo.Params{"ip1": "10.0." + strconv.Itoa(k) + ".1/24"})
	}
	return top
}

// TestSRIOVYAMLKind: a hymn YAML file asks for a VF pair per link with
// params {kind: sriov}, or for every link through defaults.
func TestSRIOVYAMLKind(t *testing.T) {
	testenv.Root(t)
	data := []byte(`nodes:
  - {name: s1, kind: switch}
  - h1
  - h2
  - h3
defaults:
  link:
    kind: sriov
links:
  - endpoints: [h1, s1]
  - endpoints: [h2, s1]
  - endpoints: [h3, s1]
    params: {kind: veth}
`)
	top, _, err := topo.Load("sriov.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	net := startSRIOVNet(t, top, Options{Links: "veth", SRIOV: &sriov.Config{Simulate: sriov.SimAlways}})
	if loss, err := net.PingAll(context.Background(), 0); err != nil || loss != 0 {
		t.Fatalf("PingAll: %v%% lost, %v", loss, err)
	}
	if p := net.SRIOVPairs(); len(p) != 2 || p[0].VLAN != 400 || p[1].VLAN != 401 {
		t.Fatalf("pairs %+v", p)
	}
}

// TestSRIOVEmulatedLink: a VF link with emulation parameters takes two VF
// pairs with the emulator between them; its delay, statistics and live
// changes work as on a veth link, and teardown leaves nothing.
func TestSRIOVEmulatedLink(t *testing.T) {
	testenv.Root(t)
	top := topo.New()
	top.AddSwitch("s1", nil)
	top.AddHost("h1", nil)
	top.AddHost("h2", nil)
	top.AddLink("h1", "s1", topo.Params{"kind": "sriov", "delay": "5ms"})
	top.AddLink("h2", "s1", topo.Params{"kind": "sriov"})
	net := startSRIOVNet(t, top, Options{SRIOV: &sriov.Config{Simulate: sriov.SimAlways}})
	pairs := net.SRIOVPairs()
	vlans := map[int]bool{}
	for _, p := range pairs {
		vlans[p.VLAN] = true
	}
	if len(pairs) != 3 || len(vlans) != 3 {
		t.Fatalf("want 3 VF pairs on 3 VLANs (two for the emulated link), got %d on %v", len(pairs), vlans)
	}
	pingAvg(t, net, "h1", "h2", "-c", "1") // ARP crosses the delay too
	// 5 ms each way: no RTT below 10 ms, the median (and the mean if the
	// machine did not stall) at most 14 ms; then 20 ms out, 5 ms back.
	checkPingRTT(t, net, "h1", "h2", 20, 100*time.Millisecond, 10*time.Millisecond, 14*time.Millisecond)
	if err := net.SetLinkParams("h1", "s1", Forward, "delay 20ms"); err != nil {
		t.Fatal(err)
	}
	checkPingRTT(t, net, "h1", "h2", 20, 100*time.Millisecond, 25*time.Millisecond, 29*time.Millisecond)
	st, err := net.LinkStats("h1", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Forward.Emulator.Sent == 0 || st.ForwardConfig.Delay != 20*time.Millisecond || st.ReverseConfig.Delay != 5*time.Millisecond {
		t.Errorf("stats %+v / %v / %v", st.Forward.Emulator, st.ForwardConfig, st.ReverseConfig)
	}
	if err := net.SetLinkParams("h2", "s1", BothDirections, "delay 1ms"); err == nil || !strings.Contains(err.Error(), "VF pair") {
		t.Errorf("inserting an emulator into a plain VF link: %v", err)
	}
}

// TestSRIOVHardwarePath runs the hardware path (host-namespace VFs found
// through sysfs, settings through a Configurator, VFs moved into the
// nodes and back) on stand-ins: a fake sysfs whose VF netdevs are veth
// ends in the root namespace, VF i of one PF wired to VF i of the other,
// and in-memory VF settings in place of the PF driver.
func TestSRIOVHardwarePath(t *testing.T) {
	testenv.Root(t)
	emulated := topo.New()
	emulated.AddHost("h1", nil)
	emulated.AddHost("h2", nil)
	emulated.AddLink("h1", "h2", topo.Params{"delay": "2ms"})
	// Both take two VF pairs: single,2 one per link; h1-h2 two for its
	// emulator, whose VFs are handed back from the helper namespace.
	for name, top := range map[string]*topo.Topo{"single2": mustTopo(t, "single,2"), "emulated": emulated} {
		t.Run(name, func(t *testing.T) { testSRIOVHardwarePath(t, top) })
	}
}

// fakeSRIOVHardware is the hardware path's stand-in: two PFs with two VFs
// each in a fake sysfs, VF i of one wired to VF i of the other by a veth
// pair in the root namespace (removed at cleanup), VF settings in memory,
// every VF starting as a driver leaves it. backend is the --links value
// after "sriov,sim=off,"; the VF netdevs are named prefix+tag+side+i.
type fakeSRIOVHardware struct {
	pfA, pfB string
	vf       func(side string, i int) string
	conf     *sriov.MemConfigurator
	backend  LinkBackend
	cfg      sriov.Config
}

func newFakeSRIOVHardware(t *testing.T, prefix, backend string) *fakeSRIOVHardware {
	t.Helper()
	tag := owner.NewRunID()[:4]
	h := &fakeSRIOVHardware{pfA: "pf" + tag + "a", pfB: "pf" + tag + "b",
		vf: func(side string, i int) string { return prefix + tag + side + strconv.Itoa(i) }}
	for i := 0; i < 2; i++ {
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: h.vf("a", i)}, PeerName: h.vf("b", i)}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for i := 0; i < 2; i++ {
			if l, err := netlink.LinkByName(h.vf("a", i)); err == nil {
				if err := netlink.LinkDel(l); err != nil {
					t.Error(err)
				}
			}
		}
	})
	root := filepath.Join(t.TempDir(), "sys")
	if err := sriov.WriteFakeTree(root, []sriov.FakePF{
		{Name: h.pfA, TotalVFs: 8, NumVFs: 2, VFNames: []string{h.vf("a", 0), h.vf("a", 1)}},
		{Name: h.pfB, TotalVFs: 8, NumVFs: 2, VFNames: []string{h.vf("b", 0), h.vf("b", 1)}}}); err != nil {
		t.Fatal(err)
	}
	h.conf = sriov.NewMemConfigurator()
	for _, pf := range []string{h.pfA, h.pfB} {
		for i := 0; i < 2; i++ {
			if err := h.conf.SetVF(pf, i, sriov.VFState{SpoofChk: true, LinkState: sriov.LinkAuto}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var err error
	h.backend, h.cfg, err = ParseLinkBackend("sriov,sim=off," + backend + ",sysfs=" + root + ",pairs=" + h.pfA + ":" + h.pfB)
	if err != nil {
		t.Fatal(err)
	}
	h.cfg.Conf = h.conf
	return h
}

func testSRIOVHardwarePath(t *testing.T, top *topo.Topo) {
	hw := newFakeSRIOVHardware(t, "hv", "vlans=700-799")
	pfA, pfB, vf, conf, backend, cfg := hw.pfA, hw.pfB, hw.vf, hw.conf, hw.backend, hw.cfg
	net, err := New(top, Options{Links: backend, SRIOV: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := net.Stop(); err != nil {
			t.Error(err)
		}
	}()
	if err := net.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if loss, err := net.PingAll(context.Background(), 0); err != nil || loss != 0 {
		t.Fatalf("PingAll: %v%% lost, %v", loss, err)
	}
	if st, _ := conf.GetVF(pfB, 1); st.VLAN != 701 || st.SpoofChk || !st.Trust || st.LinkState != sriov.LinkEnable {
		t.Fatalf("%s vf 1 while running: %+v", pfB, st)
	}
	if _, err := netlink.LinkByName(vf("a", 0)); err == nil {
		t.Fatalf("%s is still in the root namespace while h1 uses it", vf("a", 0))
	}
	if err := net.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, side := range []string{"a", "b"} {
		for i := 0; i < 2; i++ {
			l, err := netlink.LinkByName(vf(side, i))
			if err != nil {
				t.Fatalf("VF %s did not come home: %v", vf(side, i), err)
			}
			if l.Attrs().Flags&(1<<0) != 0 {
				t.Errorf("VF %s came home up", vf(side, i))
			}
			addrs, _ := netlink.AddrList(l, netlink.FAMILY_V4)
			if len(addrs) != 0 {
				t.Errorf("VF %s came home with addresses %v", vf(side, i), addrs)
			}
		}
	}
	for _, pf := range []string{pfA, pfB} {
		for i := 0; i < 2; i++ {
			if st, _ := conf.GetVF(pf, i); st.VLAN != 0 || !st.SpoofChk || st.Trust || st.LinkState != sriov.LinkAuto {
				t.Errorf("%s vf %d not restored: %+v", pf, i, st)
			}
		}
	}
	assertSRIOVGone(t, net.RunID())
}
