package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hymn-net/hymn/emulator"
)

// NewEmulateSimCmd returns `hymn emulate sim`: the emulator pipeline on a
// virtual clock, reporting how faithfully it realises the configured delay.
func NewEmulateSimCmd() *cobra.Command {
	ms := func(ns float64) float64 { return ns / 1e6 }
	fmtBps := func(b uint64) string {
		switch {
		case b >= 1e9:
			return fmt.Sprintf("%g Gbit/s", float64(b)/1e9)
		case b >= 1e6:
			return fmt.Sprintf("%g Mbit/s", float64(b)/1e6)
		}
		return fmt.Sprintf("%d bit/s", b)
	}

	type simReport struct {
		Config               string  `json:"config"`
		Traffic              string  `json:"traffic"`
		RateBps              uint64  `json:"rate_bps"`
		Frame                int     `json:"frame"`
		DurationS            float64 `json:"duration_s"`
		Seed                 uint64  `json:"seed"`
		Packets              uint64  `json:"packets"`
		Delivered            uint64  `json:"delivered"`
		Dropped              uint64  `json:"dropped"`
		DroppedPolicer       uint64  `json:"dropped_policer"`
		DroppedSpacer        uint64  `json:"dropped_spacer"`
		DroppedLoss          uint64  `json:"dropped_loss"`
		DroppedBufferFull    uint64  `json:"dropped_buffer_full"`
		ConfiguredDelayMs    float64 `json:"configured_delay_ms"`
		ConfiguredJitterMs   float64 `json:"configured_jitter_ms"`
		MeanDelayMs          float64 `json:"mean_delay_ms"`
		JitterMs             float64 `json:"jitter_ms"`
		MeanDeviationPct     float64 `json:"mean_deviation_pct"`
		JitterDeviationPct   float64 `json:"jitter_deviation_pct"`
		DrawnMeanMs          float64 `json:"drawn_mean_ms"`
		DrawnJitterMs        float64 `json:"drawn_jitter_ms"`
		EmuMeanDeviationPct  float64 `json:"emulator_mean_deviation_pct"`
		EmuJitterDeviationPc float64 `json:"emulator_jitter_deviation_pct"`
		ExtraDelayUs         float64 `json:"extra_delay_us"`
		SwapsPerPacket       float64 `json:"swaps_per_packet"`
		PassageTimeMs        float64 `json:"passage_time_ms"`
		Passages             int     `json:"passages"`
		RateEstimatePps      float64 `json:"rate_estimate_pps"`
		WeightA              float64 `json:"weight_a"`
	}

	newSimReport := func(sc emulator.SimConfig, r emulator.SimResult) simReport {
		c := sc.Emulator
		return simReport{
			Config: c.String(), Traffic: sc.Traffic.String(), RateBps: sc.Rate, Frame: sc.Frame,
			DurationS: sc.Duration.Seconds(), Seed: sc.Seed,
			Packets: r.Packets, Delivered: r.Delivered, Dropped: r.Dropped,
			DroppedPolicer: r.Policed, DroppedSpacer: r.SpacerDropped, DroppedLoss: r.Lost, DroppedBufferFull: r.BufferFull,
			ConfiguredDelayMs: ms(float64(c.Delay)), ConfiguredJitterMs: ms(float64(c.Jitter)),
			MeanDelayMs: ms(r.MeanDelay), JitterMs: ms(r.Jitter),
			MeanDeviationPct: r.MeanDeviationPct, JitterDeviationPct: r.JitterDeviationPct,
			DrawnMeanMs: ms(r.DrawnMean), DrawnJitterMs: ms(r.DrawnJitter),
			EmuMeanDeviationPct: r.EmulationMeanDeviationPct, EmuJitterDeviationPc: r.EmulationJitterDeviationPct,
			ExtraDelayUs: r.ExtraDelay / 1e3, SwapsPerPacket: r.SwapsPerPacket,
			PassageTimeMs: ms(r.PassageTime), Passages: r.Passages,
			RateEstimatePps: r.Rate, WeightA: r.Weight,
		}
	}

	table := func(r simReport, w io.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		row := func(k, format string, a ...any) {
			_, _ = fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, a...)...)
		}
		row("config", "%s", r.Config)
		row("traffic", "%s %s, %d-byte frames, %gs, seed %d", r.Traffic, fmtBps(r.RateBps), r.Frame, r.DurationS, r.Seed)
		row("packets", "%d measured, %d delivered, %d dropped (policer %d, spacer %d, loss %d, buffer full %d; whole run)",
			r.Packets, r.Delivered, r.Dropped, r.DroppedPolicer, r.DroppedSpacer, r.DroppedLoss, r.DroppedBufferFull)
		row("mean delay", "%.4f ms (configured %.4f, deviation %+.3f %%; emulator's own %+.3f %%)", r.MeanDelayMs, r.ConfiguredDelayMs, r.MeanDeviationPct, r.EmuMeanDeviationPct)
		row("jitter", "%.4f ms (configured %.4f, deviation %+.3f %%; emulator's own %+.3f %%)", r.JitterMs, r.ConfiguredJitterMs, r.JitterDeviationPct, r.EmuJitterDeviationPc)
		row("drawn delay", "mean %.4f ms, std %.4f ms", r.DrawnMeanMs, r.DrawnJitterMs)
		row("extra delay", "%.2f µs (queueing beyond the drawn delay)", r.ExtraDelayUs)
		row("swaps/packet", "%.4f", r.SwapsPerPacket)
		if r.Passages > 0 {
			row("passage time", "%.2f ms (μ−σ → μ+σ, %d passages)", r.PassageTimeMs, r.Passages)
		}
		row("rate estimate", "%.0f pkt/s, a = %.9f", r.RateEstimatePps, r.WeightA)
		return tw.Flush()
	}

	var (
		rateText  string
		frame     int
		duration  time.Duration
		warmup    time.Duration
		period    time.Duration
		seed      uint64
		traffic   string
		asJSON    bool
		gridDir   string
		gridReps  int
		gridScale float64
	)
	cmd := &cobra.Command{
		Use:   "sim [EMULATOR PARAMETERS...]",
		Short: "Simulate the link emulator on a virtual clock and report its accuracy",
		Long: `Simulate one direction of an emulated link on a virtual clock: packets arrive at
exact times (CBR or the DPDS paper's sinusoidal load) and leave at exactly the
departure time the emulator computes, so every deviation comes from the model.

The emulator parameters follow the text form used everywhere in hymn (NetEm's
grammar where it maps, plus hymn's keys), given as trailing arguments:

  delay TIME [JITTER]          mean delay and jitter (a standard deviation)
  distribution NAME            deterministic | uniform | normal | lognormal | gamma
  half-life TIME               delay correlation half-life t_h (default 21ms, 0 = none)
  rate-interval TIME           rate estimator interval T_min (default 10ms)
  time-based                   compute the weight a per packet from the gap
  reorder                      allow reordering (heap) instead of FIFO
  police RATE [BURST]          token-bucket policer
  space RATE [LIMIT]           spacer with fill limit (bytes, Npkt, or a time)
  rate RATE                    NetEm's rate: spacer without a byte limit
  loss P% | loss gemodel p [r [1-h [1-k]]] | loss state p13 [p31 [p32 [p23 [p14]]]]
  overhead BYTES  limit PACKETS  max-frame BYTES  seed N

The report gives the realised mean delay and jitter and their deviation from
the configured values; the "emulator" deviations subtract the sampling noise
of the slowly varying delay process itself (control variate against the drawn
delays), which is what the paper's accuracy claims are about. It also gives the
FIFO queueing delay added beyond the drawn delays, swaps per packet (Kendall tau
distance between arrival and departure order ÷ N), the mean passage time from
μ−σ to μ+σ, and drops.

With --grid DIR it instead regenerates the paper's whole accuracy grid (mean
10 ms; jitter 0.1/0.3/1/3 ms; t_h 0/7/21/70 ms; 0.1–100 Gbit/s) as CSV and SVG
plots in DIR, with 95 % confidence intervals from independent replications.`,
		Example: `  hymn emulate sim delay 10ms 1ms distribution normal half-life 21ms
  hymn emulate sim --rate 100gbit --duration 1s --json delay 10ms 3ms
  hymn emulate sim --traffic sine --duration 30s delay 10ms 1ms
  hymn emulate sim --grid docs/`,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if gridDir != "" {
				if len(args) > 0 {
					return fmt.Errorf("%w: --grid takes no emulator parameters (the grid fixes them)", ErrUsage)
				}
				if gridReps < 2 || gridScale <= 0 {
					return fmt.Errorf("%w: --grid-replications must be ≥ 2 and --grid-scale > 0", ErrUsage)
				}
				return emulator.WriteGridReport(cmd.Context(), gridDir, gridReps, gridScale, cmd.ErrOrStderr(), cmd.OutOrStdout())
			}
			cfg, err := emulator.ParseArgs(args)
			if err != nil {
				return fmt.Errorf("%w: %v", ErrUsage, err)
			}
			sc := emulator.SimConfig{Emulator: cfg, Frame: frame, Duration: duration, Warmup: warmup, Period: period, Seed: seed}
			switch traffic {
			case "cbr":
				sc.Traffic = emulator.CBR
			case "sine":
				sc.Traffic = emulator.Sine
			default:
				return fmt.Errorf("%w: --traffic must be cbr or sine (got %q)", ErrUsage, traffic)
			}
			if rateText != "" {
				if sc.Rate, err = emulator.ParseRate(rateText); err != nil {
					return fmt.Errorf("%w: --rate: %v", ErrUsage, err)
				}
				if sc.Rate == 0 {
					return fmt.Errorf("%w: --rate must be > 0", ErrUsage)
				}
			} else if sc.Traffic == emulator.CBR {
				sc.Rate = 10e9
			}
			if duration <= 0 {
				return fmt.Errorf("%w: --duration must be > 0 (got %v)", ErrUsage, duration)
			}
			if frame < 5 || frame-4 > cfg.MaxFrame {
				return fmt.Errorf("%w: --frame must be between 5 and max-frame+4 = %d (got %d)", ErrUsage, cfg.MaxFrame+4, frame)
			}
			res, err := emulator.Simulate(sc)
			if err != nil {
				return fmt.Errorf("%w: %v", ErrUsage, err)
			}
			for _, w := range cfg.Warnings() {
				_, _ = fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			rep := newSimReport(sc, res)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			return table(rep, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&rateText, "rate", "", "traffic rate on the wire, tc units (CBR default 10gbit; for sine the peak, default 50gbit)")
	f.IntVar(&frame, "frame", emulator.DefaultFrame, "Ethernet frame size in bytes including FCS; the emulator sees frame−4 and adds its overhead (1518 → 1538 B on the wire)")
	f.DurationVar(&duration, "duration", 10*time.Second, "simulated time")
	f.DurationVar(&warmup, "warmup", -1, "exclude arrivals before this from the delay statistics (negative: min(3·t_h + T_min, duration/5))")
	f.DurationVar(&period, "period", emulator.DefaultSinePeriod, "period of the sinusoidal traffic")
	f.Uint64Var(&seed, "seed", 1, "random seed of the run (overrides a seed in the parameters)")
	f.StringVar(&traffic, "traffic", "cbr", "traffic pattern: cbr or sine")
	f.BoolVar(&asJSON, "json", false, "print one JSON object instead of a table")
	f.StringVar(&gridDir, "grid", "", "regenerate the paper's accuracy grid as CSV and SVG into this directory")
	f.IntVar(&gridReps, "grid-replications", emulator.DefaultGridOptions().Replications, "independent runs per grid cell")
	f.Float64Var(&gridScale, "grid-scale", 1, "multiply the grid's run lengths by this factor")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", ErrUsage, err) })
	return cmd
}

// NewEmulateBenchCmd returns `hymn emulate bench`: the engine's per-packet
// cost for the scenarios of issue 3, measured with testing.Benchmark.
func NewEmulateBenchCmd() *cobra.Command {
	var (
		asJSON bool
		only   string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the emulator engine's nanoseconds and allocations per packet",
		Long: `Run the emulator engine (no I/O) on a virtual clock in batches of 16 and report
the cost per packet (Receive plus Release) and heap allocations per packet for:
constant delay; normal jitter with correlation (FIFO); the same with the
reordering heap and about 100 000 packets queued; correlated with the spacer;
gamma innovations; Gilbert–Elliott loss. Each scenario runs for about a second
after a warm-up that brings the queue to steady state. For stable numbers run
it on an otherwise idle core.`,
		Args:         usageArgs(cobra.NoArgs),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			type result struct {
				Scenario        string  `json:"scenario"`
				Config          string  `json:"config"`
				NsPerPacket     float64 `json:"ns_per_packet"`
				AllocsPerPacket float64 `json:"allocs_per_packet"`
				Queued          int     `json:"queued"`
			}
			var results []result
			for _, s := range emulator.BenchScenarios() {
				if only != "" && !strings.Contains(s.Name, only) {
					continue
				}
				if err := cmd.Context().Err(); err != nil {
					return err
				}
				var queued int
				var runErr error
				br := testing.Benchmark(func(b *testing.B) {
					r, err := s.NewRunner()
					if err != nil {
						runErr = err
						return
					}
					b.ReportAllocs()
					b.ResetTimer()
					r.Run(b.N)
					b.StopTimer()
					queued = r.Queued()
				})
				if runErr != nil {
					return runErr
				}
				n := float64(br.N)
				allocs := 0.0
				if n > 0 {
					allocs = math.Round(float64(br.MemAllocs)/n*1e4) / 1e4
				}
				results = append(results, result{s.Name, s.Config, math.Round(float64(br.T.Nanoseconds())/n*10) / 10, allocs, queued})
				if !asJSON {
					_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "%s done\n", s.Name)
				}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(results)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			_, _ = fmt.Fprintln(tw, "SCENARIO\tNS/PACKET\tALLOCS/PACKET\tQUEUED\tCONFIG")
			for _, r := range results {
				_, _ = fmt.Fprintf(tw, "%s\t%.1f\t%g\t%d\t%s\n", r.Scenario, r.NsPerPacket, r.AllocsPerPacket, r.Queued, r.Config)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON list of {scenario, ns_per_packet, allocs_per_packet}")
	cmd.Flags().StringVar(&only, "scenario", "", "run only scenarios whose name contains this")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", ErrUsage, err) })
	return cmd
}
