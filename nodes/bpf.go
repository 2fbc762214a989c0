package nodes

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/hymn-net/hymn/bpfswitch"
	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/vishvananda/netlink"
)

// bpfPlane is a BPF switch (package bpfswitch): no bridge device, a
// MAC-learning program on each port's tc ingress instead. shared: the
// switch lives in the network's switch namespace with the others.
type bpfPlane struct {
	sw     *bpfswitch.Switch
	shared bool
}

// newBPFPlane makes the switch a BPF switch. In a namespace of its own
// the stack is first put out of the way (quietSwitchStack); a shared
// namespace was made quiet once, by NewSwitchNamespace.
func newBPFPlane(n *NsNode, cfg Config) (switchPlane, error) {
	if !cfg.Shared {
		if err := quietSwitchStack(n.Named); err != nil {
			return nil, err
		}
	}
	sw, err := bpfswitch.NewDeferred(cfg.Name, cfg.Ports) // made at its first port: a descriptor held by each switch until then would not fit

	if err != nil {
		return nil, err
	}
	return &bpfPlane{sw: sw, shared: cfg.Shared}, nil
}

// quietSwitchStack keeps a BPF switch's namespace stack out of the way:
// without IPv6 its ports send nothing of their own (no router
// solicitations, no MLD reports), and without addresses they answer
// nothing.
func quietSwitchStack(ns *netnsx.Named) error {
	for _, key := range []string{"net/ipv6/conf/default/disable_ipv6", "net/ipv6/conf/all/disable_ipv6"} {
		if err := ns.Sysctl(key, "1"); err != nil && !errors.Is(err, fs.ErrNotExist) { // a kernel without IPv6
			return fmt.Errorf("disabling IPv6: %w", err)
		}
	}
	return nil
}

// NewSwitchNamespace creates the namespace that all BPF switches of a
// network share (Config.Shared), with its stack made quiet as a BPF
// switch's own would be. Mininet's switches all live in the root
// namespace; one namespace for all of them is as close as hymn gets
// without touching the machine's, and it is one namespace to create and
// free instead of one per switch. The caller deletes it (Named.Delete)
// after the switches. On failure nothing is left behind.
func NewSwitchNamespace(name string) (*netnsx.Named, error) {
	named, err := netnsx.CreateNamed(name)
	if err != nil {
		return nil, err
	}
	if err := quietSwitchStack(named); err != nil {
		return nil, errors.Join(err, named.Delete())
	}
	return named, nil
}

// attach puts the switch's program on the port, then sets it up (frames
// that arrive before would reach the namespace's stack).
func (b *bpfPlane) attach(n *NsNode, intf string) error {
	// The verifier's work first, outside the netlink lock that the
	// switches sharing a namespace share.
	if err := b.sw.Load(); err != nil {
		return err
	}
	return n.Netlink(func(h *netlink.Handle) error {
		if err := b.sw.Attach(h, intf); err != nil {
			return err
		}
		// Attach looked the port up: its index is in the port list, and
		// a second lookup would be one more RTNL round trip per port.
		for _, p := range b.sw.Ports() {
			if p.Name == intf {
				return h.LinkSetUp(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: p.Ifindex, Name: intf}})
			}
		}
		return fmt.Errorf("port %s: attached but not in the switch's port list", intf)
	})
}

func (b *bpfPlane) detach(n *NsNode, intf string) error {
	return n.Netlink(func(h *netlink.Handle) error { return b.sw.Detach(h, intf) })
}

func (b *bpfPlane) ovsEnv() []string      { return nil }
func (b *bpfPlane) close() error          { return b.sw.Close() }
func (b *bpfPlane) release()              {}
func (b *bpfPlane) sharesNamespace() bool { return b.shared }

// BPFSwitch returns the switch's BPF switch, or nil for any other node.
func (n *NsNode) BPFSwitch() *bpfswitch.Switch {
	if b, ok := n.plane.(*bpfPlane); ok {
		return b.sw
	}
	return nil
}
