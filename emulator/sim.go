package emulator

import (
	"fmt"
	"math"
	"time"
)

// Traffic is the arrival pattern of the simulation mode.
type Traffic uint8

const (
	CBR  Traffic = iota // constant bit rate
	Sine                // rate(t) = peak·(1 − cos(2πt/period))/2, the paper's load curve
)

func (t Traffic) String() string {
	if t == Sine {
		return "sine"
	}
	return "cbr"
}

// Simulation defaults: the paper's frame size and sinusoidal load.
const (
	DefaultFrame      = 1518
	fcsLen            = 4
	DefaultSinePeak   = 50_000_000_000
	DefaultSinePeriod = 30 * time.Second
	// sineFloor keeps the sine's troughs from producing gaps of seconds;
	// the rate never drops below peak/1000.
	sineFloor = 1e-3
)

// SimConfig describes one simulated run. Frame is the Ethernet frame size
// including the FCS, as in the paper (1518 B). The emulator is handed
// Len = Frame − 4, the FCS-less length a DPDK or AF_PACKET port reports, so
// with the default overhead of 24 B a frame occupies Frame + 20 = 1538 B on
// the wire, matching docs/emulator-spec.md §2 and §13.2. Rates are on the wire.
type SimConfig struct {
	Emulator Config
	Traffic  Traffic
	Rate     uint64        // bit/s: the CBR rate, or the sine's peak
	Period   time.Duration // sine period
	Frame    int           // frame size in bytes
	Duration time.Duration // arrivals are generated in [0, Duration)
	// Warmup excludes early arrivals from the delay statistics so the
	// variance build-up of docs/emulator-spec.md §3.3 does not bias them; negative picks
	// min(3·t_h + T_min, Duration/5).
	Warmup time.Duration
	Seed   uint64
}

// SimResult is what a run measured. Times are ns.
type SimResult struct {
	Packets                     uint64 // arrivals after the warm-up
	Delivered                   uint64 // of those, sent
	Dropped                     uint64 // of those, dropped (any cause)
	Policed, SpacerDropped      uint64
	Lost, BufferFull            uint64
	MeanDelay, Jitter           float64 // realised delay t_tx − t_arr
	DrawnMean, DrawnJitter      float64 // the unclamped delay process D over the same packets
	MeanDeviationPct            float64 // (MeanDelay − μ)/μ
	JitterDeviationPct          float64 // (Jitter − σ)/σ
	EmulationMeanDeviationPct   float64 // (MeanDelay − DrawnMean)/μ: the buffer's own effect
	EmulationJitterDeviationPct float64 // std corrected by the process's sampling noise, vs σ
	ExtraDelay                  float64 // mean(t_tx − t_arr − max(D,0)): FIFO/spacer queueing
	SwapsPerPacket              float64 // Kendall tau distance arrival→departure ÷ N
	PassageTime                 float64 // mean time from D ≤ μ−σ to D ≥ μ+σ
	Passages                    int
	Rate, Weight                float64 // final rate estimate and a
	Seed                        uint64
}

func (c *SimConfig) defaults() error {
	if c.Frame == 0 {
		c.Frame = DefaultFrame
	}
	if c.Traffic == Sine {
		if c.Rate == 0 {
			c.Rate = DefaultSinePeak
		}
		if c.Period == 0 {
			c.Period = DefaultSinePeriod
		}
	}
	if c.Frame < 5 || c.Frame-4 > c.Emulator.MaxFrame {
		return fieldErr("frame", "must be between 5 and max-frame+4 = %d bytes (got %d)", c.Emulator.MaxFrame+4, c.Frame)
	}
	if c.Rate == 0 {
		return fieldErr("rate", "traffic rate must be > 0")
	}
	if c.Duration <= 0 {
		return fieldErr("duration", "must be > 0 (got %v)", c.Duration)
	}
	if c.Traffic == Sine && c.Period <= 0 {
		return fieldErr("period", "must be > 0 (got %v)", c.Period)
	}
	if c.Traffic > Sine {
		return fieldErr("traffic", "unknown traffic pattern %d", uint8(c.Traffic))
	}
	if c.Warmup < 0 {
		c.Warmup = min(3*c.Emulator.HalfLife+c.Emulator.RateInterval, c.Duration/5)
	}
	return c.Emulator.Validate()
}

// Simulate drives the emulator with a virtual clock: each packet arrives
// at its exact time and leaves exactly at its departure time (an ideal
// transmitter), so all measured deviations come from the model itself.
func Simulate(sc SimConfig) (SimResult, error) {
	if err := sc.defaults(); err != nil {
		return SimResult{}, err
	}
	cfg := sc.Emulator
	cfg.Seed, cfg.SeedSet = sc.Seed, true
	e, err := New(cfg)
	if err != nil {
		return SimResult{}, err
	}
	mu, sigma := float64(cfg.Delay), float64(cfg.Jitter)
	if cfg.Distribution == Deterministic {
		sigma = 0
	}
	pktLen := sc.Frame - fcsLen
	wireBits := float64((pktLen + cfg.Overhead) * 8)
	end := int64(sc.Duration)
	warm := int64(sc.Warmup)

	var (
		res                    SimResult
		inv                    inversionCounter
		out                    [MaxBatch]Packet
		sumA, sumA2, sumD      float64 // realised delay − μ, and drawn D − μ
		sumD2, sumExtra        float64
		nextIndex              uint64
		waitingLow             = true
		tLow                   int64
		passSum                float64
		sawAny                 bool
		lowThr, highThr        = mu - sigma, mu + sigma
		period                 = float64(sc.Period)
		peak                   = float64(sc.Rate)
		tf                     float64 // arrival time, float ns, so CBR spacing does not drift
		measureWindowDelivered uint64
	)
	depart := func(p *Packet) {
		inv.add(int64(p.Handle))
		if p.Arrival < warm {
			return
		}
		measureWindowDelivered++
		a := float64(p.Due-p.Arrival) - mu
		sumA += a
		sumA2 += a * a
		sumExtra += float64(p.Due - p.Arrival - p.Delay)
	}
	drain := func(until int64) {
		for {
			due, ok := e.NextDue()
			if !ok || due > until {
				return
			}
			n := e.Release(due, out[:])
			for i := 0; i < n; i++ {
				depart(&out[i])
			}
		}
	}
	for {
		t := int64(tf)
		if t >= end {
			break
		}
		drain(t)
		p := Packet{Handle: nextIndex, Len: uint32(pktLen)}
		e.delay.arrive(t, 1)
		accepted := e.receiveOne(t, &p)
		D := e.delay.D
		if sigma > 0 {
			if waitingLow {
				if D <= lowThr {
					waitingLow, tLow = false, t
				}
			} else if D >= highThr {
				passSum += float64(t - tLow)
				res.Passages++
				waitingLow = true
			}
		}
		if accepted {
			nextIndex++
		}
		if t >= warm {
			res.Packets++
			if accepted {
				d := D - mu
				sumD += d
				sumD2 += d * d
			}
		}
		sawAny = true
		// Next arrival.
		switch sc.Traffic {
		case CBR:
			tf += wireBits * 1e9 / peak
		case Sine:
			r := peak * max((1-math.Cos(2*math.Pi*tf/period))/2, sineFloor)
			tf += wireBits * 1e9 / r
		}
	}
	drain(math.MaxInt64)
	if !sawAny {
		return SimResult{}, fieldErr("duration", "%v is shorter than one packet time", sc.Duration)
	}
	st := e.Stats()
	// Drops in the window are what did not come out of it.
	res.Delivered = measureWindowDelivered
	res.Dropped = res.Packets - res.Delivered
	res.Policed, res.SpacerDropped, res.Lost, res.BufferFull = st.Policed, st.SpacerDropped, st.Lost, st.BufferFull
	res.Rate, res.Weight, res.Seed = st.Rate, st.Weight, sc.Seed
	if n := float64(res.Delivered); n > 0 {
		ma, md := sumA/n, sumD/n
		va := max(0, sumA2/n-ma*ma)
		vd := max(0, sumD2/n-md*md)
		res.MeanDelay = mu + ma
		res.Jitter = math.Sqrt(va)
		res.DrawnMean = mu + md
		res.DrawnJitter = math.Sqrt(vd)
		res.ExtraDelay = sumExtra / n
		if mu > 0 {
			res.MeanDeviationPct = 100 * ma / mu
			res.EmulationMeanDeviationPct = 100 * (ma - md) / mu
		}
		if sigma > 0 {
			res.JitterDeviationPct = 100 * (res.Jitter - sigma) / sigma
			// Control variate: the realised and drawn series share the
			// sampling noise of the slow delay process, so their variance
			// difference estimates the buffer's effect far more precisely
			// than either variance alone.
			res.EmulationJitterDeviationPct = 100 * (math.Sqrt(max(0, va-vd+sigma*sigma)) - sigma) / sigma
		}
	}
	if inv.departed > 0 {
		res.SwapsPerPacket = float64(inv.inversions) / float64(inv.departed)
	}
	if res.Passages > 0 {
		res.PassageTime = passSum / float64(res.Passages)
	}
	return res, nil
}

// inversionCounter counts the Kendall tau distance between arrival order
// (dense indices 0, 1, 2, … of accepted packets) and departure order in
// O(log W) per packet, where W covers the packets in flight. A Fenwick
// tree over a sliding window counts departed packets; everything below the
// window has departed, which keeps memory proportional to the queue, not
// to the run length.
type inversionCounter struct {
	base       int64
	tree       []int32 // Fenwick tree, 1-based, over [base, base+len(done))
	done       []bool
	low        int64 // smallest index not yet departed
	departed   int64
	inversions int64
}

func (c *inversionCounter) add(j int64) {
	if c.done == nil {
		c.done = make([]bool, 1024)
		c.tree = make([]int32, 1025)
	}
	if j-c.base >= int64(len(c.done)) {
		c.rebase(j)
	}
	k := int(j - c.base)
	below := c.base
	for i := k; i > 0; i -= i & -i {
		below += int64(c.tree[i])
	}
	c.inversions += c.departed - below
	c.departed++
	c.done[k] = true
	for i := k + 1; i < len(c.tree); i += i & -i {
		c.tree[i]++
	}
	for c.low-c.base < int64(len(c.done)) && c.done[c.low-c.base] {
		c.low++
	}
	if c.low-c.base >= int64(len(c.done))/2 {
		c.rebase(j)
	}
}

// rebase moves the window to start at low and grows it until need fits.
func (c *inversionCounter) rebase(need int64) {
	size := len(c.done)
	for need-c.low >= int64(size)/2 {
		size *= 2
	}
	shift := int(c.low - c.base)
	nd := make([]bool, size)
	if size == len(c.done) {
		nd = c.done[:0:size][:size]
		copy(nd, c.done[shift:])
		clear(nd[len(c.done)-shift:])
	} else {
		copy(nd, c.done[shift:])
	}
	c.done = nd
	if len(c.tree) != size+1 {
		c.tree = make([]int32, size+1)
	} else {
		clear(c.tree)
	}
	for i := 1; i <= size; i++ {
		if nd[i-1] {
			c.tree[i]++
		}
		if p := i + (i & -i); p <= size {
			c.tree[p] += c.tree[i]
		}
	}
	c.base = c.low
}

func (r SimResult) String() string {
	return fmt.Sprintf("packets=%d mean=%.4fms jitter=%.4fms dev=%.2f%%/%.2f%% extra=%.1fus swaps=%.3f",
		r.Packets, r.MeanDelay/1e6, r.Jitter/1e6, r.MeanDeviationPct, r.JitterDeviationPct, r.ExtraDelay/1e3, r.SwapsPerPacket)
}
