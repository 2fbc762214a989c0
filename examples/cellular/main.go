// Command cellular replays a cellular path from a delivery trace: the
// capacity from h1 to h2 follows a Mahimahi-format trace (one line per
// 1500-byte delivery opportunity, in ms) with two outages, while TCP
// (iperf3) runs across it. It samples the bytes the emulator delivers and
// writes them next to the trace's capacity.
//
//	go run ./examples/cellular -svg cell.svg -csv cell.csv
//	go run ./examples/cellular -write-trace cell.trace   # the trace only
//
// The trace is generated (Trace), not recorded: 24 Mbit/s for 4 s, an
// outage of 2 s, 6 Mbit/s for 5 s, an outage of 2 s, 12 Mbit/s for 7 s,
// repeating every 20 s.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/examples/internal/twin"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/topo"
)

// Segment is a stretch of constant capacity; Mbps 0 is an outage.
type Segment struct {
	Length time.Duration
	Mbps   int // a multiple of 6 or 12: whole opportunities per 2 ms
}

// Segments is the trace's plan.
var Segments = []Segment{
	{4 * time.Second, 24}, {2 * time.Second, 0}, {5 * time.Second, 6}, {2 * time.Second, 0}, {7 * time.Second, 12},
}

// Trace renders Segments as a delivery trace: at 12 Mbit/s one
// opportunity per ms (Mahimahi's convention: 1500 B × 8 × 1000/s).
func Trace() string {
	var b strings.Builder
	start := 0
	for _, s := range Segments {
		end := start + int(s.Length/time.Millisecond)
		for ms := start + 1; ms <= end; ms++ {
			// Opportunities per ms = Mbps/12, in whole ones over 2 ms.
			n := s.Mbps / 12
			if s.Mbps%12 != 0 && ms%2 == 0 {
				n++
			}
			for range n {
				b.WriteString(strconv.Itoa(ms) + "\n")
			}
		}
		start = end
	}
	if !strings.HasSuffix(b.String(), "\n"+strconv.Itoa(start)+"\n") {
		b.WriteString(strconv.Itoa(start) + "\n") // the period's end
	}
	return b.String()
}

// CapacityAt is the trace's rate (Mbit/s of IP packets) at trace time t.
func CapacityAt(t time.Duration) int {
	var period time.Duration
	for _, s := range Segments {
		period += s.Length
	}
	t %= period
	for _, s := range Segments {
		if t < s.Length {
			return s.Mbps
		}
		t -= s.Length
	}
	return 0
}

// Sample is the emulator's delivered bytes at a time: the counter was
// read between Before and After (trace time, from the trace's time zero);
// At is the middle.
type Sample struct {
	Before, At, After time.Duration
	Bytes             uint64 // frame bytes delivered h1→h2 so far
}

// Result is what a run measured.
type Result struct {
	Samples []Sample
	Iperf   hymn.IperfResult
	MaxLate time.Duration // the latest the forwarder sent a frame after its time
}

// Run writes the trace to dir, builds h1 ─ h2 with it as the h1→h2 rate
// (100-packet buffer), runs TCP for dur and samples every step.
func Run(ctx context.Context, dir string, dur, step time.Duration, log *mnlog.Logger) (_ Result, err error) {
	path := filepath.Join(dir, "cellular.trace")
	if err := os.WriteFile(path, []byte(Trace()), 0o644); err != nil {
		return Result{}, err
	}
	t := topo.New()
	t.AddHost("h1")
	t.AddHost("h2")
	t.AddLink("h1", "h2", topo.Params{"a>b.trace": path, "limit": "100"})
	n, err := hymn.New(t, hymn.Options{Log: log})
	if err != nil {
		return Result{}, err
	}
	defer func() {
		// A network that did not come down leaves namespaces behind:
		// that fails the run.
		if serr := n.Stop(); serr != nil {
			err = errors.Join(err, fmt.Errorf("stopping the network: %w", serr))
		}
	}()
	if err := n.Start(ctx); err != nil {
		return Result{}, err
	}
	type iperfDone struct {
		r   hymn.IperfResult
		err error
	}
	done := make(chan iperfDone, 1)
	go func() {
		r, err := n.Iperf(ctx, "h1", "h2", dur)
		done <- iperfDone{r, err}
	}()
	type raw struct {
		before, after time.Time
		bytes         uint64
	}
	var raws []raw
	tick := time.NewTicker(step)
	defer tick.Stop()
	var res Result
	for running := true; running; {
		select {
		case d := <-done:
			res.Iperf, err = d.r, d.err
			running = false
		case <-tick.C:
			before := time.Now()
			st, err := n.LinkStats("h1", "h2")
			if err != nil {
				return Result{}, err
			}
			raws = append(raws, raw{before, time.Now(), st.Forward.Emulator.SentBytes})
			res.MaxLate = st.Forward.Emulator.Lateness.Max
		}
	}
	if err != nil {
		return Result{}, err
	}
	zero, ok, err := n.TraceStart("h1", "h2")
	if err != nil || !ok {
		return Result{}, errors.Join(err, errors.New("the trace never started"))
	}
	for _, r := range raws {
		b, a := r.before.Sub(zero), r.after.Sub(zero)
		res.Samples = append(res.Samples, Sample{Before: b, At: (a + b) / 2, After: a, Bytes: r.bytes})
	}
	return res, nil
}

func main() {
	dur := flag.Duration("duration", 20*time.Second, "how long TCP runs")
	step := flag.Duration("step", 250*time.Millisecond, "sampling interval")
	csvPath := flag.String("csv", "", "write time, delivered and capacity (Mbit/s) here")
	svgPath := flag.String("svg", "", "write a figure here")
	tracePath := flag.String("write-trace", "", "only write the trace to this file")
	flag.Parse()
	if *tracePath != "" {
		if err := os.WriteFile(*tracePath, []byte(Trace()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if _, err := emulator.ParseDeliveryTrace("generated", []byte(Trace())); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dir, err := os.MkdirTemp("", "hymn-cellular")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintln(os.Stderr, "cellular:", err)
		}
	}()
	res, err := Run(ctx, dir, *dur, *step, mnlog.New(os.Stderr, mnlog.Info))
	if err != nil {
		fmt.Fprintln(os.Stderr, "cellular:", err)
		os.Exit(1)
	}
	fmt.Printf("iperf3 TCP h1 -> h2: %s over %v\n", res.Iperf.ServerText, *dur)
	var rows [][]float64
	var mx, my, cx, cy []float64
	// Over two sampling intervals: one interval's rate is noisy when the
	// sampler itself runs late on a loaded machine.
	for i := 2; i < len(res.Samples); i++ {
		a, b := res.Samples[i-2], res.Samples[i]
		mbps := float64(b.Bytes-a.Bytes) * 8 / (b.At - a.At).Seconds() / 1e6
		mid := (a.At + b.At) / 2
		rows = append(rows, []float64{mid.Seconds(), mbps, float64(CapacityAt(mid))})
		mx, my = append(mx, mid.Seconds()), append(my, mbps)
	}
	if len(res.Samples) > 0 {
		for t := res.Samples[0].At; t <= res.Samples[len(res.Samples)-1].At; t += 10 * time.Millisecond {
			cx, cy = append(cx, t.Seconds()), append(cy, float64(CapacityAt(t))*1514/1500)
		}
	}
	if *csvPath != "" {
		if err := twin.WriteCSV(*csvPath, []string{"trace_s", "delivered_mbps", "capacity_mbps"}, rows); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if *svgPath != "" {
		p := twin.Plot{
			Title:  "Cellular path from a delivery trace: TCP follows the capacity",
			XLabel: "trace time (s)", YLabel: "Mbit/s (Ethernet frames)",
			Series: []twin.Series{
				{Name: "trace capacity", X: cx, Y: cy, Step: true},
				{Name: "delivered (TCP)", X: mx, Y: my},
			},
		}
		if err := p.WriteSVG(*svgPath); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
