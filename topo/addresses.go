package topo

import (
	"fmt"
	"net/netip"
	"strings"
)

// checkDuplicateAddresses finds interfaces with the same address in one
// layer-2 segment (ends joined by links and switches, up to the first host
// or router) or on one node, and names both places. The same address in
// two segments a router separates is allowed: sites behind NATs reuse
// addresses, and each segment is consistent on its own.
func (p *Plan) checkDuplicateAddresses() []error {
	segments := unionFind{}
	for _, l := range p.Links {
		segments.join(l.Intf1, l.Intf2)
	}
	for _, n := range p.Nodes {
		if n.IsSwitch() && len(n.Intfs) > 1 { // a switch may have no links
			for _, i := range n.Intfs[1:] {
				segments.join(n.Intfs[0], i)
			}
		}
	}
	type key struct {
		scope any // the segment's root *Intf, or the node's name
		addr  netip.Addr
	}
	seen := map[key]*Intf{}
	var errs []error
	for _, n := range p.Nodes {
		if n.IsSwitch() {
			continue
		}
		for _, i := range n.Intfs {
			if !i.IP.IsValid() {
				continue
			}
			for _, k := range []key{{segments.root(i), i.IP.Addr()}, {n.Name, i.IP.Addr()}} {
				if prev, dup := seen[k]; dup {
					where := "in one subnet"
					if _, sameNode := k.scope.(string); sameNode {
						where = "on node " + n.Name
					}
					errs = append(errs, fmt.Errorf("%w %s %s: %s and %s", ErrDuplicateAddress, i.IP.Addr(), where, p.addressPlace(prev), p.addressPlace(i)))
					break
				}
				seen[k] = i
			}
		}
	}
	return errs
}

// addressPlace says where an interface's address was given: on its link
// (ip1/ip2) or its node (ip, or the automatic plan), with the file and
// line when the topology came from a file.
func (p *Plan) addressPlace(i *Intf) string {
	n := p.Node(i.Node)
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s %s", i.Name, n.Kind, n.Name)
	origin := n.Origin
	_, ownIP := n.Params["ip"]
	onLink := false
	if i.Link != nil {
		end := "1"
		if i == i.Link.Intf2 {
			end = "2"
		}
		if _, onLink = i.Link.Params["ip"+end]; onLink {
			fmt.Fprintf(&b, ", ip%s of link %s", end, i.Link)
			origin = i.Link.Origin
		}
	}
	if !ownIP && !onLink && i == n.DefaultIntf() {
		b.WriteString(", automatic address")
	}
	if origin != "" {
		b.WriteString(", " + origin)
	}
	b.WriteString(")")
	return b.String()
}

// unionFind groups interfaces into segments.
type unionFind map[*Intf]*Intf

func (u unionFind) root(i *Intf) *Intf {
	for {
		parent, ok := u[i]
		if !ok || parent == i {
			return i
		}
		if grand, ok := u[parent]; ok {
			u[i] = grand // path halving
		}
		i = parent
	}
}

func (u unionFind) join(a, b *Intf) {
	ra, rb := u.root(a), u.root(b)
	if ra != rb {
		u[ra] = rb
	}
}
