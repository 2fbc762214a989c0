package hymn

import "container/heap"

// mergeOrder returns an order in which to create links, given each link's
// two end nodes: the link that joins the two smallest broadcast domains
// first, so that the network stays in small pieces until the last links.
//
// Why: hosts talk as soon as their interface is up (IPv6 duplicate
// address detection, MLD reports, router solicitations), and every such
// frame is flooded through the whole piece of network it reaches. Built in
// the plan's order, linear,1000's switch chain grows from one end, each
// host's chatter crosses a chain as long as what is built so far, and the
// flooding cost grows with the square of the size: about half of the link
// phase's CPU samples were that forwarding, and the 999 switch links took
// 8-10 s where the 1000 host links before them took 1.3. Joined in balanced merges, the pieces double in size
// round by round and the chatter of the build crosses a few hops on
// average. The finished network is the same; only the order of the (already
// concurrent, so unordered) link creations changes.
//
// Greedy over a heap of the links' merge sizes: components only grow, so a
// link's stored size is a lower bound, and a link popped with a stale size
// goes back with its current one. Ties keep the plan's order.
func mergeOrder(ends [][2]string) []int {
	sets := newNodeSets()
	cost := func(i int) int {
		a, b := sets.find(ends[i][0]), sets.find(ends[i][1])
		if a == b {
			return sets.size[a]
		}
		return sets.size[a] + sets.size[b]
	}
	h := make(linkHeap, len(ends))
	for i := range ends {
		h[i] = linkCost{link: i, cost: cost(i)}
	}
	heap.Init(&h)
	order := make([]int, 0, len(ends))
	for h.Len() > 0 {
		top := heap.Pop(&h).(linkCost)
		if c := cost(top.link); c > top.cost {
			heap.Push(&h, linkCost{link: top.link, cost: c})
			continue
		}
		order = append(order, top.link)
		sets.join(ends[top.link][0], ends[top.link][1])
	}
	return order
}

// nodeSets is a union-find over node names, with each set's size (what
// mergeOrder needs; switchLoop asks only whether two nodes are joined).
type nodeSets struct {
	parent map[string]string
	size   map[string]int // of each set, at its root
}

func newNodeSets() *nodeSets {
	return &nodeSets{parent: map[string]string{}, size: map[string]int{}}
}

// find returns the root of v's set; a name not seen before is a set of one.
func (s *nodeSets) find(v string) string {
	p, ok := s.parent[v]
	if !ok {
		s.parent[v], s.size[v] = v, 1
		return v
	}
	if p == v {
		return v
	}
	r := s.find(p)
	s.parent[v] = r
	return r
}

// join merges the sets of a and b; it reports false if they were one set.
func (s *nodeSets) join(a, b string) bool {
	ra, rb := s.find(a), s.find(b)
	if ra == rb {
		return false
	}
	if s.size[ra] < s.size[rb] {
		ra, rb = rb, ra
	}
	s.parent[rb] = ra
	s.size[ra] += s.size[rb]
	return true
}

// linkCost is a link and the size of the domain it would make.
type linkCost struct{ link, cost int }

// linkHeap is a min-heap of linkCost, ties broken by the plan's order.
type linkHeap []linkCost

func (h linkHeap) Len() int { return len(h) }
func (h linkHeap) Less(i, j int) bool {
	if h[i].cost != h[j].cost {
		return h[i].cost < h[j].cost
	}
	return h[i].link < h[j].link
}
func (h linkHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *linkHeap) Push(x any)   { *h = append(*h, x.(linkCost)) }
func (h *linkHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// splitOrder returns the indexes of nodes in the order teardown deletes
// them: an end of each link mergeOrder makes last first, so that the
// first deletions cut the network into halves, quarters..., and what the
// hosts keep flooding (their IPv6 router solicitations repeat every few
// seconds) stops crossing the whole network while the rest is deleted.
// Deleted end to start, a linear,1000 chain stays whole until its last
// switches go, and a teardown met by such a wave took 2 to 4.5 s instead
// of 0.3. Nodes on no link keep their place, after the others.
func splitOrder(nodes []string, ends [][2]string) []int {
	index := make(map[string]int, len(nodes))
	for i, name := range nodes {
		index[name] = i
	}
	order := make([]int, 0, len(nodes))
	taken := make([]bool, len(nodes))
	// A link is cut once either end is deleted: one end per link not cut
	// yet, the first of its ends that is in nodes.
	cut := func(name string) bool { i, ok := index[name]; return ok && taken[i] }
	merges := mergeOrder(ends)
	for k := len(merges) - 1; k >= 0; k-- {
		e := ends[merges[k]]
		if cut(e[0]) || cut(e[1]) {
			continue
		}
		for _, name := range e {
			if i, ok := index[name]; ok {
				taken[i] = true
				order = append(order, i)
				break
			}
		}
	}
	for i := range nodes {
		if !taken[i] {
			order = append(order, i)
		}
	}
	return order
}
