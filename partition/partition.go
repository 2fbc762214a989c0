package partition

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hymn-net/hymn/topo"
	"github.com/hymn-net/hymn/vm"
)

// The node parameters that carry placement hints. topo's file loader
// writes them from placement: keys; Go callers may set them directly.
const (
	// ParamPlacement pins a node to a worker: a worker number, 0-based.
	ParamPlacement = topo.ParamPlacement
	// ParamGroup names a group of nodes kept on one worker.
	ParamGroup = topo.ParamPlacementGroup
)

// ErrBadInput matches every error Split returns for options or hints that
// cannot be honoured (errors.Is), as opposed to a plan it cannot read.
var ErrBadInput = errors.New("cannot partition")

// Options say how to split.
type Options struct {
	// Parts is the number of workers, at least 1 and at most the node
	// count (a worker without nodes would be idle).
	Parts int
	// Slack widens the balance band: a part may hold up to Slack nodes
	// more than ceil(n/k) or fewer than floor(n/k) (never fewer than 1).
	// It is what placement hints that crowd one worker need.
	Slack int
	// VMHosts says hosts without a backend parameter are VMs (hymn
	// --nodes vm), so their memory counts in the memory balance.
	VMHosts bool
}

// Result is a split: which worker runs each node, and what that costs.
type Result struct {
	Parts  int            `json:"parts"`
	Assign map[string]int `json:"assign"` // node name -> worker
	// Nodes lists each part's nodes in the plan's order.
	Nodes [][]string `json:"nodes"`
	// Cut are the links whose ends are on different workers, in the
	// plan's link order, as "node1-ethX<->node2-ethY".
	Cut []string `json:"cut"`
	// MemoryMiB is each part's VM memory (0 without VM nodes).
	MemoryMiB []int64 `json:"memory_mib"`
}

// CutSize is the number of cut links.
func (r *Result) CutSize() int { return len(r.Cut) }

// Sizes returns each part's node count.
func (r *Result) Sizes() []int {
	out := make([]int, len(r.Nodes))
	for i, ns := range r.Nodes {
		out[i] = len(ns)
	}
	return out
}

// Imbalance is the largest part's node count less the smallest's.
func (r *Result) Imbalance() int {
	s := r.Sizes()
	return slices.Max(s) - slices.Min(s)
}

// Part returns the worker of a node, or -1 if the plan has no such node.
func (r *Result) Part(node string) int {
	if p, ok := r.Assign[node]; ok {
		return p
	}
	return -1
}

// unit is what the algorithm moves: one node, or a placement group
// contracted into one.
type unit struct {
	members []int // node indices in plan order
	weight  int
	mem     int64
	pin     int // -1: free
	adj     []edge
	order   int // position in the peripheral BFS order
}

type edge struct{ to, w int }

type splitter struct {
	k       int
	lo, hi  int
	units   []*unit
	part    []int // unit -> part, -1 unassigned
	weight  []int // part -> node count
	mem     []int64
	targets []int
}

// Split partitions a plan into opts.Parts parts. See the package comment
// for the method; the result is deterministic.
func Split(plan *topo.Plan, opts Options) (*Result, error) {
	if plan == nil {
		return nil, fmt.Errorf("%w: no topology", ErrBadInput)
	}
	n := len(plan.Nodes)
	k := opts.Parts
	switch {
	case k < 1:
		return nil, fmt.Errorf("%w: the number of workers must be at least 1, got %d", ErrBadInput, k)
	case n == 0:
		return nil, fmt.Errorf("%w: the topology has no nodes", ErrBadInput)
	case k > n:
		return nil, fmt.Errorf("%w: %d workers for %d nodes: every worker needs at least one node (use at most %d workers)", ErrBadInput, k, n, n)
	case opts.Slack < 0:
		return nil, fmt.Errorf("%w: slack must not be negative, got %d", ErrBadInput, opts.Slack)
	case opts.Slack > n:
		return nil, fmt.Errorf("%w: slack %d is more than the topology's %d nodes", ErrBadInput, opts.Slack, n)
	}
	s := &splitter{k: k}
	base, rem := n/k, n%k
	ceil := base
	if rem > 0 {
		ceil++
	}
	s.lo, s.hi = max(1, base-opts.Slack), ceil+opts.Slack
	if err := s.buildUnits(plan, opts); err != nil {
		return nil, err
	}
	s.part = make([]int, len(s.units))
	for i := range s.part {
		s.part[i] = -1
	}
	s.weight = make([]int, k)
	s.mem = make([]int64, k)
	s.targets = make([]int, k)
	for p := range s.targets {
		s.targets[p] = base
		if p < rem {
			s.targets[p]++
		}
	}
	if err := s.placePinned(plan); err != nil {
		return nil, err
	}
	if err := s.placeGroups(plan); err != nil {
		return nil, err
	}
	// Growing depends on where it starts; a few fixed starts are tried
	// and the smallest cut kept (the first on a tie), which stays
	// deterministic.
	fixed, fixedW, fixedM, fixedT := slices.Clone(s.part), slices.Clone(s.weight), slices.Clone(s.mem), slices.Clone(s.targets)
	var best []int
	bestCut := -1
	for _, start := range s.starts() {
		copy(s.part, fixed)
		copy(s.weight, fixedW)
		copy(s.mem, fixedM)
		copy(s.targets, fixedT)
		s.bfsOrder(start)
		s.grow()
		if err := s.placeLeftovers(plan); err != nil {
			return nil, err
		}
		s.refine()
		if c := s.cut(); bestCut < 0 || c < bestCut {
			best, bestCut = slices.Clone(s.part), c
		}
	}
	copy(s.part, best)
	for p := range s.k {
		s.weight[p], s.mem[p] = 0, 0
	}
	for u, p := range s.part {
		s.weight[p] += s.units[u].weight
		s.mem[p] += s.units[u].mem
	}
	s.balanceMemory()
	s.renumber()
	return s.result(plan)
}

// renumber orders the parts by their first node in the plan (h1's part is
// worker 0), unless hints pinned nodes to numbered workers.
func (s *splitter) renumber() {
	for _, un := range s.units {
		if un.pin >= 0 {
			return
		}
	}
	first := make([]int, s.k)
	for p := range first {
		first[p] = -1
	}
	for u, un := range s.units {
		if p := s.part[u]; first[p] < 0 || un.members[0] < first[p] {
			first[p] = un.members[0]
		}
	}
	order := make([]int, s.k)
	for p := range order {
		order[p] = p
	}
	slices.SortFunc(order, func(a, b int) int { return first[a] - first[b] })
	newOf := make([]int, s.k)
	for np, p := range order {
		newOf[p] = np
	}
	w, m := slices.Clone(s.weight), slices.Clone(s.mem)
	for p := range s.k {
		s.weight[newOf[p]], s.mem[newOf[p]] = w[p], m[p]
	}
	for u := range s.part {
		s.part[u] = newOf[s.part[u]]
	}
}

// starts returns the units growing is tried from: the plan's first node
// (walked to a peripheral one), the middle one, and the first node taken
// as it is.
func (s *splitter) starts() []starting {
	n := len(s.units)
	out := []starting{{0, 3}, {0, 0}}
	if n > 2 {
		out = append(out, starting{n / 2, 3}, starting{n / 3, 0})
	}
	return out
}

type starting struct{ unit, hops int }

func (s *splitter) cut() int {
	c := 0
	for u, un := range s.units {
		for _, e := range un.adj {
			if e.to > u && s.part[e.to] != s.part[u] {
				c += e.w
			}
		}
	}
	return c
}

func (s *splitter) buildUnits(plan *topo.Plan, opts Options) error {
	index := map[string]int{}
	for i, pn := range plan.Nodes {
		index[pn.Name] = i
	}
	var errs []error
	pins := make([]int, len(plan.Nodes))
	mems := make([]int64, len(plan.Nodes))
	for i, pn := range plan.Nodes {
		pins[i] = -1
		if v, ok := pn.Params[ParamPlacement]; ok {
			w, err := topo.ParsePlacement(v)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%w: node %s: %v", ErrBadInput, pn.Name, err))
			case w >= s.k:
				errs = append(errs, fmt.Errorf("%w: node %s: placement %d names an unknown worker: there are %d workers, numbered 0 to %d",
					ErrBadInput, pn.Name, w, s.k, s.k-1))
			default:
				pins[i] = w
			}
		}
		if isVM(pn, opts) {
			mib, err := vm.MemoryMiB(pn.Params["memory"])
			if pn.Params["memory"] == "" && pn.Params["mem"] != "" {
				mib, err = vm.MemoryMiB(pn.Params["mem"])
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: node %s: %v", ErrBadInput, pn.Name, err))
			}
			mems[i] = mib
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Groups contract into one unit each, in the order their first member
	// appears in the plan.
	unitOf := make([]int, len(plan.Nodes))
	groups := map[string]int{}
	for i, pn := range plan.Nodes {
		g, grouped := pn.Params[ParamGroup]
		if u, seen := groups[g]; grouped && seen {
			unitOf[i] = u
			un := s.units[u]
			un.members = append(un.members, i)
			un.weight++
			un.mem += mems[i]
			if pins[i] >= 0 && un.pin >= 0 && pins[i] != un.pin {
				first := plan.Nodes[un.members[0]].Name
				for _, m := range un.members {
					if pins[m] >= 0 {
						first = plan.Nodes[m].Name
						break
					}
				}
				return fmt.Errorf("%w: placement group %q: %s is pinned to worker %d but %s to worker %d; a group stays on one worker",
					ErrBadInput, g, first, un.pin, pn.Name, pins[i])
			}
			if pins[i] >= 0 {
				un.pin = pins[i]
			}
			continue
		}
		unitOf[i] = len(s.units)
		if grouped {
			groups[g] = len(s.units)
		}
		s.units = append(s.units, &unit{members: []int{i}, weight: 1, mem: mems[i], pin: pins[i]})
	}
	for _, u := range s.units {
		if u.weight > s.hi {
			return fmt.Errorf("%w: placement group %q holds %d nodes (%s), more than the %d a worker may hold when %d nodes are split over %d workers; use more slack or a smaller group",
				ErrBadInput, plan.Nodes[u.members[0]].Params[ParamGroup], u.weight, nodeList(plan, u.members), s.hi, len(plan.Nodes), s.k)
		}
	}
	// Adjacency between units, parallel links adding up, sorted so every
	// walk over it is deterministic.
	w := make([]map[int]int, len(s.units))
	for i := range w {
		w[i] = map[int]int{}
	}
	for _, l := range plan.Links {
		a, b := unitOf[index[l.Intf1.Node]], unitOf[index[l.Intf2.Node]]
		if a == b {
			continue
		}
		w[a][b]++
		w[b][a]++
	}
	for i, u := range s.units {
		for to, wt := range w[i] {
			u.adj = append(u.adj, edge{to, wt})
		}
		slices.SortFunc(u.adj, func(x, y edge) int { return x.to - y.to })
	}
	return nil
}

// isVM says whether a node runs as a VM: its backend parameter, else the
// network's default for hosts (switches never are).
func isVM(pn *topo.PlannedNode, opts Options) bool {
	if pn.IsSwitch() {
		return false
	}
	if b, ok := pn.Params["backend"]; ok {
		return b == "vm"
	}
	return opts.VMHosts
}

func nodeList(plan *topo.Plan, idx []int) string {
	names := make([]string, 0, min(len(idx), 6))
	for i, m := range idx {
		if i == 5 {
			names = append(names, fmt.Sprintf("... %d more", len(idx)-5))
			break
		}
		names = append(names, plan.Nodes[m].Name)
	}
	return strings.Join(names, ", ")
}

// bfsOrder numbers the units in breadth-first order from a pseudo-
// peripheral unit (the last one reached by a BFS from the previous start,
// repeated), so growing a part along that order walks from one end of the
// graph to the other. Disconnected pieces follow each other in plan order.
func (s *splitter) bfsOrder(st starting) {
	n := len(s.units)
	bfs := func(start int, seen []bool) []int {
		queue := []int{start}
		seen[start] = true
		for i := 0; i < len(queue); i++ {
			for _, e := range s.units[queue[i]].adj {
				if !seen[e.to] {
					seen[e.to] = true
					queue = append(queue, e.to)
				}
			}
		}
		return queue
	}
	seen := make([]bool, n)
	pos := 0
	for i := 0; i < n; i++ {
		first := (st.unit + i) % n
		if seen[first] {
			continue
		}
		start := first
		for range st.hops {
			tmp := make([]bool, n)
			q := bfs(start, tmp)
			last := q[len(q)-1]
			if last == start {
				break
			}
			start = last
		}
		for _, u := range bfs(start, seen) {
			s.units[u].order = pos
			pos++
		}
	}
}

func (s *splitter) assign(u, p int) {
	if old := s.part[u]; old >= 0 {
		s.weight[old] -= s.units[u].weight
		s.mem[old] -= s.units[u].mem
	}
	s.part[u] = p
	s.weight[p] += s.units[u].weight
	s.mem[p] += s.units[u].mem
}

// placePinned puts pinned units on their workers and shifts the other
// parts' targets so the totals still add up.
func (s *splitter) placePinned(plan *topo.Plan) error {
	for u, un := range s.units {
		if un.pin >= 0 {
			s.assign(u, un.pin)
		}
	}
	for p := range s.k {
		if s.weight[p] > s.hi {
			var members []int
			for u, un := range s.units {
				if s.part[u] == p {
					members = append(members, un.members...)
				}
			}
			slices.Sort(members)
			return fmt.Errorf("%w: placement hints put %d nodes on worker %d (%s), more than the %d a balanced split of %d nodes over %d workers allows; use more slack or pin fewer nodes there",
				ErrBadInput, s.weight[p], p, nodeList(plan, members), s.hi, len(plan.Nodes), s.k)
		}
	}
	return s.retarget()
}

// retarget raises the target of every part already above it and lowers
// others (never below what they hold or the band) to keep the sum.
func (s *splitter) retarget() error {
	excess := 0
	for p := range s.k {
		if s.weight[p] > s.targets[p] {
			excess += s.weight[p] - s.targets[p]
			s.targets[p] = s.weight[p]
		}
	}
	for excess > 0 {
		moved := false
		// Lower the largest targets first, highest part first, so the
		// band stays as even as it can.
		for p := s.k - 1; p >= 0 && excess > 0; p-- {
			if s.targets[p] > max(s.weight[p], s.lo) && s.targets[p] == slices.Max(s.targets) {
				s.targets[p]--
				excess--
				moved = true
			}
		}
		if !moved {
			for p := s.k - 1; p >= 0 && excess > 0; p-- {
				if s.targets[p] > max(s.weight[p], s.lo) {
					s.targets[p]--
					excess--
					moved = true
				}
			}
		}
		if !moved {
			return fmt.Errorf("%w: placement hints leave no balanced split: the workers would hold %v nodes, outside %d-%d each; use more slack",
				ErrBadInput, s.weight, s.lo, s.hi)
		}
	}
	return nil
}

// conn returns the link weight from unit u to part p.
func (s *splitter) conn(u, p int) int {
	c := 0
	for _, e := range s.units[u].adj {
		if s.part[e.to] == p {
			c += e.w
		}
	}
	return c
}

func (s *splitter) degree(u int) int {
	d := 0
	for _, e := range s.units[u].adj {
		d += e.w
	}
	return d
}

// placeGroups places the free groups of several nodes, largest first, on
// the part most linked to them that has room.
func (s *splitter) placeGroups(plan *topo.Plan) error {
	var groups []int
	for u, un := range s.units {
		if un.pin < 0 && un.weight > 1 {
			groups = append(groups, u)
		}
	}
	slices.SortStableFunc(groups, func(a, b int) int { return s.units[b].weight - s.units[a].weight })
	for _, u := range groups {
		w := s.units[u].weight
		best := -1
		for _, limit := range []func(p int) int{func(p int) int { return s.targets[p] }, func(int) int { return s.hi }} {
			for p := range s.k {
				if s.weight[p]+w > limit(p) {
					continue
				}
				if best < 0 || s.conn(u, p) > s.conn(u, best) ||
					(s.conn(u, p) == s.conn(u, best) && s.weight[p] < s.weight[best]) {
					best = p
				}
			}
			if best >= 0 {
				break
			}
		}
		if best < 0 {
			return fmt.Errorf("%w: placement group %q (%d nodes: %s) fits on no worker: they hold %v of at most %d nodes each; use more slack or smaller groups",
				ErrBadInput, plan.Nodes[s.units[u].members[0]].Params[ParamGroup], w, nodeList(plan, s.units[u].members), s.weight, s.hi)
		}
		s.assign(u, best)
		if err := s.retarget(); err != nil {
			return err
		}
	}
	return nil
}

// grow fills each part up to its target, starting from the first
// unassigned unit in BFS order and always adding the frontier unit with the
// best gain (links into the part minus links elsewhere), so parts come out
// connected and cut few links.
func (s *splitter) grow() {
	byOrder := make([]int, len(s.units))
	for u, un := range s.units {
		byOrder[un.order] = u
	}
	for p := range s.k {
		frontier := map[int]bool{}
		addFrontier := func(u int) {
			for _, e := range s.units[u].adj {
				if s.part[e.to] < 0 {
					frontier[e.to] = true
				}
			}
		}
		for u := range s.units {
			if s.part[u] == p {
				addFrontier(u)
			}
		}
		for s.weight[p] < s.targets[p] {
			room := s.targets[p] - s.weight[p]
			best, bestGain := -1, 0
			for u := range frontier {
				if s.part[u] >= 0 {
					delete(frontier, u)
					continue
				}
				if s.units[u].weight > room {
					continue
				}
				c := s.conn(u, p)
				g := 2*c - s.degree(u)
				if best < 0 || g > bestGain || (g == bestGain && s.units[u].order < s.units[best].order) {
					best, bestGain = u, g
				}
			}
			if best < 0 {
				for _, u := range byOrder {
					if s.part[u] < 0 && s.units[u].weight <= room {
						best = u
						break
					}
				}
			}
			if best < 0 {
				break
			}
			s.assign(best, p)
			delete(frontier, best)
			addFrontier(best)
		}
	}
}

// placeLeftovers puts units growing could not fit (after groups bent the
// targets) on the most linked part with room.
func (s *splitter) placeLeftovers(plan *topo.Plan) error {
	for u, un := range s.units {
		if s.part[u] >= 0 {
			continue
		}
		best := -1
		for p := range s.k {
			if s.weight[p]+un.weight > s.hi {
				continue
			}
			if best < 0 || s.conn(u, p) > s.conn(u, best) ||
				(s.conn(u, p) == s.conn(u, best) && s.weight[p] < s.weight[best]) {
				best = p
			}
		}
		if best < 0 {
			return fmt.Errorf("%w: no worker has room for %s within %d nodes each (they hold %v); use more slack",
				ErrBadInput, nodeList(plan, un.members), s.hi, s.weight)
		}
		s.assign(u, best)
	}
	for p := range s.k {
		if s.weight[p] < s.lo {
			return fmt.Errorf("%w: placement hints leave worker %d with %d nodes, fewer than the %d a balanced split allows; use more slack",
				ErrBadInput, p, s.weight[p], s.lo)
		}
	}
	return nil
}

func (s *splitter) canMove(u, from, to int) bool {
	w := s.units[u].weight
	return s.units[u].pin < 0 && s.weight[from]-w >= s.lo && s.weight[to]+w <= s.hi
}

func (s *splitter) linkWeight(u, v int) int {
	for _, e := range s.units[u].adj {
		if e.to == v {
			return e.w
		}
	}
	return 0
}

// refine improves the cut with moves and swaps that keep every part in
// the band, until a pass finds nothing (or after a bounded number of
// passes, so a pathological input cannot loop long).
func (s *splitter) refine() {
	for pass := 0; pass < 32; pass++ {
		improved := false
		for u := range s.units {
			if s.units[u].pin >= 0 {
				continue
			}
			a := s.part[u]
			ca := s.conn(u, a)
			bestP, bestGain := -1, 0
			for _, e := range s.units[u].adj {
				b := s.part[e.to]
				if b == a || !s.canMove(u, a, b) {
					continue
				}
				if g := s.conn(u, b) - ca; g > bestGain || (g == bestGain && g > 0 && b < bestP) {
					bestP, bestGain = b, g
				}
			}
			if bestP >= 0 {
				s.assign(u, bestP)
				improved = true
			}
		}
		if s.swapPass() {
			improved = true
		}
		if !improved {
			return
		}
	}
}

// swapPass exchanges pairs of units between two parts when that cuts fewer
// links: a boundary unit of one part with a boundary unit of the other, or
// with the other part's least linked unit (a leaf), which is how a
// boundary in the middle of a host–switch pair moves by one under exact
// balance.
func (s *splitter) swapPass() bool {
	improved := false
	for u := range s.units {
		if s.units[u].pin >= 0 {
			continue
		}
		a := s.part[u]
		ca := s.conn(u, a)
		seenParts := map[int]bool{}
		for _, e := range s.units[u].adj {
			b := s.part[e.to]
			if b == a || seenParts[b] {
				continue
			}
			seenParts[b] = true
			gu := s.conn(u, b) - ca
			bestV, bestGain := -1, 0
			for v := range s.units {
				if s.part[v] != b || s.units[v].pin >= 0 {
					continue
				}
				wu, wv := s.units[u].weight, s.units[v].weight
				if s.weight[a]-wu+wv < s.lo || s.weight[a]-wu+wv > s.hi || s.weight[b]-wv+wu < s.lo || s.weight[b]-wv+wu > s.hi {
					continue
				}
				gv := s.conn(v, a) - s.conn(v, b)
				g := gu + gv - 2*s.linkWeight(u, v)
				if g > bestGain {
					bestV, bestGain = v, g
				}
			}
			if bestV >= 0 {
				s.assign(u, b)
				s.assign(bestV, a)
				improved = true
				break
			}
		}
	}
	return improved
}

// balanceMemory evens out VM memory with swaps of single nodes between the
// heaviest and the lightest part (node counts unchanged), each swap
// lowering the spread, preferring swaps that cut fewer links.
func (s *splitter) balanceMemory() {
	if slices.Max(s.mem) == 0 {
		return
	}
	for iter := 0; iter < len(s.units)*s.k; iter++ {
		h, l := 0, 0
		for p := range s.k {
			if s.mem[p] > s.mem[h] {
				h = p
			}
			if s.mem[p] < s.mem[l] {
				l = p
			}
		}
		spread := s.mem[h] - s.mem[l]
		if spread == 0 {
			return
		}
		bx, by, bestCost := -1, -1, 0
		var bestD int64
		for x := range s.units {
			if s.part[x] != h || s.units[x].pin >= 0 || s.units[x].weight != 1 {
				continue
			}
			for y := range s.units {
				if s.part[y] != l || s.units[y].pin >= 0 || s.units[y].weight != 1 {
					continue
				}
				d := s.units[x].mem - s.units[y].mem
				if d <= 0 || d >= spread {
					continue
				}
				// The cut grows by what the swap loses.
				cost := -(s.conn(x, l) - s.conn(x, h) + s.conn(y, h) - s.conn(y, l) - 2*s.linkWeight(x, y))
				// Prefer the swap that leaves the smallest spread
				// between the two, then the cheapest.
				newSpread := spread - 2*d
				if newSpread < 0 {
					newSpread = -newSpread
				}
				bestSpread := spread - 2*bestD
				if bestSpread < 0 {
					bestSpread = -bestSpread
				}
				if bx < 0 || newSpread < bestSpread || (newSpread == bestSpread && cost < bestCost) {
					bx, by, bestCost, bestD = x, y, cost, d
				}
			}
		}
		if bx < 0 {
			return
		}
		s.assign(bx, l)
		s.assign(by, h)
	}
}

func (s *splitter) result(plan *topo.Plan) (*Result, error) {
	r := &Result{Parts: s.k, Assign: map[string]int{}, Nodes: make([][]string, s.k), MemoryMiB: slices.Clone(s.mem)}
	nodePart := make([]int, len(plan.Nodes))
	for u, un := range s.units {
		for _, m := range un.members {
			nodePart[m] = s.part[u]
		}
	}
	for i, pn := range plan.Nodes {
		r.Assign[pn.Name] = nodePart[i]
		r.Nodes[nodePart[i]] = append(r.Nodes[nodePart[i]], pn.Name)
	}
	for p, ns := range r.Nodes {
		if len(ns) == 0 {
			// The band's lower bound is at least 1, so this is a bug.
			return nil, fmt.Errorf("partition: worker %d got no nodes", p)
		}
	}
	for _, l := range plan.Links {
		if r.Assign[l.Intf1.Node] != r.Assign[l.Intf2.Node] {
			r.Cut = append(r.Cut, l.String())
		}
	}
	return r, nil
}

// String summarises a split: the parts' sizes and the cut.
func (r *Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d workers, sizes %v, %d cut links", r.Parts, r.Sizes(), len(r.Cut))
	return b.String()
}
