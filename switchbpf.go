package hymn

import (
	"errors"
	"fmt"

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
