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
// flooding cost grows with the square of the size: half the CPU of the
// link phase went into forwarding it, and the last 1000 links took 8 s
// instead of 1.3. Joined in balanced merges, the pieces double in size
// round by round and the chatter of the build crosses a few hops on
// average. The finished network is the same; only the order of the (already
// concurrent, so unordered) link creations changes.
//
// Greedy over a heap of the links' merge sizes: components only grow, so a
// link's stored size is a lower bound, and a link popped with a stale size
// goes back with its current one. Ties keep the plan's order.
func mergeOrder(ends [][2]string) []int {
	parent := map[string]string{}
	size := map[string]int{}
	var find func(string) string
	find = func(v string) string {
		p, ok := parent[v]
		if !ok {
			parent[v], size[v] = v, 1
			return v
		}
		if p == v {
			return v
		}
		r := find(p)
		parent[v] = r
		return r
	}
	cost := func(i int) int {
		a, b := find(ends[i][0]), find(ends[i][1])
		if a == b {
			return size[a]
		}
		return size[a] + size[b]
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
		a, b := find(ends[top.link][0]), find(ends[top.link][1])
		if a != b {
			if size[a] < size[b] {
				a, b = b, a
			}
			parent[b] = a
			size[a] += size[b]
		}
	}
	return order
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
