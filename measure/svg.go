package measure

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Curve is one line of an HDR diagram.
type Curve struct {
	Label  string
	Result *Result
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

const (
	svgW, svgH                  = 900, 560
	padL, padR, padT, padB      = 80, 190, 50, 60
	plotW, plotH                = svgW - padL - padR, svgH - padT - padB
	maxNines                    = 6 // 99.9999 %
	ninesStep                   = 0.02
	svgFont                     = `font-family="DejaVu Sans, Helvetica, Arial, sans-serif"`
	svgHeader                   = `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">` + "\n"
	svgBackground               = `<rect x="0" y="0" width="%d" height="%d" fill="white"/>` + "\n"
	gridStyle                   = `stroke="#ddd" stroke-width="1"`
	axisStyle                   = `stroke="#333" stroke-width="1.2" fill="none"`
	hdrTickLabels               = "0%|90%|99%|99.9%|99.99%|99.999%|99.9999%"
	medianNines                 = 0.30103 // −log10(1 − 0.5)
	decadesMin, decadesMaxExtra = 1, 1
)

// logRange returns decade bounds covering [lo, hi] (µs), at least one decade.
func logRange(lo, hi float64) (float64, float64) {
	if lo <= 0 || math.IsNaN(lo) {
		lo = 1
	}
	if hi < lo {
		hi = lo
	}
	a := math.Floor(math.Log10(lo))
	b := math.Ceil(math.Log10(hi))
	if b-a < decadesMin {
		b = a + decadesMin
	}
	return a, b
}

type svgBuf struct{ strings.Builder }

func (s *svgBuf) f(format string, a ...any) { fmt.Fprintf(&s.Builder, format, a...) }

func (s *svgBuf) text(x, y float64, anchor, size, body string, extra ...string) {
	s.f(`<text x="%.1f" y="%.1f" text-anchor="%s" font-size="%s" %s %s>%s</text>`+"\n", x, y, anchor, size, svgFont, strings.Join(extra, " "), html.EscapeString(body))
}

func (s *svgBuf) frame(title, xlabel, ylabel string) {
	s.f(svgHeader, svgW, svgH, svgW, svgH)
	s.f(svgBackground, svgW, svgH)
	s.text(svgW/2, 28, "middle", "18", title)
	s.text(padL+plotW/2, svgH-15, "middle", "14", xlabel)
	s.text(22, padT+plotH/2, "middle", "14", ylabel, fmt.Sprintf(`transform="rotate(-90 22 %d)"`, padT+plotH/2))
}

// yLogAxis draws the grid and labels of a log latency axis and returns the
// mapping from µs to y.
func (s *svgBuf) yLogAxis(a, b float64) func(float64) float64 {
	y := func(v float64) float64 {
		if v <= 0 {
			v = math.Pow(10, a)
		}
		return padT + plotH - (math.Log10(v)-a)/(b-a)*plotH
	}
	for d := a; d <= b; d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if math.Log10(v) > b+1e-9 {
				break
			}
			yy := y(v)
			s.f(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" %s/>`+"\n", padL, yy, padL+plotW, yy, gridStyle)
			s.text(padL-8, yy+4, "end", "12", fmtMicros(v))
		}
	}
	return y
}

// fmtMicros prints a µs value with the unit that suits it.
func fmtMicros(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1e6:
		return fmt.Sprintf("%gs", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gms", v/1e3)
	case v >= 1:
		return fmt.Sprintf("%gµs", v)
	}
	return fmt.Sprintf("%gns", v*1e3)
}

// PlotHDR draws the HDR diagram: latency (log µs) against percentile on a
// "nines" axis (x = −log10(1 − p)), one curve per result, each ending where
// the samples run out (at log10(count) nines) with a mark at its maximum.
func PlotHDR(w io.Writer, title string, curves []Curve) error {
	lo, hi := math.Inf(1), 0.0
	for _, c := range curves {
		if c.Result == nil || c.Result.Hist == nil || c.Result.Hist.TotalCount() == 0 {
			continue
		}
		lo = math.Min(lo, us(c.Result.Hist.Min()))
		hi = math.Max(hi, us(c.Result.Hist.Max()))
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	a, b := logRange(lo, hi)
	var s svgBuf
	s.frame(title, "percentile", "one-way latency")
	x := func(n float64) float64 { return padL + n/maxNines*plotW }
	ticks := strings.Split(hdrTickLabels, "|")
	for i, t := range ticks {
		xx := x(float64(i))
		s.f(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" %s/>`+"\n", xx, padT, xx, padT+plotH, gridStyle)
		s.text(xx, padT+plotH+20, "middle", "12", t)
	}
	xm := x(medianNines)
	s.f(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" %s stroke-dasharray="4 4"/>`+"\n", xm, padT, xm, padT+plotH, gridStyle)
	s.text(xm, padT+plotH+20, "middle", "10", "50%", `fill="#777"`)
	y := s.yLogAxis(a, b)
	s.f(`<rect x="%d" y="%d" width="%d" height="%d" %s/>`+"\n", padL, padT, plotW, plotH, axisStyle)
	for i, c := range curves {
		color := palette[i%len(palette)]
		ly := float64(padT + 20 + 22*i)
		s.f(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-width="2.5"/>`+"\n", padL+plotW+15, ly-4, padL+plotW+40, ly-4, color)
		label := c.Label
		if c.Result != nil && c.Result.Loss > 0 {
			label += fmt.Sprintf(" (loss %.2g%%)", 100*c.Result.Loss)
		}
		s.text(padL+plotW+46, ly, "start", "12", label)
		if c.Result == nil || c.Result.Hist == nil || c.Result.Hist.TotalCount() == 0 {
			continue
		}
		h := c.Result.Hist
		end := math.Min(maxNines, math.Log10(float64(h.TotalCount())))
		var pts []string
		for n := 0.0; n <= end+1e-9; n += ninesStep {
			p := 100 * (1 - math.Pow(10, -n))
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(n), y(us(h.ValueAtPercentile(p)))))
		}
		s.f(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), color)
		s.f(`<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>max %s</title></circle>`+"\n", x(end), y(us(h.Max())), color, fmtMicros(us(h.Max())))
	}
	s.f("</svg>\n")
	_, err := io.WriteString(w, s.String())
	return err
}

// PlotSeries draws one-way delay against send time for one result, from
// its thinned series (up to Config.Series points).
func PlotSeries(w io.Writer, title string, r *Result) error {
	var s svgBuf
	s.frame(title, "time since the first packet (s)", "one-way delay")
	if len(r.Series) == 0 {
		s.text(svgW/2, svgH/2, "middle", "16", "no packets received")
		s.f("</svg>\n")
		_, err := io.WriteString(w, s.String())
		return err
	}
	t0 := r.Series[0].Sent
	if r.startReal != 0 && r.startReal < t0 {
		t0 = r.startReal
	}
	lo, hi := math.Inf(1), 0.0
	tmax := 0.0
	for _, p := range r.Series {
		d := us(p.Delay)
		lo, hi = math.Min(lo, d), math.Max(hi, d)
		tmax = math.Max(tmax, float64(p.Sent-t0)/1e9)
	}
	if tmax <= 0 {
		tmax = r.DurationS
	}
	if tmax <= 0 {
		tmax = 1
	}
	// A linear axis when the delays stay within one decade, else log.
	var y func(float64) float64
	if lo > 0 && hi/lo < 10 {
		span := niceStep((hi - lo) / 6)
		a := math.Floor(lo/span) * span
		b := math.Ceil(hi/span) * span
		if b <= a {
			b = a + span
		}
		y = func(v float64) float64 { return padT + plotH - (v-a)/(b-a)*plotH }
		for v := a; v <= b+span/2; v += span {
			yy := y(v)
			s.f(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" %s/>`+"\n", padL, yy, padL+plotW, yy, gridStyle)
			s.text(padL-8, yy+4, "end", "12", fmtMicros(v))
		}
	} else {
		a, b := logRange(lo, hi)
		y = s.yLogAxis(a, b)
	}
	tstep := niceStep(tmax / 8)
	x := func(t float64) float64 { return padL + t/tmax*plotW }
	for t := 0.0; t <= tmax+1e-9; t += tstep {
		xx := x(t)
		s.f(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" %s/>`+"\n", xx, padT, xx, padT+plotH, gridStyle)
		s.text(xx, padT+plotH+20, "middle", "12", fmt.Sprintf("%g", math.Round(t*1000)/1000))
	}
	s.f(`<rect x="%d" y="%d" width="%d" height="%d" %s/>`+"\n", padL, padT, plotW, plotH, axisStyle)
	var path strings.Builder
	for _, p := range r.Series {
		fmt.Fprintf(&path, "M%.1f %.1fh0.8", x(float64(p.Sent-t0)/1e9), y(us(p.Delay)))
	}
	s.f(`<path d="%s" stroke="#1f77b4" stroke-width="1.6" stroke-linecap="round" fill="none"/>`+"\n", path.String())
	s.text(padL+plotW+12, padT+20, "start", "12", fmt.Sprintf("%d of %d packets", len(r.Series), r.Received))
	s.text(padL+plotW+12, padT+40, "start", "12", fmt.Sprintf("mean %s", fmtMicros(round3(r.Latency.Mean))))
	s.text(padL+plotW+12, padT+60, "start", "12", fmt.Sprintf("std %s", fmtMicros(round3(r.Latency.Std))))
	s.text(padL+plotW+12, padT+80, "start", "12", fmt.Sprintf("loss %.3g%%", 100*r.Loss))
	s.f("</svg>\n")
	_, err := io.WriteString(w, s.String())
	return err
}

func round3(v float64) float64 {
	if v == 0 {
		return 0
	}
	m := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*m) / m
}

// niceStep rounds a step up to 1, 2 or 5 times a power of ten.
func niceStep(v float64) float64 {
	if v <= 0 || math.IsNaN(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
