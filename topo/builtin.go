package topo

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// builtin describes one of Mininet's topologies: its parameters (in call
// order), their defaults and its build function.
type builtin struct {
	params   []string
	defaults map[string]int
	build    func(p map[string]int, lim Limits) (*Topo, error)
}

var builtins = map[string]builtin{
	"minimal":  {nil, nil, func(_ map[string]int, lim Limits) (*Topo, error) { return single(2, lim) }},
	"single":   {[]string{"k"}, map[string]int{"k": 2}, func(p map[string]int, lim Limits) (*Topo, error) { return single(p["k"], lim) }},
	"reversed": {[]string{"k"}, map[string]int{"k": 2}, func(p map[string]int, lim Limits) (*Topo, error) { return reversed(p["k"], lim) }},
	"linear":   {[]string{"k", "n"}, map[string]int{"k": 2, "n": 1}, func(p map[string]int, lim Limits) (*Topo, error) { return linear(p["k"], p["n"], lim) }},
	"tree":     {[]string{"depth", "fanout"}, map[string]int{"depth": 1, "fanout": 2}, func(p map[string]int, lim Limits) (*Topo, error) { return tree(p["depth"], p["fanout"], lim) }},
	"torus":    {[]string{"x", "y", "n"}, map[string]int{"n": 1}, func(p map[string]int, lim Limits) (*Topo, error) { return torus(p["x"], p["y"], p["n"], lim) }},
}

// The node counts of the built-in topologies, computed before anything is
// generated (saturating, so a count that does not fit exceeds every limit).
// Arguments are checked for range first.

func singleNodes(k int) uint64 { return satAdd(uint64(k), 1) }

func linearNodes(k, n int) uint64 { return satMul(uint64(k), satAdd(uint64(n), 1)) }

// treeNodes is 1 + f + f^2 + ... + f^depth (switches, then the hosts).
func treeNodes(depth, fanout int) uint64 {
	if fanout == 1 {
		return satAdd(uint64(depth), 1) // a chain: the loop below would run depth times
	}
	total, level := uint64(0), uint64(1)
	for d := 0; d <= depth; d++ {
		total = satAdd(total, level)
		level = satMul(level, uint64(fanout))
		if total == math.MaxUint64 {
			break
		}
	}
	return total
}

func torusNodes(x, y, n int) uint64 {
	return satMul(satMul(uint64(x), uint64(y)), satAdd(uint64(n), 1))
}

// BuiltinNames lists Mininet's topology names, sorted.
func BuiltinNames() []string {
	var names []string
	for n := range builtins {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// FromSpecString builds a built-in topology from an mn --topo value.
func FromSpecString(s string) (*Topo, error) {
	spec, err := ParseSpec(s)
	if err != nil {
		return nil, err
	}
	return FromSpec(spec)
}

// FromSpec builds a built-in topology from a parsed spec, within the
// default Limits.
func FromSpec(spec Spec) (*Topo, error) { return FromSpecWith(spec, Limits{}) }

// FromSpecStringWith is FromSpecString within the given limits.
func FromSpecStringWith(s string, lim Limits) (*Topo, error) {
	spec, err := ParseSpec(s)
	if err != nil {
		return nil, err
	}
	return FromSpecWith(spec, lim)
}

// FromSpecWith builds a built-in topology from a parsed spec; a topology
// with more nodes than lim allows is refused before it is generated.
func FromSpecWith(spec Spec, lim Limits) (*Topo, error) {
	b, ok := builtins[spec.Name]
	if !ok {
		return nil, fmt.Errorf("%w: unknown topology %q; valid topologies are: %s",
			ErrBadSpec, clip(spec.Name), strings.Join(BuiltinNames(), ", "))
	}
	p, err := spec.bindInts(b.params, b.defaults)
	if err != nil {
		return nil, err
	}
	return b.build(p, lim.named("--topo "+spec.String()))
}

func atLeast(topoName, param string, v, min int) error {
	if v < min {
		return fmt.Errorf("%w: topology %s: %s must be at least %d, got %d", ErrBadSpec, topoName, param, min, v)
	}
	return nil
}

// Single is Mininet's SingleSwitchTopo: s1 with hosts h1..hk.
func Single(k int) (*Topo, error) { return single(k, Limits{}) }

func single(k int, lim Limits) (*Topo, error) {
	if err := atLeast("single", "k", k, 1); err != nil {
		return nil, err
	}
	if err := lim.checkBuiltin(fmt.Sprintf("single,%d", k), singleNodes(k)); err != nil {
		return nil, err
	}
	t := New()
	s1 := t.AddSwitch("s1")
	for i := 1; i <= k; i++ {
		t.AddLink(t.AddHost(fmt.Sprintf("h%d", i)), s1)
	}
	return t, t.Err()
}

// Reversed is Mininet's SingleSwitchReversedTopo: like Single, but h1 sits on
// the highest switch port.
func Reversed(k int) (*Topo, error) { return reversed(k, Limits{}) }

func reversed(k int, lim Limits) (*Topo, error) {
	if err := atLeast("reversed", "k", k, 1); err != nil {
		return nil, err
	}
	if err := lim.checkBuiltin(fmt.Sprintf("reversed,%d", k), singleNodes(k)); err != nil {
		return nil, err
	}
	t := New()
	s1 := t.AddSwitch("s1")
	for i := 1; i <= k; i++ {
		t.AddLinkPorts(t.AddHost(fmt.Sprintf("h%d", i)), s1, 0, k-i+1)
	}
	return t, t.Err()
}

// Linear is Mininet's LinearTopo: switches s1..sk in a chain with n hosts on
// each (h<i> when n is 1, h<j>s<i> otherwise).
func Linear(k, n int) (*Topo, error) { return linear(k, n, Limits{}) }

func linear(k, n int, lim Limits) (*Topo, error) {
	if err := atLeast("linear", "k", k, 1); err != nil {
		return nil, err
	}
	if err := atLeast("linear", "n", n, 1); err != nil {
		return nil, err
	}
	if err := lim.checkBuiltin(fmt.Sprintf("linear,%d,%d", k, n), linearNodes(k, n)); err != nil {
		return nil, err
	}
	t := New()
	last := ""
	for i := 1; i <= k; i++ {
		sw := t.AddSwitch(fmt.Sprintf("s%d", i))
		for j := 1; j <= n; j++ {
			name := fmt.Sprintf("h%d", i)
			if n > 1 {
				name = fmt.Sprintf("h%ds%d", j, i)
			}
			t.AddLink(t.AddHost(name), sw)
		}
		if last != "" {
			t.AddLink(sw, last)
		}
		last = sw
	}
	return t, t.Err()
}

// Tree is Mininet's TreeTopo: a tree of switches of the given depth and
// fanout with hosts as leaves, numbered in pre-order. Each child subtree is
// built before the link to its parent, which fixes Mininet's port order.
func Tree(depth, fanout int) (*Topo, error) { return tree(depth, fanout, Limits{}) }

func tree(depth, fanout int, lim Limits) (*Topo, error) {
	if err := atLeast("tree", "depth", depth, 0); err != nil {
		return nil, err
	}
	if err := atLeast("tree", "fanout", fanout, 1); err != nil {
		return nil, err
	}
	if err := lim.checkBuiltin(fmt.Sprintf("tree,depth=%d,fanout=%d", depth, fanout), treeNodes(depth, fanout)); err != nil {
		return nil, err
	}
	t := New()
	hostNum, switchNum := 1, 1
	var add func(depth int) string
	add = func(depth int) string {
		if depth == 0 {
			h := t.AddHost(fmt.Sprintf("h%d", hostNum))
			hostNum++
			return h
		}
		sw := t.AddSwitch(fmt.Sprintf("s%d", switchNum))
		switchNum++
		for range fanout {
			t.AddLink(sw, add(depth-1))
		}
		return sw
	}
	add(depth)
	return t, t.Err()
}

// Torus is Mininet's TorusTopo: an x by y grid of switches s<i>x<j> with
// wrap-around links, n hosts per switch. It has loops, so its switches get
// STP turned on.
func Torus(x, y, n int) (*Topo, error) { return torus(x, y, n, Limits{}) }

func torus(x, y, n int, lim Limits) (*Topo, error) {
	if x < 3 || y < 3 {
		return nil, fmt.Errorf("%w: topology torus: x and y must be at least 3 (Mininet's rule for compatibility with 2.1), got %dx%d", ErrBadSpec, x, y)
	}
	if err := atLeast("torus", "n", n, 1); err != nil {
		return nil, err
	}
	if err := lim.checkBuiltin(fmt.Sprintf("torus,%d,%d,%d", x, y, n), torusNodes(x, y, n)); err != nil {
		return nil, err
	}
	t := New()
	switches := map[[2]int]string{}
	for i := 0; i < x; i++ {
		for j := 0; j < y; j++ {
			loc := fmt.Sprintf("%dx%d", i+1, j+1)
			sw := t.AddSwitch("s"+loc, Params{"dpid": fmt.Sprintf("%x", (i+1)*256+(j+1)), "stp": "1"})
			switches[[2]int{i, j}] = sw
			for k := 1; k <= n; k++ {
				name := "h" + loc
				if n > 1 {
					name = fmt.Sprintf("h%sx%d", loc, k)
				}
				t.AddLink(t.AddHost(name), sw)
			}
		}
	}
	for i := 0; i < x; i++ {
		for j := 0; j < y; j++ {
			sw := switches[[2]int{i, j}]
			t.AddLink(sw, switches[[2]int{i, (j + 1) % y}])
			t.AddLink(sw, switches[[2]int{(i + 1) % x, j}])
		}
	}
	return t, t.Err()
}

// RoutedLine is CIMininet's line without switches: h1 … hn in a chain,
// link k joining hk and h(k+1) on 10.0.k.0/24 (hk .1, h(k+1) .2), the
// inner nodes routers, every node with static routes to every subnet. It
// has no Mininet counterpart, so no --topo name; examples and benches
// build on it and adjust node and link parameters afterwards.
func RoutedLine(n int) (*Topo, error) {
	if err := atLeast("routed line", "n", n, 2); err != nil {
		return nil, err
	}
	if n > 254 {
		return nil, fmt.Errorf("%w: topology routed line: n must be at most 254 (one 10.0.k.0/24 per link), got %d", ErrBadSpec, n)
	}
	t := New()
	for k := 1; k <= n; k++ {
		p := Params{}
		if k == 1 {
			p["ip"] = "10.0.1.1/24" // h1's only interface faces h2
		} else {
			p["ip"] = fmt.Sprintf("10.0.%d.2/24", k-1)
		}
		var routes []string
		for j := 1; j < n; j++ {
			switch {
			case j < k-1: // subnets to the left: via the left neighbour
				routes = append(routes, fmt.Sprintf("10.0.%d.0/24 via 10.0.%d.1", j, k-1))
			case j > k: // subnets to the right: via the right neighbour
				routes = append(routes, fmt.Sprintf("10.0.%d.0/24 via 10.0.%d.2", j, k))
			}
		}
		p["routes"] = strings.Join(routes, ";")
		name := fmt.Sprintf("h%d", k)
		if k > 1 && k < n {
			t.AddRouter(name, p)
		} else {
			t.AddHost(name, p)
		}
	}
	for k := 1; k < n; k++ {
		t.AddLink(fmt.Sprintf("h%d", k), fmt.Sprintf("h%d", k+1), Params{"ip1": fmt.Sprintf("10.0.%d.1/24", k)})
	}
	return t, t.Err()
}
