package hymn

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// DefaultPingSample is how many pairs PingSample pings when not told:
// enough that a partition cutting off a tenth of the hosts is missed with
// odds under 1e-45, few enough that 10 000 hosts are tested in seconds
// where pingall's 10^8 pairs would take days.
const DefaultPingSample = 1000

// PingSample pings pairs ordered pairs of distinct hosts drawn at random
// (all ordered pairs when there are no more than that), one echo each, and
// returns the percentage lost, printing Mininet's result line and a row
// for each pair that failed. seed picks the pairs (the same seed, the same
// pairs); pairs 0 means DefaultPingSample. It is pingall for networks too
// large for every pair.
func (n *Network) PingSample(ctx context.Context, pairs int, seed uint64, timeout time.Duration) ([]PingResult, float64, error) {
	if pairs <= 0 {
		pairs = DefaultPingSample
	}
	hosts := n.Plan().Hosts()
	if len(hosts) < 2 {
		return nil, 0, fmt.Errorf("pingsample needs two hosts; the network has %d", len(hosts))
	}
	jobs := samplePairs(len(hosts), pairs, seed)
	lg := n.log()
	lg.Outputf("*** Ping: testing ping reachability of %d random pairs of %d hosts (seed %d)\n", len(jobs), len(hosts), seed)
	var all []PingResult
	for _, family := range n.pingFamilies() { // routes.go
		results := make([]PingResult, len(jobs))
		err := forEach(ctx, n.opts.Workers, len(jobs), func(ctx context.Context, i int) error {
			r, err := n.pingOnce(ctx, hosts[jobs[i][0]].Name, hosts[jobs[i][1]].Name, timeout, family)
			r.Family = family
			results[i] = r
			return err
		})
		if err != nil {
			return nil, 0, err
		}
		prefix := ""
		if family != "" {
			prefix = family + ": "
		}
		for _, r := range results {
			if r.Received == 0 {
				lg.Outputf("%s%s -> %s X\n", prefix, r.Src, r.Dst)
			}
		}
		n.familyResult(family, results) // routes.go
		all = append(all, results...)
	}
	sent, received := 0, 0
	for _, r := range all {
		sent += r.Sent
		received += r.Received
	}
	if sent == 0 {
		lg.Output("*** Warning: No packets sent\n")
		return all, 0, nil
	}
	loss := 100 * float64(sent-received) / float64(sent)
	lg.Outputf("*** Results: %d%% dropped (%d/%d received)\n", int(loss), received, sent)
	return all, loss, nil
}

// samplePairs draws want distinct ordered pairs (src != dst) of n hosts'
// indexes, or returns every ordered pair when there are no more than want.
func samplePairs(n, want int, seed uint64) [][2]int {
	total := n * (n - 1)
	if total <= want {
		out := make([][2]int, 0, total)
		for i := range n {
			for j := range n {
				if i != j {
					out = append(out, [2]int{i, j})
				}
			}
		}
		return out
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	seen := make(map[[2]int]bool, want)
	out := make([][2]int, 0, want)
	for len(out) < want {
		k := rng.IntN(total) // the k-th ordered pair: src k/(n-1), dst skipping src
		src, dst := k/(n-1), k%(n-1)
		if dst >= src {
			dst++
		}
		p := [2]int{src, dst}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
