package nodes

import (
	"fmt"
	"os/exec"

	"github.com/vishvananda/netlink"
)

// makeBridge creates the switch's bridge, named like the switch (as
// Mininet's LinuxBridge does), inside the switch's namespace.
func (n *NsNode) makeBridge(stp bool) error {
	if err := n.Netlink(func(h *netlink.Handle) error {
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: n.name}}
		if err := h.LinkAdd(br); err != nil {
			return fmt.Errorf("creating bridge: %w", err)
		}
		return h.LinkSetUp(br)
	}); err != nil {
		return err
	}
	if !stp {
		return nil
	}
	// The netlink library has no STP attribute; ip(8) sets IFLA_BR_STP_STATE.
	// The shortest legal forward delay (2 s) keeps convergence quick.
	out, err := exec.Command("ip", "-n", n.Namespace(), "link", "set", n.name, "type", "bridge",
		"stp_state", "1", "forward_delay", "200", "hello_time", "100").CombinedOutput()
	if err != nil {
		return fmt.Errorf("enabling STP: %v: %s", err, out)
	}
	return nil
}

// AttachPort makes an interface of the switch a port of its bridge and
// brings it up.
func (n *NsNode) AttachPort(intf string) error {
	if n.bpf != nil {
		return n.attachBPFPort(intf)
	}
	if n.ovsNet != nil {
		return n.attachPortUp(intf)
	}
	if n.ovs != nil {
		if err := n.ovs.vsctl("add-port", n.name, intf); err != nil {
			return err
		}
		n.ovs.enlargeBuffers()
	}
	return n.Netlink(func(h *netlink.Handle) error {
		link, err := h.LinkByName(intf)
		if err != nil {
			return err
		}
		if n.ovs == nil {
			br, err := h.LinkByName(n.name)
			if err != nil {
				return err
			}
			if err := h.LinkSetMaster(link, br); err != nil {
				return fmt.Errorf("adding %s to bridge %s: %w", intf, n.name, err)
			}
		}
		return h.LinkSetUp(link)
	})
}
