package hymn

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/bpfswitch"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/topo"
)

// openFDs counts this process's open BPF descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		// Only what a switch holds: its maps and programs.
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(target, "anon_inode:bpf") {
			n++
		}
	}
	return n
}

// bpfNet starts a network of BPF switches.
func bpfNet(t *testing.T, spec string) *Network {
	t.Helper()
	return startNet(t, mustTopo(t, spec), Options{Switch: SwitchBPF})
}

func TestBPFSwitchPingAll(t *testing.T) {
	testenv.Root(t)
	for _, spec := range []string{"single,3", "linear,4"} {
		t.Run(spec, func(t *testing.T) {
			fds := openFDs(t)
			t.Cleanup(func() {
				// After Stop (startNet's cleanup, which ran first): the
				// switches' maps and programs are closed with the rest.
				if now := openFDs(t); now > fds {
					t.Errorf("%d BPF descriptors open after Stop, %d before New", now, fds)
				}
			})
			net := bpfNet(t, spec)
			// A switch with ports holds no descriptors: its filters hold
			// the program, the program its maps (package bpfswitch).
			if now := openFDs(t); now != fds {
				t.Errorf("%d BPF descriptors open while the network runs, want %d (none held by its switches)", now, fds)
			}
			loss, err := net.PingAll(context.Background(), 0)
			if err != nil || loss != 0 {
				t.Fatalf("PingAll = %v%%, %v; want 0%% loss", loss, err)
			}
			// No bridge in a switch: the program on each port's ingress.
			s1, _ := net.Node("s1")
			res, err := s1.Exec(context.Background(), "ip", "-o", "link", "show", "type", "bridge")
			if err != nil || len(res.Stdout) != 0 {
				t.Errorf("s1 has a bridge: %s %v", res.Stdout, err)
			}
			res, err = s1.Exec(context.Background(), "tc", "filter", "show", "dev", "s1-eth1", "ingress")
			if err != nil || !strings.Contains(string(res.Stdout), "direct-action") {
				t.Errorf("s1-eth1's ingress: %s %v", res.Stdout, err)
			}
			if net.opts.Switch != SwitchBPF {
				t.Errorf("switch kind = %s", net.opts.Switch)
			}
		})
	}
}

// rxPackets reads a node's interface's received-packet counter.
func rxPackets(t *testing.T, n Node, intf string) int {
	t.Helper()
	// /proc/net is the reader's namespace's (/sys is the root's here).
	out, err := n.Cmd(context.Background(), "sed -n 's/^ *"+intf+": *//p' /proc/net/dev | awk '{ print $2 }'")
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("rx_packets of %s: %q", intf, out)
	}
	return v
}

// Once h1 and h2 are learned, unicast between them does not reach h3.
func TestBPFSwitchLearns(t *testing.T) {
	testenv.Root(t)
	net := bpfNet(t, "single,3")
	ctx := context.Background()
	if loss, err := net.PingAll(ctx, 0); err != nil || loss != 0 {
		t.Fatalf("PingAll = %v%%, %v", loss, err)
	}
	h1, _ := net.Node("h1")
	h3, _ := net.Node("h3")
	before := rxPackets(t, h3, "h3-eth0")
	out, err := h1.Cmd(ctx, "ping -q -n -c 50 -i 0.01 -W 1 10.0.0.2")
	if err != nil || !strings.Contains(out, "50 received") {
		t.Fatalf("h1 ping h2: %v\n%s", err, out)
	}
	got := rxPackets(t, h3, "h3-eth0") - before
	t.Logf("h3 received %d frames while h1 pinged h2 50 times", got)
	if got > 10 { // broadcasts and IPv6 multicast may come; flooding would bring 100
		t.Errorf("h3 received %d frames while h1 pinged h2 50 times: unicast is flooded", got)
	}
	sw, _ := net.NsNode("s1")
	entries, err := sw.BPFSwitch().FDB()
	if err != nil || len(entries) < 3 {
		t.Errorf("s1's table: %v, %v", entries, err)
	}
}

// Ports added while the network runs join the flood list, and so does a
// port made again when an emulator is inserted into its link.
func TestBPFSwitchLivePorts(t *testing.T) {
	testenv.Root(t)
	net := bpfNet(t, "single,2")
	ctx := context.Background()
	if err := net.AddNode(ctx, "h3", topo.KindHost, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := net.AddLink(ctx, "h3", "s1", nil); err != nil {
		t.Fatal(err)
	}
	if loss, err := net.Ping(ctx, []string{"h1", "h2", "h3"}, time.Second); err != nil || loss != 0 {
		t.Fatalf("with h3 added live: loss %v%%, %v", loss, err)
	}
	sw, _ := net.NsNode("s1")
	if ports := sw.BPFSwitch().Ports(); len(ports) != 3 {
		t.Errorf("s1's ports: %v", ports)
	}
	// An emulator inserted live deletes s1-eth1 and makes it again.
	port := func() (p bpfswitch.Port) {
		for _, p = range sw.BPFSwitch().Ports() {
			if p.Name == "s1-eth1" {
				return p
			}
		}
		t.Fatalf("s1-eth1 is not a port of s1: %v", sw.BPFSwitch().Ports())
		return p
	}
	old := port()
	if err := net.SetLinkParams("h1", "s1", BothDirections, "delay 1ms"); err != nil {
		t.Fatal(err)
	}
	if now := port(); now.Ifindex == old.Ifindex || len(sw.BPFSwitch().Ports()) != 3 {
		t.Errorf("s1-eth1 after the emulator went in: %v, before %v; ports %v", now, old, sw.BPFSwitch().Ports())
	}
	if loss, err := net.Ping(ctx, []string{"h1", "h2", "h3"}, time.Second); err != nil || loss != 0 {
		t.Fatalf("after inserting an emulator: loss %v%%, %v", loss, err)
	}
}

// The BPF switches share one namespace: a switch deleted live leaves it
// to the others, Stop removes it, and a topology whose switch ports share
// a name gets a namespace per switch instead.
func TestBPFSwitchesShareNamespace(t *testing.T) {
	testenv.Root(t)
	ctx := context.Background()
	net := bpfNet(t, "linear,3")
	shared := net.namespaceOf(switchNamespaceNode)
	for _, p := range net.Switches() {
		sw, _ := net.NsNode(p.Name)
		if sw.Namespace() != shared || !sw.SharesNamespace() {
			t.Errorf("%s is in %s (shares: %v), want %s", p.Name, sw.Namespace(), sw.SharesNamespace(), shared)
		}
	}
	if left, _ := owner.Namespaces(net.run); len(left) != len(net.Hosts())+1 {
		t.Errorf("namespaces of the run: %v; want one per host and the switches' one", left)
	}
	// s1's shell sees every switch's ports, as a Mininet switch in the
	// root namespace does.
	s1, _ := net.Node("s1")
	if out, err := s1.Cmd(ctx, "ip -o link show s3-eth1"); err != nil || !strings.Contains(out, "s3-eth1") {
		t.Errorf("s1 does not see s3-eth1: %q %v", out, err)
	}
	if err := net.DeleteNode(ctx, "s3"); err != nil {
		t.Fatal(err)
	}
	if out, _ := s1.Cmd(ctx, "ip -o link show | grep -c s3-"); strings.TrimSpace(out) != "0" {
		t.Errorf("s3's ports outlive it: %q", out)
	}
	if loss, err := net.Ping(ctx, []string{"h1", "h2"}, time.Second); err != nil || loss != 0 {
		t.Fatalf("after deleting s3: loss %v%%, %v", loss, err)
	}
	if err := net.Stop(); err != nil {
		t.Fatal(err)
	}
	if left, _ := owner.Namespaces(net.run); len(left) != 0 {
		t.Errorf("after Stop: %v", left)
	}

	// Two switches with a port named p1 each: one namespace per switch.
	top := topo.New()
	s1n, s2n := top.AddSwitch("s1"), top.AddSwitch("s2")
	top.AddLink(top.AddHost("h1"), s1n, topo.Params{"intfName2": "p1"})
	top.AddLink(top.AddHost("h2"), s2n, topo.Params{"intfName2": "p1"})
	top.AddLink(s1n, s2n)
	apart := startNet(t, top, Options{Switch: SwitchBPF})
	a, _ := apart.NsNode("s1")
	b, _ := apart.NsNode("s2")
	if a.Namespace() == b.Namespace() || a.SharesNamespace() {
		t.Errorf("s1 in %s, s2 in %s: ports named alike must not share a namespace", a.Namespace(), b.Namespace())
	}
	if loss, err := apart.PingAll(ctx, 0); err != nil || loss != 0 {
		t.Fatalf("PingAll with a namespace per switch = %v%%, %v", loss, err)
	}
}

// What a BPF switch cannot do is refused before anything is built.
func TestBPFSwitchRefusals(t *testing.T) {
	for _, c := range []struct {
		spec string
		opts Options
	}{
		{"single,2", Options{Switch: SwitchBPF, STP: true}},
		{"torus,3,3", Options{Switch: SwitchBPF}},
	} {
		_, err := New(mustTopo(t, c.spec), c.opts)
		if err == nil || !strings.Contains(err.Error(), "STP needs --switch lxbr or ovsbr") {
			t.Errorf("%s %+v: %v", c.spec, c.opts, err)
		}
	}
	if _, err := New(mustTopo(t, "single,1025"), Options{Switch: SwitchBPF}); err == nil || !strings.Contains(err.Error(), "at most 1024 ports") {
		t.Errorf("single,1025: %v", err)
	}
	// A switch added live with stp=1 is refused before its namespace is
	// made, and the plan forgets it.
	testenv.Root(t)
	net := bpfNet(t, "single,2")
	err := net.AddNode(context.Background(), "s9", topo.KindSwitch, topo.Params{"stp": "1"})
	if err == nil || !strings.Contains(err.Error(), "STP needs --switch lxbr or ovsbr") {
		t.Errorf("AddNode(s9, stp=1): %v", err)
	}
	if _, err := net.Node("s9"); err == nil {
		t.Error("s9 exists after its refusal")
	}
	if _, err := os.Stat("/run/netns/" + owner.NamespaceName(net.run, "s9")); err == nil {
		t.Error("s9's namespace was made")
	}
	if k, err := ParseSwitchKind("bpf"); err != nil || k != SwitchBPF {
		t.Errorf("ParseSwitchKind(bpf) = %v, %v", k, err)
	}
}
