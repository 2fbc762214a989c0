// Command satellite replays a satellite-like path: h1 and h2 joined by a
// link whose one-way delay (both directions) steps between 20 ms and 40 ms
// every 15 s, as satellite.yaml says. It sends UDP echoes from h1 to h2
// (twin.UDPEcho: exact send times, kernel receive stamps; ping's printed
// times lag on a loaded machine) and writes the RTTs next to what the
// schedule predicts.
//
//	go run ./examples/satellite                       # 60 s, the real schedule
//	go run ./examples/satellite -scale 0.0667 -svg sat.svg -csv sat.csv
//
// -scale compresses the schedule's times (0.0667: a step every second).
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/examples/internal/twin"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/topo"
)

//go:embed satellite.yaml
var satelliteYAML []byte

// Topology loads satellite.yaml with its schedule's times multiplied by
// scale, and returns the (scaled) schedule too.
func Topology(scale float64) (*topo.Topo, *emulator.Schedule, error) {
	t, _, err := topo.Load("satellite.yaml", satelliteYAML)
	if err != nil {
		return nil, nil, err
	}
	l := t.Links()[0]
	s, err := hymn.LoadScheduleParam(l.Params[hymn.ScheduleParam])
	if err != nil {
		return nil, nil, err
	}
	for i := range s.Points {
		s.Points[i].At = time.Duration(float64(s.Points[i].At) * scale)
	}
	s.Repeat = time.Duration(float64(s.Repeat) * scale)
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	l.Params[hymn.ScheduleParam] = s.Encode()
	return t, s, nil
}

// DelayAt is the schedule's one-way delay at t (steps, repeating).
func DelayAt(s *emulator.Schedule, base time.Duration, t time.Duration) time.Duration {
	d := base
	if s.Repeat > 0 {
		t %= s.Repeat
		// Before the first point of a later cycle the last one still holds.
		d = s.Points[len(s.Points)-1].Params.Delay
	}
	for _, p := range s.Points {
		if p.At <= t && p.Params.Set&emulator.SetDelay != 0 {
			d = p.Params.Delay
		}
	}
	return d
}

// Result is a run's measurement.
type Result struct {
	Schedule *emulator.Schedule
	Echoes   []twin.Echo
	Sent     int
	Late     time.Duration // the latest a schedule point was applied after its time
	Applied  uint64
	Zero     time.Time // the schedule's time zero, from which the echoes' Sent counts
}

// Run builds the network, pings count times every interval and stops.
func Run(ctx context.Context, scale float64, count int, interval time.Duration, log *mnlog.Logger) (_ Result, err error) {
	t, s, err := Topology(scale)
	if err != nil {
		return Result{}, err
	}
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
	ls, err := n.LinkScheduleStatus("h1", "h2")
	if err != nil {
		return Result{}, err
	}
	// One echo first, so ARP does not add a round trip to the series.
	if _, err := twin.PingSeries(ctx, n, "h1", "h2", 1, interval, ls.Start); err != nil {
		return Result{}, err
	}
	echoes, err := twin.UDPEcho(ctx, n, "h1", "h2", count, interval, ls.Start)
	if err != nil {
		return Result{}, err
	}
	zero := ls.Start
	ls, _ = n.LinkScheduleStatus("h1", "h2")
	late := max(ls.Forward.MaxLate, ls.Reverse.MaxLate)
	return Result{Schedule: s, Echoes: echoes, Sent: count, Late: late, Applied: ls.Forward.Applied, Zero: zero}, nil
}

// Expected is the RTT the schedule predicts for an echo sent at s and
// answered hold after it arrived: the delay out at s, back at s plus that
// delay plus hold.
func Expected(sch *emulator.Schedule, s, hold time.Duration) time.Duration {
	out := DelayAt(sch, 20*time.Millisecond, s)
	return out + DelayAt(sch, 20*time.Millisecond, s+out+hold)
}

func main() {
	scale := flag.Float64("scale", 1, "multiply the schedule's times by this")
	dur := flag.Duration("duration", 60*time.Second, "how long to ping (real time)")
	interval := flag.Duration("interval", 100*time.Millisecond, "ping interval")
	csvPath := flag.String("csv", "", "write send time, RTT and the predicted RTT here")
	svgPath := flag.String("svg", "", "write a figure here")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	count := int(*dur / *interval)
	res, err := Run(ctx, *scale, count, *interval, mnlog.New(os.Stderr, mnlog.Info))
	if err != nil {
		fmt.Fprintln(os.Stderr, "satellite:", err)
		os.Exit(1)
	}
	var rows [][]float64
	var ex, ey, px, py []float64
	for _, e := range res.Echoes {
		want := Expected(res.Schedule, e.Sent, e.Hold)
		rows = append(rows, []float64{e.Sent.Seconds(), ms(e.RTT), ms(want)})
		ex, ey = append(ex, e.Sent.Seconds()), append(ey, ms(e.RTT))
	}
	if len(res.Echoes) > 0 {
		end := res.Echoes[len(res.Echoes)-1].Sent
		for t := time.Duration(0); t <= end; t += time.Millisecond {
			px, py = append(px, t.Seconds()), append(py, ms(Expected(res.Schedule, t, 0)))
		}
	}
	fmt.Printf("%d of %d echoes, schedule points applied %d, at most %v late\n", len(res.Echoes), res.Sent, res.Applied, res.Late)
	if *csvPath != "" {
		if err := twin.WriteCSV(*csvPath, []string{"sent_s", "rtt_ms", "predicted_ms"}, rows); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if *svgPath != "" {
		p := twin.Plot{
			Title:  fmt.Sprintf("Satellite-like path: one-way delay 20 ↔ 40 ms every %v", res.Schedule.Points[1].At.Round(time.Millisecond)),
			XLabel: "time since network start (s)", YLabel: "RTT (ms)",
			Series: []twin.Series{
				{Name: "predicted by the schedule", X: px, Y: py},
				{Name: "UDP echo RTT", X: ex, Y: ey, Dots: true},
			},
		}
		if err := p.WriteSVG(*svgPath); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
