package nodes

import (
	"fmt"
	"os/exec"

	"github.com/vishvananda/netlink"
)

// linuxBridge is the default switch kind: a Linux bridge named like the
// switch (as Mininet's LinuxBridge) inside the switch's namespace.
type linuxBridge struct{}

// newLinuxBridgePlane creates the switch's bridge, with the kernel's
// spanning tree when cfg.STP.
func newLinuxBridgePlane(n *NsNode, cfg Config) (switchPlane, error) {
	if err := n.Netlink(func(h *netlink.Handle) error {
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: n.name}}
		if err := h.LinkAdd(br); err != nil {
			return fmt.Errorf("creating bridge: %w", err)
		}
		return h.LinkSetUp(br)
	}); err != nil {
		return nil, err
	}
	if !cfg.STP {
		return linuxBridge{}, nil
	}
	// The netlink library has no STP attribute; ip(8) sets IFLA_BR_STP_STATE.
	// The shortest legal forward delay (2 s) keeps convergence quick.
	out, err := exec.Command("ip", "-n", n.Namespace(), "link", "set", n.name, "type", "bridge",
		"stp_state", "1", "forward_delay", "200", "hello_time", "100").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("enabling STP: %v: %s", err, out)
	}
	return linuxBridge{}, nil
}

func (linuxBridge) attach(n *NsNode, intf string) error {
	return n.Netlink(func(h *netlink.Handle) error {
		link, err := h.LinkByName(intf)
		if err != nil {
			return err
		}
		br, err := h.LinkByName(n.name)
		if err != nil {
			return err
		}
		if err := h.LinkSetMaster(link, br); err != nil {
			return fmt.Errorf("adding %s to bridge %s: %w", intf, n.name, err)
		}
		return h.LinkSetUp(link)
	})
}

// detach: a bridge's port leaves with its device.
func (linuxBridge) detach(*NsNode, string) error { return nil }
func (linuxBridge) ovsEnv() []string             { return nil }
func (linuxBridge) close() error                 { return nil }
func (linuxBridge) release()                     {}
func (linuxBridge) sharesNamespace() bool        { return false }
