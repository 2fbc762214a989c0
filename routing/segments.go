package routing

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"slices"

	"github.com/hymn-net/hymn/topo"
)

// Segment is one broadcast domain: the host and router interfaces that
// links and switches join.
type Segment struct {
	// Ends are the host and router interfaces on the segment, routers
	// first, each group in natural order of node then interface name.
	Ends []*topo.Intf
	// Switched is true when a switch is part of the segment.
	Switched bool
}

// Segments returns the plan's segments, leaving out the links in down, in
// a fixed order (by their first end). A segment with fewer than two ends
// (a host on an empty switch) is still a segment.
func Segments(plan *topo.Plan, down map[*topo.PlannedLink]bool) []*Segment {
	parent := map[*topo.Intf]*topo.Intf{}
	var find func(i *topo.Intf) *topo.Intf
	find = func(i *topo.Intf) *topo.Intf {
		p, ok := parent[i]
		if !ok || p == i {
			return i
		}
		r := find(p)
		parent[i] = r
		return r
	}
	join := func(a, b *topo.Intf) {
		if ra, rb := find(a), find(b); ra != rb {
			parent[ra] = rb
		}
	}
	for _, l := range plan.Links {
		if !down[l] {
			join(l.Intf1, l.Intf2)
		}
	}
	for _, n := range plan.Nodes {
		if !n.IsSwitch() {
			continue
		}
		for _, i := range n.Intfs {
			join(n.Intfs[0], i)
		}
	}
	byRoot := map[*topo.Intf]*Segment{}
	var out []*Segment
	for _, n := range plan.Nodes {
		for _, i := range n.Intfs {
			r := find(i)
			s := byRoot[r]
			if s == nil {
				s = &Segment{}
				byRoot[r] = s
				out = append(out, s)
			}
			if n.IsSwitch() {
				s.Switched = true
				continue
			}
			s.Ends = append(s.Ends, i)
		}
	}
	kept := out[:0]
	for _, s := range out {
		if len(s.Ends) == 0 {
			continue // switches only
		}
		slices.SortStableFunc(s.Ends, func(a, b *topo.Intf) int { return compareEnds(plan, a, b) })
		kept = append(kept, s)
	}
	slices.SortStableFunc(kept, func(a, b *Segment) int { return compareEnds(plan, a.Ends[0], b.Ends[0]) })
	return kept
}

// compareEnds orders interfaces: routers before hosts, then natural order
// of node name and interface name.
func compareEnds(plan *topo.Plan, a, b *topo.Intf) int {
	ra, rb := plan.Node(a.Node).Kind == topo.KindRouter, plan.Node(b.Node).Kind == topo.KindRouter
	if ra != rb {
		if ra {
			return -1
		}
		return 1
	}
	if c := natural(a.Node, b.Node); c != 0 {
		return c
	}
	return natural(a.Name, b.Name)
}

func natural(a, b string) int {
	switch {
	case topo.NaturalLess(a, b):
		return -1
	case topo.NaturalLess(b, a):
		return 1
	}
	return 0
}

// Routed reports whether a segment has a router on it.
func (s *Segment) routed(plan *topo.Plan) bool {
	for _, i := range s.Ends {
		if plan.Node(i.Node).Kind == topo.KindRouter {
			return true
		}
	}
	return false
}

// pointToPoint reports whether a segment is one link between two routers.
func (s *Segment) pointToPoint(plan *topo.Plan) bool {
	return !s.Switched && len(s.Ends) == 2 && plan.Node(s.Ends[0].Node).Kind == topo.KindRouter &&
		plan.Node(s.Ends[1].Node).Kind == topo.KindRouter
}

// DefaultIPBase6 is the IPv6 base of a dual-stack network: a /48 of the
// unique local fd00::/8 space; segment k gets the /64 fd00:0:0:k::/64.
var DefaultIPBase6 = netip.MustParsePrefix("fd00::/48")

// AddressOptions choose a routed topology's addresses.
type AddressOptions struct {
	// IPBase is the IPv4 space the routed segments are numbered from
	// (mn's --ipbase, 10.0.0.0/8 when zero): LANs get /24s from its lower
	// half, links between two routers /30s from its upper half.
	IPBase netip.Prefix
	// Routed gives routed segments subnets of their own (routing is on).
	Routed bool
	// IPv6 gives every host and router interface an IPv6 address: one
	// /64 of IPBase6 per segment.
	IPv6    bool
	IPBase6 netip.Prefix // zero means DefaultIPBase6
}

// Address gives the plan's interfaces the addresses a routed and/or
// dual-stack network needs, in place (call it before the plan is used).
//
// IPv4, with Routed: every segment with a router whose interfaces all
// have automatic addresses (no ip= on its nodes, no ip1/ip2 on its links)
// gets a subnet: a link between two routers the next /30 of the base's
// upper half (ends .1 and .2, in link order); any other segment (a
// router's LAN) the next /24 of the lower half, from the second one on,
// numbered .1, .2... with routers first. A host's and a router's default
// address follows its first interface.
//
// IPv6: segment k (in Segments' order, from 0) gets the /64 k of the
// base; an interface's number in it is its IPv4 address's number in its
// own subnet (h3 at 10.0.0.3/8 is fd00::3/64), or its place on the
// segment when it has no IPv4 address.
func Address(plan *topo.Plan, opts AddressOptions) error {
	segs := Segments(plan, nil)
	if opts.Routed {
		if err := addressIPv4(plan, segs, opts.IPBase); err != nil {
			return err
		}
	}
	if opts.IPv6 {
		if err := addressIPv6(plan, segs, opts.IPBase6); err != nil {
			return err
		}
	}
	return nil
}

// explicit reports whether an interface's IPv4 address was given by the
// topology rather than chosen by the plan.
func explicit(plan *topo.Plan, i *topo.Intf) bool {
	n := plan.Node(i.Node)
	if _, ok := n.Params["ip"]; ok && i == n.DefaultIntf() {
		return true
	}
	if i.Link != nil {
		end := "1"
		if i == i.Link.Intf2 {
			end = "2"
		}
		if _, ok := i.Link.Params["ip"+end]; ok {
			return true
		}
	}
	return false
}

func addressIPv4(plan *topo.Plan, segs []*Segment, base netip.Prefix) error {
	if !base.IsValid() {
		base = topo.DefaultIPBase
	}
	base = base.Masked()
	if !base.Addr().Is4() || base.Bits() > 22 {
		return fmt.Errorf("ipbase %s: a routed topology needs an IPv4 base of /22 or larger (a /24 per LAN, a /30 per link between routers)", base)
	}
	half := base.Bits() + 1
	lans := netip.PrefixFrom(base.Addr(), half)
	links := netip.PrefixFrom(addOffset(base.Addr(), uint64(1)<<(32-half)), half)
	maxLAN := uint64(1)<<(24-half) - 1
	maxLink := uint64(1) << (30 - half)
	var nLAN, nLink uint64
	for _, s := range segs {
		if !s.routed(plan) || slices.ContainsFunc(s.Ends, func(i *topo.Intf) bool { return explicit(plan, i) }) {
			continue
		}
		var subnet netip.Prefix
		if s.pointToPoint(plan) {
			if nLink >= maxLink {
				return fmt.Errorf("ipbase %s has no room for more than %d links between routers", base, maxLink)
			}
			subnet = netip.PrefixFrom(addOffset(links.Addr(), nLink*4), 30)
			nLink++
			// Link order: the link's first end is .1.
			if l := s.Ends[0].Link; l != nil && l.Intf2 == s.Ends[0] {
				s.Ends[0], s.Ends[1] = s.Ends[1], s.Ends[0]
			}
		} else {
			nLAN++
			if nLAN > maxLAN {
				return fmt.Errorf("ipbase %s has no room for more than %d LANs", base, maxLAN)
			}
			if len(s.Ends) > 253 {
				return fmt.Errorf("a routed LAN of %d interfaces (%s...) does not fit a /24", len(s.Ends), s.Ends[0].Name)
			}
			subnet = netip.PrefixFrom(addOffset(lans.Addr(), nLAN<<8), 24)
		}
		for k, i := range s.Ends {
			i.IP = netip.PrefixFrom(addOffset(subnet.Addr(), uint64(k+1)), subnet.Bits())
		}
	}
	for _, n := range plan.Nodes {
		if d := n.DefaultIntf(); d != nil && !n.IsSwitch() {
			n.IP = d.IP
		}
	}
	return nil
}

func addressIPv6(plan *topo.Plan, segs []*Segment, base netip.Prefix) error {
	if !base.IsValid() {
		base = DefaultIPBase6
	}
	base = base.Masked()
	if !base.Addr().Is6() || base.Addr().Is4In6() || base.Bits() > 64 {
		return fmt.Errorf("ipbase6 %s: not an IPv6 network of /64 or larger", base)
	}
	if len(segs) > 1<<min(64-base.Bits(), 62) {
		return fmt.Errorf("ipbase6 %s has no room for %d /64 segments", base, len(segs))
	}
	for k, s := range segs {
		subnet := netip.PrefixFrom(shift6(base.Addr(), uint64(k)), 64)
		used := map[uint64]bool{}
		var unnumbered []*topo.Intf
		for _, i := range s.Ends {
			if !i.IP.IsValid() {
				unnumbered = append(unnumbered, i)
				continue
			}
			host := ipv4HostPart(i.IP)
			if host == 0 || used[host] {
				unnumbered = append(unnumbered, i)
				continue
			}
			used[host] = true
			i.IP6 = netip.PrefixFrom(add6(subnet.Addr(), host), 64)
		}
		next := uint64(1)
		for _, i := range unnumbered {
			for used[next] {
				next++
			}
			used[next] = true
			i.IP6 = netip.PrefixFrom(add6(subnet.Addr(), next), 64)
		}
	}
	var errs []error
	seen := map[netip.Addr]string{}
	for _, n := range plan.Nodes {
		for _, i := range n.Intfs {
			if !i.IP6.IsValid() {
				continue
			}
			if prev, dup := seen[i.IP6.Addr()]; dup {
				errs = append(errs, fmt.Errorf("IPv6 address %s is planned for both %s and %s", i.IP6.Addr(), prev, i.Name))
			}
			seen[i.IP6.Addr()] = n.Name + ":" + i.Name
		}
	}
	return errors.Join(errs...)
}

// ipv4HostPart is an address's number within its subnet.
func ipv4HostPart(p netip.Prefix) uint64 {
	b := p.Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	if p.Bits() == 0 {
		return uint64(v)
	}
	return uint64(v &^ (^uint32(0) << (32 - p.Bits())))
}

func addOffset(a netip.Addr, off uint64) netip.Addr {
	b := a.As4()
	v := uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
	v += off
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// shift6 returns base plus k /64s.
func shift6(base netip.Addr, k uint64) netip.Addr {
	b := base.As16()
	v := new(big.Int).SetBytes(b[:])
	v.Add(v, new(big.Int).Lsh(new(big.Int).SetUint64(k), 64))
	var out [16]byte
	v.FillBytes(out[:])
	return netip.AddrFrom16(out)
}

// add6 returns a plus a small interface number.
func add6(a netip.Addr, host uint64) netip.Addr {
	b := a.As16()
	v := new(big.Int).SetBytes(b[:])
	v.Add(v, new(big.Int).SetUint64(host))
	var out [16]byte
	v.FillBytes(out[:])
	return netip.AddrFrom16(out)
}
