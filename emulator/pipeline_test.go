package emulator

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func mustNew(t *testing.T, text string) *Emulator {
	t.Helper()
	c, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func checkInvariant(t *testing.T, e *Emulator) {
	t.Helper()
	s := e.Stats()
	if s.Received != s.Sent+s.Dropped()+uint64(s.Queued) {
		t.Fatalf("received %d != sent %d + dropped %d + queued %d", s.Received, s.Sent, s.Dropped(), s.Queued)
	}
}

// TestFIFONeverReorders is a property test: random configurations, random
// bursts and clock steps; FIFO output must keep arrival order, never leave
// early, and the counters must always balance.
func TestFIFONeverReorders(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 42))
	dists := []Distribution{Normal, Uniform, LogNormal, Gamma, Deterministic}
	for trial := 0; trial < 40; trial++ {
		c := DefaultConfig()
		c.Distribution = dists[rng.IntN(len(dists))]
		c.Delay = time.Duration(1+rng.IntN(20)) * time.Millisecond
		if c.Distribution != Deterministic {
			c.Jitter = time.Duration(rng.IntN(5000)) * time.Microsecond
		}
		c.HalfLife = []time.Duration{0, time.Millisecond, 21 * time.Millisecond}[rng.IntN(3)]
		c.TimeBasedWeight = rng.IntN(4) == 0
		if rng.IntN(3) == 0 {
			c.Space = SpacerConfig{Enabled: true, Rate: uint64(1+rng.IntN(100)) * 1e8, Limit: uint64(rng.IntN(3)) * 100_000}
		}
		if rng.IntN(3) == 0 {
			c.Police = PolicerConfig{Enabled: true, Rate: uint64(1+rng.IntN(100)) * 1e8, Burst: 32768}
		}
		if rng.IntN(3) == 0 {
			c.Loss = LossConfig{Model: GilbertElliott, P: 0.01, R: 0.3, OneMinusH: 0.8}
		}
		c.Buffer = 1 + rng.IntN(5000)
		c.Seed, c.SeedSet = uint64(trial), true
		e, err := New(c)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		var now int64
		var lastSeq uint64
		var lastDue int64
		first := true
		in := make([]Packet, MaxBatch)
		out := make([]Packet, MaxBatch)
		drops := make([]Packet, 0, MaxBatch)
		for step := 0; step < 3000; step++ {
			now += int64(rng.IntN(20_000))
			b := rng.IntN(MaxBatch + 1)
			for i := 0; i < b; i++ {
				in[i] = Packet{Len: uint32(64 + rng.IntN(1455))}
			}
			drops = e.Receive(now, in[:b], drops[:0])
			for {
				n := e.Release(now, out)
				for _, p := range out[:n] {
					if p.Due > now {
						t.Fatalf("trial %d: sent early: due %d now %d", trial, p.Due, now)
					}
					if !first && (p.Seq <= lastSeq || p.Due < lastDue) {
						t.Fatalf("trial %d (%s): reordered: seq %d after %d", trial, c, p.Seq, lastSeq)
					}
					first, lastSeq, lastDue = false, p.Seq, p.Due
				}
				if n < len(out) {
					break
				}
			}
			checkInvariant(t, e)
		}
		if s := e.Stats(); s.Reordered != 0 {
			t.Fatalf("trial %d: Reordered counter %d", trial, s.Reordered)
		}
	}
}

func TestHeapOrderAndTies(t *testing.T) {
	// Zero jitter: equal departure times must come out in arrival order.
	e := mustNew(t, "delay 1ms reorder seed 1")
	in := make([]Packet, 16)
	for i := range in {
		in[i].Handle = uint64(i)
	}
	e.Receive(0, in, nil)
	out := make([]Packet, 16)
	if n := e.Release(999_999, out); n != 0 {
		t.Fatalf("released %d packets early", n)
	}
	n := e.Release(1_000_000, out)
	for i := 0; i < n; i++ {
		if out[i].Handle != uint64(i) {
			t.Fatalf("tie order: position %d has %d", i, out[i].Handle)
		}
	}
	// With jitter the heap sends in departure-time order.
	e = mustNew(t, "delay 10ms 3ms half-life 0 reorder seed 2")
	for i := 0; i < 1000; i++ {
		e.Receive(int64(i)*1000, in[:1], nil)
	}
	var last int64 = -1
	for now := int64(0); now < 100e6; now += 50_000 {
		for {
			n := e.Release(now, out)
			for _, p := range out[:n] {
				if p.Due < last || p.Due > now || p.Due != p.Arrival+p.Delay {
					t.Fatalf("heap order broken: due %d after %d (now %d)", p.Due, last, now)
				}
				last = p.Due
			}
			if n < len(out) {
				break
			}
		}
	}
	if s := e.Stats(); s.Sent != 1000 || s.Reordered == 0 {
		t.Fatalf("sent %d reordered %d", s.Sent, s.Reordered)
	}
}

func TestBufferFull(t *testing.T) {
	e := mustNew(t, "delay 10ms limit 10")
	in := make([]Packet, 16)
	drops := e.Receive(0, in, nil)
	if len(drops) != 6 {
		t.Fatalf("dropped %d, want 6", len(drops))
	}
	s := e.Stats()
	if s.BufferFull != 6 || s.Queued != 10 {
		t.Fatalf("stats %+v", s)
	}
	checkInvariant(t, e)
}

func TestPolicerBound(t *testing.T) {
	// Over any prefix of the run the policer passes at most
	// rate·T + burst bytes (on the wire), T measured from the first arrival.
	const rate, burst = 100e6, 10_000
	e := mustNew(t, "police 100mbit 10000 seed 3")
	rng := rand.New(rand.NewPCG(5, 5))
	var now int64
	var passed float64
	in := make([]Packet, 1)
	drops := make([]Packet, 0, 1)
	for i := 0; i < 100_000; i++ {
		now += int64(rng.ExpFloat64() * 60_000) // ≈ 2× the policed rate
		in[0] = Packet{Len: uint32(64 + rng.IntN(1455))}
		drops = e.Receive(now, in, drops[:0])
		if len(drops) == 0 {
			passed += float64(in[0].Len + 24)
		}
		if bound := rate/8*float64(now)/1e9 + burst; passed > bound+1e-6 {
			t.Fatalf("passed %.0f bytes by %d ns, bound %.0f", passed, now, bound)
		}
	}
	s := e.Stats()
	if s.Policed == 0 {
		t.Fatal("nothing policed at twice the rate")
	}
	// Long-run throughput should be close to the rate (bucket rarely idle).
	if got := passed * 8 / (float64(now) / 1e9); got < 0.95*rate {
		t.Fatalf("policed throughput %.3g bit/s, want ≈ %.3g", got, rate)
	}
}

func TestSpacer(t *testing.T) {
	// ρ < 1, σ = 0, CBR: no extra delay, no drops (docs/emulator-spec.md §11.4).
	e := mustNew(t, "delay 1ms space 1gbit 100000 seed 1")
	out := make([]Packet, 16)
	in := make([]Packet, 1)
	dt := int64(1538 * 8 / 0.8) // 80 % load
	for i := int64(0); i < 10_000; i++ {
		in[0] = Packet{Len: 1514}
		e.Receive(i*dt, in, nil)
		n := e.Release(i*dt, out)
		for _, p := range out[:n] {
			if p.Due-p.Arrival != 1e6 {
				t.Fatalf("extra delay %d at ρ=0.8", p.Due-p.Arrival-1e6)
			}
		}
	}
	if s := e.Stats(); s.SpacerDropped != 0 {
		t.Fatalf("spacer dropped %d at ρ=0.8", s.SpacerDropped)
	}

	// Overload with jitter: departures never exceed the rate, and drops
	// happen exactly when backlog + L would exceed the limit.
	const rate, limit = 1e9, 50_000
	e = mustNew(t, "delay 5ms 1ms half-life 1ms space 1gbit 50000 seed 9")
	rng := rand.New(rand.NewPCG(1, 1))
	var now int64
	var prevDue int64 = -1 << 62
	var prevWire float64
	var tFree float64 // model of the bucket
	for i := 0; i < 200_000; i++ {
		now += int64(rng.ExpFloat64() * 1538 * 8 / 1.5) // 150 % load
		l := 64 + rng.IntN(1455)
		in[0] = Packet{Len: uint32(l)}
		drops := e.Receive(now, in, nil)
		e1 := float64(now + in[0].Delay)
		backlog := max(0, tFree-e1) * rate / 8e9
		wire := float64(l + 24)
		if len(drops) == 1 {
			if backlog+wire <= limit-1 {
				t.Fatalf("dropped with backlog %.0f + %v ≤ limit", backlog, wire)
			}
			continue
		}
		if backlog+wire > limit+1 {
			t.Fatalf("accepted with backlog %.0f + %v > limit", backlog, wire)
		}
		tFree = max(tFree, e1) + wire*8e9/rate
		p := in[0]
		if p.Due-prevDue < int64(prevWire*8e9/rate)-1 {
			t.Fatalf("spacing %d ns < serialisation %.0f ns", p.Due-prevDue, prevWire*8e9/rate)
		}
		prevDue, prevWire = p.Due, wire
	}
	if s := e.Stats(); s.SpacerDropped == 0 {
		t.Fatal("no spacer drops at 150 % load")
	}
}

func TestGilbertElliott(t *testing.T) {
	// Long-run loss (r(1−k) + p(1−h))/(p+r); mean time in Bad 1/r.
	const n = 2_000_000
	p, r, h1, k1 := 0.01, 0.3, 0.8, 0.001
	l := lossState{}
	l.configure(LossConfig{Model: GilbertElliott, P: p, R: r, OneMinusH: h1, OneMinusK: k1})
	rng := rand.New(rand.NewPCG(8, 8))
	lost := 0
	for i := 0; i < n; i++ {
		if l.lost(rng) {
			lost++
		}
	}
	// h1 and k1 are the user-facing 1−h and 1−k.
	want := (r*k1 + p*h1) / (p + r)
	got := float64(lost) / n
	// Bursts inflate the binomial SE by about (1+ρ)/(1−ρ) with ρ = 1−p−r;
	// that is ≈ 5.5, so SE ≈ 0.0003; allow 0.0015.
	if math.Abs(got-want) > 0.0015 {
		t.Errorf("GE loss %.5f, want %.5f", got, want)
	}

	// Defaults (r = 1−p, 1−h = 1, 1−k = 0): runs of losses have mean 1/r
	// when given r, and the model reduces to Bernoulli(p) without it.
	l = lossState{}
	l.configure(LossConfig{Model: GilbertElliott, P: 0.05, R: 0.25, OneMinusH: 1})
	runs, inRun, losses := 0, false, 0
	for i := 0; i < n; i++ {
		x := l.lost(rng)
		if x {
			losses++
			if !inRun {
				runs++
			}
		}
		inRun = x
	}
	if mean := float64(losses) / float64(runs); math.Abs(mean-4) > 0.1 {
		t.Errorf("mean burst %.3f, want 1/r = 4", mean)
	}
	c, err := Parse("loss gemodel 5%")
	if err != nil {
		t.Fatal(err)
	}
	l = lossState{}
	l.configure(c.Loss)
	losses, both, prev := 0, 0, false
	for i := 0; i < n; i++ {
		x := l.lost(rng)
		if x {
			losses++
			if prev {
				both++
			}
		}
		prev = x
	}
	pl := float64(losses) / n
	if math.Abs(pl-0.05) > 0.001 || math.Abs(float64(both)/float64(losses)-0.05) > 0.005 {
		t.Errorf("default gemodel: loss %.4f, P(loss|loss) %.4f; want Bernoulli(0.05)", pl, float64(both)/float64(losses))
	}
}

func TestFourStateAndRandomLoss(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const n = 1_000_000
	// p13 = 1 %, p31 = 50 %: a two-state chain in disguise; loss = p13/(p13+p31).
	l := lossState{}
	l.configure(LossConfig{Model: FourState, P13: 0.01, P31: 0.5, P23: 1})
	lost := 0
	for i := 0; i < n; i++ {
		if l.lost(rng) {
			lost++
		}
	}
	if got, want := float64(lost)/n, 0.01/0.51; math.Abs(got-want) > 0.002 {
		t.Errorf("4-state loss %.4f, want %.4f", got, want)
	}
	e := mustNew(t, "loss 10% seed 5")
	in := make([]Packet, 16)
	out := make([]Packet, 16)
	for i := 0; i < n/16; i++ {
		e.Receive(int64(i), in, nil)
		e.Release(int64(i), out) // keep the buffer from filling: a full buffer drops before the loss model
	}
	if got := float64(e.Stats().Lost) / n; math.Abs(got-0.1) > 0.002 {
		t.Errorf("random loss %.4f, want 0.1", got)
	}
}

func TestReconfigureKeepsQueue(t *testing.T) {
	e := mustNew(t, "delay 10ms 1ms seed 1")
	in := make([]Packet, 16)
	for i := 0; i < 100; i++ {
		e.Receive(int64(i)*10_000, in, nil)
	}
	D := e.Stats().D
	c := e.Config()
	c.Jitter = 2 * time.Millisecond
	c.Reorder = true
	if err := e.Reconfigure(c, false); err != nil {
		t.Fatal(err)
	}
	if e.Stats().D != D || e.Stats().Queued != 1600 {
		t.Fatal("reconfigure lost state or packets")
	}
	if err := e.RequestReconfigure(DefaultConfig(), true); err != nil {
		t.Fatal(err)
	}
	e.Receive(2e6, in[:0], nil) // applies the pending change
	if e.Config().Reorder || e.Stats().Queued != 1600 {
		t.Fatal("pending reconfigure not applied or lost packets")
	}
	out := make([]Packet, 16)
	total := 0
	for now := int64(0); now < 1e9; now += 1e5 {
		for n := e.Release(now, out); n > 0; n = e.Release(now, out) {
			total += n
		}
	}
	if total != 1600 {
		t.Fatalf("released %d of 1600", total)
	}
	checkInvariant(t, e)
	if err := e.Reconfigure(Config{}, false); err == nil {
		t.Fatal("invalid config accepted")
	}
}

func TestZeroAllocSteadyState(t *testing.T) {
	e := mustNew(t, "delay 10ms 1ms seed 1")
	in := make([]Packet, 16)
	out := make([]Packet, 16)
	drops := make([]Packet, 0, 16)
	var now int64
	step := func() {
		now += 16 * 1230
		drops = e.Receive(now, in, drops[:0])
		for e.Release(now, out) == len(out) {
		}
	}
	for i := 0; i < 20_000; i++ {
		step()
	}
	if a := testing.AllocsPerRun(1000, step); a != 0 {
		t.Fatalf("%v allocations per batch", a)
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	for i := int64(1); i <= 100_000; i++ {
		h.Record(i * 1000)
	}
	for _, q := range []float64{0.5, 0.9, 0.99} {
		want := q * 1e8
		if got := float64(h.Quantile(q)); math.Abs(got/want-1) > 0.02 {
			t.Errorf("q%.2f = %v, want %v", q, got, want)
		}
	}
	if h.Min() != 1000 || h.Max() != 1e8 {
		t.Errorf("min %d max %d", h.Min(), h.Max())
	}
	for v := uint64(0); v < 1<<20; v += 97 {
		i := histIndex(v)
		if histLower(i) > v || (i+1 < histBuckets && histLower(i+1) <= v) {
			t.Fatalf("value %d in bucket %d [%d, %d)", v, i, histLower(i), histLower(i+1))
		}
	}
}

func TestInversionCounter(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	for trial := 0; trial < 20; trial++ {
		n := 1 + rng.IntN(5000)
		// Departure order: indices perturbed by a random local window.
		key := make([]float64, n)
		for i := range key {
			key[i] = float64(i) + rng.Float64()*float64(1+rng.IntN(3000))
		}
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		sortByKey(order, key)
		var c inversionCounter
		for _, j := range order {
			c.add(int64(j))
		}
		var brute int64
		for a := 0; a < n; a++ {
			for b := a + 1; b < n; b++ {
				if order[a] > order[b] {
					brute++
				}
			}
		}
		if c.inversions != brute {
			t.Fatalf("trial %d: %d inversions, brute force %d", trial, c.inversions, brute)
		}
	}
}

func sortByKey(order []int, key []float64) {
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(key[a], key[b]) })
}

func TestHeapAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 12))
	var h pktHeap
	var ref []Packet
	seq := uint64(0)
	for step := 0; step < 60_000; step++ {
		if rng.IntN(5) < 3 || len(ref) == 0 {
			p := Packet{Seq: seq, Due: int64(rng.IntN(1000)), Handle: seq}
			seq++
			h.push(p)
			ref = append(ref, p)
			continue
		}
		best := 0
		for i := range ref {
			if before(&ref[i], &ref[best]) {
				best = i
			}
		}
		got := h.pop()
		if got != ref[best] {
			t.Fatalf("step %d: popped %+v, want %+v", step, got, ref[best])
		}
		ref = append(ref[:best], ref[best+1:]...)
		if h.len() != len(ref) {
			t.Fatalf("len %d, want %d", h.len(), len(ref))
		}
	}
}

func TestCalendarAgainstReference(t *testing.T) {
	// Departure times mix the near future, ties, the past and beyond the
	// wheel's horizon, and the clock jumps, to exercise every path.
	rng := rand.New(rand.NewPCG(13, 13))
	var c calendar
	var ref []Packet
	seq := uint64(0)
	now := int64(1e9)
	for step := 0; step < 60_000; step++ {
		if rng.IntN(50) == 0 {
			now += int64(rng.IntN(200e6))
		}
		if rng.IntN(5) < 3 || len(ref) == 0 {
			var due int64
			switch rng.IntN(10) {
			case 0:
				due = now - int64(rng.IntN(1e6))
			case 1:
				due = now + int64(rng.IntN(500e6))
			case 2:
				due = now + 4096*int64(rng.IntN(4))
			default:
				due = now + 10e6 + int64(rng.NormFloat64()*1e6)
			}
			p := Packet{Seq: seq, Due: due, Handle: seq}
			seq++
			c.push(p)
			ref = append(ref, p)
			continue
		}
		best := 0
		for i := range ref {
			if before(&ref[i], &ref[best]) {
				best = i
			}
		}
		if d := c.peekDue(); d != ref[best].Due {
			t.Fatalf("step %d: peekDue %d, want %d", step, d, ref[best].Due)
		}
		got := c.pop()
		if got != ref[best] {
			t.Fatalf("step %d: popped %+v, want %+v", step, got, ref[best])
		}
		ref = append(ref[:best], ref[best+1:]...)
		if c.len() != len(ref) {
			t.Fatalf("len %d, want %d", c.len(), len(ref))
		}
	}
}

func TestStatsHistograms(t *testing.T) {
	e := mustNew(t, "delay 2ms 100us half-life 0 seed 4")
	in := make([]Packet, 16)
	out := make([]Packet, 16)
	var now int64
	for i := 0; i < 2000; i++ {
		now += 10_000
		e.Receive(now, in, nil)
		for e.Release(now, out) == len(out) {
		}
	}
	for now < 1e9 {
		now += 10_000
		for e.Release(now, out) == len(out) {
		}
	}
	s := e.Stats()
	if s.Sent != 32000 || s.Queued != 0 {
		t.Fatalf("sent %d queued %d", s.Sent, s.Queued)
	}
	// FIFO adds a little queueing, so the median lies slightly above 2 ms.
	if s.Delay.P50 < 2*time.Millisecond || s.Delay.P50 > 2300*time.Microsecond || s.Delay.P99 < s.Delay.P50 || s.Delay.Max < s.Delay.P999 {
		t.Errorf("delay summary %+v", s.Delay)
	}
	// Released every 10 µs, so nothing waits longer than that.
	if s.Lateness.Max > 10*time.Microsecond || s.Lateness.Count != s.Sent {
		t.Errorf("lateness summary %+v", s.Lateness)
	}
}
