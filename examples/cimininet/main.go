// Command cimininet repeats the CIMininet paper's evaluation with hymn: the
// seven-node line h1 - h2 - ... - h7, nodes joined directly (no switches),
// every link its own /24 and the inner nodes routing, in the variants this
// machine can run:
//
//	ns-veth     namespace nodes, veth links
//	ns-sriov    namespace nodes, SR-IOV VF pairs (the simulated NIC without hardware)
//	vm-veth     h2..h6 are QEMU VMs (KVM, else TCG), veth/tap links
//	vm-sriov    h2..h6 are VMs, VF pairs
//	ns-veth-emu ns-veth with hymn's emulator on the middle link (h3-h4)
//
// h1 and h7 stay namespace nodes in every variant: they are the load
// generator and the receiver, which must share one clock. For each variant
// it sends 64 B frames (84 B on the wire) at each rate, records one-way
// latency in HDR histograms, searches the zero-loss rate (RFC 2544 binary
// search) and writes, into -out: hdr-VARIANT.svg (the paper's HDR diagram,
// one curve per rate), VARIANT.json (every result) and zero-loss.md /
// zero-loss.csv (the table, with the paper's numbers beside it).
//
//	go run ./examples/cimininet -variants ns-veth,ns-sriov -out docs/measure
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/measure"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/topo"
)

// Hosts is the length of the line.
const Hosts = 7

// Variant is one way of building the line.
type Variant struct {
	Name  string
	Nodes hymn.NodeBackend // for h2..h6
	Links hymn.LinkBackend
	Emu   string // emulator params on the middle link, "" for none
	// Paper is the CIMininet paper's highest stable rate for the variant
	// (kpackets/s on its hardware), 0 where it has none.
	Paper float64
}

// Variants lists what the example knows, in the paper's order.
var Variants = []Variant{
	{Name: "ns-veth", Nodes: hymn.BackendNetns, Links: hymn.LinksVeth, Paper: 270},
	{Name: "ns-sriov", Nodes: hymn.BackendNetns, Links: hymn.LinksSRIOV, Paper: 680},
	{Name: "vm-veth", Nodes: hymn.BackendVM, Links: hymn.LinksVeth, Paper: 720},
	{Name: "vm-sriov", Nodes: hymn.BackendVM, Links: hymn.LinksSRIOV, Paper: 850},
	{Name: "ns-veth-emu", Nodes: hymn.BackendNetns, Links: hymn.LinksVeth, Emu: "delay 0"},
}

// Line returns the topology (topo.RoutedLine): inner nodes are routers on
// backend inner, the ends namespaces; emu, when set, goes on the middle
// link.
func Line(n int, inner hymn.NodeBackend, emu string) (*topo.Topo, error) {
	t, err := topo.RoutedLine(n)
	if err != nil {
		return nil, err
	}
	for _, node := range t.Nodes() {
		node.Params["backend"] = inner.String()
		if node.Kind != topo.KindRouter {
			node.Params["backend"] = hymn.BackendNetns.String() // generator and receiver share the host's clock
		}
	}
	if emu != "" {
		t.Links()[n/2-1].Params["emu"] = emu
	}
	return t, nil
}

// Options are the experiment's knobs.
type Options struct {
	Rates      []float64
	Duration   time.Duration
	Drain      time.Duration // wait for packets after each trial (0: measure's 500 ms)
	ZeroLoss   measure.ZeroLossConfig
	Out        string
	Log        *mnlog.Logger
	Progress   io.Writer
	Generator  bool // also measure the generator alone (once)
	StopOnFail bool
	Hosts      int // line length (default Hosts)
}

// Outcome is one variant's results.
type Outcome struct {
	Variant Variant
	Report  *measure.Report
	Err     error
}

// RunVariant builds the line for v, measures h1 -> h7 and tears it down.
func RunVariant(ctx context.Context, v Variant, o Options) (_ *measure.Report, err error) {
	n := o.Hosts
	if n == 0 {
		n = Hosts
	}
	last := fmt.Sprintf("h%d", n)
	line, err := Line(n, v.Nodes, v.Emu)
	if err != nil {
		return nil, err
	}
	net, err := hymn.New(line, hymn.Options{Log: o.Log, Nodes: v.Nodes, Links: v.Links})
	if err != nil {
		return nil, err
	}
	if err := net.Start(ctx); err != nil {
		_ = net.Stop() // Start's error is the one to report
		return nil, err
	}
	defer func() {
		if stopErr := net.Stop(); err == nil {
			err = stopErr
		}
	}()
	if loss, err := net.Ping(ctx, []string{"h1", last}, 5*time.Second); err != nil || loss > 0 {
		return nil, fmt.Errorf("%s: h1 and %s do not reach each other (loss %.0f%%, %v)", v.Name, last, loss, err)
	}
	z := o.ZeroLoss
	cfg := measure.Config{Rates: o.Rates, Duration: o.Duration, Drain: o.Drain, ZeroLoss: &z, Series: -1,
		Progress: func(r *measure.Result, phase string) {
			if o.Progress != nil {
				_, _ = fmt.Fprintf(o.Progress, "%-12s %s", v.Name, measure.TableLine(r, phase)) // progress only
			}
		}}
	rep, err := net.Measure(ctx, "h1", last, cfg)
	if err != nil {
		return rep, err
	}
	if o.Generator {
		// Network.Measure measured the trials' generator briefly; a
		// longer look, as long as one rate's trial, steadies the headroom.
		g, _ := measure.ParseGenerator(rep.Generator)
		gr, err := net.GeneratorRate(ctx, "h1", 64, g, o.Duration)
		if err != nil {
			return rep, err
		}
		rep.GeneratorPPS = gr.PPS
	}
	return rep, nil
}

// Run records how and when results were made: on a shared machine the
// numbers mean little without the load they were measured under.
type Run struct {
	Command   string    `json:"command"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	LoadStart string    `json:"loadavg_start"` // /proc/loadavg
	LoadEnd   string    `json:"loadavg_end"`
}

// LoadAvg returns /proc/loadavg without its newline ("" if unreadable).
func LoadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}

// String is the run's line under the table.
func (r Run) String() string {
	const layout = "2006-01-02 15:04:05"
	return fmt.Sprintf("Run: `%s`, %s to %s UTC; /proc/loadavg at the start `%s`, at the end `%s`.",
		r.Command, r.Start.UTC().Format(layout), r.End.UTC().Format(layout), r.LoadStart, r.LoadEnd)
}

// WriteResults writes the HDR diagram and JSON of each variant and the
// zero-loss table, each with the run's command, time and load.
func WriteResults(out string, run Run, outcomes []Outcome) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var md, csv strings.Builder
	md.WriteString("| variant | nodes | links | zero-loss rate (kpps, 64 B) | generator alone (kpps) | headroom | p50 / p99 / p99.99 / max at that rate (µs) | trials | CIMininet paper (kpps) |\n|---|---|---|---|---|---|---|---|---|\n")
	csv.WriteString("variant,nodes,links,zero_loss_pps,generator_limited,sender_core_limited,generator,generator_pps,headroom,p50_us,p99_us,p9999_us,max_us,paper_kpps\n")
	for _, o := range outcomes {
		v := o.Variant
		paper := "–"
		if v.Paper > 0 {
			paper = fmt.Sprintf("%.0f", v.Paper)
		}
		if o.Err != nil || o.Report == nil {
			fmt.Fprintf(&md, "| %s | %s | %s | failed: %v | | | | | %s |\n", v.Name, v.Nodes, v.Links, oneLine(o.Err), paper)
			continue
		}
		rep := o.Report
		var curves []measure.Curve
		for _, r := range rep.Results {
			curves = append(curves, measure.Curve{Label: measure.FormatRate(r.Rate) + "pps", Result: r})
		}
		z := rep.ZeroLoss
		if z != nil && z.Result != nil {
			curves = append(curves, measure.Curve{Label: "zero-loss " + measure.FormatRate(z.Rate) + "pps", Result: z.Result})
		}
		title := fmt.Sprintf("CIMininet line h1 -> %s, %s: one-way latency, 64 B frames", rep.To, v.Name)
		if err := writeFile(filepath.Join(out, "hdr-"+v.Name+".svg"), func(w io.Writer) error { return measure.PlotHDR(w, title, curves) }); err != nil {
			return err
		}
		if err := writeFile(filepath.Join(out, v.Name+".json"), func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(struct {
				Run     Run             `json:"run"`
				Variant Variant         `json:"variant"`
				Report  *measure.Report `json:"report"`
			}{run, v, rep})
		}); err != nil {
			return err
		}
		if z == nil {
			continue
		}
		lat := "–"
		var l measure.Latency
		if z.Result != nil {
			l = z.Result.Latency
			lat = fmt.Sprintf("%.1f / %.1f / %.1f / %.1f", l.P50, l.P99, l.P9999, l.Max)
		}
		rate := fmt.Sprintf("%.1f", z.Rate/1e3)
		switch {
		case z.Limited:
			rate += " ¹"
		case z.CoreLimited:
			rate += " ²"
		}
		headroom := "–"
		if h := rep.Headroom(); h > 0 {
			headroom = fmt.Sprintf("%.1f×", h)
		}
		fmt.Fprintf(&md, "| %s | %s | %s | %s | %.0f (%s) | %s | %s | %d | %s |\n", v.Name, v.Nodes, v.Links, rate, rep.GeneratorPPS/1e3, rep.Generator, headroom, lat, len(z.Trials), paper)
		fmt.Fprintf(&csv, "%s,%s,%s,%.0f,%v,%v,%s,%.0f,%.3f,%.3f,%.3f,%.3f,%.3f,%g\n", v.Name, v.Nodes, v.Links, z.Rate, z.Limited, z.CoreLimited,
			rep.Generator, rep.GeneratorPPS, rep.Headroom(), l.P50, l.P99, l.P9999, l.Max, v.Paper)
	}
	md.WriteString("\nGenerator alone: what the trials' generator sends from h1's core into a sink device that frees every frame (hymn.Network.GeneratorRate; measured before the search and again, as long as one rate's trial, after it; the later figure is shown); headroom: that over the zero-loss rate.\n")
	md.WriteString("\n¹ generator-limited: the search's bound is a trial that sent less than it offered, lost nothing, at a rate the generator alone does not send twice over.\n")
	md.WriteString("\n² sender-core-limited: the bound is a trial that fell short of its schedule without loss at less than half the generator's own rate: the sending core carried the path's kernel work (on veth the kernel forwards in the sender's softirq, so that core carries the whole line) or other load.\n")
	md.WriteString("\n" + run.String() + "\n")
	if err := writeFile(filepath.Join(out, "zero-loss.md"), func(w io.Writer) error { _, err := io.WriteString(w, md.String()); return err }); err != nil {
		return err
	}
	return writeFile(filepath.Join(out, "zero-loss.csv"), func(w io.Writer) error { _, err := io.WriteString(w, csv.String()); return err })
}

func oneLine(err error) string { return strings.ReplaceAll(fmt.Sprint(err), "\n", " ") }

func writeFile(path string, fn func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		_ = f.Close() // fn's error is the one to report
		return err
	}
	return f.Close()
}

func main() {
	variants := flag.String("variants", "ns-veth,ns-sriov,ns-veth-emu", "comma-separated variants: "+variantNames()+" (all: every one)")
	rates := flag.String("rates", "50k,100k,200k,300k", "rates for the HDR diagrams (packets/s)")
	duration := flag.Duration("duration", 3*time.Second, "measured time per rate")
	zlMax := flag.String("zero-loss-max", "1M", "highest rate the zero-loss search tries")
	trial := flag.Duration("trial", 2*time.Second, "zero-loss trial length")
	resolution := flag.Float64("resolution", 0.02, "zero-loss search resolution (relative)")
	// TCG guests overloaded by one trial hold seconds of backlog in their
	// queues, which the next trial's packets then wait behind; RFC 2544
	// waits 2 s after each trial for that reason.
	drain := flag.Duration("drain", 500*time.Millisecond, "wait for packets after each trial (RFC 2544 waits 2s; use that for TCG VMs)")
	emu := flag.String("emu", "delay 0", "emulator parameters of ns-veth-emu's middle link")
	out := flag.String("out", "docs/measure", "directory for the SVGs, JSON and tables")
	verbosity := flag.String("v", "warning", "hymn's verbosity: debug, info, output, warning, error")
	hosts := flag.Int("hosts", Hosts, "nodes in the line (the paper's 7; fewer where VMs boot slowly)")
	flag.Parse()
	fail := func(code int, format string, a ...any) {
		fmt.Fprintf(os.Stderr, "cimininet: "+format+"\n", a...)
		os.Exit(code)
	}
	level, err := mnlog.ParseLevel(*verbosity)
	if err != nil {
		fail(2, "-v: %v", err)
	}
	rs, err := measure.ParseRates(*rates, 64)
	if err != nil {
		fail(2, "-rates: %v", err)
	}
	max, err := measure.ParseRate(*zlMax, 64)
	if err != nil {
		fail(2, "-zero-loss-max: %v", err)
	}
	if *resolution <= 0 || *resolution >= 1 {
		fail(2, "-resolution %g: must be in (0, 1)", *resolution)
	}
	if *drain <= 0 || *drain > time.Minute {
		fail(2, "-drain %v: must be in (0, 1m]", *drain)
	}
	if *hosts < 3 || *hosts > 250 {
		fail(2, "-hosts %d: must be 3..250", *hosts)
	}
	chosen, err := pick(*variants)
	if err != nil {
		fail(2, "-variants: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	o := Options{Hosts: *hosts, Rates: rs, Duration: *duration, Drain: *drain, Out: *out, Log: mnlog.New(os.Stderr, level), Progress: os.Stderr, Generator: true,
		ZeroLoss: measure.ZeroLossConfig{Max: max, Trial: *trial, Resolution: *resolution}}
	run := Run{Command: strings.Join(append([]string{"cimininet"}, quoteArgs(os.Args[1:])...), " "), Start: time.Now(), LoadStart: LoadAvg()}
	fmt.Fprintf(os.Stderr, "%-12s %s", "variant", measure.TableHeader())
	var outcomes []Outcome
	for _, v := range chosen {
		if v.Emu != "" {
			v.Emu = *emu
		}
		rep, err := RunVariant(ctx, v, o)
		if err != nil {
			fmt.Fprintf(os.Stderr, "cimininet: %s: %v\n", v.Name, err)
		} else if rep.ZeroLoss != nil {
			fmt.Fprintf(os.Stderr, "%-12s zero-loss rate %s packets/s; generator %s alone %s packets/s (headroom %.1fx; generator-limited %v, sender-core-limited %v)\n", v.Name,
				measure.FormatRate(rep.ZeroLoss.Rate), rep.Generator, measure.FormatRate(rep.GeneratorPPS), rep.Headroom(), rep.ZeroLoss.Limited, rep.ZeroLoss.CoreLimited)
		}
		outcomes = append(outcomes, Outcome{v, rep, err})
		if ctx.Err() != nil {
			break
		}
	}
	run.End, run.LoadEnd = time.Now(), LoadAvg()
	if err := WriteResults(*out, run, outcomes); err != nil {
		fail(1, "%v", err)
	}
	for _, o := range outcomes {
		if o.Err != nil {
			os.Exit(1)
		}
	}
}

// quoteArgs quotes the arguments a shell would split or expand, so the
// recorded command can be pasted back.
func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return out
}

func variantNames() string {
	var n []string
	for _, v := range Variants {
		n = append(n, v.Name)
	}
	return strings.Join(n, ", ")
}

func pick(list string) ([]Variant, error) {
	if list == "all" {
		return Variants, nil
	}
	var out []Variant
	for _, name := range strings.Split(list, ",") {
		found := false
		for _, v := range Variants {
			if v.Name == strings.TrimSpace(name) {
				out = append(out, v)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown variant %q (use %s or all)", name, variantNames())
		}
	}
	return out, nil
}
