//go:build !race

package hymn

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/measure"
)

// TestGeneratorOutrunsVeth: the generator alone (one core, into a sink
// whose transmit frees every frame) must send at least three times the
// zero-loss rate of a plain veth link, so it is never what limits a
// measurement below what the link carries, and the search must not run
// into it (a bound the generator set says generator_limited).
//
// Both rates move with the machine's load (other processes share its two
// cores, and the cores themselves have slow spells in which the same send
// loop, C or Go, sends 40 % less for seconds), so a ratio of one
// measurement of each is a ratio of two noisy numbers: one rate measured
// in a quiet second and the other in a busy one moves it by 2x. So the
// two are measured interleaved, A B A B ...: each round is the generator
// alone (the report's own measurement, right before the search), the
// link's zero-loss search, and the generator alone again, and the round's
// ratio is the mean of the two generator rates that bracket the search
// over the search's rate. The median of the rounds' ratios is judged: one
// round hit by a burst of load cannot move it. The file is built without
// the race detector: the generator's speed is a property of the code as a
// user runs it, and under -race every Go statement of the send loop costs
// several times more.
//
// The search's rate is the highest that passed, within 10 % of the
// lowest that did not (its resolution); the true zero-loss rate lies
// below the latter, so the ratio is taken against it: a lower bound on the
// true ratio, with nothing of the search's step left in it. The trial
// rates are the schedule's, exact; each generator rate is counted and
// timed by the sending thread itself (its monotonic clock at the first and
// the last batch of GeneratorCheckDefault), so it is known to one batch of
// 64 sends. A pause of the machine only lowers a generator rate, and the
// ratio with it.
func TestGeneratorOutrunsVeth(t *testing.T) {
	testenv.Root(t)
	ctx := context.Background()
	n := pairNet(t, nil)
	const rounds = 5
	var ratios []float64
	limited := 0
	minGen := math.Inf(1)
	for i := range rounds {
		// Measure measures the generator alone first (A), then searches
		// (B), from 4 Mpps: above both rates.
		rep, err := n.Measure(ctx, "h1", "h2", measure.Config{Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond,
			Drain: 50 * time.Millisecond, Series: -1,
			ZeroLoss: &measure.ZeroLossConfig{Max: 4e6, Resolution: 0.1, MaxTrials: 10}})
		if err != nil {
			t.Fatal(err)
		}
		after, err := n.GeneratorRate(ctx, "h1", 64, measure.GenAuto, measure.GeneratorCheckDefault)
		if err != nil {
			t.Fatal(err)
		}
		zl := rep.ZeroLoss.Rate
		gen := (rep.GeneratorPPS + after.PPS) / 2
		minGen = min(minGen, rep.GeneratorPPS, after.PPS)
		if rep.ZeroLoss.Limited {
			limited++
		}
		// above: the lowest rate the search did not pass, above zl (zl
		// itself when none did not: the link carried the search's Max).
		above := 0.0
		for _, tr := range rep.ZeroLoss.Trials {
			t.Logf("  trial %.0f: sent %.0f/s loss %.4f pass %v short %v", tr.Rate, tr.SentPPS, tr.Loss, tr.Pass, tr.Short)
			if !tr.Pass && tr.Rate > zl && (above == 0 || tr.Rate < above) {
				above = tr.Rate
			}
		}
		if above == 0 {
			above = zl
		}
		ratio := 0.0
		if above > 0 {
			ratio = gen / above
		}
		ratios = append(ratios, ratio)
		t.Logf("round %d: generator %s alone %.0f then %.0f packets/s; zero-loss rate of the veth link %.0f packets/s, below %.0f (%d trials, generator-limited: %v, sender-core-limited: %v); ratio to the latter %.2f",
			i+1, rep.Generator, rep.GeneratorPPS, after.PPS, zl, above, len(rep.ZeroLoss.Trials), rep.ZeroLoss.Limited, rep.ZeroLoss.CoreLimited, ratio)
	}
	slices.Sort(ratios)
	med := ratios[len(ratios)/2]
	t.Logf("median ratio %.2f (sorted %.2f)", med, ratios)
	// One batch over the slowest generator window of the run, as a share
	// of the ratio.
	batch := time.Duration(float64(time.Second) * 64 / max(minGen, 1))
	testenv.Judge(t, testenv.Measurement{Quantity: "generator rate / lowest rate the veth link's zero-loss search failed, median of 5 rounds",
		Got: med, Target: 3, Tolerance: 0.03, Bound: testenv.AtLeast,
		Resolution: testenv.StampedWindow(3, measure.GeneratorCheckDefault, batch, "the sending thread counts its sends and reads its clock at each batch of 64; trial rates are exact")})
	if limited > rounds/2 {
		t.Errorf("%d of %d zero-loss searches were generator-limited", limited, rounds)
	}
}
