package hymn

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/topo"
	"github.com/vishvananda/netlink"
)

// NATParam marks a node as the network's NAT node (mn --nat).
const NATParam = "nat"

// AddNAT adds Mininet's NAT node to a topology before it is built: nat0,
// linked to the first switch, with the next host address. hymn's NAT node
// lives in its own namespace like every other node, with a second
// interface toward the root namespace; it masquerades the hosts' traffic
// there, so hosts reach the machine's own addresses (and beyond, where the
// machine forwards). Every host gets it as its default route.
func AddNAT(t *topo.Topo, name string) error {
	if name == "" {
		name = "nat0"
	}
	switches := t.Switches()
	if len(switches) == 0 {
		return fmt.Errorf("--nat needs a switch to attach %s to", name)
	}
	t.AddNode(name, topo.KindRouter, topo.Params{NATParam: "1"})
	t.AddLink(name, switches[0].Name)
	return t.Err()
}

// rootLinkName is the root namespace's end of the NAT node's link: short
// (15 bytes at most) and carrying the run id, so hymn clean finds it.
func (n *Network) rootLinkName() string { return "hymn" + n.run + "nat" }

// natSubnet picks the /30 between the NAT node and the root namespace from
// 172.31.0.0/16, derived from the run id so concurrent runs differ.
func (n *Network) natSubnet() (root, nat netip.Prefix) {
	var b byte
	for _, c := range n.run {
		b = b*31 + byte(c)
	}
	base := netip.AddrFrom4([4]byte{172, 31, b, 0})
	return netip.PrefixFrom(base.Next(), 30), netip.PrefixFrom(base.Next().Next(), 30)
}

// setupNAT configures every NAT node of the plan after the links exist.
func (n *Network) setupNAT(ctx context.Context) error {
	for _, p := range n.plan.Nodes {
		if p.Params[NATParam] != "1" {
			continue
		}
		if err := n.configureNAT(ctx, p); err != nil {
			return fmt.Errorf("NAT node %s: %w", p.Name, err)
		}
	}
	return nil
}

func (n *Network) configureNAT(ctx context.Context, p *topo.PlannedNode) error {
	if err := CheckTools("iptables"); err != nil {
		return err
	}
	natNode := n.nodes[p.Name]
	rootIP, natIP := n.natSubnet()
	outName := fmt.Sprintf("%s-eth%d", p.Name, len(p.Intfs))
	root, err := links.HostNamespace()
	if err != nil {
		return err
	}
	// The pair is created from the NAT node's side, its peer placed in the
	// root namespace: it disappears with the NAT node's namespace.
	if _, err := links.CreateVeth(links.End{NS: natNode, Name: outName, IP: natIP},
		links.End{NS: root, Name: n.rootLinkName(), IP: rootIP}); err != nil {
		return err
	}
	run := func(args ...string) error {
		res, err := natNode.Exec(ctx, args[0], args[1:]...)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("%s: %s", strings.Join(args, " "), strings.TrimSpace(string(res.Stderr)))
		}
		return err
	}
	if err := run("iptables", "-t", "nat", "-A", "POSTROUTING", "-o", outName, "-j", "MASQUERADE"); err != nil {
		return err
	}
	if err := run("ip", "route", "replace", "default", "via", rootIP.Addr().String()); err != nil {
		return err
	}
	// Hosts leave the network through the NAT node.
	gw := p.IP.Addr().String()
	return forEach(ctx, n.opts.Workers, len(n.plan.Hosts()), func(i int) error {
		h := n.plan.Hosts()[i]
		if h.Name == p.Name || h.Params[NATParam] == "1" || h.Params["defaultRoute"] != "" || h.DefaultIntf() == nil {
			return nil
		}
		res, err := n.nodes[h.Name].Exec(ctx, "ip", "route", "replace", "default", "via", gw)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("host %s: default route via %s: %s", h.Name, gw, strings.TrimSpace(string(res.Stderr)))
		}
		return err
	})
}

// removeNATLink deletes the NAT link's root-namespace end. Deleting the NAT
// node's namespace would take it along, but only when the kernel gets to
// freeing that namespace, which can be after hymn has returned.
func (n *Network) removeNATLink() error {
	hasNAT := false
	for _, p := range n.plan.Nodes {
		hasNAT = hasNAT || p.Params[NATParam] == "1"
	}
	if !hasNAT {
		return nil
	}
	link, err := netlink.LinkByName(n.rootLinkName())
	if err != nil {
		return nil // no NAT node, or already gone
	}
	return netlink.LinkDel(link)
}
