package topo

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// MaxIntfName is the kernel's limit on interface names (IFNAMSIZ - 1).
const MaxIntfName = 15

// DefaultIPBase is Mininet's default --ipbase.
var DefaultIPBase = netip.MustParsePrefix("10.0.0.0/8")

// AddressOptions are the address-plan settings of mn: --ipbase and --mac.
type AddressOptions struct {
	IPBase  netip.Prefix // zero means DefaultIPBase
	AutoMAC bool         // --mac: host MAC = host index
}

// Plan is a topology resolved for deployment: every interface named and
// every address chosen, in the order things are created.
type Plan struct {
	Nodes []*PlannedNode // hosts first (natural order), then switches
	Links []*PlannedLink // Mininet's creation order
	index map[string]*PlannedNode

	// The address plan's state, so nodes added later continue it.
	base    netip.Prefix
	nextIP  uint64
	autoMAC bool
}

// PlannedNode is a node with its interfaces in port order.
type PlannedNode struct {
	Node
	IP    netip.Prefix     // address of the default interface; invalid if none
	MAC   net.HardwareAddr // MAC of the default interface; nil for the kernel's
	Intfs []*Intf
}

// Intf is one interface of a node.
type Intf struct {
	Name string
	Node string
	Port int
	IP   netip.Prefix
	IP6  netip.Prefix // a global IPv6 address when the network is dual-stack (package routing)
	MAC  net.HardwareAddr
	Link *PlannedLink
}

// PlannedLink is a link with both interfaces resolved.
type PlannedLink struct {
	Intf1, Intf2 *Intf
	Params       Params
	Origin       string // where a file defined the link (Link.Origin)

	origins paramOrigins // Link.origins
}

// Peer returns the interface at the other end of the link.
func (l *PlannedLink) Peer(i *Intf) *Intf {
	if i == l.Intf1 {
		return l.Intf2
	}
	return l.Intf1
}

func (l *PlannedLink) String() string { return l.Intf1.Name + "<->" + l.Intf2.Name }

// Node returns the planned node of that name, or nil.
func (p *Plan) Node(name string) *PlannedNode { return p.index[name] }

// Hosts returns the planned nodes that are not switches.
func (p *Plan) Hosts() []*PlannedNode {
	var out []*PlannedNode
	for _, n := range p.Nodes {
		if !n.IsSwitch() {
			out = append(out, n)
		}
	}
	return out
}

// Switches returns the planned switches.
func (p *Plan) Switches() []*PlannedNode {
	var out []*PlannedNode
	for _, n := range p.Nodes {
		if n.IsSwitch() {
			out = append(out, n)
		}
	}
	return out
}

// DefaultIntf returns the node's lowest-numbered interface, or nil.
func (n *PlannedNode) DefaultIntf() *Intf {
	if len(n.Intfs) == 0 {
		return nil
	}
	return n.Intfs[0]
}

// IntfName is Mininet's interface name for a node's port.
func IntfName(node string, port int) string { return fmt.Sprintf("%s-eth%d", node, port) }

// Resolve validates a topology completely and chooses every name and
// address, following Mininet: hosts get IPs from the base in natural name
// order, the counter advancing for every host even when it has its own ip=;
// interfaces are <node>-eth<port>; links are created in natural order.
func Resolve(t *Topo, opts AddressOptions) (*Plan, error) {
	if err := t.Err(); err != nil {
		return nil, err
	}
	base := opts.IPBase
	if !base.IsValid() {
		base = DefaultIPBase
	}
	if !base.Addr().Is4() {
		return nil, fmt.Errorf("ipbase %s: only IPv4 bases are supported", base)
	}
	plan := &Plan{index: map[string]*PlannedNode{}}
	var errs []error

	baseNum := ipToUint(base.Masked().Addr())
	hostBits := 32 - base.Bits()
	capacity := uint64(1)<<hostBits - 1 // the top address is the broadcast
	next := uint64(ipToUint(base.Addr()) &^ maskOf(base.Bits()))
	if next == 0 {
		next = 1
	}
	for _, n := range t.Nodes() {
		if err := checkNodeParams(n); err != nil {
			errs = append(errs, err)
		}
	}
	for _, n := range t.Hosts() {
		pn := &PlannedNode{Node: *n}
		if next >= capacity {
			errs = append(errs, fmt.Errorf("ipbase %s has no room for host %s (host number %d)", base, n.Name, next))
		}
		ip, err := hostIP(n, netip.PrefixFrom(uintToIP(baseNum|uint32(next)), base.Bits()))
		if err != nil {
			errs = append(errs, err)
		}
		pn.IP = ip
		mac, err := hostMAC(n, opts.AutoMAC, next)
		if err != nil {
			errs = append(errs, err)
		}
		pn.MAC = mac
		next++
		plan.Nodes = append(plan.Nodes, pn)
		plan.index[n.Name] = pn
	}
	for _, n := range t.Switches() {
		if err := checkDPID(n); err != nil {
			errs = append(errs, err)
		}
		pn := &PlannedNode{Node: *n}
		plan.Nodes = append(plan.Nodes, pn)
		plan.index[n.Name] = pn
	}

	for _, l := range t.SortedLinks() {
		if err := CheckLinkParams(l.Params); err != nil {
			errs = append(errs, fmt.Errorf("link %s<->%s: %w", l.Node1, l.Node2, err))
			continue
		}
		i1, err1 := newIntf(l.Node1, l.Port1, l.Params["intfName1"])
		i2, err2 := newIntf(l.Node2, l.Port2, l.Params["intfName2"])
		if err := errors.Join(err1, err2); err != nil {
			errs = append(errs, err)
			continue
		}
		pl := &PlannedLink{Intf1: i1, Intf2: i2, Params: l.Params.Clone(), Origin: l.Origin, origins: l.origins}
		i1.Link, i2.Link = pl, pl
		plan.Links = append(plan.Links, pl)
		plan.index[l.Node1].Intfs = append(plan.index[l.Node1].Intfs, i1)
		plan.index[l.Node2].Intfs = append(plan.index[l.Node2].Intfs, i2)
	}
	seen := map[string]string{}
	for _, n := range plan.Nodes {
		sortIntfs(n.Intfs)
		for _, i := range n.Intfs {
			if prev, dup := seen[n.Name+"/"+i.Name]; dup {
				errs = append(errs, fmt.Errorf("node %s: interface name %s is used by two links (%s)", n.Name, i.Name, prev))
			}
			seen[n.Name+"/"+i.Name] = i.Link.String()
		}
		if d := n.DefaultIntf(); d != nil && !n.IsSwitch() {
			d.IP, d.MAC = n.IP, n.MAC
		}
	}
	for _, l := range plan.Links {
		errs = append(errs, l.applyAddresses()...)
	}
	if len(errs) == 0 {
		errs = append(errs, plan.checkDuplicateAddresses()...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	plan.base, plan.nextIP, plan.autoMAC = base, next, opts.AutoMAC
	return plan, nil
}

func newIntf(node string, port int, name string) (*Intf, error) {
	if name == "" {
		name = IntfName(node, port)
		if len(name) > MaxIntfName {
			return nil, fmt.Errorf("interface name %s is %d bytes; Linux allows at most %d (shorten the node name %q)",
				name, len(name), MaxIntfName, node)
		}
	}
	if err := CheckIntfName(name); err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	return &Intf{Name: name, Node: node, Port: port}, nil
}

func sortIntfs(in []*Intf) {
	slices.SortStableFunc(in, func(a, b *Intf) int { return a.Port - b.Port })
}

// hostIP returns the host's address: its ip= parameter if given ("none"
// means no address), else the planned one.
func hostIP(n *Node, planned netip.Prefix) (netip.Prefix, error) {
	v, ok := n.Params["ip"]
	if !ok {
		return planned, nil
	}
	if strings.EqualFold(v, "none") || v == "" {
		return netip.Prefix{}, nil
	}
	p, err := parseIP(v, planned.Bits())
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("node %s: ip: %w", n.Name, err)
	}
	return p, nil
}

// hostMAC returns the host's MAC: its mac= parameter if given, else the
// host's number under --mac, else nil (the kernel's).
func hostMAC(n *Node, autoMAC bool, number uint64) (net.HardwareAddr, error) {
	if v, ok := n.Params["mac"]; ok {
		hw, err := parseUnicastMAC(v)
		if err != nil {
			return nil, fmt.Errorf("node %s: mac: %w", n.Name, err)
		}
		return hw, nil
	}
	if autoMAC {
		return macFromIndex(number), nil
	}
	return nil, nil
}

// applyAddresses gives the link's ends the addresses and MACs its
// ip1/ip2 and mac1/mac2 parameters name, over what their nodes gave them.
func (l *PlannedLink) applyAddresses() []error {
	var errs []error
	for _, end := range []struct {
		k string
		i *Intf
	}{{"1", l.Intf1}, {"2", l.Intf2}} {
		k, i := end.k, end.i
		if v, ok := l.Params["ip"+k]; ok {
			p, err := parseIP(v, i.IP.Bits())
			if err != nil {
				errs = append(errs, fmt.Errorf("link %s: ip%s: %w", l, k, err))
			}
			i.IP = p
		}
		if v, ok := l.Params["mac"+k]; ok {
			hw, err := parseUnicastMAC(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("link %s: mac%s: %w", l, k, err))
			}
			i.MAC = hw
		}
	}
	return errs
}

// parseIP accepts "a.b.c.d/len" or "a.b.c.d" (then the default length).
func parseIP(v string, defaultBits int) (netip.Prefix, error) {
	if strings.Contains(v, "/") {
		p, err := netip.ParsePrefix(v)
		if err != nil || !p.Addr().Is4() {
			return netip.Prefix{}, fmt.Errorf("%q is not an IPv4 address with prefix length", v)
		}
		return p, nil
	}
	a, err := netip.ParseAddr(v)
	if err != nil || !a.Is4() {
		return netip.Prefix{}, fmt.Errorf("%q is not an IPv4 address", v)
	}
	if defaultBits <= 0 {
		defaultBits = DefaultIPBase.Bits()
	}
	return netip.PrefixFrom(a, defaultBits), nil
}

// checkDPID applies Mininet's rule: a switch needs a dpid, given or derived
// from the digits in its name.
func checkDPID(n *Node) error {
	if _, ok := n.Params["dpid"]; ok {
		return nil
	}
	if !strings.ContainsAny(n.Name, "0123456789") {
		return fmt.Errorf("switch %s: unable to derive default datapath ID - please either specify a dpid or use a canonical switch name such as s23", n.Name)
	}
	return nil
}

func macFromIndex(i uint64) net.HardwareAddr {
	hw := make(net.HardwareAddr, 6)
	for b := 5; b >= 0; b-- {
		hw[b] = byte(i)
		i >>= 8
	}
	return hw
}

func ipToUint(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func uintToIP(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func maskOf(bits int) uint32 {
	if bits == 0 {
		return 0
	}
	return ^uint32(0) << (32 - bits)
}
