// Command grid regenerates the emulator accuracy report: the DPDS paper's
// grid (mean 10 ms; jitter 0.1/0.3/1/3 ms; t_h 0/7/21/70 ms; 0.1–100
// Gbit/s of 1518-byte CBR) simulated with independent replications, written
// as CSV and SVG plots. Usage: go run ./emulator/cmd/grid [-out docs].
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/hymn-net/hymn/emulator"
)

func main() {
	out := flag.String("out", "docs", "directory for emulator-accuracy.csv and the SVG plots")
	reps := flag.Int("replications", emulator.DefaultGridOptions().Replications, "independent runs per cell (≥ 2)")
	scale := flag.Float64("scale", 1, "multiply every run length by this factor")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := emulator.WriteGridReport(ctx, *out, *reps, *scale, os.Stderr, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "grid:", err)
		os.Exit(1)
	}
}
