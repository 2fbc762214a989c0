package measure

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Pattern is how packets are spaced in time.
type Pattern int

const (
	CBR     Pattern = iota // constant bit rate: one packet every 1/rate
	Poisson                // exponential gaps with mean 1/rate (seeded)
	Bursts                 // Burst packets back to back every Burst/rate
)

func (p Pattern) String() string {
	switch p {
	case Poisson:
		return "poisson"
	case Bursts:
		return "burst"
	}
	return "cbr"
}

// ParsePattern reads cbr, poisson or burst.
func ParsePattern(s string) (Pattern, error) {
	switch strings.ToLower(s) {
	case "cbr", "":
		return CBR, nil
	case "poisson":
		return Poisson, nil
	case "burst", "bursts":
		return Bursts, nil
	}
	return 0, fmt.Errorf("unknown traffic pattern %q (use cbr, poisson or burst)", s)
}

// Frame sizes and overheads in bytes.
const (
	MinFrame     = 64   // Ethernet minimum, FCS included
	MaxFrame     = 1518 // MTU 1500 + 14 header + 4 FCS
	WireOverhead = 20   // preamble/SFD 8 + inter-frame gap 12
	frameHeaders = 46   // Ethernet 14 + FCS 4 + IPv4 20 + UDP 8
	headerLen    = 18   // seq 8 + send time 8 + tag 2
)

// RunFunc runs fn in a namespace (the caller's namespace when nil).
type RunFunc func(fn func() error) error

// Config describes an experiment.
type Config struct {
	// InSender and InReceiver run a function in the sender's and the
	// receiver's network namespace: the sockets are created there.
	InSender, InReceiver RunFunc
	Dst                  netip.AddrPort // receiver address; port 0 means 7777
	Rates                []float64      // packets/s, one trial each, in order
	Frame                int            // Ethernet frame bytes with FCS (default 64)
	Duration             time.Duration  // measured time per rate (default 3 s)
	// Warmup is sent at the trial's rate before the measured packets and
	// not counted (ARP, caches, the emulator's rate estimator). Default
	// 200 ms; negative means none.
	Warmup time.Duration
	// Drain is how long the receiver waits after the last packet: it must
	// exceed the largest delay on the path. Default 500 ms.
	Drain   time.Duration
	Pattern Pattern
	Burst   int    // packets per burst for Bursts (default 32)
	Flows   int    // UDP flows (source ports), round robin (default 1)
	Seed    uint64 // Poisson gaps; 0 means 1
	Batch   int    // packets per sendmmsg call at most (default 64)
	// NoRealTime keeps the sender thread in the normal scheduling class.
	NoRealTime bool
	// Generator is how packets are handed to the kernel (default GenAuto:
	// the fastest that works on the sender's interface).
	Generator Generator
	// GeneratorRate, when set, is called once the sockets are open, before
	// the first trial, to measure the generator the trials use alone
	// (packets/s): the report carries it, and the zero-loss search tells
	// a bound set by the generator from one set by the sender's core.
	GeneratorRate func(g Generator) (float64, error)
	// Series keeps up to this many (send time, delay) samples per rate,
	// evenly thinned, for the time-series plot (default 20000; <0: none).
	Series int
	// ZeroLoss, when set, adds a search for the highest rate whose loss
	// is within the tolerance.
	ZeroLoss *ZeroLossConfig
	// Progress is called with each finished trial (the rate list's and the
	// search's), e.g. to print a table line.
	Progress func(r *Result, phase string)
}

// ZeroLossConfig is an RFC 2544 style throughput search: a binary search
// between Min and Max for the highest rate whose loss ratio is ≤
// Tolerance and whose offered rate the generator actually achieved.
type ZeroLossConfig struct {
	Min, Max   float64       // packets/s; Min default Max/1000, Max required
	Tolerance  float64       // loss ratio allowed, 0 (default) to 1
	Trial      time.Duration // per trial (default: Config.Duration)
	Resolution float64       // stop when (hi−lo)/hi ≤ this (default 0.01)
	MaxTrials  int           // default 20
	// GeneratorPPS is the generator's own rate (Config.GeneratorRate
	// fills it): a trial that fell short of its schedule at less than
	// half of it was not short for want of a faster generator.
	GeneratorPPS float64
}

func (c *Config) fill() error {
	if c.Frame == 0 {
		c.Frame = MinFrame
	}
	if c.Frame < MinFrame || c.Frame > MaxFrame {
		return fmt.Errorf("frame size %d B out of range %d..%d", c.Frame, MinFrame, MaxFrame)
	}
	if c.Duration == 0 {
		c.Duration = 3 * time.Second
	}
	if c.Duration < 10*time.Millisecond || c.Duration > time.Hour {
		return fmt.Errorf("duration %v out of range 10ms..1h", c.Duration)
	}
	if c.Warmup == 0 {
		c.Warmup = 200 * time.Millisecond
	}
	if c.Warmup > time.Minute {
		return fmt.Errorf("warm-up %v longer than 1m", c.Warmup)
	}
	if c.Drain == 0 {
		c.Drain = 500 * time.Millisecond
	}
	if c.Drain < 0 || c.Drain > time.Minute {
		return fmt.Errorf("drain %v out of range 0..1m", c.Drain)
	}
	if c.Burst == 0 {
		c.Burst = 32
	}
	if c.Burst < 1 || c.Burst > 1<<20 {
		return fmt.Errorf("burst %d out of range 1..1048576", c.Burst)
	}
	if c.Flows == 0 {
		c.Flows = 1
	}
	if c.Flows < 1 || c.Flows > 1024 {
		return fmt.Errorf("flows %d out of range 1..1024", c.Flows)
	}
	if c.Batch == 0 {
		c.Batch = 64
	}
	if c.Batch < 1 || c.Batch > 1024 {
		return fmt.Errorf("batch %d out of range 1..1024", c.Batch)
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Series == 0 {
		c.Series = 20000
	}
	if c.Dst.Port() == 0 {
		c.Dst = netip.AddrPortFrom(c.Dst.Addr(), 7777)
	}
	if !c.Dst.Addr().Is4() {
		return fmt.Errorf("destination %v is not an IPv4 address", c.Dst.Addr())
	}
	if len(c.Rates) == 0 && c.ZeroLoss == nil {
		return errors.New("no rate given")
	}
	for _, r := range c.Rates {
		if err := checkRate(r); err != nil {
			return err
		}
	}
	if z := c.ZeroLoss; z != nil {
		if z.Max == 0 && len(c.Rates) > 0 {
			for _, r := range c.Rates {
				z.Max = math.Max(z.Max, r)
			}
		}
		if err := checkRate(z.Max); err != nil {
			return fmt.Errorf("zero-loss search: %w", err)
		}
		if z.Min == 0 {
			z.Min = z.Max / 1000
		}
		if z.Min <= 0 || z.Min >= z.Max {
			return fmt.Errorf("zero-loss search: minimum rate %g must be in (0, %g)", z.Min, z.Max)
		}
		if z.Tolerance < 0 || z.Tolerance > 1 || math.IsNaN(z.Tolerance) {
			return fmt.Errorf("zero-loss search: loss tolerance %g out of range 0..1", z.Tolerance)
		}
		if z.Trial == 0 {
			z.Trial = c.Duration
		}
		if z.Trial < 10*time.Millisecond || z.Trial > time.Hour {
			return fmt.Errorf("zero-loss search: trial length %v out of range 10ms..1h", z.Trial)
		}
		if z.Resolution == 0 {
			z.Resolution = 0.01
		}
		if z.Resolution <= 0 || z.Resolution >= 1 {
			return fmt.Errorf("zero-loss search: resolution %g must be in (0, 1)", z.Resolution)
		}
		if z.MaxTrials == 0 {
			z.MaxTrials = 20
		}
		if z.MaxTrials < 1 || z.MaxTrials > 100 {
			return fmt.Errorf("zero-loss search: %d trials out of range 1..100", z.MaxTrials)
		}
	}
	return nil
}

// MaxRate bounds what a trial may ask for (packets/s).
const MaxRate = 100e6

func checkRate(r float64) error {
	if !(r >= 1 && r <= MaxRate) {
		return fmt.Errorf("rate %g packets/s out of range 1..%g", r, float64(MaxRate))
	}
	return nil
}

// WireBits is the size of a frame on the wire in bits.
func WireBits(frame int) float64 { return float64(frame+WireOverhead) * 8 }

// ParseRate reads one rate: packets/s with an optional k, M or G suffix
// ("50k", "1M", "300000", "pps" allowed after), or bit/s on the wire with
// a bit or bps unit ("100Mbit", "1Gbps"), converted with the frame size.
func ParseRate(s string, frame int) (float64, error) {
	t := strings.TrimSpace(s)
	lower := strings.ToLower(t)
	bits := false
	for _, u := range []string{"bps", "bit"} {
		if strings.HasSuffix(lower, u) {
			bits, lower = true, strings.TrimSuffix(lower, u)
			break
		}
	}
	if !bits {
		lower = strings.TrimSuffix(lower, "pps")
	}
	mult := 1.0
	if n := len(lower); n > 0 {
		switch lower[n-1] {
		case 'k':
			mult, lower = 1e3, lower[:n-1]
		case 'm':
			mult, lower = 1e6, lower[:n-1]
		case 'g':
			mult, lower = 1e9, lower[:n-1]
		}
	}
	v, err := strconv.ParseFloat(lower, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("rate %q: not a number with an optional k/M/G and pps or bit unit", s)
	}
	v *= mult
	if bits {
		if frame == 0 {
			frame = MinFrame
		}
		v /= WireBits(frame)
	}
	if err := checkRate(v); err != nil {
		return 0, fmt.Errorf("rate %q: %w", s, err)
	}
	return v, nil
}

// ParseRates reads a comma-separated list of rates and ranges
// "FROM-TO/STEP" (e.g. "50k,300k,1M" or "100k-1M/100k"), at most 1000.
func ParseRates(s string, frame int) ([]float64, error) {
	var out []float64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("rates %q: empty item", s)
		}
		if rng, step, ok := strings.Cut(part, "/"); ok {
			from, to, ok := strings.Cut(rng, "-")
			if !ok {
				return nil, fmt.Errorf("rate range %q: use FROM-TO/STEP", part)
			}
			a, err := ParseRate(from, frame)
			if err != nil {
				return nil, err
			}
			b, err := ParseRate(to, frame)
			if err != nil {
				return nil, err
			}
			d, err := ParseRate(step, frame)
			if err != nil {
				return nil, err
			}
			if b < a {
				return nil, fmt.Errorf("rate range %q: end below start", part)
			}
			if (b-a)/d > 1000 {
				return nil, fmt.Errorf("rate range %q: more than 1000 rates", part)
			}
			for r := a; r <= b*(1+1e-9); r += d {
				out = append(out, r)
			}
		} else {
			r, err := ParseRate(part, frame)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		if len(out) > 1000 {
			return nil, fmt.Errorf("rates %q: more than 1000 rates", s)
		}
	}
	return out, nil
}

// FormatRate prints packets/s compactly: 50k, 1.2M, 750.
func FormatRate(r float64) string {
	switch {
	case r >= 1e6:
		return strconv.FormatFloat(math.Round(r/1e6*1000)/1000, 'f', -1, 64) + "M"
	case r >= 1e3:
		return strconv.FormatFloat(math.Round(r/1e3*1000)/1000, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(math.Round(r*1000)/1000, 'f', -1, 64)
}
