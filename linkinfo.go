package hymn

import (
	"fmt"

	"github.com/hymn-net/hymn/emulator"
)

// LinkInfo says what a running link is made of, for front ends that draw
// the network (the live view, package ui).
type LinkInfo struct {
	Node1, Node2 string
	Intf1, Intf2 string
	// Kind is "veth", "emulated" (a veth link through hymn's emulator),
	// "vf" (an SR-IOV VF pair), "emulated-vf" or "existing" (interfaces
	// that existed before the network).
	Kind string
	// VLANs are the VLAN ids of a VF link's pairs (two when emulated).
	VLANs []int
}

// Links describes every link in creation order (the plan's order).
func (n *Network) Links() []LinkInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]LinkInfo, 0, len(n.links))
	for _, l := range n.links {
		li := LinkInfo{Node1: l.plan.Intf1.Node, Node2: l.plan.Intf2.Node, Intf1: l.plan.Intf1.Name, Intf2: l.plan.Intf2.Name}
		if l.impl != nil {
			l.impl.describe(&li)
		}
		out = append(out, li)
	}
	return out
}

// LinkDelayHistograms returns copies of the applied-delay histograms of
// the emulated link between two nodes, node1→node2 first.
func (n *Network) LinkDelayHistograms(node1, node2 string) (fwd, rev emulator.Histogram, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.built || n.stopped {
		return fwd, rev, ErrNotBuilt
	}
	l, isFwd, err := n.findLink(node1, node2)
	if err != nil {
		return fwd, rev, err
	}
	el := n.emulatedLink(l)
	if el == nil {
		return fwd, rev, fmt.Errorf("%w: %s-%s", ErrNoEmulator, node1, node2)
	}
	f, r := emulator.AtoB, emulator.BtoA
	if !isFwd {
		f, r = r, f
	}
	return el.Fwd.DelayHistogram(f), el.Fwd.DelayHistogram(r), nil
}

// NodeBackendOf says what runs a planned node: BackendNetns or BackendVM
// ("" for a name the plan does not have).
func (n *Network) NodeBackendOf(name string) NodeBackend {
	if b := n.backendOf(name); b != nil && n.Plan().Node(name) != nil {
		return b.name
	}
	return ""
}

// Running reports whether the network is built and not stopped.
func (n *Network) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.built && !n.stopped
}
