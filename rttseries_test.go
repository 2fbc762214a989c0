package hymn

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/topo"
)

// RTTSeries measures to the microsecond: an emulated link's 2 ms each way
// shows as the difference of two medians (emulated minus plain, measured
// alternately so both see the same machine) within 5 % of 4 ms, the
// forwarder's own time included; ping's 0.1 ms text could not tell.
func TestRTTSeries(t *testing.T) {
	testenv.Root(t)
	pair := func(params topo.Params) *topo.Topo {
		tp := topo.New()
		tp.AddLink(tp.AddHost("h1"), tp.AddHost("h2"), params)
		return tp
	}
	emu := startNet(t, pair(topo.Params{"delay": "2ms"}), Options{})
	plain := startNet(t, pair(nil), Options{})
	ctx := context.Background()
	median := func(n *Network) time.Duration {
		t.Helper()
		dst, err := n.IP("h2")
		if err != nil {
			t.Fatal(err)
		}
		rtts, err := n.RTTSeries(ctx, "h1", dst, 200, time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if len(rtts) < 190 {
			t.Fatalf("%d of 200 answered", len(rtts))
		}
		fine := 0
		for _, r := range rtts {
			if r%(100*time.Microsecond) != 0 {
				fine++
			}
		}
		if fine < len(rtts)/2 {
			t.Errorf("only %d of %d RTTs are finer than 0.1 ms", fine, len(rtts))
		}
		slices.Sort(rtts)
		return rtts[len(rtts)/2]
	}
	median(emu) // ARP, the bridges' tables
	median(plain)
	// The two links are measured in turn, seven rounds, and the median
	// difference is judged: an episode of slow wake-ups (another tenant's
	// load, which the forwarder's wake-ups feel and the plain link does
	// not) once lasted two rounds of three and moved their medians by
	// 300 us; it cannot move the median of seven.
	var diffs []time.Duration
	for range 7 {
		diffs = append(diffs, median(emu)-median(plain))
	}
	slices.Sort(diffs)
	added := diffs[len(diffs)/2]
	t.Logf("emulated minus plain RTT medians: %v (runs %v)", added, diffs)
	// The forwarder adds its own wake-up and copies, tens of µs each way
	// unpinned (bench/README.md); the emulated delay is never less than
	// configured, and the two medians are each good to a few µs.
	//
	// Resolution: each RTT is the kernel's receive stamp (SO_TIMESTAMPNS)
	// less the send time read right before sendto, both in ns; a pause
	// only lengthens the echoes in flight during it. One of 50 ms
	// (testenv.CallerPause) holds up a quarter of a series' 200 echoes and
	// moves its median, and so one round's difference; the median of
	// seven differences moves only if pauses hit four rounds. What
	// remains is the clock's read: 1 µs is generous, and the tighter side,
	// 20 µs, is twenty of it.
	stamped := testenv.Ms(time.Microsecond, "kernel receive stamp less the send time read before sendto (ns); a pause only lengthens RTTs, and the median of seven rounds moves only if pauses hit four of them")
	testenv.JudgeTime(t, testenv.Timing{Quantity: "RTT added by an emulated 2 ms each way (median of 7 differences of medians), from below",
		Got: added, Target: 4 * time.Millisecond, Tolerance: 20 * time.Microsecond, Bound: testenv.AtLeast, Resolution: stamped})
	testenv.JudgeTime(t, testenv.Timing{Quantity: "RTT added by an emulated 2 ms each way (median of 7 differences of medians), from above",
		Got: added, Target: 4 * time.Millisecond, Tolerance: 200 * time.Microsecond, Bound: testenv.AtMost, Resolution: stamped})
	if _, err := emu.RTTSeries(ctx, "h1", netip.MustParseAddr("10.0.0.2"), 0, time.Millisecond); err == nil {
		t.Error("count 0 accepted")
	}
}
