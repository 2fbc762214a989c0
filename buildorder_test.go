package hymn

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// linearEnds is linear,n's links in the plan's order: each host to its
// switch, then the switch chain.
func linearEnds(n int) [][2]string {
	var ends [][2]string
	for i := 1; i <= n; i++ {
		ends = append(ends, [2]string{fmt.Sprintf("h%d", i), fmt.Sprintf("s%d", i)})
	}
	for i := 2; i <= n; i++ {
		ends = append(ends, [2]string{fmt.Sprintf("s%d", i), fmt.Sprintf("s%d", i-1)})
	}
	return ends
}

// meanMergedSize is the mean size of the domain each link makes when the
// links are created in order: how far, on average, the frames flooded
// during the build travel.
func meanMergedSize(ends [][2]string, order []int) float64 {
	comp := map[string]int{}
	members := map[int][]string{}
	next := 0
	id := func(v string) int {
		if c, ok := comp[v]; ok {
			return c
		}
		comp[v] = next
		members[next] = []string{v}
		next++
		return next - 1
	}
	total := 0
	for _, i := range order {
		a, b := id(ends[i][0]), id(ends[i][1])
		if a != b {
			for _, v := range members[b] {
				comp[v] = a
			}
			members[a] = append(members[a], members[b]...)
			delete(members, b)
		}
		total += len(members[a])
	}
	return float64(total) / float64(len(order))
}

func TestMergeOrderBalancesTheChain(t *testing.T) {
	const n = 1000
	ends := linearEnds(n)
	order := mergeOrder(ends)
	if got := slices.Sorted(slices.Values(order)); !slices.Equal(got, identity(len(ends))) {
		t.Fatalf("mergeOrder is not a permutation of the %d links", len(ends))
	}
	// Merging in balanced rounds, each round makes domains that hold every
	// node at most once: the sizes made sum to at most nodes per round, over
	// log2(nodes)+1 rounds (plus the host round), so the mean over the links
	// is at most nodes*(log2(nodes)+2)/links. The plan's order grows the
	// chain from one end: a mean of about n/2.
	nodes := float64(2 * n)
	bound := nodes * (math.Log2(nodes) + 2) / float64(len(ends))
	if got := meanMergedSize(ends, order); got > bound {
		t.Errorf("mean domain size made per link %.1f, want at most %.1f", got, bound)
	}
	if plan := meanMergedSize(ends, identity(len(ends))); plan < n/4 {
		t.Errorf("the plan's order makes a mean domain of %.1f: the test no longer measures the chain's growth", plan)
	}
}

func TestMergeOrderKeepsLoopsAndTies(t *testing.T) {
	// A ring of four switches, each link once, the closing one last: it
	// makes the largest domain. Equal sizes keep the plan's order.
	ends := [][2]string{{"s1", "s2"}, {"s2", "s3"}, {"s3", "s4"}, {"s4", "s1"}}
	if got, want := mergeOrder(ends), []int{0, 2, 1, 3}; !slices.Equal(got, want) {
		t.Errorf("mergeOrder(ring) = %v, want %v", got, want)
	}
	if got := mergeOrder(nil); len(got) != 0 {
		t.Errorf("mergeOrder(nil) = %v", got)
	}
}

func identity(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func TestSplitOrderCutsTheChainFirst(t *testing.T) {
	const n = 1000
	ends := linearEnds(n)
	var switches []string
	for i := n; i >= 1; i-- {
		switches = append(switches, fmt.Sprintf("s%d", i))
	}
	switches = append(switches, "lonely") // on no link: kept, last
	order := splitOrder(switches, ends)
	if got := slices.Sorted(slices.Values(order)); !slices.Equal(got, identity(len(switches))) {
		t.Fatalf("splitOrder is not a permutation of the %d nodes", len(switches))
	}
	if last := switches[order[len(order)-1]]; last != "lonely" {
		t.Errorf("the node on no link comes at %q's place, not last", last)
	}
	// Each of the first k deletions cuts a link of the chain not cut yet,
	// the links merged last first: balanced cuts leave pieces of about
	// n/(k+1) switches (the plan's order reversed leaves one of n-k).
	// Merges of a chain whose length is no power of two are balanced
	// within a factor of two, so after 16 deletions none is longer than
	// 2n/16.
	const k = 16
	gone := map[int]bool{}
	for _, i := range order[:k] {
		idx, err := strconv.Atoi(strings.TrimPrefix(switches[i], "s"))
		if err != nil {
			t.Fatalf("switch %q deleted among the first %d", switches[i], k)
		}
		gone[idx] = true
	}
	longest, run := 0, 0
	for i := 1; i <= n; i++ {
		if gone[i] {
			run = 0
			continue
		}
		run++
		longest = max(longest, run)
	}
	if longest > 2*n/k {
		t.Errorf("after %d deletions the longest piece of the chain has %d switches, want at most %d", k, longest, 2*n/k)
	}
}
