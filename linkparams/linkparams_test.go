package linkparams_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/topo"
)

// TestTypedValuesBecomeTheEmulatorConfig: typed parameters give the same
// emulator configuration as Mininet's keys in a file would.
func TestTypedValuesBecomeTheEmulatorConfig(t *testing.T) {
	p := linkparams.Params(
		linkparams.Delay(1500*time.Microsecond),
		linkparams.Jitter(250*time.Microsecond),
		linkparams.For(emulator.AtoB, linkparams.Loss(0.02)),
		linkparams.For(emulator.BtoA, linkparams.Delay(7*time.Millisecond)),
		linkparams.Seed(42),
	)
	want := topo.Params{"delay": "1500us", "jitter": "250us", "a>b.loss": "2", "b>a.delay": "7ms", "seed": "42"}
	for k, v := range want {
		if p[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, p[k], v, p)
		}
	}
	ab, ba, err := hymn.EmulatorConfigs(p)
	if err != nil {
		t.Fatal(err)
	}
	if ab.Delay != 1500*time.Microsecond || ab.Jitter != 250*time.Microsecond || ba.Delay != 7*time.Millisecond {
		t.Errorf("delays: a>b %v±%v, b>a %v", ab.Delay, ab.Jitter, ba.Delay)
	}
	if ab.Loss.Prob != 0.02 || ba.Loss.Prob != 0 {
		t.Errorf("loss: a>b %v, b>a %v", ab.Loss.Prob, ba.Loss.Prob)
	}
}

func TestRate(t *testing.T) {
	p := linkparams.Params(linkparams.Rate(10e6), linkparams.QueuePackets(50))
	if p["bw"] != "10" || p["max_queue_size"] != "50" {
		t.Fatalf("params %v", p)
	}
	if _, _, err := hymn.EmulatorConfigs(p); err != nil {
		t.Fatal(err)
	}
}

// TestOutOfRange: bad typed values are refused when the topology is
// resolved, naming the key.
func TestOutOfRange(t *testing.T) {
	for name, p := range map[string]linkparams.Param{
		"loss":  linkparams.Loss(1.5),
		"delay": linkparams.Delay(-time.Millisecond),
		"bw":    linkparams.Rate(0),
	} {
		t.Run(name, func(t *testing.T) {
			top := topo.New()
			top.AddHost("h1")
			top.AddHost("h2")
			top.AddLink("h1", "h2", linkparams.Params(p))
			_, err := hymn.New(top, hymn.Options{})
			if err == nil {
				t.Fatalf("%s accepted", name)
			}
			if !errors.Is(err, hymn.ErrLinkParams) {
				t.Logf("error (not ErrLinkParams): %v", err)
			}
		})
	}
}

// TestTypedValuesExact: the text the typed setters write gives back
// exactly the values given. Before, Loss wrote probability×100 in a
// float's shortest form and the parser divided a float by 100: 0.07 was
// written "7.000000000000001" and came back 0.07000000000000002.
func TestTypedValuesExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	probs := []float64{0.07, 0.02, 1e-9, 0.3, 1, math.Nextafter(0.5, 0), 5e-324}
	for range 2000 {
		probs = append(probs, rng.Float64())
	}
	for _, p := range probs {
		ab, _, err := hymn.EmulatorConfigs(linkparams.Params(linkparams.Loss(p)))
		if err != nil {
			t.Fatalf("Loss(%v): %v", p, err)
		}
		if ab.Loss.Prob != p {
			t.Fatalf("Loss(%v) wrote loss=%s, which gives %v", p, linkparams.Params(linkparams.Loss(p))["loss"], ab.Loss.Prob)
		}
	}
	if got := linkparams.Params(linkparams.Loss(0.07))["loss"]; got != "7" {
		t.Errorf("Loss(0.07) wrote loss=%s, want 7", got)
	}
	rates := []uint64{1, 300000, 1234567, 999999999, uint64(emulator.MaxRate)}
	for range 2000 {
		rates = append(rates, 1+rng.Uint64N(uint64(emulator.MaxRate)))
	}
	for _, r := range rates {
		p := linkparams.Params(linkparams.Rate(float64(r)))
		ab, _, err := hymn.EmulatorConfigs(p)
		if err != nil {
			t.Fatalf("Rate(%d) wrote bw=%s: %v", r, p["bw"], err)
		}
		if ab.Space.Rate != r {
			t.Fatalf("Rate(%d) wrote bw=%s, which gives %d bit/s", r, p["bw"], ab.Space.Rate)
		}
	}
}
