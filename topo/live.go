package topo

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
)

// A resolved Plan is never changed. A change to a running network
// (Mininet's addHost, addLink, delLink, delHost) resolves into a new plan
// that shares every node and link the change does not touch: whoever holds
// the old plan (a snapshot the live view is drawing, a shell completing a
// name) keeps a consistent one, and a change that fails to deploy is
// dropped rather than undone.

// clone returns a copy of p whose lists and index can change without
// touching p; the nodes and links are shared.
func (p *Plan) clone() *Plan {
	q := *p
	q.Nodes = slices.Clone(p.Nodes)
	q.Links = slices.Clone(p.Links)
	q.index = maps.Clone(p.index)
	return &q
}

// setIntfs replaces a node of q (shared with the plan q was cloned from)
// by a copy with the given interfaces.
func (q *Plan) setIntfs(old *PlannedNode, intfs []*Intf) {
	cp := *old
	cp.Intfs = intfs
	q.Nodes[slices.Index(q.Nodes, old)] = &cp
	q.index[cp.Name] = &cp
}

// WithNode returns the plan with one more node, resolved as Resolve
// resolves a node: a host takes the plan's next address (and under --mac
// the next MAC), its own ip= and mac= parameters win.
func (p *Plan) WithNode(name string, kind Kind, params Params) (*Plan, *PlannedNode, error) {
	if err := checkNodeName(name); err != nil {
		return nil, nil, err
	}
	if p.index[name] != nil {
		return nil, nil, fmt.Errorf("%w: %q already exists", ErrDuplicateNode, name)
	}
	n := &Node{Name: name, Kind: kind, Params: params.Clone()}
	if n.Params == nil {
		n.Params = Params{}
	}
	if err := checkNodeParams(n); err != nil {
		return nil, nil, err
	}
	q := p.clone()
	pn := &PlannedNode{Node: *n}
	if n.IsSwitch() {
		if err := checkDPID(n); err != nil {
			return nil, nil, err
		}
	} else {
		if q.nextIP >= uint64(1)<<(32-q.base.Bits())-1 {
			return nil, nil, fmt.Errorf("ipbase %s has no room for host %s", q.base, name)
		}
		ip, err := hostIP(n, netip.PrefixFrom(uintToIP(ipToUint(q.base.Masked().Addr())|uint32(q.nextIP)), q.base.Bits()))
		if err != nil {
			return nil, nil, err
		}
		mac, err := hostMAC(n, q.autoMAC, q.nextIP)
		if err != nil {
			return nil, nil, err
		}
		pn.IP, pn.MAC = ip, mac
		q.nextIP++
	}
	q.Nodes = append(q.Nodes, pn)
	q.index[name] = pn
	return q, pn, nil
}

// WithLink returns the plan with one more link between two of its nodes,
// on their next free ports (or the interfaces intfName1/intfName2 name). A
// host's first interface gets the host's address; ip1/ip2 and mac1/mac2
// win, and an address already used in the segment is refused, as Resolve
// refuses it.
func (p *Plan) WithLink(node1, node2 string, params Params) (*Plan, *PlannedLink, error) {
	n1, n2 := p.index[node1], p.index[node2]
	for name, n := range map[string]*PlannedNode{node1: n1, node2: n2} {
		if n == nil {
			return nil, nil, fmt.Errorf("link %s<->%s: %w %q", node1, node2, ErrUnknownNode, name)
		}
	}
	if node1 == node2 {
		return nil, nil, fmt.Errorf("link %s<->%s: a node cannot be linked to itself", node1, node2)
	}
	if err := CheckLinkParams(params); err != nil {
		return nil, nil, fmt.Errorf("link %s<->%s: %w", node1, node2, err)
	}
	nextPort := func(n *PlannedNode) int {
		port := n.PortBase()
		for _, i := range n.Intfs {
			port = max(port, i.Port+1)
		}
		return port
	}
	i1, err1 := newIntf(node1, nextPort(n1), params["intfName1"])
	i2, err2 := newIntf(node2, nextPort(n2), params["intfName2"])
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, err
	}
	ends := []struct {
		n *PlannedNode
		i *Intf
	}{{n1, i1}, {n2, i2}}
	for _, e := range ends {
		for _, have := range e.n.Intfs {
			if have.Name == e.i.Name {
				return nil, nil, fmt.Errorf("link %s<->%s: %s has an interface %s already", node1, node2, e.n.Name, have.Name)
			}
		}
	}
	l := &PlannedLink{Intf1: i1, Intf2: i2, Params: params.Clone()}
	if l.Params == nil {
		l.Params = Params{}
	}
	i1.Link, i2.Link = l, l
	q := p.clone()
	for _, e := range ends {
		if len(e.n.Intfs) == 0 && !e.n.IsSwitch() {
			e.i.IP, e.i.MAC = e.n.IP, e.n.MAC
		}
		q.setIntfs(e.n, append(slices.Clone(e.n.Intfs), e.i))
	}
	if err := errors.Join(l.applyAddresses()...); err != nil {
		return nil, nil, err
	}
	q.Links = append(q.Links, l)
	if err := errors.Join(q.checkDuplicateAddresses()...); err != nil {
		return nil, nil, err
	}
	return q, l, nil
}

// WithoutLink returns the plan without a link and its two interfaces. The
// nodes keep their addresses.
func (p *Plan) WithoutLink(l *PlannedLink) (*Plan, error) {
	k := slices.Index(p.Links, l)
	if k < 0 {
		return nil, fmt.Errorf("link %s is not in the plan", l)
	}
	q := p.clone()
	for _, i := range []*Intf{l.Intf1, l.Intf2} {
		if n := q.index[i.Node]; n != nil {
			q.setIntfs(n, slices.DeleteFunc(slices.Clone(n.Intfs), func(x *Intf) bool { return x == i }))
		}
	}
	q.Links = slices.Delete(q.Links, k, k+1)
	return q, nil
}

// WithoutNode returns the plan without a node that has no links (remove
// its links first). Its address is not given to a later node.
func (p *Plan) WithoutNode(name string) (*Plan, error) {
	n := p.index[name]
	if n == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownNode, name)
	}
	if len(n.Intfs) > 0 {
		return nil, fmt.Errorf("node %s still has %d links", name, len(n.Intfs))
	}
	q := p.clone()
	q.Nodes = slices.DeleteFunc(q.Nodes, func(x *PlannedNode) bool { return x == n })
	delete(q.index, name)
	return q, nil
}
