package routing

import (
	"container/heap"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hymn-net/hymn/topo"
)

// Route is one static route of a node: packets for Dst leave through
// interface Dev toward the gateway Via, an address on Dev's segment.
type Route struct {
	Dst netip.Prefix
	Via netip.Addr
	Dev string
}

func (r Route) String() string { return r.Dst.String() + " via " + r.Via.String() + " dev " + r.Dev }

// Tables are the routes of each node, by node name, in a fixed order
// (IPv4 before IPv6, then by destination).
type Tables map[string][]Route

// Options say what Compute works on.
type Options struct {
	// Down are links that are down (ConfigLinkStatus): they carry nothing.
	Down map[*topo.PlannedLink]bool
	// Include says which nodes get IPv4 routes; nil means every host and
	// router. Every router forwards transit traffic either way.
	Include func(*topo.PlannedNode) bool
	// Include6 says which nodes get IPv6 routes (with IPv6); nil means
	// the nodes Include says.
	Include6 func(*topo.PlannedNode) bool
	// IPv6 computes the IPv6 routes too (interfaces' IP6 addresses).
	IPv6 bool
}

// Cost is a path's length: the sum of its links' delays (zero for links
// without one), then its hop count. Paths compare by delay, then hops, so
// a topology without delays routes by hop count.
type Cost struct {
	Delay time.Duration
	Hops  int
}

func (c Cost) less(d Cost) bool {
	if c.Delay != d.Delay {
		return c.Delay < d.Delay
	}
	return c.Hops < d.Hops
}

// adjacency is one way from a node to a neighbour across a segment.
type adjacency struct {
	to       int        // the neighbour's index
	from, at *topo.Intf // the interface it leaves by, and the neighbour's
	cost     Cost
}

// graph is the plan seen at layer 3: nodes (by index, in natural name
// order) joined across segments.
type graph struct {
	plan   *topo.Plan
	names  []string
	router []bool
	index  map[string]int
	// adj holds each node's adjacencies in tie-break order: by the
	// interface they leave by, then the neighbour's name, then its
	// interface (natural order), so the first of equal-cost paths wins.
	adj [][]adjacency
}

func newGraph(plan *topo.Plan, down map[*topo.PlannedLink]bool) *graph {
	g := &graph{plan: plan, index: map[string]int{}}
	for _, n := range plan.Nodes {
		if !n.IsSwitch() {
			g.names = append(g.names, n.Name)
		}
	}
	slices.SortStableFunc(g.names, natural)
	g.router = make([]bool, len(g.names))
	for i, name := range g.names {
		g.index[name] = i
		g.router[i] = plan.Node(name).Kind == topo.KindRouter
	}
	g.adj = make([][]adjacency, len(g.names))
	for _, s := range Segments(plan, down) {
		for _, a := range s.Ends {
			for _, b := range s.Ends {
				if a.Node == b.Node {
					continue
				}
				d := outDelay(a) + inDelay(b)
				if !s.Switched {
					d = outDelay(a) // one link: its delay from a to b
				}
				ia := g.index[a.Node]
				g.adj[ia] = append(g.adj[ia], adjacency{to: g.index[b.Node], from: a, at: b, cost: Cost{Delay: d, Hops: 1}})
			}
		}
	}
	for _, as := range g.adj {
		slices.SortStableFunc(as, func(x, y adjacency) int {
			if c := natural(x.from.Name, y.from.Name); c != 0 {
				return c
			}
			if x.to != y.to {
				return x.to - y.to
			}
			return natural(x.at.Name, y.at.Name)
		})
	}
	return g
}

// outDelay is the delay of an interface's link in the direction away
// from it; inDelay toward it.
func outDelay(i *topo.Intf) time.Duration {
	if i.Link == nil {
		return 0
	}
	if i == i.Link.Intf1 {
		return linkDelay(i.Link.Params, "a>b.")
	}
	return linkDelay(i.Link.Params, "b>a.")
}

func inDelay(i *topo.Intf) time.Duration {
	if i.Link == nil {
		return 0
	}
	if i == i.Link.Intf1 {
		return linkDelay(i.Link.Params, "b>a.")
	}
	return linkDelay(i.Link.Params, "a>b.")
}

// linkDelay reads a direction's delay parameter (its own, else the
// link's), as the emulator does: a number with s, ms, us or ns, a bare
// number in microseconds, "10ms 1ms" meaning delay and jitter. A value
// the emulator would refuse (hymn.New checks them) counts as no delay.
func linkDelay(p topo.Params, dir string) time.Duration {
	v, ok := p[dir+"delay"]
	if !ok {
		v = p["delay"]
	}
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0
	}
	s := strings.ReplaceAll(f[0], "usec", "us")
	s = strings.ReplaceAll(s, "msec", "ms")
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d
	}
	if us, err := strconv.ParseFloat(s, 64); err == nil && us > 0 && us < 1e12 {
		return time.Duration(us * float64(time.Microsecond))
	}
	return 0
}

// path is Dijkstra's state for one node.
type path struct {
	cost  Cost
	first int // index into the source's adjacencies of the path's first step; -1 for none
	seen  bool
	done  bool
}

type queueItem struct {
	node int
	cost Cost
}

type queue []queueItem

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].cost != q[j].cost {
		return q[i].cost.less(q[j].cost)
	}
	return q[i].node < q[j].node // natural name order
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(queueItem)) }
func (q *queue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

// shortest runs Dijkstra from src; only routers carry transit traffic.
// Between equal-cost paths the one whose first step comes first in the
// source's adjacency order wins.
func (g *graph) shortest(src int) []path {
	paths := make([]path, len(g.names))
	for i := range paths {
		paths[i].first = -1
	}
	paths[src].seen = true
	q := &queue{{node: src}}
	for q.Len() > 0 {
		it := heap.Pop(q).(queueItem)
		p := &paths[it.node]
		if p.done || p.cost != it.cost {
			continue
		}
		p.done = true
		if it.node != src && !g.router[it.node] {
			continue
		}
		for k := range g.adj[it.node] {
			a := &g.adj[it.node][k]
			c := Cost{Delay: p.cost.Delay + a.cost.Delay, Hops: p.cost.Hops + a.cost.Hops}
			first := p.first
			if it.node == src {
				first = k
			}
			old := &paths[a.to]
			switch {
			case !old.seen:
				*old = path{cost: c, first: first, seen: true}
			case old.done:
				continue
			case c.less(old.cost):
				old.cost, old.first = c, first
			case c == old.cost && first < old.first:
				old.first = first
				continue
			default:
				continue
			}
			heap.Push(q, queueItem{node: a.to, cost: c})
		}
	}
	return paths
}

// Compute returns the static routes of every node opts include: for each
// subnet of the plan (IPv4, and IPv6 with opts.IPv6) the node is not on,
// a route through the first hop of its shortest path to the nearest node
// on that subnet. A host whose routes all leave by one gateway gets a
// default route through it instead.
func Compute(plan *topo.Plan, opts Options) Tables {
	g := newGraph(plan, opts.Down)
	type family struct {
		addr func(*topo.Intf) netip.Prefix
		dflt netip.Prefix
	}
	families := []family{{func(i *topo.Intf) netip.Prefix { return i.IP }, netip.MustParsePrefix("0.0.0.0/0")}}
	if opts.IPv6 {
		families = append(families, family{func(i *topo.Intf) netip.Prefix { return i.IP6 }, netip.MustParsePrefix("::/0")})
	}
	up := func(i *topo.Intf) bool { return i.Link == nil || !opts.Down[i.Link] }
	// Subnets and the nodes on them (indexes, ascending), per family.
	type subnet struct {
		prefix netip.Prefix
		nodes  []int
	}
	subnets := make([][]*subnet, len(families))
	for f, fam := range families {
		byPrefix := map[netip.Prefix]*subnet{}
		for _, name := range g.names {
			for _, i := range plan.Node(name).Intfs {
				a := fam.addr(i)
				if !a.IsValid() || !up(i) {
					continue
				}
				p := a.Masked()
				s := byPrefix[p]
				if s == nil {
					s = &subnet{prefix: p}
					byPrefix[p] = s
					subnets[f] = append(subnets[f], s)
				}
				if k := g.index[name]; len(s.nodes) == 0 || s.nodes[len(s.nodes)-1] != k {
					s.nodes = append(s.nodes, k)
				}
			}
		}
		slices.SortFunc(subnets[f], func(a, b *subnet) int { return comparePrefix(a.prefix, b.prefix) })
	}
	tables := Tables{}
	for src, name := range g.names {
		n := plan.Node(name)
		wants := make([]bool, len(families))
		some := false
		for f := range families {
			include := opts.Include
			if f == 1 && opts.Include6 != nil {
				include = opts.Include6
			}
			wants[f] = include == nil || include(n)
			some = some || wants[f]
		}
		if !some {
			continue
		}
		paths := g.shortest(src)
		var routes []Route
		for f, fam := range families {
			if !wants[f] {
				continue
			}
			var own []Route
			for _, s := range subnets[f] {
				if _, on := slices.BinarySearch(s.nodes, src); on {
					continue
				}
				best := -1
				for _, d := range s.nodes { // ascending: the first of equals is the smaller name
					p := &paths[d]
					// Only a router forwards to the rest of a subnet:
					// a host next door is no gateway.
					if !p.seen || p.first < 0 || !g.router[g.adj[src][p.first].to] {
						continue
					}
					if best < 0 || p.cost.less(paths[best].cost) {
						best = d
					}
				}
				if best < 0 {
					continue
				}
				step := &g.adj[src][paths[best].first]
				via := fam.addr(step.at)
				if !via.IsValid() {
					continue
				}
				own = append(own, Route{Dst: s.prefix, Via: via.Addr(), Dev: step.from.Name})
			}
			if n.Kind == topo.KindHost && len(own) > 1 && oneGateway(own) {
				own = []Route{{Dst: fam.dflt, Via: own[0].Via, Dev: own[0].Dev}}
			}
			routes = append(routes, own...)
		}
		if len(routes) > 0 {
			tables[name] = routes
		}
	}
	return tables
}

func oneGateway(rs []Route) bool {
	for _, r := range rs[1:] {
		if r.Via != rs[0].Via || r.Dev != rs[0].Dev {
			return false
		}
	}
	return true
}

func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// PathCost returns the cost of the shortest path from one node to
// another as Compute sees it, and whether there is one.
func PathCost(plan *topo.Plan, down map[*topo.PlannedLink]bool, from, to string) (Cost, bool) {
	g := newGraph(plan, down)
	src, ok1 := g.index[from]
	dst, ok2 := g.index[to]
	if !ok1 || !ok2 {
		return Cost{}, false
	}
	p := g.shortest(src)[dst]
	return p.cost, p.seen
}

// Path returns the nodes on the shortest path from one node to another
// (both included), following each node's own next hop as the installed
// routes do; nil when there is none.
func Path(plan *topo.Plan, down map[*topo.PlannedLink]bool, from, to string) []string {
	g := newGraph(plan, down)
	cur, ok1 := g.index[from]
	dst, ok2 := g.index[to]
	if !ok1 || !ok2 {
		return nil
	}
	out := []string{from}
	for cur != dst {
		p := g.shortest(cur)[dst]
		if !p.seen || p.first < 0 || len(out) > len(g.names) {
			return nil
		}
		cur = g.adj[cur][p.first].to
		out = append(out, g.names[cur])
	}
	return out
}
