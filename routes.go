package hymn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hymn-net/hymn/routing"
	"github.com/hymn-net/hymn/topo"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// RoutingMode says how routers get their routes (Options.Routing, a
// router's routing parameter): docs/routing.md.
type RoutingMode string

// Routing modes.
const (
	// RoutingNone leaves routes to the topology (routes, defaultRoute):
	// Mininet's way, and the default.
	RoutingNone RoutingMode = "none"
	// RoutingStatic has hymn compute shortest paths and install them at
	// build time and after every link status change; no processes.
	RoutingStatic RoutingMode = "static"
)

// ParseRoutingMode reads a --routing value or a routing parameter.
func ParseRoutingMode(s string) (RoutingMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "none":
		return RoutingNone, nil
	case "static":
		return RoutingStatic, nil
	case "ospf", "bgp":
		return "", fmt.Errorf("routing %s: routing daemons (FRR) are not supported yet; use static or none", s)
	}
	return "", fmt.Errorf("unknown routing %q: use static or none", s)
}

// routeState is what the network keeps of its layer 3: the mode of each
// router, the links that are down, and the routes installed.
type routeState struct {
	mu        sync.Mutex
	static    map[string]bool // routers routed statically
	ipv6      bool            // dual-stack: every node gets hymn's IPv6 routes
	down      map[*topo.PlannedLink]bool
	installed routing.Tables
}

// routingOf returns a router's routing mode: its own routing parameter,
// else the network's.
func (n *Network) routingOf(p *topo.PlannedNode) (RoutingMode, error) {
	if v, ok := p.Params["routing"]; ok {
		m, err := ParseRoutingMode(v)
		if err != nil {
			return "", fmt.Errorf("router %s: %w", p.Name, err)
		}
		return m, nil
	}
	return ParseRoutingMode(string(n.opts.Routing))
}

// planRouting checks the routing options and gives a routed or
// dual-stack network's interfaces their addresses (routing.Address), in
// New, before the plan is published.
func (n *Network) planRouting(plan *topo.Plan) error {
	if _, err := ParseRoutingMode(string(n.opts.Routing)); err != nil {
		return err
	}
	st := &routeState{static: map[string]bool{}, down: map[*topo.PlannedLink]bool{}}
	var errs []error
	for _, p := range plan.Nodes {
		if _, ok := p.Params["routing"]; ok && p.Kind != topo.KindRouter {
			errs = append(errs, fmt.Errorf("node %s: routing applies to routers only (kind: router)", p.Name))
			continue
		}
		if p.Kind != topo.KindRouter {
			continue
		}
		m, err := n.routingOf(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if m == RoutingStatic {
			st.static[p.Name] = true
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if n.opts.IPBase6.IsValid() && !n.opts.IPv6 {
		return errors.New("ipbase6 is set but IPv6 is off (add --ipv6)")
	}
	opts := routing.AddressOptions{IPBase: n.opts.IPBase, Routed: len(st.static) > 0, IPv6: n.opts.IPv6, IPBase6: n.opts.IPBase6}
	if err := routing.Address(plan, opts); err != nil {
		return err
	}
	st.ipv6 = n.opts.IPv6
	n.routes = st
	return nil
}

// include says which nodes get IPv4 routes from hymn: the static
// routers, and the hosts without routes of their own (defaultRoute,
// routes) when some router is static.
func (st *routeState) include(p *topo.PlannedNode) bool {
	if p.Kind == topo.KindRouter {
		return st.static[p.Name]
	}
	if len(st.static) == 0 {
		return false
	}
	_, dr := p.Params["defaultRoute"]
	_, rs := p.Params["routes"]
	return !dr && !rs
}

// include6 says which nodes get IPv6 routes from hymn: on a dual-stack
// network every host and router, whatever its IPv4 routing, since a
// topology has no way to write IPv6 routes of its own.
func (st *routeState) include6(*topo.PlannedNode) bool { return st.ipv6 }

// configureLayer3 runs in Build once the links are up: IPv6 addresses
// and forwarding, then the static routes.
func (n *Network) configureLayer3(ctx context.Context) error {
	if n.routes == nil {
		return nil
	}
	hosts := n.Plan().Hosts()
	if n.opts.IPv6 {
		if err := forEach(ctx, n.opts.Workers, len(hosts), func(ctx context.Context, i int) error { return n.configureIPv6(ctx, hosts[i]) }); err != nil {
			return err
		}
	}
	return n.reroute(ctx, n.nodes)
}

// configureIPv6 gives a node's interfaces their IPv6 addresses, usable at
// once (no duplicate address detection: the plan made them unique), and
// keeps them when a link goes down and up; a router forwards IPv6.
func (n *Network) configureIPv6(ctx context.Context, p *topo.PlannedNode) error {
	node := n.nodes[p.Name]
	ns, isNS := namespaceNode(node)
	if !isNS {
		var b strings.Builder
		b.WriteString("sysctl -qw net.ipv6.conf.all.keep_addr_on_down=1 net.ipv6.conf.all.accept_dad=0")
		if p.Kind == topo.KindRouter {
			b.WriteString(" net.ipv6.conf.all.forwarding=1")
		}
		for _, i := range p.Intfs {
			if i.IP6.IsValid() {
				fmt.Fprintf(&b, " && ip -6 addr replace %s dev %s nodad", i.IP6, i.Name)
			}
		}
		res, err := node.Exec(ctx, "sh", "-c", b.String())
		if err != nil {
			return fmt.Errorf("node %s: IPv6: %w", p.Name, err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("node %s: IPv6: %s", p.Name, strings.TrimSpace(string(res.Stderr)))
		}
		return nil
	}
	sysctls := [][2]string{{"net/ipv6/conf/all/disable_ipv6", "0"}, {"net/ipv6/conf/all/keep_addr_on_down", "1"},
		{"net/ipv6/conf/all/accept_dad", "0"}, {"net/ipv6/conf/default/accept_dad", "0"}}
	if p.Kind == topo.KindRouter {
		sysctls = append(sysctls, [2]string{"net/ipv6/conf/all/forwarding", "1"})
	}
	for _, kv := range sysctls {
		if err := ns.Sysctl(kv[0], kv[1]); err != nil {
			return fmt.Errorf("node %s: IPv6: %s: %w", p.Name, kv[0], err)
		}
	}
	for _, i := range p.Intfs {
		// DAD runs unless both all's and the interface's accept_dad are
		// off: the interface's was copied from default when it was made.
		// Off, the link-local address a link gets when it comes back up
		// is usable at once too.
		if err := ns.Sysctl("net/ipv6/conf/"+i.Name+"/accept_dad", "0"); err != nil {
			return fmt.Errorf("node %s: IPv6: %s: %w", p.Name, i.Name, err)
		}
	}
	return ns.Netlink(func(h *netlink.Handle) error {
		for _, i := range p.Intfs {
			if !i.IP6.IsValid() {
				continue
			}
			link, err := h.LinkByName(i.Name)
			if err != nil {
				return fmt.Errorf("node %s: %s: %w", p.Name, i.Name, err)
			}
			addr := &netlink.Addr{IPNet: prefixNet(i.IP6), Flags: unix.IFA_F_NODAD}
			if err := h.AddrReplace(link, addr); err != nil {
				return fmt.Errorf("node %s: IPv6 address %s on %s: %w", p.Name, i.IP6, i.Name, err)
			}
			if err := skipLinkLocalDAD(h, link); err != nil {
				return fmt.Errorf("node %s: %s: %w", p.Name, i.Name, err)
			}
		}
		return nil
	})
}

// skipLinkLocalDAD makes an interface's link-local address usable now
// rather than after duplicate address detection (a second or more): a
// router sends its neighbour solicitations for forwarded packets only
// from a link-local address that is not tentative, so until then the
// first packets it forwards are lost. The address is put back as it was,
// with DAD off.
func skipLinkLocalDAD(h *netlink.Handle, link netlink.Link) error {
	addrs, err := h.AddrList(link, netlink.FAMILY_V6)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if !a.IP.IsLinkLocalUnicast() || a.Flags&unix.IFA_F_TENTATIVE == 0 {
			continue
		}
		if err := h.AddrDel(link, &a); err != nil {
			return fmt.Errorf("link-local %s: %w", a.IPNet, err)
		}
		if err := h.AddrAdd(link, &netlink.Addr{IPNet: a.IPNet, Flags: unix.IFA_F_NODAD}); err != nil {
			return fmt.Errorf("link-local %s: %w", a.IPNet, err)
		}
	}
	return nil
}

func prefixNet(p netip.Prefix) *net.IPNet {
	bits := 32
	if p.Addr().Is6() {
		bits = 128
	}
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), bits)}
}

// reroute computes the static routes for the links as they are now and
// installs them: new and changed routes replaced, the ones no longer
// wanted deleted.
func (n *Network) reroute(ctx context.Context, running map[string]Node) error {
	st := n.routes
	if st == nil || len(st.static) == 0 && !st.ipv6 {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	plan := n.Plan()
	t0 := time.Now()
	tables := routing.Compute(plan, routing.Options{Down: st.down, Include: st.include, Include6: st.include6, IPv6: st.ipv6})
	t1 := time.Now()
	var names []string
	for _, p := range plan.Hosts() {
		if st.include(p) || st.include6(p) {
			names = append(names, p.Name)
		}
	}
	err := forEach(ctx, n.opts.Workers, len(names), func(ctx context.Context, i int) error {
		name := names[i]
		node, ok := running[name]
		if !ok {
			return nil
		}
		return installRoutes(ctx, node, name, st.installed[name], tables[name])
	})
	if err != nil {
		return err
	}
	count := 0
	for _, rs := range tables {
		count += len(rs)
	}
	n.log().Debugf("*** static routes: computed %d in %v, installed in %v\n", count, t1.Sub(t0), time.Since(t1))
	st.installed = tables
	return nil
}

// installRoutes brings a node's routes from old to new.
func installRoutes(ctx context.Context, node Node, name string, old, new []routing.Route) error {
	want := map[netip.Prefix]bool{}
	for _, r := range new {
		want[r.Dst] = true
	}
	var gone []routing.Route
	for _, r := range old {
		if !want[r.Dst] {
			gone = append(gone, r)
		}
	}
	ns, ok := namespaceNode(node)
	if !ok {
		return execRoutes(ctx, node, name, gone, new)
	}
	return ns.Netlink(func(h *netlink.Handle) error {
		index := map[string]int{}
		linkIndex := func(dev string) (int, error) {
			if i, ok := index[dev]; ok {
				return i, nil
			}
			l, err := h.LinkByName(dev)
			if err != nil {
				return 0, err
			}
			index[dev] = l.Attrs().Index
			return index[dev], nil
		}
		for _, r := range gone {
			if err := h.RouteDel(netlinkRoute(r, 0)); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("node %s: deleting route %s: %w", name, r, err)
			}
		}
		for _, r := range new {
			idx, err := linkIndex(r.Dev)
			if err != nil {
				return fmt.Errorf("node %s: route %s: %w", name, r, err)
			}
			if err := h.RouteReplace(netlinkRoute(r, idx)); err != nil {
				return fmt.Errorf("node %s: route %s: %w", name, r, err)
			}
		}
		return nil
	})
}

func netlinkRoute(r routing.Route, linkIndex int) *netlink.Route {
	family := netlink.FAMILY_V4
	if r.Dst.Addr().Is6() {
		family = netlink.FAMILY_V6
	}
	nr := &netlink.Route{Family: family, LinkIndex: linkIndex, Gw: r.Via.AsSlice(), Protocol: unix.RTPROT_STATIC}
	if r.Dst.Bits() > 0 {
		nr.Dst = prefixNet(r.Dst)
	}
	return nr
}

// execRoutes installs routes with ip(8) in a node hymn reaches by
// commands only (a VM's guest).
func execRoutes(ctx context.Context, node Node, name string, gone, new []routing.Route) error {
	var b strings.Builder
	for _, r := range gone {
		fmt.Fprintf(&b, "ip route del %s 2>/dev/null; ", r.Dst)
	}
	for _, r := range new {
		fmt.Fprintf(&b, "ip route replace %s via %s dev %s || exit 1; ", r.Dst, r.Via, r.Dev)
	}
	if b.Len() == 0 {
		return nil
	}
	res, err := node.Exec(ctx, "sh", "-c", b.String())
	if err != nil {
		return fmt.Errorf("node %s: routes: %w", name, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("node %s: routes: %s", name, strings.TrimSpace(string(res.Stderr)))
	}
	return nil
}

// linksChanged records links going down or up and re-routes
// (ConfigLinkStatus).
func (n *Network) linksChanged(ctx context.Context, changed []*topo.PlannedLink, up bool) error {
	st := n.routes
	if st == nil {
		return nil
	}
	st.mu.Lock()
	for _, l := range changed {
		if up {
			delete(st.down, l)
		} else {
			st.down[l] = true
		}
	}
	st.mu.Unlock()
	n.mu.Lock()
	running := n.nodes
	n.mu.Unlock()
	if err := n.reroute(ctx, running); err != nil {
		return fmt.Errorf("re-routing after the link change: %w", err)
	}
	return nil
}

// StaticRoutes returns the static routes hymn installed, by node, as they
// are after the last link change; nil without static routing.
func (n *Network) StaticRoutes() routing.Tables {
	st := n.routes
	if st == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	out := routing.Tables{}
	for k, v := range st.installed {
		out[k] = append([]routing.Route(nil), v...)
	}
	return out
}

// The families a dual-stack network's pings say they test.
const (
	familyIPv4 = "IPv4"
	familyIPv6 = "IPv6"
)

// pingFamilies are the address families ping tests: IPv4 alone, unnamed
// (Mininet's output), or both, named, on a dual-stack network.
func (n *Network) pingFamilies() []string {
	if n.opts.IPv6 {
		return []string{familyIPv4, familyIPv6}
	}
	return []string{""}
}

// familyResult prints one family's share of a dual-stack ping test.
func (n *Network) familyResult(family string, results []PingResult) {
	if family == "" {
		return
	}
	sent, received := 0, 0
	for _, r := range results {
		sent += r.Sent
		received += r.Received
	}
	if sent == 0 {
		return
	}
	n.log().Outputf("*** Results (%s): %d%% dropped (%d/%d received)\n", family, 100*(sent-received)/sent, received, sent)
}

// IP6 returns the IPv6 address of a node's default interface (dual-stack
// networks, Options.IPv6).
func (n *Network) IP6(name string) (netip.Addr, error) {
	p := n.Plan().Node(name)
	if p == nil {
		return netip.Addr{}, fmt.Errorf("%w: %s", ErrUnknownNode, name)
	}
	if d := p.DefaultIntf(); d != nil && d.IP6.IsValid() {
		return d.IP6.Addr(), nil
	}
	return netip.Addr{}, fmt.Errorf("node %s has no IPv6 address (the network is dual-stack with --ipv6)", name)
}
