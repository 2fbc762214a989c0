package hymn

import (
	"context"
	"errors"
	"fmt"

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
	p, err := n.plan.AddNode(name, kind, params)
	if err != nil {
		return err
	}
	// The node Build would have made: a VM host under --nodes vm, an
	// OpenFlow switch under --switch ovsk (started at once, as Build
	// starts its switches), a BPF switch under --switch bpf.
	node, err := n.newNode(ctx, p)
	if err == nil && p.IsSwitch() && n.OVS() != nil {
		err = n.sdn.ovs.StartBridges(ctx, []*nodes.OVSBridge{n.bridgeOf(p)})
	}
	if err != nil {
		n.plan.RemoveLastNode()
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
	if err := checkLiveLink(node1, node2, params); err != nil { // validate.go
		return nil, err
	}
	pl, err := n.plan.AddLink(node1, node2, params)
	if err != nil {
		return nil, err
	}
	if err := n.checkLinkPorts([]*topo.PlannedLink{pl}); err != nil {
		n.plan.RemoveLastLink()
		return nil, err
	}
	l := &netLink{plan: pl}
	if err := n.createLink(ctx, l); err != nil {
		n.plan.RemoveLastLink()
		if l.impl != nil {
			err = errors.Join(err, l.impl.delete(), n.detachFromSwitches(pl))
		}
		return nil, fmt.Errorf("adding link %s: %w", pl, err)
	}
	n.links = append(n.links, l)
	return pl, nil
}
