package hymn

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/topo"
)

// pingLoss pings between two hosts once each way and returns the loss.
func pingLoss(t *testing.T, n *Network, a, b string) float64 {
	t.Helper()
	loss, err := n.Ping(context.Background(), []string{a, b}, time.Second)
	if err != nil {
		t.Fatalf("ping %s %s: %v", a, b, err)
	}
	return loss
}

// hasIntf reports whether a node's namespace holds an interface.
func hasIntf(t *testing.T, n *Network, node, intf string) bool {
	t.Helper()
	nd, err := n.Node(node)
	if err != nil {
		t.Fatal(err)
	}
	out, err := nd.Cmd(context.Background(), "ip -o link show")
	if err != nil {
		t.Fatalf("%s: ip link: %v", node, err)
	}
	return strings.Contains(out, " "+intf+":") || strings.Contains(out, " "+intf+"@")
}

// TestDeleteLive is Mininet's net.delLink and net.delHost on a running
// network, for each switch kind that runs here without OVS: the link's
// ends leave their namespaces and the switch, a deleted host's namespace
// goes, and links and hosts added afterwards take the freed ports and
// work.
func TestDeleteLive(t *testing.T) {
	testenv.Root(t)
	for _, kind := range []SwitchKind{SwitchLinuxBridge, SwitchBPF} {
		t.Run(string(kind), func(t *testing.T) {
			ctx := context.Background()
			n := startNet(t, mustTopo(t, "linear,2"), Options{Switch: kind})
			if loss := pingLoss(t, n, "h1", "h2"); loss != 0 {
				t.Fatalf("h1 <-> h2 before: %v%% dropped", loss)
			}
			snapshot := n.Plan()
			if err := n.DeleteLink(ctx, "s1", "s2", ""); err != nil {
				t.Fatal(err)
			}
			// Plans are frozen: the one read before the change still has
			// the link and s1's port.
			if len(snapshot.Links) != 3 || len(snapshot.Node("s1").Intfs) != 2 {
				t.Errorf("the plan read before DeleteLink changed: %d links, s1 has %d interfaces; want 3 and 2", len(snapshot.Links), len(snapshot.Node("s1").Intfs))
			}
			if got := len(n.Plan().Node("s1").Intfs); got != 1 {
				t.Errorf("s1 has %d interfaces in the plan after DeleteLink, want 1", got)
			}
			if hasIntf(t, n, "s1", "s1-eth2") || hasIntf(t, n, "s2", "s2-eth2") {
				t.Error("the deleted link's interfaces are still there")
			}
			if len(n.Plan().Links) != 2 || len(n.Links()) != 2 {
				t.Errorf("%d planned links, %d listed after deleting one of 3", len(n.Plan().Links), len(n.Links()))
			}
			if loss := pingLoss(t, n, "h1", "h2"); loss != 100 {
				t.Errorf("h1 <-> h2 with s1-s2 deleted: %v%% dropped, want 100", loss)
			}
			if err := n.DeleteLink(ctx, "s1", "s2", ""); !errors.Is(err, ErrUnknownLink) {
				t.Errorf("deleting it twice: %v, want ErrUnknownLink", err)
			}
			pl, err := n.AddLink(ctx, "s1", "s2", nil)
			if err != nil {
				t.Fatal(err)
			}
			if pl.Intf1.Name != "s1-eth2" {
				t.Errorf("the link added again is on %s, want the freed s1-eth2", pl.Intf1.Name)
			}
			if loss := pingLoss(t, n, "h1", "h2"); loss != 0 {
				t.Errorf("h1 <-> h2 through the link added again: %v%% dropped", loss)
			}

			h2, _ := n.Node("h2")
			ns := h2.Namespace()
			if err := n.DeleteNode(ctx, "h2"); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join("/run/netns", ns)); !os.IsNotExist(err) {
				t.Errorf("h2's namespace %s is still there: %v", ns, err)
			}
			if _, err := n.Node("h2"); !errors.Is(err, ErrUnknownNode) {
				t.Errorf("Node(h2) after deleting it: %v", err)
			}
			if hasIntf(t, n, "s2", "s2-eth1") {
				t.Error("s2-eth1, h2's link, is still on s2")
			}
			if err := n.DeleteNode(ctx, "h2"); !errors.Is(err, ErrUnknownNode) {
				t.Errorf("deleting h2 twice: %v, want ErrUnknownNode", err)
			}
			// An emulated link, deleted with its host.
			if err := n.AddNode(ctx, "h3", topo.KindHost, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := n.AddLink(ctx, "h3", "s2", topo.Params{"delay": "1ms"}); err != nil {
				t.Fatal(err)
			}
			if loss := pingLoss(t, n, "h1", "h3"); loss != 0 {
				t.Errorf("h1 <-> h3, added after h2 was deleted: %v%% dropped", loss)
			}
			if len(n.EmulatedLinks()) != 1 {
				t.Fatalf("%d emulated links, want h3's", len(n.EmulatedLinks()))
			}
			if err := n.DeleteNode(ctx, "h3"); err != nil {
				t.Fatal(err)
			}
			if len(n.EmulatedLinks()) != 0 || len(n.Plan().Links) != 2 {
				t.Errorf("after deleting h3: %d emulated links, %d planned links", len(n.EmulatedLinks()), len(n.Plan().Links))
			}
			if err := n.DeleteNode(ctx, "s2"); err != nil {
				t.Fatal(err)
			}
			if hasIntf(t, n, "s1", "s1-eth2") {
				t.Error("s1-eth2, s2's link, is still on s1")
			}
			if got := len(n.Plan().Nodes); got != 2 {
				t.Errorf("%d nodes left, want h1 and s1", got)
			}
		})
	}
}

// TestDeleteLinkByIntf picks one of two parallel links by its interface.
func TestDeleteLinkByIntf(t *testing.T) {
	testenv.Root(t)
	top := topo.New()
	top.AddHost("h1")
	top.AddHost("h2")
	top.AddLink("h1", "h2", nil)
	top.AddLink("h1", "h2", nil)
	n := startNet(t, top, Options{})
	ctx := context.Background()
	if err := n.DeleteLink(ctx, "h1", "h2", "h1-eth9"); !errors.Is(err, ErrUnknownLink) {
		t.Errorf("an interface no link has: %v, want ErrUnknownLink", err)
	}
	if err := n.DeleteLink(ctx, "h1", "h2", "h1-eth1"); err != nil {
		t.Fatal(err)
	}
	if hasIntf(t, n, "h1", "h1-eth1") || !hasIntf(t, n, "h1", "h1-eth0") {
		t.Error("deleting h1-eth1's link: want h1-eth0 kept and h1-eth1 gone")
	}
	if loss := pingLoss(t, n, "h1", "h2"); loss != 0 {
		t.Errorf("h1 <-> h2 over the link left: %v%% dropped", loss)
	}
}

// TestDeleteSRIOVLinkLive: a VF pair deleted live goes back to the NIC,
// and the next link added takes a pair again.
func TestDeleteSRIOVLinkLive(t *testing.T) {
	testenv.Root(t)
	n := startSRIOVNet(t, mustTopo(t, "linear,2"), simSRIOV)
	ctx := context.Background()
	if err := n.DeleteLink(ctx, "s1", "s2", ""); err != nil {
		t.Fatal(err)
	}
	if hasIntf(t, n, "s1", "s1-eth2") {
		t.Error("s1-eth2, a VF of the deleted link, is still in s1")
	}
	if _, err := n.AddLink(ctx, "s1", "s2", nil); err != nil {
		t.Fatal(err)
	}
	// The first frames into the new switch port are sometimes lost: in
	// about 1 run in 50 beside scripts/stall-inject.py, s1's bridge drops
	// (br_handle_frame_finish, per perf's skb:kfree_skb) the ARP reply
	// that crosses the new VF pair within the first millisecond after
	// AddLink returns, although the port reads forwarding over netlink
	// before and after, and the request that crossed the other way was
	// forwarded. ARP retries after a second, which a one-packet ping with a
	// one-second timeout misses. Not root-caused (see issue 22's note); so
	// the link is judged once it has carried a ping, as Mininet users
	// judge a link they added.
	deadline := time.Now().Add(5 * time.Second)
	for pingLoss(t, n, "h1", "h2") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("h1 <-> h2 over a VF pair added after one was deleted: no ping through in 5 s")
		}
	}
	if loss := pingLoss(t, n, "h1", "h2"); loss != 0 {
		t.Errorf("h1 <-> h2 over a VF pair added after one was deleted, once it carried a ping: %v%% dropped", loss)
	}
}

// TestOpenFlowDeleteLive: a host deleted from an OpenFlow network leaves
// its switch's ports in OVS's database, a switch deleted leaves OVS.
func TestOpenFlowDeleteLive(t *testing.T) {
	sdnTools(t)
	n, _ := startSDN(t, "single,3", Options{}, topo.Params{"kind": "ovsc"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.DeleteNode(ctx, "h3"); err != nil {
		t.Fatal(err)
	}
	ports, err := n.OVS().Vsctl(ctx, "list-ports", "s1")
	if err != nil || strings.Contains(ports, "s1-eth3") || !strings.Contains(ports, "s1-eth2") {
		t.Errorf("s1's ports after deleting h3: %q, %v", ports, err)
	}
	if loss := pingLoss(t, n, "h1", "h2"); loss != 0 {
		t.Errorf("h1 <-> h2 after deleting h3: %v%% dropped", loss)
	}
	if err := n.DeleteNode(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if out, _ := n.OVS().Vsctl(ctx, "list-br"); strings.Contains(out, "s1") {
		t.Errorf("s1 is still a bridge after deleting it: %q", out)
	}
}

// TestDeleteVMLinkLive: a VM's link deleted live leaves the guest (its
// NIC is unplugged), and a link added afterwards under the same name is
// hot-plugged again and carries pings.
func TestDeleteVMLinkLive(t *testing.T) {
	n := startNet(t, vmAndNamespaceHost(t, nil), Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := n.DeleteLink(ctx, "h1", "s1", ""); err != nil {
		t.Fatal(err)
	}
	// The guest sees its NIC go once it has acted on the unplug request.
	deadline := time.Now().Add(30 * time.Second)
	for hasIntf(t, n, "h1", "h1-eth0") {
		if time.Now().After(deadline) {
			t.Fatal("h1-eth0 is still in the guest 30 s after its link was deleted")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := n.AddLink(ctx, "h1", "s1", nil); err != nil {
		t.Fatal(err)
	}
	if loss := pingLoss(t, n, "h1", "h2"); loss != 0 {
		t.Errorf("h1 (VM) <-> h2 over the link added again: %v%% dropped", loss)
	}
}

// TestEmulatedLinksComeAndGo: the emulator ports of links made while the
// network runs get names no other link has. Two emulated links added live,
// and an emulator inserted into a link behind a deleted one, once took
// the names of another link's ports ("file exists").
func TestEmulatedLinksComeAndGo(t *testing.T) {
	testenv.Root(t)
	ctx := context.Background()
	top := topo.New()
	s1 := top.AddSwitch("s1")
	top.AddLink(top.AddHost("h1"), s1)
	top.AddLink(top.AddHost("h2"), s1, topo.Params{"delay": "1ms"})
	top.AddLink(top.AddHost("h3"), s1)
	n := startNet(t, top, Options{})
	if err := n.DeleteLink(ctx, "h1", "s1", ""); err != nil {
		t.Fatal(err)
	}
	// h3-s1 is now where h2-s1, emulated, was in the list.
	if err := n.SetLinkParams("h3", "s1", BothDirections, "delay 1ms"); err != nil {
		t.Fatalf("inserting an emulator into h3-s1 after h1-s1 was deleted: %v", err)
	}
	for _, h := range []string{"h4", "h5"} {
		if err := n.AddNode(ctx, h, topo.KindHost, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := n.AddLink(ctx, h, "s1", topo.Params{"delay": "1ms"}); err != nil {
			t.Fatalf("adding %s-s1 with delay=1ms live: %v", h, err)
		}
	}
	if got := len(n.EmulatedLinks()); got != 4 {
		t.Errorf("%d emulated links, want 4 (h2, h3, h4, h5)", got)
	}
	for _, pair := range [][2]string{{"h2", "h3"}, {"h4", "h5"}, {"h2", "h5"}} {
		if loss := pingLoss(t, n, pair[0], pair[1]); loss != 0 {
			t.Errorf("%s <-> %s: %v%% dropped", pair[0], pair[1], loss)
		}
	}
}
