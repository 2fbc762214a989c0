package hymn

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
)

// AddNode adds a node to a running network, as Mininet's net.addHost and
// net.addSwitch do: a host takes the next address of the plan. It has no
// links until AddLink.
func (n *Network) AddNode(ctx context.Context, name string, kind topo.Kind, params topo.Params) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.built || n.stopped {
		return ErrNotBuilt
	}
	before := n.Plan()
	plan, p, err := before.WithNode(name, kind, params)
	if err != nil {
		return err
	}
	if err := n.resolveNodes([]*topo.PlannedNode{p}); err != nil { // node.go
		return err
	}
	// The new plan is published before the node is made: what builds it
	// reads the plan as Build does. A node that fails puts the plan it
	// replaced back; nothing is undone in place (topo/live.go).
	n.plan.Store(plan)
	// The node Build would have made: a VM host under --nodes vm, an
	// OpenFlow switch under --switch ovsk (started at once, as Build
	// starts its switches), a BPF switch under --switch bpf.
	node, err := n.newNode(ctx, p)
	if err == nil && p.IsSwitch() && n.OVS() != nil {
		err = n.sdn.ovs.StartBridges(ctx, []*nodes.OVSBridge{n.bridgeOf(p)})
	}
	if err != nil {
		n.plan.Store(before)
		n.backends.Delete(name)
		if node != nil {
			err = errors.Join(err, node.Delete())
		}
		return err
	}
	n.nodes[name] = node
	return nil
}

// AddLink links two nodes of a running network on their next free ports.
// ctx bounds the wait for both ends to come up (at most a minute in any
// case); when it ends first, the link is removed again.
func (n *Network) AddLink(ctx context.Context, node1, node2 string, params topo.Params) (*topo.PlannedLink, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.built || n.stopped {
		return nil, ErrNotBuilt
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("adding link %s<->%s: %w", node1, node2, err)
	}
	emu, err := checkLiveLink(node1, node2, params) // validate.go
	if err != nil {
		return nil, err
	}
	before := n.Plan()
	plan, pl, err := before.WithLink(node1, node2, params)
	if err != nil {
		return nil, err
	}
	n.resolveLink(pl, emu)
	if err := errors.Join(n.checkLinkPorts([]*topo.PlannedLink{pl}), checkLinkKinds(plan.Links, []*topo.PlannedLink{pl})); err != nil {
		delete(n.resolved, pl)
		return nil, err
	}
	n.plan.Store(plan) // as in AddNode: published first, put back on failure
	l := &netLink{plan: pl, seq: n.nextSeq}
	n.nextSeq++ // a failed link's names are not given again either
	if err := n.createLink(ctx, l); err != nil {
		delete(n.resolved, pl)
		n.plan.Store(before)
		if l.impl != nil {
			err = errors.Join(err, l.impl.delete(), n.detachFromSwitches(pl))
		}
		return nil, fmt.Errorf("adding link %s: %w", pl, err)
	}
	n.links = append(n.links, l)
	return pl, nil
}

// DeleteLink removes the link between two nodes from a running network,
// as Mininet's net.delLinkBetween does: the first link between them, or
// the one whose end on node1 is the interface intf when intf is given.
// Its forwarder and schedules stop, its captures end, its ends leave
// their switches and guests, and its kernel objects (and VF pairs) go.
func (n *Network) DeleteLink(ctx context.Context, node1, node2, intf string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.built || n.stopped {
		return ErrNotBuilt
	}
	l, err := n.linkBetween(node1, node2, intf)
	if err != nil {
		return err
	}
	return n.deleteLink(ctx, l)
}

// linkBetween finds a link by its two nodes, and by node1's interface
// when intf is not empty.
func (n *Network) linkBetween(node1, node2, intf string) (*netLink, error) {
	if intf == "" {
		l, _, err := n.findLink(node1, node2)
		return l, err
	}
	for _, l := range n.links {
		for _, e := range [][2]*topo.Intf{{l.plan.Intf1, l.plan.Intf2}, {l.plan.Intf2, l.plan.Intf1}} {
			if e[0].Node == node1 && e[0].Name == intf && e[1].Node == node2 {
				return l, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: no link joins %s's %s to %s", ErrUnknownLink, node1, intf, node2)
}

// deleteLink removes one link; n.mu is held. Every step runs even when
// one fails, so a half-removed link leaves nothing behind that a later
// step could have removed.
func (n *Network) deleteLink(ctx context.Context, l *netLink) error {
	pl := l.plan
	var errs []error
	for _, c := range n.Captures() {
		if (c.Spec.Node1 == pl.Intf1.Node && c.Spec.Node2 == pl.Intf2.Node) || (c.Spec.Node1 == pl.Intf2.Node && c.Spec.Node2 == pl.Intf1.Node) {
			_, err := c.Stop()
			errs = append(errs, err)
		}
	}
	n.ForgetStoppedCaptures()
	if l.impl != nil {
		// stop ends the forwarder (and with it the link's schedules);
		// delete removes the kernel objects and gives back the VFs.
		errs = append(errs, l.impl.stop(), n.detachFromSwitches(pl))
		for _, i := range []*topo.Intf{pl.Intf1, pl.Intf2} {
			if g := n.guestOf(i); g != nil {
				errs = append(errs, g.DetachIntf(ctx, i.Name))
			}
		}
		errs = append(errs, l.impl.delete())
	}
	n.links = slices.DeleteFunc(n.links, func(x *netLink) bool { return x == l })
	delete(n.resolved, pl)
	if plan, err := n.Plan().WithoutLink(pl); err != nil {
		errs = append(errs, err)
	} else {
		n.plan.Store(plan)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("deleting link %s: %w", pl, err)
	}
	n.log().Debugf("*** deleted link %s\n", pl)
	return nil
}

// DeleteNode removes a node from a running network with all its links, as
// Mininet's net.delHost and net.delSwitch do: its namespace (or VM) goes,
// an OpenFlow switch leaves OVS, a CPU-limited host's cgroup is removed.
// The address it had is not given to a later node.
func (n *Network) DeleteNode(ctx context.Context, name string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.built || n.stopped {
		return ErrNotBuilt
	}
	p := n.Plan().Node(name)
	node, ok := n.nodes[name]
	if p == nil || !ok {
		return fmt.Errorf("%w: %s", ErrUnknownNode, name)
	}
	if p.Params[NATParam] == "1" {
		return fmt.Errorf("node %s is the network's NAT, which joins it to the root namespace: it goes with the network (Stop)", name)
	}
	var errs []error
	for _, l := range slices.Clone(n.links) {
		if l.plan.Intf1.Node == name || l.plan.Intf2.Node == name {
			errs = append(errs, n.deleteLink(ctx, l))
		}
	}
	if p.IsSwitch() && n.OVS() != nil {
		if n.sdn.ovs.Bridge(name) != nil {
			errs = append(errs, n.sdn.ovs.StopBridge(ctx, name))
		}
		n.sdn.ovs.Forget(name) // a stopped switch keeps its ports for its restart
	}
	errs = append(errs, node.Delete())
	delete(n.nodes, name)
	n.backends.Delete(name)
	if plan, err := n.Plan().WithoutNode(name); err != nil {
		errs = append(errs, err)
	} else {
		n.plan.Store(plan)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("deleting node %s: %w", name, err)
	}
	n.log().Debugf("*** deleted node %s\n", name)
	return nil
}
