package emulator

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// drawCBR runs a bare delayer (no buffer) over CBR arrivals spaced dt ns
// and returns the unclamped D of each packet.
func drawCBR(t *testing.T, c Config, dt float64, n int, seed uint64) []float64 {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	var d delayer
	d.configure(&c)
	rng := rand.New(rand.NewPCG(seed, seed^1))
	out := make([]float64, n)
	for i := range out {
		ts := int64(float64(i) * dt)
		d.arrive(ts, 1)
		d.next(ts, rng)
		out[i] = d.D
	}
	return out
}

func meanStd(x []float64) (float64, float64) {
	var s, s2 float64
	for _, v := range x {
		s += v
	}
	m := s / float64(len(x))
	for _, v := range x {
		s2 += (v - m) * (v - m)
	}
	return m, math.Sqrt(s2 / float64(len(x)))
}

// gbit returns the CBR spacing in ns of 1518-byte frames (1538 B on the
// wire) at g Gbit/s.
func gbit(g float64) float64 { return 1538 * 8 / g }

func TestDrawnMomentsUncorrelated(t *testing.T) {
	// With t_h = 0 the draws are i.i.d., so the standard error of the mean
	// is σ/√n and that of the std about σ/√(2n) (normal), wider for skewed
	// laws; we allow 5 standard errors (10 for the skewed ones' std).
	const n = 400_000
	mu, sigma := 10e6, 1e6
	for _, dist := range []Distribution{Normal, Uniform, LogNormal, Gamma} {
		t.Run(dist.String(), func(t *testing.T) {
			t.Parallel()
			c := DefaultConfig()
			c.Delay, c.Jitter, c.HalfLife, c.Distribution = 10*time.Millisecond, time.Millisecond, 0, dist
			x := drawCBR(t, c, gbit(1), n, 7)
			m, s := meanStd(x)
			seM := sigma / math.Sqrt(n)
			seS := sigma / math.Sqrt(2*n)
			if dist == LogNormal || dist == Gamma {
				seS *= 2
			}
			if math.Abs(m-mu) > 5*seM {
				t.Errorf("mean %.0f, want %.0f ± %.0f", m, mu, 5*seM)
			}
			if math.Abs(s-sigma) > 5*seS {
				t.Errorf("std %.0f, want %.0f ± %.0f", s, sigma, 5*seS)
			}
		})
	}
}

func TestDrawnMomentsCorrelated(t *testing.T) {
	// D is an OU process with correlation time τ_c = t_h/ln2. Over a run
	// of length T the mean has standard error σ·√(2τ_c/T) and the variance
	// a relative standard error √(2τ_c/T) (so the std about half that).
	// T = 100 s at 0.1 Gbit/s gives 0.025σ and 1.2 %; we allow 4 SE.
	// Log-normal and gamma innovations make D heavy-tailed (docs/emulator-spec.md §3.4),
	// so their std gets a loose 15 % bound.
	const T = 100.0
	tauC := 0.021 / math.Ln2
	seMean := math.Sqrt(2 * tauC / T)
	for _, dist := range []Distribution{Normal, Uniform, LogNormal, Gamma} {
		t.Run(dist.String(), func(t *testing.T) {
			t.Parallel()
			c := DefaultConfig()
			c.Delay, c.Jitter, c.Distribution = 10*time.Millisecond, time.Millisecond, dist
			dt := gbit(0.1)
			x := drawCBR(t, c, dt, int(T*1e9/dt), 11)
			m, s := meanStd(x)
			tolS := 4 * seMean / 2
			if dist == LogNormal || dist == Gamma {
				tolS = 0.15
			}
			if math.Abs(m-10e6)/1e6 > 4*seMean {
				t.Errorf("mean %.4f ms, want 10 ± %.4f", m/1e6, 4*seMean)
			}
			if math.Abs(s-1e6)/1e6 > tolS {
				t.Errorf("std %.4f ms, want 1 ± %.4f", s/1e6, tolS)
			}
		})
	}
}

func TestCorrelationHalfLife(t *testing.T) {
	// Corr(D(t), D(t+τ)) = 2^(−τ/t_h) at any rate (docs/emulator-spec.md docs/emulator-spec.md §3.2). Each
	// estimate from T seconds has standard error ≈ (1−ρ²)·√(τ_c/T)·√2;
	// with T = 60 s that is ≤ 0.032, and we allow 0.08.
	for _, g := range []float64{0.1, 1} {
		c := DefaultConfig()
		c.Delay, c.Jitter = 10*time.Millisecond, time.Millisecond
		dt := gbit(g)
		T := 60.0
		if g == 1 {
			T = 20 // 1.6 M packets; SE ≈ 0.055
		}
		x := drawCBR(t, c, dt, int(T*1e9/dt), 3)
		m, s := meanStd(x)
		for _, tau := range []float64{0.007, 0.021, 0.042} {
			lag := int(math.Round(tau * 1e9 / dt))
			var cov float64
			for i := 0; i+lag < len(x); i++ {
				cov += (x[i] - m) * (x[i+lag] - m)
			}
			rho := cov / float64(len(x)-lag) / (s * s)
			want := math.Pow(2, -tau/0.021)
			tol := 0.08
			if g == 1 {
				tol = 0.15
			}
			if math.Abs(rho-want) > tol {
				t.Errorf("%g Gbit/s, τ=%gms: correlation %.3f, want %.3f ± %.2f", g, tau*1e3, rho, want, tol)
			}
		}
	}
}

func TestStepStdMatchesWeight(t *testing.T) {
	// The difference of consecutive delays has std σ·√(2(1−a)) (spec
	// §3.2). Each difference is almost independent, so with 10⁶ packets
	// this is checked to about 0.1 %; we allow 1 %.
	c := DefaultConfig()
	c.Delay, c.Jitter = 10*time.Millisecond, time.Millisecond
	dt := gbit(10)
	x := drawCBR(t, c, dt, 1_000_000, 5)
	skip := int(0.011e9/dt) + 2 // after the first interval closed
	d := make([]float64, 0, len(x))
	for i := skip; i < len(x); i++ {
		d = append(d, x[i]-x[i-1])
	}
	_, s := meanStd(d)
	R := 1e9 / dt
	x1 := -math.Expm1(-math.Ln2 / (0.021 * R))
	want := 1e6 * math.Sqrt(2*x1)
	if math.Abs(s/want-1) > 0.01 {
		t.Errorf("step std %.2f ns, want %.2f", s, want)
	}
}

func TestVarianceKeptAcrossRateChanges(t *testing.T) {
	// Var[D] stays σ² whatever sequence of weights is used (docs/emulator-spec.md §3.2 key
	// property). Alternate 0.1 and 10 Gbit/s every 200 ms for 60 s.
	c := DefaultConfig()
	c.Delay, c.Jitter = 10*time.Millisecond, time.Millisecond
	var d delayer
	d.configure(&c)
	rng := rand.New(rand.NewPCG(9, 9))
	var xs []float64
	ts := 0.0
	for ts < 60e9 {
		dt := gbit(0.1)
		if int(ts/0.2e9)%2 == 1 {
			dt = gbit(10)
		}
		ti := int64(ts)
		d.arrive(ti, 1)
		d.next(ti, rng)
		if int(ts/0.2e9)%2 == 1 {
			// sample the fast phase sparsely so both phases weigh alike
			if rng.IntN(100) == 0 {
				xs = append(xs, d.D)
			}
		} else {
			xs = append(xs, d.D)
		}
		ts += dt
	}
	m, s := meanStd(xs)
	// SE of the std over 60 s: ≈ σ·√(τ_c/T)/√2 ≈ 0.016σ; allow 5 %.
	if math.Abs(m-10e6) > 0.1e6 || math.Abs(s-1e6) > 0.05e6 {
		t.Errorf("mean %.4f ms std %.4f ms, want 10 and 1", m/1e6, s/1e6)
	}
}

func TestRateEstimatorCBR(t *testing.T) {
	c := DefaultConfig()
	c.Delay, c.Jitter = 10*time.Millisecond, time.Millisecond
	var d delayer
	d.configure(&c)
	rng := rand.New(rand.NewPCG(1, 2))
	const dt = 1000 // 1 Mpps
	for i := int64(0); i < 50_000; i++ {
		d.arrive(i*dt, 1)
		d.next(i*dt, rng)
	}
	if math.Abs(d.rate-1e6) > 1e-6 {
		t.Fatalf("rate %.6f, want exactly 1e6", d.rate)
	}
	wantA := math.Pow(0.5, 1/(0.021*1e6))
	if math.Abs((1-d.x)-wantA) > 1e-12 {
		t.Fatalf("a = %.12f, want %.12f", 1-d.x, wantA)
	}
	// An idle second, then a burst: the interval closed by the burst spans
	// the gap, so R drops to (packets since the last close)/(1 s) and a
	// falls accordingly, making the next delays much less correlated (docs/emulator-spec.md §3.3).
	t0 := int64(50_000*dt) + 1e9
	d.arrive(t0, 16)
	if d.rate > 1e6/50 {
		t.Fatalf("rate after idle %.1f pkt/s, want < 2%% of 1e6", d.rate)
	}
	if a, aCBR := 1-d.x, wantA; a >= aCBR || math.Abs(a-math.Pow(0.5, 1/(0.021*d.rate))) > 1e-12 {
		t.Fatalf("a after idle = %.6f (CBR %.6f), want 2^(-1/(t_h·R)) below it", a, aCBR)
	}
}

func TestFixedDelay(t *testing.T) {
	c := DefaultConfig()
	c.Delay, c.Distribution = 5*time.Millisecond, Deterministic
	x := drawCBR(t, c, 100, 1000, 1)
	for _, v := range x {
		if v != 5e6 {
			t.Fatalf("deterministic delay %v", v)
		}
	}
}

func TestGammaTinyShape(t *testing.T) {
	// At 100 Gbit/s with σ = 3 ms, t_h = 21 ms, k ≈ 2·10⁻⁵ (docs/emulator-spec.md §3.4):
	// sampling must stay finite and non-negative, and the mean of D must
	// stay near μ (its variance is reached only slowly, so not checked).
	c := DefaultConfig()
	c.Delay, c.Jitter, c.Distribution = 10*time.Millisecond, 3*time.Millisecond, Gamma
	x := drawCBR(t, c, gbit(100), 2_000_000, 4)
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Fatalf("bad draw %v", v)
		}
	}
}

func TestTimeBasedWeight(t *testing.T) {
	// With per-packet weights a_i = 2^(−gap/t_h) the process is the exact
	// OU process sampled at the arrivals, so on/off traffic keeps both the
	// variance and the time-domain correlation: after a 1 s gap followed
	// by a 10 Gbit/s burst, consecutive delays still differ by only
	// σ·√(2(1−a)) instead of being nearly fresh.
	c := DefaultConfig()
	c.Delay, c.Jitter, c.TimeBasedWeight = 10*time.Millisecond, time.Millisecond, true
	var d delayer
	d.configure(&c)
	rng := rand.New(rand.NewPCG(21, 21))
	var xs, steps []float64
	ts := 0.0
	for burst := 0; burst < 400; burst++ {
		prev := math.NaN()
		for i := 0; i < 10_000; i++ { // 12 ms at 10 Gbit/s
			ti := int64(ts)
			d.arrive(ti, 1)
			d.next(ti, rng)
			if i%100 == 0 {
				xs = append(xs, d.D)
			}
			if !math.IsNaN(prev) {
				steps = append(steps, d.D-prev)
			}
			prev = d.D
			ts += gbit(10)
		}
		ts += 0.1e9 // idle 100 ms
	}
	m, s := meanStd(xs)
	_, st := meanStd(steps)
	x := -math.Expm1(-math.Ln2 * gbit(10) / 21e6)
	// 400 bursts 100 ms apart are nearly independent samples of the
	// process: SE(mean) ≈ σ/√400·√(burst correlation) ≲ 0.1σ.
	if math.Abs(m-10e6) > 0.15e6 || math.Abs(s-1e6) > 0.1e6 {
		t.Errorf("time-based: mean %.4f std %.4f ms, want 10 and 1", m/1e6, s/1e6)
	}
	if want := 1e6 * math.Sqrt(2*x); math.Abs(st/want-1) > 0.02 {
		t.Errorf("time-based step std %.1f ns, want %.1f", st, want)
	}
}

func TestGammaSamplerSmallShape(t *testing.T) {
	// The k < 1 path (boost, and the shortcut for draws that underflow)
	// must keep E[C] = m. With k = 0.005 about 1.8 % of draws take the
	// shortcut; the mean of n draws has relative SE 1/√(k·n) ≈ 0.7 % for
	// n = 4·10⁶, and we allow 3 %.
	const k, n = 0.005, 4_000_000
	mu := 1e7
	d := delayer{dist: Gamma, mu: mu, sigma: mu / math.Sqrt(k)}
	d.setWeight(1)
	if math.Abs(d.gk/k-1) > 1e-9 || d.gUMin < 0.01 {
		t.Fatalf("shape %v, uMin %v", d.gk, d.gUMin)
	}
	rng := rand.New(rand.NewPCG(17, 17))
	var sum float64
	for i := 0; i < n; i++ {
		sum += d.gamma(rng)
	}
	if m := sum / n; math.Abs(m/mu-1) > 0.03 {
		t.Errorf("E[C] = %.4g, want %.4g", m, mu)
	}
}
