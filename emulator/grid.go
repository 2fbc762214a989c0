package emulator

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// GridOptions describes the paper's accuracy grid (docs/emulator-spec.md §13.1): FIFO,
// normal innovations, mean 10 ms, every combination of jitter, half-life
// and rate, each cell run Replications times with independent seeds.
type GridOptions struct {
	Mean         time.Duration
	Jitters      []time.Duration
	HalfLives    []time.Duration
	Rates        []uint64 // bit/s
	Replications int
	// Duration returns the simulated time per replication at a rate;
	// high rates get shorter runs so the whole grid takes minutes.
	Duration func(rate uint64) time.Duration
	Workers  int
	Progress func(done, total int)
}

// DefaultGridOptions is the grid of the paper with run lengths that keep
// every replication at 0.2–4 M packets.
func DefaultGridOptions() GridOptions {
	ms := time.Millisecond
	return GridOptions{
		Mean:         10 * ms,
		Jitters:      []time.Duration{100 * time.Microsecond, 300 * time.Microsecond, ms, 3 * ms},
		HalfLives:    []time.Duration{0, 7 * ms, 21 * ms, 70 * ms},
		Rates:        []uint64{1e8, 1e9, 1e10, 1e11},
		Replications: 8,
		Duration:     DefaultGridDuration,
	}
}

// DefaultGridDuration: 30 s at 0.1 Gbit/s (244 k packets), 8 s at 1 (650 k),
// 2 s at 10 (1.6 M) and 0.5 s at 100 Gbit/s (4 M packets).
func DefaultGridDuration(rate uint64) time.Duration {
	switch {
	case rate <= 1e8:
		return 30 * time.Second
	case rate <= 1e9:
		return 8 * time.Second
	case rate <= 1e10:
		return 2 * time.Second
	}
	return 500 * time.Millisecond
}

// Estimate is a mean over replications with the half-width of its 95 %
// confidence interval (Student t).
type Estimate struct {
	Mean, CI95 float64
}

func (e Estimate) Lo() float64 { return e.Mean - e.CI95 }
func (e Estimate) Hi() float64 { return e.Mean + e.CI95 }

// GridCell is one configuration of the grid.
type GridCell struct {
	Rate          uint64
	Jitter        time.Duration
	HalfLife      time.Duration
	Replications  int
	Duration      time.Duration
	Packets       uint64 // measured, all replications
	MeanDelayMs   Estimate
	JitterMs      Estimate
	MeanDevPct    Estimate // raw: (realised mean − μ)/μ, includes the process's sampling noise
	JitterDevPct  Estimate
	EmuMeanDevPct Estimate // the buffer's effect: control variate against the drawn delays
	EmuJitDevPct  Estimate
	ExtraDelayUs  Estimate
	TheoryExtraUs float64 // σ²·ln2/t_h (high-rate limit), NaN for t_h = 0
	PassageMs     Estimate
	Dropped       uint64
}

// Pass reports the paper's criterion on the emulator's own deviations:
// mean below 3 % and jitter within −3 %…+1 %, judged on the point estimate.
func (c GridCell) Pass() bool {
	return c.EmuMeanDevPct.Mean < 3 && c.EmuJitDevPct.Mean >= -3 && c.EmuJitDevPct.Mean <= 1
}

// PassCI is the stricter form: the whole 95 % interval satisfies it.
func (c GridCell) PassCI() bool {
	return c.EmuMeanDevPct.Hi() < 3 && c.EmuJitDevPct.Lo() >= -3 && c.EmuJitDevPct.Hi() <= 1
}

// t975 holds Student t quantiles for 1..30 degrees of freedom.
var t975 = []float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060,
	2.056, 2.052, 2.048, 2.045, 2.042}

func estimate(x []float64) Estimate {
	n := len(x)
	if n == 0 {
		return Estimate{}
	}
	m, _ := meanVar(x)
	if n == 1 {
		return Estimate{Mean: m, CI95: math.NaN()}
	}
	_, v := meanVar(x)
	t := 1.96
	if n-1 < len(t975) {
		t = t975[n-1]
	}
	return Estimate{Mean: m, CI95: t * math.Sqrt(v/float64(n))}
}

func meanVar(x []float64) (float64, float64) {
	var s float64
	for _, v := range x {
		s += v
	}
	m := s / float64(len(x))
	var ss float64
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	if len(x) < 2 {
		return m, 0
	}
	return m, ss / float64(len(x)-1)
}

// RunGrid simulates every cell of the grid in parallel.
func RunGrid(ctx context.Context, o GridOptions) ([]GridCell, error) {
	if o.Replications < 2 {
		return nil, fieldErr("replications", "need at least 2 for a confidence interval (got %d)", o.Replications)
	}
	if o.Duration == nil {
		o.Duration = DefaultGridDuration
	}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var cells []GridCell
	for _, r := range o.Rates {
		for _, th := range o.HalfLives {
			for _, j := range o.Jitters {
				cells = append(cells, GridCell{Rate: r, Jitter: j, HalfLife: th, Replications: o.Replications, Duration: o.Duration(r)})
			}
		}
	}
	type job struct{ cell, rep int }
	results := make([][]SimResult, len(cells))
	for i := range results {
		results[i] = make([]SimResult, o.Replications)
	}
	jobs := make(chan job)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		done     int
	)
	total := len(cells) * o.Replications
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for jb := range jobs {
				c := cells[jb.cell]
				cfg := DefaultConfig()
				cfg.Delay, cfg.Jitter, cfg.HalfLife, cfg.Buffer = o.Mean, c.Jitter, c.HalfLife, 1<<21
				res, err := Simulate(SimConfig{Emulator: cfg, Rate: c.Rate, Duration: c.Duration, Warmup: -1, Seed: uint64(1000*jb.cell + jb.rep + 1)})
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				results[jb.cell][jb.rep] = res
				done++
				if o.Progress != nil {
					o.Progress(done, total)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for ci := range cells {
		for rep := 0; rep < o.Replications; rep++ {
			select {
			case jobs <- job{ci, rep}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if firstErr != nil {
		return nil, firstErr
	}
	for i := range cells {
		c := &cells[i]
		pick := func(f func(SimResult) float64) Estimate {
			x := make([]float64, 0, len(results[i]))
			for _, r := range results[i] {
				if v := f(r); !math.IsNaN(v) {
					x = append(x, v)
				}
			}
			return estimate(x)
		}
		for _, r := range results[i] {
			c.Packets += r.Packets
			c.Dropped += r.Dropped
		}
		c.MeanDelayMs = pick(func(r SimResult) float64 { return r.MeanDelay / 1e6 })
		c.JitterMs = pick(func(r SimResult) float64 { return r.Jitter / 1e6 })
		c.MeanDevPct = pick(func(r SimResult) float64 { return r.MeanDeviationPct })
		c.JitterDevPct = pick(func(r SimResult) float64 { return r.JitterDeviationPct })
		c.EmuMeanDevPct = pick(func(r SimResult) float64 { return r.EmulationMeanDeviationPct })
		c.EmuJitDevPct = pick(func(r SimResult) float64 { return r.EmulationJitterDeviationPct })
		c.ExtraDelayUs = pick(func(r SimResult) float64 { return r.ExtraDelay / 1e3 })
		c.PassageMs = pick(func(r SimResult) float64 {
			if r.Passages == 0 {
				return math.NaN()
			}
			return r.PassageTime / 1e6
		})
		c.TheoryExtraUs = math.NaN()
		if c.HalfLife > 0 {
			s := float64(c.Jitter)
			c.TheoryExtraUs = s * s * math.Ln2 / float64(c.HalfLife) / 1e3
		}
	}
	return cells, nil
}

// WriteGridCSV writes one row per cell.
func WriteGridCSV(w io.Writer, cells []GridCell) error {
	cw := csv.NewWriter(w)
	head := []string{"rate_gbps", "jitter_ms", "half_life_ms", "replications", "duration_s", "packets", "dropped",
		"mean_delay_ms", "mean_delay_ci95", "jitter_ms_realised", "jitter_ci95",
		"mean_deviation_pct", "mean_deviation_ci95", "jitter_deviation_pct", "jitter_deviation_ci95",
		"emu_mean_deviation_pct", "emu_mean_deviation_ci95", "emu_jitter_deviation_pct", "emu_jitter_deviation_ci95",
		"extra_delay_us", "extra_delay_ci95", "theory_extra_delay_us", "passage_ms", "passage_ci95", "pass", "pass_ci"}
	if err := cw.Write(head); err != nil {
		return err
	}
	f := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	for _, c := range cells {
		row := []string{f(float64(c.Rate) / 1e9), f(c.Jitter.Seconds() * 1e3), f(c.HalfLife.Seconds() * 1e3),
			strconv.Itoa(c.Replications), f(c.Duration.Seconds()), strconv.FormatUint(c.Packets, 10), strconv.FormatUint(c.Dropped, 10),
			f(c.MeanDelayMs.Mean), f(c.MeanDelayMs.CI95), f(c.JitterMs.Mean), f(c.JitterMs.CI95),
			f(c.MeanDevPct.Mean), f(c.MeanDevPct.CI95), f(c.JitterDevPct.Mean), f(c.JitterDevPct.CI95),
			f(c.EmuMeanDevPct.Mean), f(c.EmuMeanDevPct.CI95), f(c.EmuJitDevPct.Mean), f(c.EmuJitDevPct.CI95),
			f(c.ExtraDelayUs.Mean), f(c.ExtraDelayUs.CI95), f(c.TheoryExtraUs), f(c.PassageMs.Mean), f(c.PassageMs.CI95),
			strconv.FormatBool(c.Pass()), strconv.FormatBool(c.PassCI())}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// GridSummary tells whether every t_h = 21 ms cell meets the criterion.
func GridSummary(cells []GridCell, halfLife time.Duration) (n, pass, passCI int) {
	for _, c := range cells {
		if c.HalfLife != halfLife {
			continue
		}
		n++
		if c.Pass() {
			pass++
		}
		if c.PassCI() {
			passCI++
		}
	}
	return
}

// WriteGridSVG draws one metric of the grid as small multiples: one panel
// per half-life, rate on a log axis, one line per jitter, 95 % intervals as
// error bars, and the paper's bounds as dashed lines. Hand-written SVG
// keeps the module free of plotting dependencies.
func WriteGridSVG(w io.Writer, cells []GridCell, title string, metric func(GridCell) Estimate, bounds ...float64) error {
	var halfLives []time.Duration
	var jitters []time.Duration
	var rates []uint64
	seenH, seenJ, seenR := map[time.Duration]bool{}, map[time.Duration]bool{}, map[uint64]bool{}
	for _, c := range cells {
		if !seenH[c.HalfLife] {
			seenH[c.HalfLife] = true
			halfLives = append(halfLives, c.HalfLife)
		}
		if !seenJ[c.Jitter] {
			seenJ[c.Jitter] = true
			jitters = append(jitters, c.Jitter)
		}
		if !seenR[c.Rate] {
			seenR[c.Rate] = true
			rates = append(rates, c.Rate)
		}
	}
	const pw, ph, ml, mt, gap = 300.0, 220.0, 70.0, 50.0, 70.0
	width := ml + float64(len(halfLives))*(pw+gap) + 20
	height := mt + ph + 90
	colors := []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"}
	var b []byte
	pf := func(format string, a ...any) { b = fmt.Appendf(b, format, a...) }
	pf(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", width, height)
	pf(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	pf(`<text x="%.0f" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", ml, xmlEscape(title))
	lr0, lr1 := math.Log10(float64(rates[0])), math.Log10(float64(rates[len(rates)-1]))
	if lr1 == lr0 {
		lr1 = lr0 + 1
	}
	for pi, th := range halfLives {
		x0 := ml + float64(pi)*(pw+gap)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, c := range cells {
			if c.HalfLife != th {
				continue
			}
			e := metric(c)
			ci := e.CI95
			if math.IsNaN(ci) {
				ci = 0
			}
			if !math.IsNaN(e.Mean) {
				lo, hi = min(lo, e.Mean-ci), max(hi, e.Mean+ci)
			}
		}
		for _, bd := range bounds {
			if hi-lo < 50*math.Abs(bd)+10 { // show bounds unless the panel's range dwarfs them
				lo, hi = min(lo, bd), max(hi, bd)
			}
		}
		if math.IsInf(lo, 0) {
			lo, hi = 0, 1
		}
		if hi == lo {
			hi = lo + 1
		}
		pad := (hi - lo) * 0.08
		lo, hi = lo-pad, hi+pad
		xs := func(r uint64) float64 { return x0 + 20 + (math.Log10(float64(r))-lr0)/(lr1-lr0)*(pw-40) }
		ys := func(v float64) float64 { return mt + ph - (v-lo)/(hi-lo)*ph }
		pf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>`+"\n", x0, mt, pw, ph)
		pf(`<text x="%.1f" y="%.1f" font-weight="bold">t_h = %v</text>`+"\n", x0+5, mt-6, th)
		for k := 0; k <= 4; k++ {
			v := lo + (hi-lo)*float64(k)/4
			pf(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x0, x0+pw, ys(v), ys(v))
			pf(`<text x="%.1f" y="%.1f" text-anchor="end">%.3g</text>`+"\n", x0-3, ys(v)+4, v)
		}
		for _, r := range rates {
			pf(`<text x="%.1f" y="%.1f" text-anchor="middle">%g</text>`+"\n", xs(r), mt+ph+14, float64(r)/1e9)
		}
		pf(`<text x="%.1f" y="%.1f" text-anchor="middle">rate (Gbit/s)</text>`+"\n", x0+pw/2, mt+ph+30)
		for _, bd := range bounds {
			if bd >= lo && bd <= hi {
				pf(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#000" stroke-dasharray="4 3"/>`+"\n", x0, x0+pw, ys(bd), ys(bd))
			}
		}
		for ji, j := range jitters {
			col := colors[ji%len(colors)]
			var path []byte
			for _, c := range cells {
				if c.HalfLife != th || c.Jitter != j {
					continue
				}
				e := metric(c)
				if math.IsNaN(e.Mean) {
					continue
				}
				x, y := xs(c.Rate)+float64(ji-len(jitters)/2)*3, ys(e.Mean)
				if len(path) == 0 {
					path = fmt.Appendf(path, "M%.1f %.1f", x, y)
				} else {
					path = fmt.Appendf(path, " L%.1f %.1f", x, y)
				}
				if !math.IsNaN(e.CI95) {
					pf(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x, x, ys(e.Mean-e.CI95), ys(e.Mean+e.CI95), col)
				}
				pf(`<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`+"\n", x, y, col)
			}
			pf(`<path d="%s" fill="none" stroke="%s"/>`+"\n", path, col)
		}
	}
	for ji, j := range jitters {
		x := ml + float64(ji)*140
		pf(`<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/>`+"\n", x, height-28, colors[ji%len(colors)])
		pf(`<text x="%.1f" y="%.1f">jitter σ = %v</text>`+"\n", x+16, height-18, j)
	}
	pf("</svg>\n")
	_, err := w.Write(b)
	return err
}

func xmlEscape(s string) string {
	var out []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<':
			out = append(out, "&lt;"...)
		case '>':
			out = append(out, "&gt;"...)
		case '&':
			out = append(out, "&amp;"...)
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}

// WriteGridReport runs the default grid (run lengths multiplied by scale)
// and writes emulator-accuracy.csv plus three SVG plots into dir. Progress
// goes to progress and a summary to summary; both may be nil.
func WriteGridReport(ctx context.Context, dir string, replications int, scale float64, progress, summary io.Writer) error {
	o := DefaultGridOptions()
	o.Replications = replications
	if scale <= 0 {
		return fieldErr("scale", "must be > 0 (got %v)", scale)
	}
	o.Duration = func(r uint64) time.Duration { return time.Duration(float64(DefaultGridDuration(r)) * scale) }
	start := time.Now()
	if progress != nil {
		last := -1
		o.Progress = func(done, total int) {
			if pct := 100 * done / total; pct/10 != last/10 {
				last = pct
				_, _ = fmt.Fprintf(progress, "grid: %d/%d runs (%d%%) after %v\n", done, total, pct, time.Since(start).Round(time.Second))
			}
		}
	}
	cells, err := RunGrid(ctx, o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, f func(io.Writer) error) error {
		fh, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := f(fh); err != nil {
			_ = fh.Close() // best effort: f's error is the one to report
			return err
		}
		return fh.Close()
	}
	if err := write("emulator-accuracy.csv", func(w io.Writer) error { return WriteGridCSV(w, cells) }); err != nil {
		return err
	}
	plots := []struct {
		name, title string
		metric      func(GridCell) Estimate
		bounds      []float64
	}{
		{"emulator-accuracy-mean.svg", "FIFO mean delay deviation (%), emulator effect, 95% CI; bound 3%",
			func(c GridCell) Estimate { return c.EmuMeanDevPct }, []float64{3}},
		{"emulator-accuracy-jitter.svg", "FIFO jitter deviation (%), emulator effect, 95% CI; bounds -3% / +1%",
			func(c GridCell) Estimate { return c.EmuJitDevPct }, []float64{-3, 1}},
		{"emulator-accuracy-extra.svg", "FIFO extra queueing delay (µs), 95% CI",
			func(c GridCell) Estimate { return c.ExtraDelayUs }, nil},
		{"emulator-accuracy-raw-mean.svg", "Raw realised mean delay deviation (%), incl. sampling noise of D, 95% CI",
			func(c GridCell) Estimate { return c.MeanDevPct }, []float64{-3, 3}},
	}
	for _, p := range plots {
		if err := write(p.name, func(w io.Writer) error { return WriteGridSVG(w, cells, p.title, p.metric, p.bounds...) }); err != nil {
			return err
		}
	}
	if summary != nil {
		// summary and progress are the terminal: nothing to do if a write fails.
		_, _ = fmt.Fprintf(summary, "%-6s %-6s %-5s %10s %14s %14s %12s %10s %s\n", "Gbit/s", "σ ms", "t_h", "packets", "emu mean %", "emu jitter %", "extra µs", "theory µs", "pass")
		for _, c := range cells {
			_, _ = fmt.Fprintf(summary, "%-6g %-6g %-5v %10d %6.3f ±%5.3f %6.3f ±%5.3f %7.1f ±%4.1f %10.1f %v\n",
				float64(c.Rate)/1e9, c.Jitter.Seconds()*1e3, c.HalfLife, c.Packets,
				c.EmuMeanDevPct.Mean, c.EmuMeanDevPct.CI95, c.EmuJitDevPct.Mean, c.EmuJitDevPct.CI95,
				c.ExtraDelayUs.Mean, c.ExtraDelayUs.CI95, c.TheoryExtraUs, c.Pass())
		}
		n, pass, passCI := GridSummary(cells, 21*time.Millisecond)
		_, _ = fmt.Fprintf(summary, "t_h = 21ms: %d/%d cells pass (point estimate), %d/%d with the whole 95%% CI inside the bounds; took %v\n",
			pass, n, passCI, n, time.Since(start).Round(time.Second))
	}
	return nil
}
