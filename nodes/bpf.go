package nodes

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/hymn-net/hymn/bpfswitch"
	"github.com/vishvananda/netlink"
)

// makeBPF makes the switch a BPF switch (package bpfswitch): no bridge
// device, a MAC-learning program on each port's tc ingress instead. The
// namespace's stack must stay out of the way: without IPv6 its ports send
// nothing of their own (no router solicitations, no MLD reports), and
// without addresses they answer nothing.
func (n *NsNode) makeBPF(cfg Config) error {
	for _, key := range []string{"net/ipv6/conf/default/disable_ipv6", "net/ipv6/conf/all/disable_ipv6"} {
		if err := n.Sysctl(key, "1"); err != nil && !errors.Is(err, fs.ErrNotExist) { // a kernel without IPv6
			return fmt.Errorf("disabling IPv6: %w", err)
		}
	}
	sw, err := bpfswitch.New(cfg.Name, cfg.Ports)
	if err != nil {
		return err
	}
	n.bpf = sw
	return nil
}

// attachBPFPort puts the switch's program on the port, then sets it up
// (frames that arrive before would reach the namespace's stack).
func (n *NsNode) attachBPFPort(intf string) error {
	return n.Netlink(func(h *netlink.Handle) error {
		if err := n.bpf.Attach(h, intf); err != nil {
			return err
		}
		// Attach looked the port up: its index is in the port list, and
		// a second lookup would be one more RTNL round trip per port.
		for _, p := range n.bpf.Ports() {
			if p.Name == intf {
				return h.LinkSetUp(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: p.Ifindex, Name: intf}})
			}
		}
		link, err := h.LinkByName(intf)
		if err != nil {
			return err
		}
		return h.LinkSetUp(link)
	})
}

// DetachPort takes an interface out of the switch: a BPF switch floods to
// it no more and forgets what it learned on it; an OVS bridge loses the
// port from its database (OVS would keep a port whose device is gone). A
// Linux bridge's port leaves with its device, so for a bridge it does
// nothing.
func (n *NsNode) DetachPort(intf string) error {
	switch {
	case n.bpf != nil:
		return n.Netlink(func(h *netlink.Handle) error { return n.bpf.Detach(h, intf) })
	case n.ovsNet != nil:
		return n.ovsNet.detach(n.name, intf)
	case n.ovs != nil:
		return n.ovs.vsctl("--if-exists", "del-port", n.name, intf)
	}
	return nil
}

// BPFSwitch returns the switch's BPF switch, or nil for any other node.
func (n *NsNode) BPFSwitch() *bpfswitch.Switch { return n.bpf }
