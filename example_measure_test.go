package hymn_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/measure"
	"github.com/hymn-net/hymn/topo"
)

// An experiment in Go: one-way latency percentiles and the zero-loss rate
// across an emulated link, the HDR diagram as SVG, and a pcapng of what
// the emulator did to the packets.
func ExampleNetwork_Measure() {
	t := topo.New()
	t.AddLink(t.AddHost("h1"), t.AddHost("h2"), topo.Params{"delay": "5ms", "jitter": "1ms", "loss": "0.1"})
	net, err := hymn.New(t, hymn.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := net.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := net.Stop(); err != nil { // also ends the capture
			log.Print(err)
		}
	}()

	// h1-h2-before.pcapng and h1-h2-after.pcapng: both sides of the emulator.
	if _, err := net.StartCapture(hymn.CaptureSpec{Node1: "h1", Node2: "h2", Dir: hymn.Forward, File: "h1-h2.pcapng"}); err != nil {
		log.Fatal(err)
	}
	rep, err := net.Measure(ctx, "h1", "h2", measure.Config{
		Rates:    []float64{10e3, 50e3},
		ZeroLoss: &measure.ZeroLossConfig{Max: 200e3, Tolerance: 0.002},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rep.Results {
		fmt.Printf("%s pps: p50 %.0f µs, p99.9999 %.0f µs, loss %.3f%%\n",
			measure.FormatRate(r.Rate), r.Latency.P50, r.Latency.P999999, 100*r.Loss)
	}
	fmt.Printf("zero-loss rate: %s pps\n", measure.FormatRate(rep.ZeroLoss.Rate))
	f, err := os.Create("hdr.svg")
	if err != nil {
		log.Fatal(err)
	}
	var curves []measure.Curve
	for _, r := range rep.Results {
		curves = append(curves, measure.Curve{Label: measure.FormatRate(r.Rate) + "pps", Result: r})
	}
	if err := measure.PlotHDR(f, "h1 -> h2", curves); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil { // a written file: its last write can fail here
		log.Fatal(err)
	}
}
