package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/measure"
	"github.com/hymn-net/hymn/topo"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// measureFlags are the options of `hymn measure` and the shell's measure.
type measureFlags struct {
	from, to           string
	rate               string
	frame              int
	duration, warmup   time.Duration
	drain, trial       time.Duration
	pattern            string
	burst, flows, port int
	seed               uint64
	jsonOut, csvOut    bool
	zeroLoss           bool
	zlMax              string
	tolerance, resol   float64
	plot, series, hgrm string
	seriesRate         string
	noRT               bool
	genRate            bool
	generator          string
	compareGen         bool
}

func addMeasureFlags(fl *pflag.FlagSet, m *measureFlags) {
	fl.StringVar(&m.from, "from", "", "sending host (default: the first host)")
	fl.StringVar(&m.to, "to", "", "receiving host (default: the last host)")
	fl.StringVar(&m.rate, "rate", "100k", "offered rates: packets/s (50k, 1M) or wire bit/s (100Mbit), a list (50k,300k,1M) or a range FROM-TO/STEP")
	fl.IntVar(&m.frame, "frame", measure.MinFrame, "Ethernet frame size in bytes with FCS (64..1518; 64 B = 84 B on the wire)")
	fl.DurationVar(&m.duration, "duration", 3*time.Second, "measured time per rate")
	fl.DurationVar(&m.warmup, "warmup", 200*time.Millisecond, "traffic sent at each rate before measuring, not counted (0: none)")
	fl.DurationVar(&m.drain, "drain", 500*time.Millisecond, "how long to wait for packets after the last one was sent (more than the path's largest delay)")
	fl.StringVar(&m.pattern, "pattern", "cbr", "traffic: cbr (constant rate), poisson or burst")
	fl.IntVar(&m.burst, "burst", 32, "packets per burst with --pattern burst")
	fl.IntVar(&m.flows, "flows", 1, "UDP flows (source ports), round robin")
	fl.IntVar(&m.port, "port", 7777, "UDP destination port")
	fl.Uint64Var(&m.seed, "seed", 1, "seed of the Poisson gaps")
	if fl.Lookup("json") == nil { // hymn measure has mn's --json
		fl.BoolVar(&m.jsonOut, "json", false, "print the results as JSON on stdout")
	}
	fl.BoolVar(&m.csvOut, "csv", false, "print the results as CSV on stdout")
	fl.BoolVar(&m.zeroLoss, "zero-loss", false, "also search the highest rate with loss <= --loss-tolerance (RFC 2544 binary search)")
	fl.StringVar(&m.zlMax, "zero-loss-max", "", "highest rate the search tries (default: the highest --rate)")
	fl.Float64Var(&m.tolerance, "loss-tolerance", 0, "loss ratio the zero-loss search accepts (0..1)")
	fl.DurationVar(&m.trial, "trial", 0, "length of one zero-loss trial (default: --duration)")
	fl.Float64Var(&m.resol, "resolution", 0.01, "the zero-loss search stops when its bounds are this close (relative)")
	fl.StringVar(&m.plot, "plot", "", "write the HDR latency diagram (one curve per rate) to this SVG file")
	fl.StringVar(&m.series, "series", "", "write one-way delay over time for one rate to this SVG file")
	fl.StringVar(&m.seriesRate, "series-rate", "", "the rate --series shows (default: the zero-loss rate, else the last rate)")
	fl.StringVar(&m.hgrm, "hgrm", "", "write each rate's percentile distribution (.hgrm, µs) to FILE-<rate>.hgrm")
	fl.BoolVar(&m.noRT, "no-realtime", false, "do not run the sender under SCHED_FIFO")
	fl.BoolVar(&m.genRate, "generator-rate", true, "measure the generator alone (every report has it now)")
	// Fails only for a flag that is not defined; it is, just above.
	_ = fl.MarkDeprecated("generator-rate", "the generator's own rate is part of every report")
	fl.StringVar(&m.generator, "generator", "auto", "how packets are handed to the kernel: auto (the fastest that works), afxdp, afpacket (PACKET_QDISC_BYPASS) or udp (sendmmsg)")
	fl.BoolVar(&m.compareGen, "compare-generators", false, "also measure every generator alone on the sending host, side by side (5 interleaved rounds of 200ms)")
}

// config validates the flags into a measure.Config (usage errors).
func (m *measureFlags) config() (measure.Config, error) {
	bad := func(format string, a ...any) (measure.Config, error) {
		return measure.Config{}, fmt.Errorf("%w: "+format, append([]any{ErrUsage}, a...)...)
	}
	var c measure.Config
	var err error
	if m.frame < measure.MinFrame || m.frame > measure.MaxFrame {
		return bad("--frame %d: must be %d..%d bytes", m.frame, measure.MinFrame, measure.MaxFrame)
	}
	c.Frame = m.frame
	if c.Rates, err = measure.ParseRates(m.rate, m.frame); err != nil {
		return bad("--rate: %v", err)
	}
	if m.duration < 10*time.Millisecond || m.duration > time.Hour {
		return bad("--duration %v: must be 10ms..1h", m.duration)
	}
	c.Duration = m.duration
	switch {
	case m.warmup < 0 || m.warmup > time.Minute:
		return bad("--warmup %v: must be 0..1m", m.warmup)
	case m.warmup == 0:
		c.Warmup = -1
	default:
		c.Warmup = m.warmup
	}
	if m.drain <= 0 || m.drain > time.Minute {
		return bad("--drain %v: must be in (0, 1m]", m.drain)
	}
	c.Drain = m.drain
	if c.Pattern, err = measure.ParsePattern(m.pattern); err != nil {
		return bad("--pattern: %v", err)
	}
	if m.burst < 1 || m.burst > 1<<20 {
		return bad("--burst %d: must be 1..1048576", m.burst)
	}
	c.Burst = m.burst
	if m.flows < 1 || m.flows > 1024 {
		return bad("--flows %d: must be 1..1024", m.flows)
	}
	c.Flows = m.flows
	if m.port < 1 || m.port > 65535 {
		return bad("--port %d: must be 1..65535", m.port)
	}
	c.Dst = netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(m.port))
	c.Seed = m.seed
	c.NoRealTime = m.noRT
	if c.Generator, err = measure.ParseGenerator(m.generator); err != nil {
		return bad("--generator: %v", err)
	}
	if m.jsonOut && m.csvOut {
		return bad("--json and --csv both write stdout: pick one")
	}
	zlFlags := m.zlMax != "" || m.tolerance != 0 || m.trial != 0 || m.resol != 0.01
	if zlFlags && !m.zeroLoss {
		return bad("--zero-loss-max, --loss-tolerance, --trial and --resolution need --zero-loss")
	}
	if m.zeroLoss {
		z := &measure.ZeroLossConfig{Tolerance: m.tolerance, Trial: m.trial, Resolution: m.resol}
		if m.zlMax != "" {
			if z.Max, err = measure.ParseRate(m.zlMax, m.frame); err != nil {
				return bad("--zero-loss-max: %v", err)
			}
		}
		if !(m.tolerance >= 0 && m.tolerance <= 1) {
			return bad("--loss-tolerance %g: must be a ratio 0..1", m.tolerance)
		}
		if m.trial != 0 && (m.trial < 10*time.Millisecond || m.trial > time.Hour) {
			return bad("--trial %v: must be 10ms..1h", m.trial)
		}
		if !(m.resol > 0 && m.resol < 1) {
			return bad("--resolution %g: must be in (0, 1)", m.resol)
		}
		c.ZeroLoss = z
	}
	if m.seriesRate != "" {
		if m.series == "" {
			return bad("--series-rate needs --series")
		}
		if _, err := measure.ParseRate(m.seriesRate, m.frame); err != nil {
			return bad("--series-rate: %v", err)
		}
	}
	for _, f := range []struct{ flag, path, ext string }{{"--plot", m.plot, ".svg"}, {"--series", m.series, ".svg"}} {
		if f.path != "" && !strings.HasSuffix(strings.ToLower(f.path), f.ext) {
			return bad("%s %s: the file name must end in %s", f.flag, f.path, f.ext)
		}
	}
	return c, nil
}

// defaultEnds picks the first and last host when --from/--to are not given.
func (m *measureFlags) ends(net *hymn.Network) (string, string, error) {
	from, to := m.from, m.to
	hosts := net.Hosts()
	if from == "" || to == "" {
		if len(hosts) < 2 {
			return "", "", fmt.Errorf("%w: measure needs two hosts (--from and --to)", ErrUsage)
		}
		if from == "" {
			from = hosts[0].Name
		}
		if to == "" {
			to = hosts[len(hosts)-1].Name
		}
	}
	return from, to, nil
}

// runMeasure runs the experiment on a started network: the table goes to
// progress, JSON or CSV to stdout, plots and .hgrm files where asked.
func runMeasure(ctx context.Context, net *hymn.Network, m *measureFlags, cfg measure.Config, stdout, progress io.Writer) error {
	from, to, err := m.ends(net)
	if err != nil {
		return err
	}
	// The host's wake-up latency first, while the network is quiet:
	// the trials' latencies compare across machines only beside it.
	host, err := emulator.MeasureHostWake(ctx, emulator.HostWakeConfig{})
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(progress, "*** %s\n", host)
	_, _ = fmt.Fprintf(progress, "*** Measuring %s -> %s: %d B frames, %s, %v per rate\n", from, to, cfg.Frame, cfg.Pattern, cfg.Duration)
	_, _ = fmt.Fprint(progress, measure.TableHeader())
	cfg.Progress = func(r *measure.Result, phase string) {
		_, _ = fmt.Fprint(progress, measure.TableLine(r, phase))
		if !r.Achieved() && phase == "rate" {
			_, _ = fmt.Fprintf(progress, "*** %s packets/s offered, %s sent: the sender's core also runs the path's forwarding (veth and bridges work in the sender's softirq) or is busy\n",
				measure.FormatRate(r.Rate), measure.FormatRate(r.SentPPS))
		}
	}
	rep, err := net.Measure(ctx, from, to, cfg)
	if err != nil {
		return err
	}
	rep.Host = &host
	if m.compareGen {
		if rep.Generators, err = net.CompareGenerators(ctx, from, cfg.Frame, 5, 200*time.Millisecond); err != nil {
			return err
		}
		for _, g := range rep.Generators {
			_, _ = fmt.Fprintf(progress, "*** Generator %-8s alone on %s: %s packets/s (median of 5 interleaved rounds)\n", g.Generator, from, measure.FormatRate(g.PPS))
		}
	}
	_, _ = fmt.Fprint(progress, generatorLine(rep, cfg.Frame))
	if z := rep.ZeroLoss; z != nil {
		_, _ = fmt.Fprintf(progress, "*** Zero-loss rate %s -> %s: %s packets/s (%s on the wire) with loss <= %g%s\n",
			from, to, measure.FormatRate(z.Rate), hymn.FormatBps(z.RateBps), z.Tolerance, headroomNote(rep))
	}
	return writeMeasureOutputs(rep, m, stdout)
}

// generatorLine says which generator the trials used and how fast it is
// alone.
func generatorLine(rep *measure.Report, frame int) string {
	why := ""
	if rep.GeneratorFallback != "" {
		why = " (a faster one could not be used: " + rep.GeneratorFallback + ")"
	}
	return fmt.Sprintf("*** Generator %s alone on %s: %s packets/s from one core (%d B frames into a sink that frees them)%s\n",
		rep.Generator, rep.From, measure.FormatRate(rep.GeneratorPPS), frame, why)
}

// headroomNote ends the zero-loss line: the generator's headroom over the
// rate found, and a warning when the search ran into the generator.
func headroomNote(rep *measure.Report) string {
	z := rep.ZeroLoss
	note := ""
	if h := rep.Headroom(); h > 0 {
		note = fmt.Sprintf("; generator headroom %.1fx (%s packets/s alone)", h, measure.FormatRate(rep.GeneratorPPS))
	}
	switch {
	case z.Limited:
		note += "; GENERATOR-LIMITED: the trial above it sent less than it offered and lost nothing, the path may carry more"
	case z.Rate > 0 && rep.GeneratorPPS > 0 && rep.Headroom() < 1.1:
		note += "; GENERATOR-LIMITED: the rate found is within 10% of what the generator sends alone"
	case z.CoreLimited:
		note += "; the trial above it fell short on the sender's core (the path's kernel work runs there too: a veth delivers in the sender's softirq), not for want of generator"
	}
	return note
}

func writeMeasureOutputs(rep *measure.Report, m *measureFlags, stdout io.Writer) error {
	if m.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	}
	if m.csvOut {
		if err := measure.WriteCSV(stdout, rep); err != nil {
			return err
		}
	}
	curves := measureCurves(rep)
	if m.plot != "" {
		title := fmt.Sprintf("one-way latency %s -> %s", rep.From, rep.To)
		if err := writeFile(m.plot, func(w io.Writer) error { return measure.PlotHDR(w, title, curves) }); err != nil {
			return err
		}
	}
	if m.series != "" {
		r := seriesResult(rep, m)
		if r == nil {
			return fmt.Errorf("--series: no trial at rate %s", m.seriesRate)
		}
		title := fmt.Sprintf("one-way delay %s -> %s at %s packets/s", rep.From, rep.To, measure.FormatRate(r.Rate))
		if err := writeFile(m.series, func(w io.Writer) error { return measure.PlotSeries(w, title, r) }); err != nil {
			return err
		}
	}
	if m.hgrm != "" {
		for _, c := range curves {
			name := strings.TrimSuffix(m.hgrm, ".hgrm") + "-" + strings.ReplaceAll(c.Label, " ", "-") + ".hgrm"
			if err := writeFile(name, func(w io.Writer) error { return measure.WriteHgrm(w, c.Result) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// measureCurves labels each result for plots and file names.
func measureCurves(rep *measure.Report) []measure.Curve {
	var out []measure.Curve
	for _, r := range rep.Results {
		out = append(out, measure.Curve{Label: measure.FormatRate(r.Rate) + "pps", Result: r})
	}
	if z := rep.ZeroLoss; z != nil && z.Result != nil {
		out = append(out, measure.Curve{Label: "zero-loss " + measure.FormatRate(z.Rate) + "pps", Result: z.Result})
	}
	return out
}

func seriesResult(rep *measure.Report, m *measureFlags) *measure.Result {
	if m.seriesRate != "" {
		want, _ := measure.ParseRate(m.seriesRate, m.frame)
		for _, r := range rep.Results {
			if r.Rate > want*0.999 && r.Rate < want*1.001 {
				return r
			}
		}
		return nil
	}
	if z := rep.ZeroLoss; z != nil && z.Result != nil {
		return z.Result
	}
	if len(rep.Results) > 0 {
		return rep.Results[len(rep.Results)-1]
	}
	return nil
}

// writeFile writes a whole file, or nothing with an error.
func writeFile(path string, fn func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".hymn-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	// After the rename there is nothing left to remove (ENOENT).
	defer func() { _ = os.Remove(tmp.Name()) }()
	// The temporary file is abandoned on these errors: its Close's error
	// adds nothing.
	if err := fn(tmp); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func newMeasureCmd(stdin *os.File, stdout, stderr io.Writer) *cobra.Command {
	f := &mnFlags{}
	m := &measureFlags{}
	cmd := &cobra.Command{
		Use:   "measure [mn flags] [measure flags]",
		Short: "Measure one-way latency (HDR), loss and the zero-loss rate between two hosts",
		Long: `measure builds a network with mn's flags, sends UDP packets at each rate from
one host to another (from one core, through AF_XDP where it works, else
AF_PACKET or UDP sendmmsg: --generator; kernel receive timestamps on the same
clock), prints a table per rate on stderr and tears the network down. Every
report says which generator sent and how fast it is alone, and the zero-loss
line gives its headroom and says when the generator or the sending core set
the bound.

  hymn measure --topo linear,7 --from h1 --to h7 --rate 50k,300k,1M --frame 64 --duration 3s --json
  hymn measure --topo linear,2 --link emu,delay=5ms,jitter=1ms --rate 10k --plot hdr.svg --series delay.svg
  hymn measure --custom examples/line7.yaml --rate 100k --zero-loss --zero-loss-max 1M

Latencies are in microseconds; percentiles 50 to 99.9999 come from an HDR
histogram (3 significant digits).`,
		Args:          noArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m.jsonOut = f.jsonOut
			cfg, err := m.config()
			if err != nil {
				return err
			}
			if len(f.tests) > 0 {
				return fmt.Errorf("%w: measure runs no --test", ErrUsage)
			}
			f.checkTopo = func(t *topo.Topo) error {
				for _, n := range []struct{ flag, name string }{{"--from", m.from}, {"--to", m.to}} {
					if n.name != "" && t.Node(n.name) == nil {
						return fmt.Errorf("%w: %s %s: no such node in the topology", ErrUsage, n.flag, n.name)
					}
				}
				if m.from != "" && m.from == m.to {
					return fmt.Errorf("%w: --from and --to are both %s", ErrUsage, m.from)
				}
				return nil
			}
			f.action = func(ctx context.Context, net *hymn.Network) error {
				return runMeasure(ctx, net, m, cfg, stdout, stderr)
			}
			return runMN(cmd.Context(), f, stdin, stdout, stderr)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", ErrUsage, err) })
	addMNFlags(cmd.Flags(), f)
	addMeasureFlags(cmd.Flags(), m)
	return cmd
}
