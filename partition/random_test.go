package partition

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hymn-net/hymn/topo"
)

// Random graphs (connected or not, parallel links, random hints): every
// split is either a clean ErrBadInput or respects the band, the hints and
// the invariants, and is the same twice.
func TestRandomGraphs(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 4))
	ok, refused := 0, 0
	defer func() { t.Logf("%d splits checked, %d refused as bad input", ok, refused) }()
	for iter := range 300 {
		n := 2 + rng.IntN(50)
		tp := topo.New()
		for i := range n {
			if rng.IntN(3) == 0 {
				tp.AddSwitch(fmt.Sprintf("s%d", i+1))
			} else {
				tp.AddHost(fmt.Sprintf("h%d", i+1))
			}
		}
		names := make([]string, 0, n)
		for _, nd := range tp.Nodes() {
			names = append(names, nd.Name)
		}
		for range rng.IntN(3 * n) {
			a, b := names[rng.IntN(n)], names[rng.IntN(n)]
			if a != b {
				tp.AddLink(a, b)
			}
		}
		p, err := topo.Resolve(tp, topo.AddressOptions{})
		if err != nil {
			t.Fatal(err)
		}
		k := 1 + rng.IntN(min(n, 6))
		for _, pn := range p.Nodes {
			switch rng.IntN(12) {
			case 0:
				pn.Params[ParamPlacement] = fmt.Sprint(rng.IntN(k + 1))
			case 1:
				pn.Params[ParamGroup] = fmt.Sprintf("g%d", rng.IntN(3))
			}
		}
		opts := Options{Parts: k, Slack: rng.IntN(3)}
		r, err := Split(p, opts)
		if err != nil {
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("iteration %d: %v", iter, err)
			}
			refused++
			continue
		}
		ok++
		checkResult(t, p, r)
		lo, hi := max(1, n/k-opts.Slack), (n+k-1)/k+opts.Slack
		for w, ns := range r.Nodes {
			if len(ns) < lo || len(ns) > hi {
				t.Errorf("iteration %d: worker %d holds %d nodes, outside %d-%d", iter, w, len(ns), lo, hi)
			}
		}
		groups := map[string]int{}
		for _, pn := range p.Nodes {
			if v, ok := pn.Params[ParamPlacement]; ok && fmt.Sprint(r.Assign[pn.Name]) != v {
				t.Errorf("iteration %d: %s pinned to %s, on %d", iter, pn.Name, v, r.Assign[pn.Name])
			}
			if g, ok := pn.Params[ParamGroup]; ok {
				if w, seen := groups[g]; seen && w != r.Assign[pn.Name] {
					t.Errorf("iteration %d: group %s split", iter, g)
				}
				groups[g] = r.Assign[pn.Name]
			}
		}
		again, err := Split(p, opts)
		if err != nil || fmt.Sprint(again.Assign) != fmt.Sprint(r.Assign) {
			t.Errorf("iteration %d: not deterministic", iter)
		}
	}
}
