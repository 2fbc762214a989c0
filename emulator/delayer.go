package emulator

import (
	"math"
	"math/rand/v2"
)

// delayer owns the correlated delay state D (docs/emulator-spec.md §3). All times are
// float64 nanoseconds because at 100 Gbit/s one step moves D by about
// 4·10⁻⁶ of an innovation, far below integer-ns resolution.
type delayer struct {
	dist      Distribution
	mu, sigma float64 // ns
	halfLife  float64 // ns; 0 = uncorrelated
	tmin      int64   // rate interval, ns
	timeBased bool
	fixed     bool // D ≡ μ: deterministic or σ = 0

	D float64 // unclamped recursion state

	// Weight a = 1 − x and what depends on it; recomputed only when the
	// rate estimate changes so the per-packet path is a few multiplies.
	x      float64
	sigmaC float64
	xMu    float64 // x·μ
	xSig   float64 // x·σ_C = σ·√(x(2−x)), the std of x·C
	// log-normal and gamma parameters of C
	muL, sigL       float64
	gk, gTheta      float64
	gd, gc, gInvK   float64
	gUMin           float64 // below this U the boosted gamma sample underflows to 0
	gBoost          bool
	rate            float64 // last closed-interval estimate, pkt/s
	tOpen, n        int64
	started, closed bool
	tLast           int64
}

func (d *delayer) configure(c *Config) {
	d.dist = c.Distribution
	d.mu = float64(c.Delay)
	d.sigma = float64(c.Jitter)
	d.halfLife = float64(c.HalfLife)
	d.tmin = int64(c.RateInterval)
	d.timeBased = c.TimeBasedWeight
	d.fixed = c.Distribution == Deterministic || c.Jitter == 0
	if !d.started {
		d.D = d.mu
	}
	switch {
	case d.halfLife == 0:
		d.setWeight(1)
	case d.closed:
		d.setWeight(d.weightForRate(d.rate))
	default:
		d.x = 0 // per-packet OU steps until the first interval closes
	}
}

// reset forgets the delay state and the rate estimate.
func (d *delayer) reset() {
	d.started, d.closed, d.rate, d.n = false, false, 0, 0
	d.D = d.mu
}

// weightForRate returns x = 1 − a for a = 2^(−1/(t_h·R)), via expm1 so that
// x ≈ 4·10⁻⁶ at 100 Gbit/s keeps full precision (docs/emulator-spec.md §3.2 numerics).
func (d *delayer) weightForRate(r float64) float64 {
	if d.halfLife == 0 || r <= 0 || math.IsInf(r, 0) {
		return 1
	}
	return -math.Expm1(-math.Ln2 / (d.halfLife * 1e-9 * r))
}

func (d *delayer) setWeight(x float64) {
	d.x = x
	if x <= 0 {
		return
	}
	d.sigmaC = d.sigma * math.Sqrt((2-x)/x)
	d.xMu = x * d.mu
	d.xSig = d.sigma * math.Sqrt(x*(2-x))
	switch d.dist {
	case LogNormal:
		if d.mu > 0 {
			r := d.sigmaC / d.mu
			d.sigL = math.Sqrt(math.Log1p(r * r))
			d.muL = math.Log(d.mu) - d.sigL*d.sigL/2
		}
	case Gamma:
		if d.mu > 0 && d.sigmaC > 0 {
			d.gk = d.mu * d.mu / (d.sigmaC * d.sigmaC)
			d.gTheta = d.sigmaC * d.sigmaC / d.mu
			k := d.gk
			d.gBoost = k < 1
			if d.gBoost {
				d.gInvK = 1 / k
				// U^(1/k) < e^-800 makes G(k+1)·U^(1/k)·θ underflow (G(k+1)
				// never reaches e^50), so such draws are 0 without drawing
				// G(k+1): at 100 Gbit/s (k ≈ 10⁻⁴) that is most packets.
				d.gUMin = math.Exp(-800 * k)
				k++
			}
			d.gd = k - 1.0/3
			d.gc = 1 / math.Sqrt(9*d.gd)
		}
	}
}

// arrive runs the rate estimator for a burst of b packets stamped t
// (docs/emulator-spec.md §3.3) and returns whether this is the first burst ever.
func (d *delayer) arrive(t int64, b int) {
	if !d.started {
		// The opening packet only marks the start; counting from the next
		// one makes CBR at spacing Δ give exactly R = 1/Δ.
		d.started = true
		d.tOpen, d.n, d.tLast = t, int64(b-1), t
		d.D = d.mu
		return
	}
	d.n += int64(b)
	if el := t - d.tOpen; el >= d.tmin {
		d.rate = float64(d.n) * 1e9 / float64(el)
		d.tOpen, d.n = t, 0
		d.closed = true
		if d.halfLife > 0 && !d.timeBased {
			d.setWeight(d.weightForRate(d.rate))
		}
	}
}

// next advances D for one packet arriving at t and returns the applied
// delay max(D, 0) in ns.
func (d *delayer) next(t int64, rng *rand.Rand) float64 {
	if d.fixed {
		d.tLast = t
		d.D = d.mu
		return d.mu
	}
	if d.halfLife > 0 && (d.timeBased || !d.closed) {
		// Exact OU step over the real gap; a zero gap (same burst) keeps D,
		// which also avoids dividing by zero in (1+a)/(1−a).
		gap := t - d.tLast
		d.tLast = t
		if gap <= 0 {
			return max(d.D, 0)
		}
		d.setWeight(-math.Expm1(-math.Ln2 * float64(gap) / d.halfLife))
	} else {
		d.tLast = t
	}
	x := d.x
	switch d.dist {
	case Normal:
		d.D = (1-x)*d.D + d.xMu + d.xSig*rng.NormFloat64()
	case Uniform:
		d.D = (1-x)*d.D + d.xMu + d.xSig*math.Sqrt(3)*(2*rng.Float64()-1)
	case LogNormal:
		c := math.Exp(d.muL + d.sigL*rng.NormFloat64())
		d.D = (1-x)*d.D + x*c
	case Gamma:
		d.D = (1-x)*d.D + x*d.gamma(rng)
	}
	return max(d.D, 0)
}

// gamma draws C with shape k and scale θ by Marsaglia–Tsang; for k < 1 it
// uses G(k) = G(k+1)·U^(1/k) in log space because k can be ~10⁻⁵ and the
// direct power underflows in a way that loses the rare large samples.
func (d *delayer) gamma(rng *rand.Rand) float64 {
	var u0 float64
	if d.gBoost {
		u0 = rng.Float64()
		if u0 < d.gUMin {
			return 0
		}
	}
	var g float64
	for {
		z := rng.NormFloat64()
		v := 1 + d.gc*z
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*z*z*z*z || math.Log(u) < 0.5*z*z+d.gd*(1-v+math.Log(v)) {
			g = d.gd * v
			break
		}
	}
	if d.gBoost {
		return math.Exp(math.Log(g)+math.Log(u0)*d.gInvK) * d.gTheta
	}
	return g * d.gTheta
}
