package hymn

import (
	"errors"
	"fmt"
	"slices"

	"github.com/hymn-net/hymn/bpfswitch"
	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
)

// isBPF reports whether a planned node is a BPF switch (--switch bpf).
func (n *Network) isBPF(p *topo.PlannedNode) bool {
	return p.IsSwitch() && n.opts.Switch == SwitchBPF
}

// checkBPFSwitches refuses, before anything is built, what BPF switches
// cannot do: STP (a torus needs it) and more than bpfswitch.MaxPorts ports.
func (n *Network) checkBPFSwitches() error {
	if n.opts.Switch != SwitchBPF {
		return nil
	}
	var errs []error
	for _, p := range n.Plan().Switches() {
		if n.stp(p) {
			errs = append(errs, fmt.Errorf("switch %s: %w", p.Name, nodes.ErrBPFSTP))
		}
		if len(p.Intfs) > bpfswitch.MaxPorts {
			errs = append(errs, fmt.Errorf("switch %s has %d ports: %w; use --switch lxbr", p.Name, len(p.Intfs), bpfswitch.ErrTooManyPorts))
		}
	}
	return errors.Join(errs...)
}

// switchNamespaceNode is the node-name part of the namespace the BPF
// switches share ('@' is not allowed in node names, so it names no node).
const switchNamespaceNode = "@switches"

// sharedSwitchNamespace reports whether the BPF switches will share one
// namespace: there are some, and every switch port name is unique among
// all the switches (Mininet's are, all being in the root namespace). A
// topology file that gives two switches' ports the same name gets a
// namespace per switch instead; dup names one such port.
func (n *Network) sharedSwitchNamespace() (ok bool, dup string) {
	if n.opts.Switch != SwitchBPF {
		return false, ""
	}
	var ports []string
	for _, p := range n.Plan().Switches() {
		for _, i := range p.Intfs {
			ports = append(ports, i.Name)
		}
	}
	if len(ports) == 0 {
		return false, ""
	}
	slices.Sort(ports)
	for i := 1; i < len(ports); i++ {
		if ports[i] == ports[i-1] {
			return false, ports[i]
		}
	}
	return true, ""
}

// buildSwitchNamespace makes the namespace the BPF switches share, before
// the switches, where they share one (sharedSwitchNamespace).
func (n *Network) buildSwitchNamespace() error {
	ok, dup := n.sharedSwitchNamespace()
	if dup != "" {
		n.debugf("*** two switch ports are named %s: every BPF switch gets a namespace of its own\n", dup)
	}
	if !ok {
		return nil
	}
	ns, err := nodes.NewSwitchNamespace(n.namespaceOf(switchNamespaceNode))
	if err != nil {
		return fmt.Errorf("switch namespace: %w", err)
	}
	n.debugf("*** BPF switches share namespace %s\n", ns.Namespace())
	n.switchNS = ns
	return nil
}

// deleteSwitchNamespace removes the BPF switches' shared namespace after
// the switches were deleted (which only closed their handles on it). With
// it go all their ports, in one batch of the kernel's.
func (n *Network) deleteSwitchNamespace() error {
	if n.switchNS == nil {
		return nil
	}
	n.debugf("*** ip netns del %s\n", n.switchNS.Namespace())
	err := n.switchNS.Delete()
	n.switchNS = nil
	return err
}

// detachFromSwitches takes a removed link's switch ends out of their BPF
// switches (a bridge's port leaves with its device).
func (n *Network) detachFromSwitches(l *topo.PlannedLink) error {
	var errs []error
	for _, i := range []*topo.Intf{l.Intf1, l.Intf2} {
		if sw := n.switchNode(i.Node); sw != nil {
			errs = append(errs, sw.DetachPort(i.Name))
		}
	}
	return errors.Join(errs...)
}
