package measure

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/hymn-net/hymn/emulator"
)

// Percentiles are the ones every result reports (the CIMininet paper's
// HDR diagram goes to 99.9999).
var Percentiles = []float64{50, 90, 99, 99.9, 99.99, 99.999, 99.9999}

// Latency is a one-way delay summary in microseconds.
type Latency struct {
	Min     float64 `json:"min"`
	Mean    float64 `json:"mean"`
	Max     float64 `json:"max"`
	Std     float64 `json:"std"`
	P50     float64 `json:"p50"`
	P90     float64 `json:"p90"`
	P99     float64 `json:"p99"`
	P999    float64 `json:"p99.9"`
	P9999   float64 `json:"p99.99"`
	P99999  float64 `json:"p99.999"`
	P999999 float64 `json:"p99.9999"`
}

// Values returns the percentiles in the order of Percentiles.
func (l Latency) Values() []float64 {
	return []float64{l.P50, l.P90, l.P99, l.P999, l.P9999, l.P99999, l.P999999}
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

func latencyOf(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	v := h.ValueAtPercentilesSlice(Percentiles)
	return Latency{
		Min: us(h.Min()), Mean: h.Mean() / 1e3, Max: us(h.Max()), Std: h.StdDev() / 1e3,
		P50: us(v[0]), P90: us(v[1]), P99: us(v[2]), P999: us(v[3]), P9999: us(v[4]), P99999: us(v[5]), P999999: us(v[6]),
	}
}

// Result is one trial: an offered rate and what arrived.
type Result struct {
	Rate        float64 `json:"rate_pps"`    // offered packets/s
	RateBps     float64 `json:"rate_bps"`    // offered bits/s on the wire
	Pattern     string  `json:"pattern"`     // cbr, poisson, burst
	Frame       int     `json:"frame_bytes"` // Ethernet frame with FCS
	Flows       int     `json:"flows"`
	DurationS   float64 `json:"duration_s"`
	Planned     uint64  `json:"planned"` // packets the schedule held for the measured time
	Sent        uint64  `json:"sent"`
	SentPPS     float64 `json:"sent_pps"` // what the generator achieved
	SendErrors  uint64  `json:"send_errors"`
	Received    uint64  `json:"received"`
	ReceivedPPS float64 `json:"received_pps"`
	Lost        uint64  `json:"lost"`
	Loss        float64 `json:"loss"` // ratio lost/sent
	Reordered   uint64  `json:"reordered"`
	Duplicates  uint64  `json:"duplicates"`
	// ReceiverDrops are packets the receiving socket dropped (its buffer
	// was full): part of Lost, but the measurement's fault, not the path's.
	ReceiverDrops uint64  `json:"receiver_drops"`
	Latency       Latency `json:"latency_us"`

	// Hist holds every one-way delay in ns; Series a thinned time series.
	Hist      *hdrhistogram.Histogram `json:"-"`
	Series    []Sample                `json:"-"`
	startReal int64
}

// Achieved reports whether the generator kept to its schedule (sent at
// least 99 % of the packets due in the measured time): a trial that did
// not is no evidence about the path at the offered rate. (Counting against
// the schedule, not the nominal rate, keeps Poisson's own fluctuation out.)
func (r *Result) Achieved() bool {
	if r.Planned > 0 {
		return float64(r.Sent) >= 0.99*float64(r.Planned)
	}
	return r.SentPPS >= 0.99*r.Rate
}

// ZeroLossTrial is one step of the search.
type ZeroLossTrial struct {
	Rate    float64 `json:"rate_pps"`
	Sent    uint64  `json:"sent"`
	SentPPS float64 `json:"sent_pps"`
	Loss    float64 `json:"loss"`
	Pass    bool    `json:"pass"`
	// Short: the generator sent less than 99 % of the schedule.
	Short bool `json:"generator_short"`
}

// ZeroLossResult is the highest rate that passed, with its trial.
type ZeroLossResult struct {
	Rate      float64 `json:"rate_pps"` // 0 when no rate passed
	RateBps   float64 `json:"rate_bps"`
	Tolerance float64 `json:"loss_tolerance"`
	TrialS    float64 `json:"trial_s"`
	// Limited: the search's upper bound is a trial that failed only
	// because the generator fell short (it sent less than 99 % of its
	// schedule and lost nothing) at a rate the generator alone does not
	// send twice over, so the path may carry more than Rate. A bound set
	// by loss is the path's, however the generator did.
	Limited bool `json:"generator_limited"`
	// CoreLimited: the bound is a trial that fell short without loss at
	// less than half the generator's own rate: the sender's core was
	// taken by the path's kernel work (a veth delivers in the sender's
	// softirq: the receiving stack runs there) or by other load.
	CoreLimited bool `json:"sender_core_limited"`
	// GeneratorPPS is the generator's own rate the search was told.
	GeneratorPPS float64 `json:"generator_pps,omitempty"`
	// Short counts the trials the generator did not keep to schedule.
	Short  int             `json:"generator_short_trials"`
	Trials []ZeroLossTrial `json:"trials"`
	Result *Result         `json:"result,omitempty"` // the passing trial at Rate
}

// Report is a whole experiment.
type Report struct {
	From     string          `json:"from,omitempty"`
	To       string          `json:"to,omitempty"`
	Dst      string          `json:"dst"`
	Results  []*Result       `json:"results"`
	ZeroLoss *ZeroLossResult `json:"zero_loss,omitempty"`
	// Generator is what the trials sent with (afxdp, afpacket, udp), and
	// GeneratorFallback why it is not a faster one.
	Generator         string `json:"generator"`
	GeneratorFallback string `json:"generator_fallback,omitempty"`
	// GeneratorPPS is the generator's own rate from one core, when
	// measured (Network.GeneratorRate): the highest rate a trial can
	// offer. Headroom divides it by the zero-loss rate.
	GeneratorPPS float64 `json:"generator_pps,omitempty"`
	// Generators holds each generator's own rate, measured side by side
	// when asked (Network.CompareGenerators).
	Generators []GeneratorResult `json:"generators,omitempty"`
	// Host is the machine's thread wake-up latency, measured before the
	// trials (emulator.MeasureHostWake): figures from two machines
	// compare only beside it.
	Host *emulator.HostWake `json:"host,omitempty"`
}

// Headroom is the generator's own rate over the zero-loss rate (0 when
// either is unknown): below about 1.1 the search may have found the
// generator's limit rather than the path's.
func (r *Report) Headroom() float64 {
	if r.ZeroLoss == nil || r.ZeroLoss.Rate <= 0 || r.GeneratorPPS <= 0 {
		return 0
	}
	return r.GeneratorPPS / r.ZeroLoss.Rate
}

// Run opens a session, runs one trial per rate and, if configured, the
// zero-loss search.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	s, err := Open(cfg)
	if err != nil {
		return nil, err
	}
	defer func() { _ = s.Close() }() // Close only releases sockets and always succeeds
	rep := &Report{Dst: s.cfg.Dst.String(), Results: []*Result{}, Generator: s.Generator().String(), GeneratorFallback: s.Fallback()}
	if s.cfg.GeneratorRate != nil {
		if rep.GeneratorPPS, err = s.cfg.GeneratorRate(s.Generator()); err != nil {
			return rep, fmt.Errorf("generator alone: %w", err)
		}
	}
	for _, rate := range s.cfg.Rates {
		r, err := s.Trial(ctx, rate, s.cfg.Duration)
		if err != nil {
			return rep, err
		}
		rep.Results = append(rep.Results, r)
		if s.cfg.Progress != nil {
			s.cfg.Progress(r, "rate")
		}
	}
	if s.cfg.ZeroLoss != nil {
		z := *s.cfg.ZeroLoss
		if z.GeneratorPPS == 0 {
			z.GeneratorPPS = rep.GeneratorPPS
		}
		zl, err := s.ZeroLoss(ctx, z)
		rep.ZeroLoss = zl
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// ZeroLoss runs the binary search. z must have been validated by Open
// (Session's own config) or be complete.
func (s *Session) ZeroLoss(ctx context.Context, z ZeroLossConfig) (*ZeroLossResult, error) {
	c := s.cfg
	c.Rates = nil
	c.ZeroLoss = &z
	if err := c.fill(); err != nil {
		return nil, err
	}
	z = *c.ZeroLoss
	out := &ZeroLossResult{Tolerance: z.Tolerance, TrialS: z.Trial.Seconds(), GeneratorPPS: z.GeneratorPPS}
	lo, hi := 0.0, z.Max
	rate := z.Max
	hiShort := false // the trial at hi failed only for the generator
	for range z.MaxTrials {
		r, err := s.Trial(ctx, rate, z.Trial)
		if err != nil {
			return out, err
		}
		pass := r.Loss <= z.Tolerance && r.Achieved() && r.Sent > 0
		short := !r.Achieved()
		if short {
			out.Short++
		}
		out.Trials = append(out.Trials, ZeroLossTrial{Rate: rate, Sent: r.Sent, SentPPS: r.SentPPS, Loss: r.Loss, Pass: pass, Short: short})
		if s.cfg.Progress != nil {
			s.cfg.Progress(r, "zero-loss")
		}
		if pass {
			lo, out.Result = rate, r
		} else {
			hi, hiShort = rate, short && r.Loss <= z.Tolerance
		}
		if lo == z.Max || (lo > 0 && (hi-lo)/hi <= z.Resolution) || (lo == 0 && rate <= z.Min) {
			break
		}
		rate = math.Max((lo+hi)/2, z.Min)
	}
	out.Rate = lo
	out.RateBps = lo * WireBits(c.Frame)
	if hiShort {
		if z.GeneratorPPS > 0 && hi < z.GeneratorPPS/2 {
			out.CoreLimited = true
		} else {
			out.Limited = true
		}
	}
	return out, nil
}

// TableHeader and TableLine print a result as a fixed-width table row
// (latencies in µs), for progress on stderr.
func TableHeader() string {
	return fmt.Sprintf("%-10s %10s %10s %9s %6s %5s %9s %9s %9s %9s %9s %9s %9s %9s\n",
		"phase", "rate", "sent/s", "loss", "reord", "dup", "min", "p50", "p90", "p99", "p99.9", "p99.99", "p99.9999", "max")
}

func TableLine(r *Result, phase string) string {
	l := r.Latency
	return fmt.Sprintf("%-10s %10s %10s %8.4f%% %6d %5d %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n",
		phase, FormatRate(r.Rate), FormatRate(r.SentPPS), 100*r.Loss, r.Reordered, r.Duplicates,
		l.Min, l.P50, l.P90, l.P99, l.P999, l.P9999, l.P999999, l.Max)
}

// WriteCSV writes one row per result (latencies in µs).
func WriteCSV(w io.Writer, rep *Report) error {
	var b strings.Builder
	b.WriteString("phase,rate_pps,rate_bps,frame,pattern,duration_s,sent,sent_pps,received,lost,loss,reordered,duplicates,min_us,mean_us,std_us")
	for _, p := range Percentiles {
		fmt.Fprintf(&b, ",p%g_us", p)
	}
	b.WriteString(",max_us\n")
	row := func(phase string, r *Result) {
		l := r.Latency
		fmt.Fprintf(&b, "%s,%g,%g,%d,%s,%g,%d,%.1f,%d,%d,%g,%d,%d,%.3f,%.3f,%.3f", phase, r.Rate, r.RateBps, r.Frame, r.Pattern, r.DurationS,
			r.Sent, r.SentPPS, r.Received, r.Lost, r.Loss, r.Reordered, r.Duplicates, l.Min, l.Mean, l.Std)
		for _, v := range l.Values() {
			fmt.Fprintf(&b, ",%.3f", v)
		}
		fmt.Fprintf(&b, ",%.3f\n", l.Max)
	}
	for _, r := range rep.Results {
		row("rate", r)
	}
	if rep.ZeroLoss != nil && rep.ZeroLoss.Result != nil {
		row("zero-loss", rep.ZeroLoss.Result)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteHgrm writes the HdrHistogram percentile distribution text
// (.hgrm, values in µs) that HdrHistogram's plotter reads.
func WriteHgrm(w io.Writer, r *Result) error {
	if r.Hist == nil || r.Hist.TotalCount() == 0 {
		_, err := io.WriteString(w, "#[no values recorded]\n")
		return err
	}
	_, err := r.Hist.PercentilesPrint(w, 5, 1000)
	return err
}

// SeriesStart is the send time of the trial's first measured packet (ns,
// CLOCK_REALTIME), the origin of its time series.
func (r *Result) SeriesStart() time.Time { return time.Unix(0, r.startReal) }
