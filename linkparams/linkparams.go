package linkparams

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/topo"
)

// A Param sets one or more link parameters. Values are not checked here:
// out-of-range values (a negative delay, a loss above 1) are reported,
// naming the key, when the topology is resolved (hymn.New).
type Param func(topo.Params)

// Params collects parameters into a link's topo.Params.
func Params(ps ...Param) topo.Params {
	out := topo.Params{}
	for _, p := range ps {
		if p != nil {
			p(out)
		}
	}
	return out
}

func set(key, value string) Param { return func(p topo.Params) { p[key] = value } }

// duration writes a time exactly, in the largest unit that divides it
// (10ms, 1500us), as Mininet's logs show delays.
func duration(d time.Duration) string {
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}} {
		if d%u.unit == 0 {
			return strconv.FormatInt(int64(d/u.unit), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}

func float(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Delay is the mean one-way delay of each direction (Mininet's delay).
func Delay(d time.Duration) Param { return set("delay", duration(d)) }

// Jitter is the standard deviation of the delay (Mininet's jitter; hymn's
// emulator draws delays from a distribution with this σ, not NetEm's
// half-width).
func Jitter(d time.Duration) Param { return set("jitter", duration(d)) }

// Rate limits each direction to bitsPerSecond of Ethernet frames
// (Mininet's bw, which is in Mbit/s). The emulator counts whole bits per
// second; the text written is exactly that number over 1e6, so the link
// gets the rate given, not one a float's rounding moved.
func Rate(bitsPerSecond float64) Param {
	if math.IsNaN(bitsPerSecond) || math.IsInf(bitsPerSecond, 0) || math.Abs(bitsPerSecond) > 1<<62 {
		return set("bw", float(bitsPerSecond/1e6)) // refused, naming bw, when the topology is resolved
	}
	mbit := new(big.Rat).SetFrac64(int64(math.Round(bitsPerSecond)), 1e6).FloatString(6)
	return set("bw", strings.TrimSuffix(strings.TrimRight(mbit, "0"), "."))
}

// Loss drops each packet with the given probability, from 0 to 1
// (Mininet's loss, which is in percent). The percentage written is the
// shortest that the parser turns back into exactly this probability.
func Loss(probability float64) Param { return set("loss", percent(probability)) }

// percent writes p×100 with the fewest digits that linkparams' parser
// (which reads the decimal exactly and divides by 100 once) turns back
// into p itself: 0.02 is "2", not 2.0000000000000004.
func percent(p float64) string {
	if math.IsNaN(p) || math.IsInf(p, 0) || p == 0 {
		return float(p * 100)
	}
	x := new(big.Float).SetPrec(256).SetFloat64(p)
	x.Mul(x, big.NewFloat(100))
	for prec := 1; prec <= 40; prec++ {
		s := x.Text('g', prec)
		if scaled(s, 1, 100) == p {
			return s
		}
	}
	return x.Text('g', 40)
}

// QueuePackets bounds the packets queued in each direction (Mininet's
// max_queue_size).
func QueuePackets(n int) Param { return set("max_queue_size", strconv.Itoa(n)) }

// HalfLife is the half-life of the delay correlation (0: uncorrelated
// delays).
func HalfLife(d time.Duration) Param { return set("half_life", duration(d)) }

// Reorder lets packets with shorter delays overtake (a heap instead of a
// FIFO).
func Reorder(on bool) Param { return set("reorder", strconv.FormatBool(on)) }

// Seed fixes the random seed, for repeatable runs.
func Seed(seed uint64) Param { return set("seed", strconv.FormatUint(seed, 10)) }

// Distribution names the delay distribution (normal, pareto, paretonormal,
// uniform, ...; see package emulator).
func Distribution(name string) Param { return set("distribution", name) }

// MTU is the MTU of both interfaces of the link.
func MTU(bytes int) Param { return set("mtu", strconv.Itoa(bytes)) }

// Emulator is a whole emulator configuration in its text form
// ("delay 10ms jitter 1ms police 10mbit"), for the keys without a typed
// constructor here.
func Emulator(text string) Param { return set("emu", text) }

// Kind picks the link's kind (topo.LinkKinds: veth, sriov, overriding the
// network's backend, or existing, two interfaces of the host that
// intfName1 and intfName2 name).
func Kind(kind string) Param { return set("kind", kind) }

// For applies parameters to one direction of the link only: emulator.AtoB
// is from the link's first node to its second. For(emulator.Both, ...) is
// the same as the parameters alone.
func For(dir emulator.Direction, ps ...Param) Param {
	return func(p topo.Params) {
		inner := Params(ps...)
		for k, v := range inner {
			if dir == emulator.AtoB || dir == emulator.BtoA {
				k = dir.String() + "." + k
			}
			p[k] = v
		}
	}
}
