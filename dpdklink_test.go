package hymn

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/emulator/dpdk"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/sriov"
	"github.com/hymn-net/hymn/topo"
)

// Every way of asking for DPDK ports wrongly is refused by New, before
// anything is built, with an error naming the problem.
func TestDPDKPortsRefused(t *testing.T) {
	link := func(p topo.Params) *topo.Topo {
		top := topo.New()
		top.AddHost("h1", nil)
		top.AddHost("h2", nil)
		top.AddLink("h1", "h2", p)
		return top
	}
	sim := &sriov.Config{Simulate: sriov.SimAlways}
	cases := []struct {
		name string
		top  *topo.Topo
		opts Options
		want string
	}{
		{"veth link", link(topo.Params{"delay": "5ms", "emulator": "dpdk"}), Options{}, "emulator=dpdk needs an SR-IOV link"},
		{"no emulator", link(topo.Params{"kind": "sriov", "emulator": "dpdk"}), Options{SRIOV: sim}, "the link has no emulator"},
		{"jumbo", link(topo.Params{"kind": "sriov", "delay": "5ms", "mtu": "9000", "emulator": "dpdk"}), Options{SRIOV: sim}, "mtu=9000"},
		{"bad option", link(topo.Params{"kind": "sriov", "delay": "5ms"}), Options{SRIOV: &sriov.Config{Emulator: "netmap"}}, "emulator=netmap: use afpacket or dpdk"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.top, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New: %v; want an error with %q", err, c.want)
			}
		})
	}
	// A bad value in a link's own parameters is caught when the topology
	// is resolved (a file's line is named there).
	top := topo.New()
	top.AddHost("h1", nil)
	top.AddHost("h2", nil)
	top.AddLink("h1", "h2", topo.Params{"kind": "sriov", "delay": "5ms", "emulator": "xdp"})
	if _, err := New(top, Options{SRIOV: sim}); !errors.Is(err, linkparams.ErrInvalid) || !strings.Contains(err.Error(), "emulator=xdp") {
		t.Errorf("emulator=xdp: %v", err)
	}
	// --links sriov,emulator=dpdk on a link without emulation is fine:
	// only emulated links have ports to choose.
	if _, err := New(link(topo.Params{}), Options{Links: LinksSRIOV, SRIOV: &sriov.Config{Simulate: sriov.SimAlways, Emulator: "dpdk"}}); err != nil {
		t.Errorf("plain VF link with --links sriov,emulator=dpdk: %v", err)
	}
	_, err := New(link(topo.Params{"delay": "5ms"}), Options{Links: LinksSRIOV, SRIOV: &sriov.Config{Simulate: sriov.SimAlways, Emulator: "dpdk"}})
	if dpdk.Built {
		if err != nil {
			t.Errorf("emulated VF link on DPDK ports: %v", err)
		}
	} else if !errors.Is(err, dpdk.ErrNotBuilt) || !errors.Is(err, ErrDPDK) || !strings.Contains(err.Error(), "go build -tags dpdk ./cmd/hymn") {
		t.Errorf("DPDK ports in a binary without DPDK: %v; want ErrNotBuilt saying how to build", err)
	}
}

// The hardware path cannot run here; these are the arguments it passes.
// The emulator's VFs are the far ends of the link's two pairs; the EAL
// starts with PCI on and an allow list of the first of them, so no other
// device of the machine is probed (the second is hot-plugged by address);
// the simulated NIC's VFs are net_af_packet vdevs with PCI off.
func TestDPDKHardwareArguments(t *testing.T) {
	pairs := []*sriov.Pair{
		{A: sriov.VF{PF: "pfa", Index: 0, PCI: "0000:21:02.0"}, B: sriov.VF{PF: "pfb", Index: 0, PCI: "0000:21:0a.0"}},
		{A: sriov.VF{PF: "pfa", Index: 1, PCI: "0000:21:02.1"}, B: sriov.VF{PF: "pfb", Index: 1, PCI: "0000:21:0a.1"}},
	}
	addrs, err := dpdkVFAddrs(pairs)
	if err != nil || addrs != [2]string{"0000:21:0a.0", "0000:21:02.1"} {
		t.Fatalf("emulator VFs %v, %v", addrs, err)
	}
	args := dpdkEALConfig(addrs[0]).Args(2)
	if i := slices.Index(args, "-a"); i < 0 || args[i+1] != "0000:21:0a.0" || slices.Contains(args, "--no-pci") || strings.Count(strings.Join(args, " "), "-a ") != 1 {
		t.Errorf("hardware EAL arguments %q; want PCI on with exactly -a 0000:21:0a.0", args)
	}
	if !slices.Contains(args, "--no-huge") || !slices.Contains(args, "--file-prefix="+dpdk.FilePrefix()) {
		t.Errorf("hardware EAL arguments %q; want --no-huge and the process's file prefix", args)
	}
	if args := dpdkEALConfig("").Args(2); !slices.Contains(args, "--no-pci") || slices.Contains(args, "-a") {
		t.Errorf("simulated NIC EAL arguments %q; want --no-pci", args)
	}
	if got := afPacketDevargs("e3a"); got != "iface=e3a,qpairs=1" {
		t.Errorf("net_af_packet devargs %q", got)
	}
	if o := dpdkPortOptions(1500); o.MaxFrame != 1522 || o.IdleSleep != dpdkIdleSleep {
		t.Errorf("port options %+v", o)
	}
	if _, err := dpdkVFAddrs(pairs[:1]); err == nil {
		t.Error("one pair gave emulator VFs")
	}
	if _, err := dpdkVFAddrs([]*sriov.Pair{{}, {}}); err == nil {
		t.Error("VFs without PCI addresses accepted")
	}
}

// A link added to a running network is checked like the planned ones.
func TestDPDKPortsRefusedAtRuntime(t *testing.T) {
	testenv.Root(t)
	net := startNet(t, mustTopo(t, "single,2"), Options{})
	before := len(net.Plan().Links)
	_, err := net.AddLink(context.Background(), "h1", "h2", topo.Params{"delay": "5ms", "emulator": "dpdk"})
	if !errors.Is(err, ErrDPDK) || !strings.Contains(err.Error(), "needs an SR-IOV link") {
		t.Fatalf("AddLink with emulator=dpdk on a veth link: %v", err)
	}
	if n := len(net.Plan().Links); n != before {
		t.Errorf("the refused link stayed in the plan: %d links, want %d", n, before)
	}
}
