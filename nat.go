package hymn

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/hymn-net/hymn/internal/owner"
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

// rootLinkName is the root namespace's end of the (first) NAT node's link,
// or "" before it exists. Interface names hold 15 bytes, too few for a
// 64-bit run id, so the name comes from the NAT slot the run holds
// (owner.AllocNAT: exclusive between runs) and the link's alias carries
// the run id, so hymn clean finds it either way.
func (n *Network) rootLinkName() string {
	slots := owner.NATSlotsOf(n.run)
	if len(slots) == 0 {
		return ""
	}
	return owner.NATLinkName(slots[0])
}

// natSubnet is the NAT subnet of the run's (first) NAT slot.
func (n *Network) natSubnet() (root, nat netip.Prefix) {
	slots := owner.NATSlotsOf(n.run)
	if len(slots) == 0 {
		return netip.Prefix{}, netip.Prefix{}
	}
	return natSubnet(slots[0])
}

// natSubnet is the /30 of 172.31.0.0/16 between a NAT node and the root
// namespace for a NAT slot; slots are allocated exclusively under
// /run/hymn/nat, so concurrent runs never share a subnet.
func natSubnet(slot int) (root, nat netip.Prefix) {
	base := netip.AddrFrom4([4]byte{172, 31, byte(slot >> 6), byte(slot&63) << 2})
	return netip.PrefixFrom(base.Next(), 30), netip.PrefixFrom(base.Next().Next(), 30)
}

// setupNAT configures every NAT node of the plan after the links exist.
func (n *Network) setupNAT(ctx context.Context) error {
	for _, p := range n.Plan().Nodes {
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
	slot, err := owner.AllocNAT(n.run)
	if err != nil {
		return err
	}
	rootIP, natIP := natSubnet(slot)
	outName := fmt.Sprintf("%s-eth%d", p.Name, len(p.Intfs))
	root, err := links.HostNamespace()
	if err != nil {
		return err
	}
	// The pair is created from the NAT node's side, its peer placed in the
	// root namespace: it disappears with the NAT node's namespace.
	rootName := owner.NATLinkName(slot)
	if _, err := links.CreateVeth(links.End{NS: natNode, Name: outName, IP: natIP},
		links.End{NS: root, Name: rootName, IP: rootIP}); err != nil {
		return err
	}
	if l, err := netlink.LinkByName(rootName); err != nil {
		return err
	} else if err := netlink.LinkSetAlias(l, owner.LinkAlias(n.run)); err != nil {
		return fmt.Errorf("marking %s as run %s's: %w", rootName, n.run, err)
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
	hosts := n.Plan().Hosts()
	return forEach(ctx, n.opts.Workers, len(hosts), func(ctx context.Context, i int) error {
		h := hosts[i]
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

// removeNATLink deletes the NAT links' root-namespace ends and frees the
// run's NAT slots. Deleting the NAT node's namespace would take a link
// along, but only when the kernel gets to freeing that namespace, which can
// be after hymn has returned.
func (n *Network) removeNATLink() error {
	var errs []error
	for _, slot := range owner.NATSlotsOf(n.run) {
		if link, err := netlink.LinkByName(owner.NATLinkName(slot)); err == nil && link.Attrs().Alias == owner.LinkAlias(n.run) {
			errs = append(errs, netlink.LinkDel(link))
		}
		errs = append(errs, owner.FreeNAT(n.run, slot))
	}
	return errors.Join(errs...)
}
