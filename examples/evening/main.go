// Command evening replays a day of evening congestion on a WAN path,
// compressed: h1 ─ h2 with evening.csv as the schedule of both
// directions (delay 10 → 50 ms and loss 0 → 2 % from 17:00 to 20:00, back
// by 23:00, linearly). It sends UDP echoes across the day and samples the configured
// loss, writing both next to what the schedule predicts.
//
//	go run ./examples/evening -hour 1s -svg evening   # a day in 24 s
//
// -hour is how long one hour of the day lasts.
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

//go:embed evening.csv
var eveningCSV []byte

// Schedule returns evening.csv compressed so that an hour lasts hour.
func Schedule(hour time.Duration) (*emulator.Schedule, error) {
	s, err := emulator.ParseSchedule("evening.csv", eveningCSV)
	if err != nil {
		return nil, err
	}
	scale := float64(hour) / float64(time.Hour)
	for i := range s.Points {
		s.Points[i].At = time.Duration(float64(s.Points[i].At) * scale)
	}
	s.Repeat = time.Duration(float64(s.Repeat) * scale)
	return s, s.Validate()
}

// At evaluates the schedule's delay and loss at t (linear ramps, repeat).
func At(s *emulator.Schedule, t time.Duration) (time.Duration, float64) {
	t %= s.Repeat
	n := len(s.Points)
	last := s.Points[n-1].Params
	d, p := last.Delay, last.Loss
	for i, pt := range s.Points {
		if pt.At <= t {
			d, p = pt.Params.Delay, pt.Params.Loss
			continue
		}
		if pt.Ramp {
			prevAt := s.Points[i-1].At
			f := float64(t-prevAt) / float64(pt.At-prevAt)
			d = d + time.Duration(f*float64(pt.Params.Delay-d))
			p = p + f*(pt.Params.Loss-p)
		}
		break
	}
	return d, p
}

// Expected is the RTT the schedule predicts for an echo sent at s whose
// reply was sent hold after the request arrived.
func Expected(sch *emulator.Schedule, s, hold time.Duration) time.Duration {
	out, _ := At(sch, s)
	back, _ := At(sch, s+out+hold)
	return out + back
}

// LossSample is the loss and delay in force h1→h2 and when the schedule
// set them (from time zero).
type LossSample struct {
	Updated time.Duration
	Prob    float64
	Delay   time.Duration
}

// Result is a run's measurement.
type Result struct {
	Schedule *emulator.Schedule
	Echoes   []twin.Echo
	Sent     int
	Loss     []LossSample
	Stats    hymn.LinkStats
	From, To time.Duration // when the echoes were sent, from time zero
}

// Run pings every interval for one compressed day and samples the loss.
func Run(ctx context.Context, hour, interval time.Duration, log *mnlog.Logger) (_ Result, err error) {
	s, err := Schedule(hour)
	if err != nil {
		return Result{}, err
	}
	t := topo.New()
	t.AddHost("h1")
	t.AddHost("h2")
	t.AddLink("h1", "h2", topo.Params{"delay": "10ms", hymn.ScheduleParam: s.Encode()})
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
	zero := ls.Start
	if _, err := twin.PingSeries(ctx, n, "h1", "h2", 1, interval, zero); err != nil { // ARP
		return Result{}, err
	}
	// Start the day's pings at the next day boundary, so they cover one day.
	day := s.Repeat
	next := zero.Add((time.Since(zero)/day + 1) * day)
	time.Sleep(time.Until(next))
	res := Result{Schedule: s, Sent: int(day / interval), From: next.Sub(zero), To: next.Sub(zero) + day}
	done := make(chan error, 1)
	go func() {
		var err error
		res.Echoes, err = twin.UDPEcho(ctx, n, "h1", "h2", res.Sent, interval, zero)
		done <- err
	}()
	tick := time.NewTicker(day / 200)
	defer tick.Stop()
	for running := true; running; {
		select {
		case err = <-done:
			running = false
		case <-tick.C:
			st, e := n.LinkScheduleStatus("h1", "h2")
			if e != nil {
				return Result{}, e
			}
			f := st.Forward
			res.Loss = append(res.Loss, LossSample{f.Updated, f.Current.Loss, f.Current.Delay})
		}
	}
	if err != nil {
		return Result{}, err
	}
	res.Stats, err = n.LinkStats("h1", "h2")
	return res, err
}

func main() {
	hour := flag.Duration("hour", time.Second, "how long an hour of the day lasts")
	interval := flag.Duration("interval", 50*time.Millisecond, "ping interval")
	svg := flag.String("svg", "", "write the figures to PREFIX-rtt.svg and PREFIX-loss.svg")
	csvPath := flag.String("csv", "", "write send time, RTT and the predicted RTT here")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := Run(ctx, *hour, *interval, mnlog.New(os.Stderr, mnlog.Info))
	if err != nil {
		fmt.Fprintln(os.Stderr, "evening:", err)
		os.Exit(1)
	}
	hours := func(d time.Duration) float64 { return float64(d%res.Schedule.Repeat) / float64(*hour) }
	var rows [][]float64
	var ex, ey, px, py, lx, ly, qx, qy []float64
	for _, e := range res.Echoes {
		rows = append(rows, []float64{e.Sent.Seconds(), ms(e.RTT), ms(Expected(res.Schedule, e.Sent, e.Hold))})
		ex, ey = append(ex, hours(e.Sent)), append(ey, ms(e.RTT))
	}
	for h := 0.0; h <= 24; h += 0.05 {
		t := time.Duration(h * float64(*hour))
		_, p := At(res.Schedule, t)
		px, py = append(px, h), append(py, ms(Expected(res.Schedule, t, 0)))
		qx, qy = append(qx, h), append(qy, 100*p)
	}
	for _, l := range res.Loss {
		lx, ly = append(lx, hours(l.Updated)), append(ly, 100*l.Prob)
	}
	fmt.Printf("%d of %d echoes; emulator h1->h2 lost %d of %d\n", len(res.Echoes), res.Sent,
		res.Stats.Forward.Emulator.Lost, res.Stats.Forward.Emulator.Received)
	if *csvPath != "" {
		if err := twin.WriteCSV(*csvPath, []string{"sent_s", "rtt_ms", "predicted_ms"}, rows); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if *svg != "" {
		plots := map[string]twin.Plot{
			"-rtt.svg": {Title: "Evening congestion: RTT over one (compressed) day", XLabel: "hour of the day", YLabel: "RTT (ms)",
				Series: []twin.Series{{Name: "predicted by the schedule", X: px, Y: py}, {Name: "UDP echo RTT", X: ex, Y: ey, Dots: true}}},
			"-loss.svg": {Title: "Evening congestion: loss probability over one (compressed) day", XLabel: "hour of the day", YLabel: "loss (%)",
				Series: []twin.Series{{Name: "schedule", X: qx, Y: qy}, {Name: "emulator's configured loss", X: lx, Y: ly, Dots: true}}},
		}
		for suffix, p := range plots {
			if err := p.WriteSVG(*svg + suffix); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	}
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
