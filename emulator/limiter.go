package emulator

import (
	"math"
	"math/rand/v2"
)

// policer is a token bucket evaluated at arrival time (docs/emulator-spec.md §5.1).
type policer struct {
	on        bool
	bytesPerN float64 // refill rate, bytes per ns
	burst     float64
	tokens    float64
	tLast     int64
	primed    bool
}

func (p *policer) configure(c PolicerConfig) {
	wasOn := p.on
	p.on = c.Enabled
	p.bytesPerN = float64(c.Rate) / 8e9
	p.burst = float64(c.Burst)
	if !wasOn {
		// A new bucket starts full, as MoonEm's does.
		p.tokens, p.primed = p.burst, false
	}
	p.tokens = min(p.tokens, p.burst)
}

// pass takes wire bytes from the bucket if it holds them. A GSO
// super-frame (super) may be larger than the whole bucket: it passes when
// the bucket holds min(wire, burst) and leaves the bucket in debt by the
// rest, so the long-run rate stays the policed one while a super-frame
// larger than the burst is not dropped forever.
func (p *policer) pass(t int64, wire int, super bool) bool {
	if p.primed {
		p.tokens = min(p.burst, p.tokens+float64(t-p.tLast)*p.bytesPerN)
	}
	p.tLast, p.primed = t, true
	need := float64(wire)
	if super {
		need = min(need, p.burst)
	}
	if p.tokens >= need {
		p.tokens -= float64(wire)
		return true
	}
	return false
}

// spacer is a leaky bucket on delayed times with scheduled-fill accounting
// (docs/emulator-spec.md §5.2). tFree is split into integer ns and a fraction so that
// 123.04 ns slots at 100 Gbit/s do not accumulate rounding error.
type spacer struct {
	on       bool
	nsPerB   float64 // serialisation time per byte
	bPerNs   float64
	limit    float64 // bytes; 0 = none
	tFree    int64
	tFreeFr  float64
	hasSched bool
}

func (s *spacer) configure(c SpacerConfig) {
	s.on = c.Enabled
	if c.Rate > 0 {
		s.nsPerB = 8e9 / float64(c.Rate)
		s.bPerNs = float64(c.Rate) / 8e9
	}
	s.limit = float64(c.Limit)
}

// schedule returns the start of serialisation for a packet whose delayed
// time is e, or false if the bucket would overflow its limit.
func (s *spacer) schedule(e int64, wire int) (int64, bool) {
	backlog := 0.0
	if s.hasSched {
		backlog = max(0, (float64(s.tFree-e)+s.tFreeFr)*s.bPerNs)
	}
	if s.limit > 0 && backlog+float64(wire) > s.limit {
		return 0, false
	}
	var start int64
	if !s.hasSched || e > s.tFree || (e == s.tFree && s.tFreeFr == 0) {
		start = e
		s.tFree, s.tFreeFr = e, 0
	} else {
		start = s.tFree
	}
	s.hasSched = true
	f := s.tFreeFr + float64(wire)*s.nsPerB
	whole := math.Floor(f)
	s.tFree += int64(whole)
	s.tFreeFr = f - whole
	return start, true
}

// lossState is the dropper (docs/emulator-spec.md §6, §9.4).
type lossState struct {
	cfg   LossConfig
	state uint8 // GE: 0 good, 1 bad; 4-state: 1..4
}

func (l *lossState) configure(c LossConfig) {
	if c.Model != l.cfg.Model {
		l.state = 0
		if c.Model == FourState {
			l.state = 1
		}
	}
	l.cfg = c
}

func (l *lossState) lost(rng *rand.Rand) bool {
	c := &l.cfg
	switch c.Model {
	case RandomLoss:
		return rng.Float64() < c.Prob
	case GilbertElliott:
		// The state at the start of the step decides the loss; then the
		// chain moves. This is NetEm's order.
		var lost bool
		if l.state == 0 {
			lost = c.OneMinusK > 0 && rng.Float64() < c.OneMinusK
			if rng.Float64() < c.P {
				l.state = 1
			}
		} else {
			lost = c.OneMinusH > 0 && rng.Float64() < c.OneMinusH
			if rng.Float64() < c.R {
				l.state = 0
			}
		}
		return lost
	case FourState:
		u := rng.Float64()
		switch l.state {
		case 1:
			switch {
			case u < c.P14:
				l.state = 4
			case u < c.P13+c.P14:
				l.state = 3
			}
		case 2:
			if u < c.P23 {
				l.state = 3
			}
		case 3:
			switch {
			case u < c.P32:
				l.state = 2
			case u < c.P31+c.P32:
				l.state = 1
			}
		case 4:
			l.state = 1
		}
		return l.state == 3 || l.state == 4
	}
	return false
}
