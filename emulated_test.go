package hymn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/internal/probe"
	"github.com/hymn-net/hymn/internal/stallwatch"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/topo"
	"github.com/vishvananda/netns"
)

// withLinkParams sets params on every link of a topology, as --link does.
func withLinkParams(t *testing.T, spec string, params topo.Params) *topo.Topo {
	t.Helper()
	top := mustTopo(t, spec)
	for _, l := range top.Links() {
		if l.Params == nil {
			l.Params = topo.Params{}
		}
		for k, v := range params {
			l.Params[k] = v
		}
	}
	return top
}

// pingStamp is the resolution of an RTT ping prints at 1-100 ms (time=20.3).
const pingStamp = 100 * time.Microsecond

var pingRTT = regexp.MustCompile(`rtt min/avg/max/mdev = ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+) ms`)

func pingAvg(t *testing.T, n *Network, src, dst string, args ...string) (avg float64, out string) {
	t.Helper()
	node, err := n.Node(src)
	if err != nil {
		t.Fatal(err)
	}
	ip, err := n.IP(dst)
	if err != nil {
		t.Fatal(err)
	}
	res, err := node.Exec(context.Background(), "ping", append(args, ip.String())...)
	if err != nil {
		t.Fatal(err)
	}
	out = string(res.Stdout)
	m := pingRTT.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("ping %s -> %s: no RTT in output:\n%s%s", src, dst, out, res.Stderr)
	}
	avg, _ = strconv.ParseFloat(m[2], 64)
	return avg, out
}

// checkPingRTT pings dst from src count times, interval apart, while a
// stall watcher runs, and judges each reply's RTT (ping's time=, parsed by
// pingSeries): none may be below lo, the configured RTT (the machine can
// only add delay, so an early echo always fails); the median must be at
// most hi; and the mean, as Mininet's avg, at most hi too when the
// machine did not stall. One stall of 20-50 ms holds up the one or two
// echoes in flight, which moves a mean of a few but not the median; a
// wrong delay moves every echo, the minimum and the median with them.
//
// Resolutions (testenv.Judge): ping stamps each echo in the kernel and
// prints it to 0.1 ms at these RTTs, and a pause only lengthens an echo,
// so the minimum is known to pingStamp; so is the median, which a stall
// moves only if it holds up half the echoes. The mean is judged only when
// the watcher saw no stall: a pause under its threshold may still lengthen
// an echo, by at most stallwatch.Threshold over count echoes.
func checkPingRTT(t *testing.T, n *Network, src, dst string, count int, interval, lo, hi time.Duration) {
	t.Helper()
	watch := stallwatch.Start()
	replies := pingSeries(t, n, src, dst, count, interval, time.Now())
	stalls := watch.Stop()
	rtts := make([]time.Duration, 0, len(replies))
	var sum time.Duration
	for _, r := range replies {
		rtts = append(rtts, r.rtt)
		sum += r.rtt
	}
	if len(rtts) != count {
		t.Errorf("ping %s -> %s: %d of %d echoes came back (%v)", src, dst, len(rtts), count, rtts)
		if len(rtts) == 0 {
			return
		}
	}
	sorted := slices.Sorted(slices.Values(rtts))
	minRTT, median, mean := sorted[0], sorted[len(sorted)/2], sum/time.Duration(len(rtts))
	t.Logf("ping %s -> %s: RTTs %v: min %v median %v mean %v, want [%v, %v]; machine: %v", src, dst, rtts, minRTT, median, mean, lo, hi, stalls)
	stamp := testenv.Ms(pingStamp, "ping's kernel stamps, printed to 0.1 ms; a pause only lengthens an echo, and a median moves only if half the echoes are held up")
	testenv.JudgeTime(t, testenv.Timing{Quantity: fmt.Sprintf("ping %s -> %s: minimum RTT", src, dst), Got: minRTT, Target: lo,
		Tolerance: 10 * pingStamp, Bound: testenv.AtLeast, Resolution: stamp})
	testenv.JudgeTime(t, testenv.Timing{Quantity: fmt.Sprintf("ping %s -> %s: median RTT", src, dst), Got: median, Target: lo,
		Tolerance: hi - lo, Bound: testenv.AtMost, Resolution: stamp})
	if stalls.Stalled() {
		t.Logf("ping %s -> %s: the machine stalled (%v): judged the median %v, not the mean %v", src, dst, stalls, median, mean)
		return
	}
	testenv.JudgeTime(t, testenv.Timing{Quantity: fmt.Sprintf("ping %s -> %s: mean RTT, no stall seen", src, dst), Got: mean, Target: lo,
		Tolerance: hi - lo, Bound: testenv.AtMost,
		Resolution: testenv.Ms(stallwatch.Threshold/time.Duration(len(rtts)), fmt.Sprintf("no stall over stallwatch.Threshold (%v) seen: one shorter pause over %d echoes", stallwatch.Threshold, len(rtts)))})
}

func TestEmulatedParamsUnit(t *testing.T) {
	ab, ba, err := EmulatorConfigs(topo.Params{"bw": "10", "delay": "10ms", "loss": "1", "max_queue_size": "100", "b>a.delay": "20ms", "mtu": "1500"})
	if err != nil {
		t.Fatal(err)
	}
	if ab.Delay != 10*time.Millisecond || ba.Delay != 20*time.Millisecond {
		t.Errorf("delays %v %v", ab.Delay, ba.Delay)
	}
	if !ab.Space.Enabled || ab.Space.Rate != 10_000_000 || ab.Space.Limit == 0 || ab.Loss.Prob != 0.01 {
		t.Errorf("a>b config %+v", ab)
	}
	for _, bad := range []topo.Params{
		{"bw": "0"}, {"bw": "-1"}, {"delay": "-5ms"}, {"loss": "101"}, {"max_queue_size": "0"},
		{"a>b.frobnicate": "1"}, {"dist": "pareto"}, {"delay": "soon"},
		// The silent acceptances, and the other limits.
		{"jitter": "1000000000s"}, {"max_frame": "1048576"}, {"jitter": "3601s"},
		{"limit": "268435457"}, {"delay": "NaNms"}, {"loss": "NaN"}, {"bw": "NaN"}, {"allow_large": "maybe"},
	} {
		_, _, err := EmulatorConfigs(bad)
		if !errors.Is(err, ErrLinkParams) && !errors.Is(err, emulator.ErrInvalidConfig) {
			t.Errorf("%v: err = %v, want a parameter error", bad, err)
			continue
		}
		for k := range bad {
			k = strings.TrimPrefix(k, "a>b.")
			if !strings.Contains(err.Error(), k) {
				t.Errorf("%v: error %q does not name %s", bad, err, k)
			}
		}
	}
	// allow_large lifts the soft limits, wherever it sorts among the keys.
	for _, p := range []topo.Params{{"jitter": "3601s", "allow_large": "1"}, {"emu": "delay 7200s", "allow_large": "true"}, {"emu": "delay 7200s allow-large"}} {
		if _, _, err := EmulatorConfigs(p); err != nil {
			t.Errorf("%v: %v", p, err)
		}
	}
	if linkparams.NeedsEmulator(topo.Params{"mtu": "1500"}) || !linkparams.NeedsEmulator(topo.Params{"delay": "0"}) || !linkparams.NeedsEmulator(topo.Params{"a>b.loss": "1"}) {
		t.Error("NeedsEmulator")
	}
}

// TestEmulatedLinkChange is Mininet's walkthrough testLinkChange:
// single,2 with bw=10, delay=10ms gives 9.0–10.1 Mbit/s and a 40–50 ms RTT.
func TestEmulatedLinkChange(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "iperf3")
	n := startNet(t, withLinkParams(t, "single,2", topo.Params{"bw": "10", "delay": "10ms"}), Options{})
	// bw=10 without max_queue_size queues up to 1 MiB (0.84 s), as
	// Mininet's HTB queue of 1000 packets does, so slow start overflows it
	// by hundreds of packets at once; when a retransmission is lost too,
	// TCP waits out a timeout with the queue drained: 8.6 instead of 9.4
	// Mbit/s, 2 runs in 10 under a neighbour's build beside stall-inject,
	// with the shaper exact. So a rate below 9.0 is measured again (at
	// most three runs); above 10.1 fails at once, and a shaper that is
	// slow fails every run.
	//
	// 13 s: iperf3 reads its own window's ends, so one pause moves the
	// rate by CallerPause/13 s (0.036 Mbit/s), ten times under the 0.41
	// Mbit/s between the floor and the ideal goodput.
	const window = 13 * time.Second
	var mbps float64
	for attempt := 1; attempt <= 3; attempt++ {
		res, err := n.Iperf(context.Background(), "h1", "h2", window)
		if err != nil {
			t.Fatal(err)
		}
		mbps = res.ServerBps / 1e6
		t.Logf("iperf h1->h2, run %d: server %.3f Mbit/s, client %.3f Mbit/s", attempt, mbps, res.ClientBps/1e6)
		if mbps >= 9.0 {
			break
		}
	}
	// TCP's ideal goodput at 10 Mbit/s of 1538-byte wire frames carrying
	// 1448 bytes each: 9.41 Mbit/s; Mininet's walkthrough allows [9.0, 10.1].
	ideal := 10 * 1448.0 / 1538
	res := testenv.CallerWindow(ideal, window)
	testenv.Judge(t, testenv.Measurement{Quantity: "iperf through bw=10, floor (Mbit/s)", Got: mbps, Target: ideal,
		Tolerance: ideal - 9.0, Bound: testenv.AtLeast, Resolution: res})
	testenv.Judge(t, testenv.Measurement{Quantity: "iperf through bw=10, ceiling (Mbit/s)", Got: mbps, Target: ideal,
		Tolerance: 10.1 - ideal, Bound: testenv.AtMost, Resolution: res})
	// After iperf, as in Mininet's walkthrough: ARP is resolved, so the
	// first echo does not pay two extra round trips. Five echoes: no RTT
	// below 40 ms, the median (and, if the machine did not stall, the
	// mean) at most 50 ms.
	checkPingRTT(t, n, "h1", "h2", 5, 200*time.Millisecond, 40*time.Millisecond, 50*time.Millisecond)
	st, err := n.LinkStats("h1", "s1")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []emulator.DirectionStats{st.Forward, st.Reverse} {
		s := d.Emulator
		if s.Received != s.Sent+s.Dropped()+uint64(s.Queued) {
			t.Errorf("counters do not add up: %+v", s)
		}
	}
	t.Logf("h1>s1: rx %d tx %d dropped %d, delay p50 %v, lateness p50 %v p99 %v",
		st.Forward.Emulator.Received, st.Forward.Emulator.Sent, st.Forward.Emulator.Dropped(),
		st.Forward.Emulator.Delay.P50, st.Forward.Emulator.Lateness.P50, st.Forward.Emulator.Lateness.P99)
}

// pairNet builds h1 ─ h2, one emulated link with params.
func pairNet(t *testing.T, params topo.Params) *Network {
	t.Helper()
	top := topo.New()
	top.AddHost("h1")
	top.AddHost("h2")
	top.AddLink("h1", "h2", params)
	return startNet(t, top, Options{})
}

func nsOf(t *testing.T, n *Network, name string) netns.NsHandle {
	t.Helper()
	node, err := n.Node(name)
	if err != nil {
		t.Fatal(err)
	}
	return node.NsHandle()
}

func runProbe(t *testing.T, n *Network, rate float64, d time.Duration) probe.Result {
	t.Helper()
	ip, _ := n.IP("h2")
	res, err := probe.Run(context.Background(), probe.Config{
		Sender: nsOf(t, n, "h1"), Receiver: nsOf(t, n, "h2"),
		Dst: netip.AddrPortFrom(ip, 9999), Rate: rate, Duration: d, Drain: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestEmulatedDelayAccuracy probes a 10 ms ± 1 ms link (t_h 21 ms) at
// 10 kpps. The realised delay must match the emulator's drawn delays
// (what the transmit clock adds) closely, and the configured values within
// the bounds: 1 % for the mean, 5 % for the jitter. FIFO must not
// reorder; with reorder, reordering is reported.
func TestEmulatedDelayAccuracy(t *testing.T) {
	testenv.Root(t)
	for _, tc := range []struct {
		name    string
		params  topo.Params
		reorder bool
	}{
		{"fifo", topo.Params{"delay": "10ms", "jitter": "1ms", "seed": "7"}, false},
		{"reorder", topo.Params{"delay": "10ms", "jitter": "1ms", "seed": "7", "reorder": "1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Seven windows absorb a stall or two; a run in which the
			// host stalled in most of them (a fresh-root run: forwarder
			// lateness up to 20.8 ms, four windows spoilt) is measured
			// again before it counts, up to three runs: beside
			// stall-inject (a stall every 2-6 s) and a neighbour's build,
			// two runs in a row kept only 3 good windows of 7 once in ten
			// tests. A forwarder that adds delay spoils every window of
			// every run.
			var a accuracy
			for attempt := 1; attempt <= 3; attempt++ {
				a = measureAccuracy(t, tc.params)
				problems := a.problems(tc.reorder)
				if len(problems) == 0 {
					break
				}
				t.Logf("attempt %d: %s", attempt, strings.Join(problems, "; "))
			}
			a.judge(t, tc.reorder)
		})
	}
}

// accuracyWindows is how many one-second windows measureAccuracy probes.
// One stall of the machine (the CI host took a vCPU away for 17 ms in a
// run that failed this way) delays about 170 probes by up to 17 ms, which
// alone adds 0.27 ms² to the variance of a 6-second run: +14 % on a 1 ms
// jitter. Windows keep such a stall in the one window it hit, a stall
// watcher per window names the windows it hit, and the verdict is the
// majority's of the others: the window ranked in the middle.
const accuracyWindows = 7

// The forwarder's accuracy, realised less applied: 1 % of the 10 ms mean
// and 5 % of the 1 ms jitter (ms).
const (
	accuracyMean   = 0.1
	accuracyJitter = 0.05
)

// windowStats is one window's applied delay, from two cumulative emulator
// snapshots: their count, sum and sum of squares are exact, so the
// window's mean and population std are too.
func windowStats(before, after emulator.HistogramSummary) (n uint64, meanMs, stdMs float64) {
	moments := func(h emulator.HistogramSummary) (s1, s2 float64) {
		m, sd := float64(h.Mean), float64(h.Std)
		return float64(h.Count) * m, float64(h.Count) * (sd*sd + m*m)
	}
	b1, b2 := moments(before)
	a1, a2 := moments(after)
	n = after.Count - before.Count
	if n == 0 {
		return 0, 0, 0
	}
	mean := (a1 - b1) / float64(n)
	return n, mean / 1e6, math.Sqrt(max(0, (a2-b2)/float64(n)-mean*mean)) / 1e6
}

// accuracyWindow is one window's realised delay less the delay the
// emulator applied to the same packets (ms); a window that lost probes or
// whose probes were not the emulator's packets between the two snapshots
// has none (ok false).
type accuracyWindow struct {
	dMean, dJitter float64
	ok             bool
	stalled        bool // a stall watcher saw the machine stop during it
}

// score is how far the window is from the bounds: at most 1 within both.
func (w accuracyWindow) score() float64 {
	if !w.ok {
		return math.Inf(1)
	}
	return max(math.Abs(w.dMean)/accuracyMean, math.Abs(w.dJitter)/accuracyJitter)
}

// accuracy is what one measureAccuracy run found.
type accuracy struct {
	windows                      []accuracyWindow
	appliedMean, appliedStd      float64 // ms, over every window
	probeReordered, emuReordered uint64
}

// middle is the window ranked in the middle by score among those in
// which the stall watcher saw no stall, when there are at least three
// (else among all): within both bounds exactly when a majority of them
// is. A stall is the machine's and lengthens the probes it holds up; a
// forwarder late by itself is late with no stall beside it, and its
// windows stay in.
func (a accuracy) middle() (w accuracyWindow, of int) {
	var ws []accuracyWindow
	for _, w := range a.windows {
		if !w.stalled {
			ws = append(ws, w)
		}
	}
	if len(ws) < 3 {
		ws = slices.Clone(a.windows)
	}
	if len(ws) == 0 {
		return accuracyWindow{}, 0
	}
	slices.SortStableFunc(ws, func(x, y accuracyWindow) int { return cmp.Compare(x.score(), y.score()) })
	return ws[len(ws)/2], len(ws)
}

// problems says what a.judge would fail, so a run can be repeated first.
func (a accuracy) problems(reorder bool) []string {
	var out []string
	if m, of := a.middle(); m.score() > 1 {
		out = append(out, fmt.Sprintf("the middle window of %d: realised - applied mean %+.3f ms, jitter %+.3f ms (ok %v)", of, m.dMean, m.dJitter, m.ok))
	}
	if math.Abs(a.appliedMean-10) > 0.5 || math.Abs(a.appliedStd-1) > 0.2 {
		out = append(out, fmt.Sprintf("applied delays mean %.4f ms / std %.4f ms far from the configured 10 ms / 1 ms", a.appliedMean, a.appliedStd))
	}
	if !reorder && (a.probeReordered != 0 || a.emuReordered != 0) {
		out = append(out, fmt.Sprintf("FIFO reordered: probe %d, emulator %d", a.probeReordered, a.emuReordered))
	}
	if reorder && (a.emuReordered == 0 || a.probeReordered == 0) {
		out = append(out, fmt.Sprintf("reorder mode reported no reordering (probe %d, emulator %d)", a.probeReordered, a.emuReordered))
	}
	return out
}

// judge judges a run. Resolution: each probe's delay is the kernel's
// receive stamp less the sender's clock read before its write, the
// applied delays the emulator's own arithmetic, all in ns; a noise of
// probeStamp (10 µs) per probe moves the mean of a window's 10 000 by
// 0.1 µs and its 1 ms std by 0.05 µs, and the emulator's summaries are
// truncated to the ns: 1 µs covers them. A pause only lengthens probes;
// a stall the watcher saw takes its window out, and one it did not see
// moves the middle window only if it disturbs half of those judged.
func (a accuracy) judge(t *testing.T, reorder bool) {
	t.Helper()
	stamps := testenv.Ms(time.Microsecond, "per-probe kernel and sender stamps and the emulator's applied delays, in ns: 0.1 µs on a mean of 10 000, 0.05 µs on a 1 ms std, 1 µs with the summaries' truncation; a pause moves the middle window only if it disturbs half the windows judged")
	m, of := a.middle()
	stalled := 0
	for _, w := range a.windows {
		if w.stalled {
			stalled++
		}
	}
	t.Logf("the machine stalled in %d windows of %d: judging the middle of %d", stalled, len(a.windows), of)
	if !m.ok {
		t.Errorf("fewer than %d of %d windows carried every probe and only the probes", of/2+1, of)
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	testenv.JudgeTime(t, testenv.Timing{Quantity: "realised less applied mean delay, the middle window", Got: ms(m.dMean),
		Tolerance: ms(accuracyMean), Resolution: stamps})
	testenv.JudgeTime(t, testenv.Timing{Quantity: "realised less applied jitter (std), the middle window", Got: ms(m.dJitter),
		Tolerance: ms(accuracyJitter), Resolution: stamps})
	// The drawn delays against the configured ones: the sampling noise of
	// a correlated process (t_h 21 ms gives only a few hundred independent
	// stretches in 7 s, about ±1 % on the mean and ±4 % on the jitter at
	// 1σ) gets a bound of 5σ and more.
	drawn := testenv.Ms(time.Microsecond, "Due − Arrival computed by the emulator in ns; the run's moments from two cumulative summaries truncated to the ns")
	testenv.JudgeTime(t, testenv.Timing{Quantity: "mean delay the emulator drew", Got: ms(a.appliedMean), Target: 10 * time.Millisecond,
		Tolerance: 500 * time.Microsecond, Resolution: drawn})
	testenv.JudgeTime(t, testenv.Timing{Quantity: "std of the delays the emulator drew", Got: ms(a.appliedStd), Target: time.Millisecond,
		Tolerance: 200 * time.Microsecond, Resolution: drawn})
	if !reorder && (a.probeReordered != 0 || a.emuReordered != 0) {
		t.Errorf("FIFO reordered: probe %d, emulator %d", a.probeReordered, a.emuReordered)
	}
	if reorder && (a.emuReordered == 0 || a.probeReordered == 0) {
		t.Errorf("reorder mode reported no reordering (probe %d, emulator %d)", a.probeReordered, a.emuReordered)
	}
}

func measureAccuracy(t *testing.T, params topo.Params) (a accuracy) {
	t.Helper()
	n := pairNet(t, params)
	defer func() {
		if err := n.Stop(); err != nil {
			t.Error(err)
		}
	}()
	ip, _ := n.IP("h2")
	probeFor := func(d, warmup time.Duration) probe.Result {
		res, err := probe.Run(context.Background(), probe.Config{
			Sender: nsOf(t, n, "h1"), Receiver: nsOf(t, n, "h2"),
			Dst: netip.AddrPortFrom(ip, 9999), Rate: 10000, Duration: d,
			Drain: 300 * time.Millisecond, Warmup: warmup,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	emuStats := func() emulator.Stats {
		st, err := n.LinkStats("h1", "h2")
		if err != nil {
			t.Fatal(err)
		}
		return st.Forward.Emulator
	}
	// Warm the path (ARP) first; after that, nearly only probes cross the
	// link, and each window's drain leaves the emulator empty, so a
	// window's probes and the emulator's packets between two snapshots are
	// the same packets.
	probeFor(time.Millisecond, 200*time.Millisecond)
	prev := emuStats()
	first := prev
	for w := 1; w <= accuracyWindows; w++ {
		watch := stallwatch.Start()
		res := probeFor(time.Second, -1)
		stalls := watch.Stop()
		cur := emuStats()
		k, appliedMean, appliedStd := windowStats(prev.Delay, cur.Delay)
		prev = cur
		a.probeReordered += res.Reordered
		// Realised vs applied (the delays the emulator drew for these very
		// packets) isolates what the ports and the transmit clock add: that
		// is the forwarder's accuracy, held to the 1 % (mean) and
		// 5 % (jitter).
		// A few frames besides the probes may cross (neighbour
		// discovery); ten in ten thousand cannot move the moments by more
		// than a fraction of the bounds.
		win := accuracyWindow{dMean: res.MeanMs - appliedMean, dJitter: res.JitterMs - appliedStd,
			ok: res.Lost == 0 && k >= res.Received && k-res.Received <= 10, stalled: stalls.Stalled()}
		a.windows = append(a.windows, win)
		t.Logf("window %d: %v; machine: %v", w, res, stalls)
		t.Logf("window %d: applied %d delays mean %.4f ms std %.4f ms; realised - applied: mean %+.3f ms (%+.2f%% of 10 ms), jitter %+.3f ms (%+.2f%% of 1 ms); within bounds %v",
			w, k, appliedMean, appliedStd, win.dMean, 10*win.dMean, win.dJitter, 100*win.dJitter, win.score() <= 1)
	}
	emu := prev
	a.emuReordered = emu.Reordered
	t.Logf("emulator h1>h2 over all windows: applied delay mean %v std %v; lateness p50 %v p99 %v max %v; reordered %d",
		emu.Delay.Mean, emu.Delay.Std, emu.Lateness.P50, emu.Lateness.P99, emu.Lateness.Max, emu.Reordered)
	_, a.appliedMean, a.appliedStd = windowStats(first.Delay, emu.Delay)
	return a
}

// TestEmulatedLiveChange raises the delay from 10 to 50 ms while probes
// flow: nothing is lost or reordered, and the new delay applies at once;
// then back down to 10 ms. Every judgement is on per-probe delays the
// kernel and the sender stamped (probeStamp) or on the delays the
// emulator applied (its own ns arithmetic): no window is read by the test.
func TestEmulatedLiveChange(t *testing.T) {
	testenv.Root(t)
	n := pairNet(t, topo.Params{"delay": "10ms"})
	done := make(chan probe.Result, 1)
	go func() { done <- runProbe(t, n, 2000, 2*time.Second) }()
	time.Sleep(time.Second)
	if err := n.SetLinkParams("h1", "h2", Forward, "delay 50ms"); err != nil {
		t.Fatal(err)
	}
	res := <-done
	t.Logf("probe across the change: %v", res)
	if res.Lost != 0 || res.Reordered != 0 {
		t.Errorf("change lost %d and reordered %d probes", res.Lost, res.Reordered)
	}
	// The delays span 10 and 50 ms: the slowest probe took at least 49
	// ms and the fastest at most 11. A pause only lengthens probes, and
	// the fastest moves only if every probe of the first second is held.
	testenv.JudgeTime(t, testenv.Timing{Quantity: "slowest probe across the change", Got: res.Delay.Max, Target: 50 * time.Millisecond,
		Tolerance: time.Millisecond, Bound: testenv.AtLeast, Resolution: probeStampRes()})
	testenv.JudgeTime(t, testenv.Timing{Quantity: "fastest probe across the change", Got: res.Delay.Min, Target: 10 * time.Millisecond,
		Tolerance: time.Millisecond, Bound: testenv.AtMost, Resolution: probeStampRes()})
	st, err := n.LinkStats("h2", "h1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Reverse.Emulator.Reordered != 0 || st.ReverseConfig.Delay != 50*time.Millisecond || st.ForwardConfig.Delay != 10*time.Millisecond {
		t.Errorf("after the change: h1>h2 %v, h2>h1 %v, reordered %d", st.ReverseConfig.Delay, st.ForwardConfig.Delay, st.Reverse.Emulator.Reordered)
	}
	// And back down: FIFO holds later packets behind the 50 ms ones.
	if err := n.SetLinkParams("h1", "h2", BothDirections, "delay=10ms"); err != nil {
		t.Fatal(err)
	}
	forward := func() emulator.Stats { return forwardEmulatorStats(t, n) }
	before := forward()
	watch := stallwatch.Start()
	const rate = 2000
	res = runProbe(t, n, rate, 500*time.Millisecond)
	stalls := watch.Stop()
	after := forward()
	k, applied, _ := windowStats(before.Delay, after.Delay)
	t.Logf("probe after going back to 10 ms: %v; the emulator applied %.4f ms on average to %d frames; machine: %v", res, applied, k, stalls)
	if res.Lost != 0 || res.Reordered != 0 {
		t.Errorf("after going back to 10 ms: %v", res)
	}
	// What the emulator applied to these frames (Due − Arrival, its own
	// arithmetic: no pause moves it) is the new delay; the first run's
	// frames left the link during its drain, so none is held behind a
	// 50 ms one.
	testenv.JudgeTime(t, testenv.Timing{Quantity: "mean delay the emulator applied after going back to 10 ms", Got: time.Duration(applied * float64(time.Millisecond)),
		Target: 10 * time.Millisecond, Tolerance: 100 * time.Microsecond,
		Resolution: testenv.Ms(time.Microsecond, "Due − Arrival computed by the emulator in ns; the window's mean from two cumulative summaries whose means are truncated to the ns")})
	// End to end, the fastest probe took at most 11 ms (a delay left at
	// 50 ms, or any wrong one, moves it); the mean too when the watcher
	// saw no stall: a stall of 20-50 ms holds up the 40-100 probes in
	// flight and moves the mean of 1000 by 1-2 ms, a shorter pause far
	// less (probeMeanRes). The median is not judged: the probe's
	// histogram knows it only to a bucket, 131 µs at 10 ms.
	testenv.JudgeTime(t, testenv.Timing{Quantity: "fastest probe after going back to 10 ms", Got: res.Delay.Min, Target: 10 * time.Millisecond,
		Tolerance: time.Millisecond, Bound: testenv.AtMost, Resolution: probeStampRes()})
	if stalls.Stalled() {
		t.Logf("the machine stalled (%v): judged the fastest probe %v and the applied delay, not the mean %.3f ms", stalls, res.Delay.Min, res.MeanMs)
		return
	}
	testenv.JudgeTime(t, testenv.Timing{Quantity: "mean probe delay after going back to 10 ms, no stall seen", Got: time.Duration(res.MeanMs * float64(time.Millisecond)),
		Target: 10 * time.Millisecond, Tolerance: time.Millisecond, Bound: testenv.AtMost, Resolution: probeMeanRes(rate, res.Received)})
}

// probeStamp is the resolution of one probe's one-way delay: the kernel
// stamps its arrival and the sender reads the same clock (CLOCK_REALTIME,
// ns) right before its write, so 10 µs covers the system call between the
// read and the frame entering the veth. A pause of the machine only
// lengthens a probe, so a minimum moves only if every probe is held up.
const probeStamp = 10 * time.Microsecond

// probeStampRes is probeStamp as a testenv.Resolution in milliseconds.
func probeStampRes() testenv.Resolution {
	return testenv.Ms(probeStamp, "the kernel's receive stamp less the sender's clock read before its write (ns clocks; 10 µs covers the write); a pause only lengthens a probe")
}

// probeMeanRes is the resolution of the mean one-way delay of count
// probes sent at rate per second, when a stall watcher saw no stall: one
// pause under its threshold holds up the rate·Threshold probes due in it
// by Threshold/2 on average, which moves the mean by
// rate·Threshold²/(2·count).
func probeMeanRes(rate float64, count uint64) testenv.Resolution {
	th := stallwatch.Threshold.Seconds()
	shift := time.Duration(rate * th * th / 2 / float64(max(count, 1)) * float64(time.Second))
	return testenv.Ms(max(shift, probeStamp), fmt.Sprintf("no stall over stallwatch.Threshold (%v) seen: one shorter pause holds up %.0f of %d probes by half of it on average", stallwatch.Threshold, rate*th, count))
}

// TestEmulatedLoss: 1 % loss over 100 000 probes stays within the binomial
// 99.9 % interval; counters add up. The loss model decides frame by
// frame, whatever the time, so the emulator's own count over the frames it
// received is binomial(N, p) exactly and is judged always. The probe's
// count adds what the machine dropped on the way (a receiver held up by a
// stall overflows its socket, a forwarder held up its RX ring: 1374
// probes beside the emulator's 1035 in a run whose slowest probe took
// 51 ms), so end to end it is judged against the same interval when a
// stall watcher saw the machine run without a stop; otherwise it must
// still show every probe the emulator dropped (never fewer lost).
func TestEmulatedLoss(t *testing.T) {
	testenv.Root(t)
	n := pairNet(t, topo.Params{"loss": "1"})
	// 100 000 probes: 20 kpps for 5 s.
	watch := stallwatch.Start()
	res := runProbe(t, n, 20000, 5*time.Second)
	stalls := watch.Stop()
	st, err := n.LinkStats("h1", "h2")
	if err != nil {
		t.Fatal(err)
	}
	s := st.Forward.Emulator
	t.Logf("probe: %v; emulator: received %d lost %d; link: %v; machine: %v", res, s.Received, s.Lost, st.Forward.Accounting(), stalls)
	const p = 0.01
	interval := func(n float64) (mean, half float64) { return n * p, 3.29 * math.Sqrt(n*p*(1-p)) }
	if m, half := interval(float64(s.Received)); math.Abs(float64(s.Lost)-m) > half {
		t.Errorf("the emulator lost %d of the %d frames it received, want %.0f ± %.0f", s.Lost, s.Received, m, half)
	}
	N := float64(res.Sent)
	m, half := interval(N)
	// Frames other than probes (neighbour discovery, ARP) may be among
	// the emulator's losses.
	others := float64(s.Received) - float64(res.Received+res.Lost)
	switch got := float64(res.Lost); {
	case got+max(others, 0) < float64(s.Lost):
		t.Errorf("the probe lost %v, fewer than the %d frames the emulator dropped", got, s.Lost)
	case !stalls.Stalled() && math.Abs(got-m) > half:
		t.Errorf("lost %v of %v probes, want %v ± %.0f, and the machine did not stall (%v)", got, N, m, half, stalls)
	case math.Abs(got-m) > half:
		t.Logf("the probe lost %v of %v (want %v ± %.0f), the emulator %d: the machine stalled (%v) and dropped the rest", got, N, m, half, s.Lost, stalls)
	}
	if N < 90000 {
		t.Errorf("only %v probes sent", N)
	}
	if s.Received != s.Sent+s.Dropped()+uint64(s.Queued) {
		t.Errorf("counters do not add up: %+v", s)
	}
}

// offer21Mbit sends h1 → h2 probes of 1000 bytes at 2500/s (1042-byte
// frames, 21 Mbit/s) for d and returns what arrived, the h1→h2
// emulator's counters read once while the measured probes flow (after
// the warm-up and a fifth of d), and the link's counters at the end. The
// mid-run reading opens a window that the emulator stamps where it
// counts (stampedRate); when it was read does not matter.
func offer21Mbit(t *testing.T, n *Network, d time.Duration) (probe.Result, emulator.Stats, LinkStats) {
	t.Helper()
	ip, _ := n.IP("h2")
	forward := func() emulator.Stats { return forwardEmulatorStats(t, n) }
	before := forward()
	type run struct {
		res probe.Result
		err error
	}
	done := make(chan run, 1)
	go func() {
		res, err := probe.Run(context.Background(), probe.Config{
			Sender: nsOf(t, n, "h1"), Receiver: nsOf(t, n, "h2"),
			Dst: netip.AddrPortFrom(ip, 9999), Rate: 2500, Duration: d, Size: 1000, Drain: 300 * time.Millisecond,
			Warmup: offerWarmup,
		})
		done <- run{res, err}
	}()
	// The warm-up's probes, then a fifth of the measured ones.
	want := before.Received + uint64(2500*(offerWarmup.Seconds()+d.Seconds()/5))
	var mid emulator.Stats
	for mid = forward(); mid.Received < want; mid = forward() {
		select {
		case r := <-done:
			t.Fatalf("the probe run ended before %d frames reached the link: %v, %v", want-before.Received, r.res, r.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	st, err := n.LinkStats("h1", "h2")
	if err != nil {
		t.Fatal(err)
	}
	return r.res, mid, st
}

// offerWarmup is offer21Mbit's warm-up (ARP; a policer's full bucket
// spent).
const offerWarmup = 200 * time.Millisecond

// stampedRate is the rate (bit/s on the wire, as the policer and the
// spacer count it: each frame plus overhead) at which the h1→h2 emulator
// sent frames between two readings a and b of its counters, over the due
// times of the last frame each reading counted (Stats.LastSentDue):
// SentBytes counts exactly the frames due up to it, so no pause of the
// reader or of the machine moves the window's ends.
func stampedRate(a, b emulator.Stats, overhead int) (bps float64, window time.Duration) {
	window = time.Duration(b.LastSentDue - a.LastSentDue)
	bytes := float64(b.SentBytes-a.SentBytes) + float64(b.Sent-a.Sent)*float64(overhead)
	return bytes * 8 / window.Seconds(), window
}

// TestEmulatedGilbertElliott: loss bursts through a real link. With
// gemodel p=1 %, r=30 %, 1-h=100 %, 1-k=0 every stay in the bad state loses
// consecutive probes, so bursts are geometric with mean 1/r and the loss
// fraction is p/(p+r). Bounds are 99.9 % intervals from the chain's
// statistics. The fraction and the bursts are judged on the emulator's
// own counts (Stats.Lost, Stats.LossBursts: the chain steps once per
// frame, whatever the time), and the bursts end to end on the probe's,
// which also hold what the machine dropped (a stall: a run of probes lost
// together, burst mean 38.6 in one such run), so a run whose probe lost
// more than 10 beyond what the emulator dropped is repeated, at most three
// runs. Under a 10-30 ms stall the machine drops none: the sender stops
// with everything else, and the forwarder's RX ring holds 100 ms of
// probes; a stall of 100 ms beside a loaded machine's build drops
// thousands.
func TestEmulatedGilbertElliott(t *testing.T) {
	testenv.Root(t)
	const p, r = 0.01, 0.30
	const z = 3.29 // two-sided 99.9 %
	for attempt := 1; ; attempt++ {
		n := pairNet(t, topo.Params{"ge": "1% 30% 100% 0%", "seed": "11"})
		res := runProbe(t, n, 20000, 5*time.Second)
		st, err := n.LinkStats("h1", "h2")
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Stop(); err != nil {
			t.Fatal(err)
		}
		s := st.Forward.Emulator
		t.Logf("attempt %d: probe: %v; emulator: received %d lost %d in %d bursts", attempt, res, s.Received, s.Lost, s.LossBursts)
		N := float64(res.Sent)
		if N < 90000 || res.LossBursts == 0 {
			t.Fatalf("only %v probes sent, %d loss bursts", N, res.LossBursts)
		}
		// Loss fraction: time in the bad state of a two-state chain with
		// second eigenvalue λ = 1-p-r; its variance over N steps is
		// π_B·π_G·(1+λ)/(1-λ)/N.
		piB := p / (p + r)
		lambda := 1 - p - r
		Ne := float64(s.Received)
		sd := math.Sqrt(piB * (1 - piB) * (1 + lambda) / (1 - lambda) / Ne)
		if frac := float64(s.Lost) / Ne; math.Abs(frac-piB) > z*sd {
			t.Errorf("the emulator lost a fraction %.4f of %v frames, want %.4f ± %.4f", frac, Ne, piB, z*sd)
		}
		// Burst length: geometric on {1, 2, ...} with success probability
		// r. The emulator counts its own bursts, one chain step per frame,
		// so what the machine drops elsewhere never moves them: judged
		// always.
		checkBursts := func(whose string, lost, bursts uint64) {
			if bursts == 0 {
				t.Errorf("%s count: %d lost in no burst", whose, lost)
				return
			}
			meanBurst := float64(lost) / float64(bursts)
			sdBurst := math.Sqrt(1-r) / r
			if half := z * sdBurst / math.Sqrt(float64(bursts)); math.Abs(meanBurst-1/r) > half {
				t.Errorf("%s count: mean loss burst %.3f over %d bursts, want %.3f ± %.3f (the probe lost %d, the emulator %d)", whose, meanBurst, bursts, 1/r, half, res.Lost, s.Lost)
			}
		}
		checkBursts("the emulator's", s.Lost, s.LossBursts)
		// End to end, the probe's bursts: a few frames lost elsewhere move
		// the mean burst by a few thousandths (bursts number about a
		// thousand); more (a stall overflowing a ring: burst mean 38.6 in
		// one such run) spoil it, and the run is repeated; after three
		// such runs the emulator's count above is the verdict.
		if res.Lost > s.Lost+10 {
			if attempt < 3 {
				t.Logf("attempt %d: the probe lost %d, the emulator dropped %d: the machine dropped probes, whose bursts say nothing of the chain; again", attempt, res.Lost, s.Lost)
				continue
			}
			t.Logf("the machine dropped probes in %d runs (the probe lost %d, the emulator %d): judged the emulator's bursts, not the probe's", attempt, res.Lost, s.Lost)
			return
		}
		checkBursts("the probe's", res.Lost, res.LossBursts)
		return
	}
}

// TestEmulatedPolicer: a token bucket (10 Mbit/s, 100 000 B) offered twice
// its rate passes R·T + at most the bucket, drops the rest at once
// (Policed) and delays nothing.
//
// The rate is judged over a window the emulator stamps: with no delay a
// frame is due when it arrives, so the bytes sent between a reading
// taken mid-run and the end, over the due times of the last frame each
// counted (stampedRate), are the bytes the bucket passed between two of
// its own arrival stamps. Over such a window the bucket's arithmetic
// gives passed = R·Δ + level after the first − level after the last −
// tokens lost to a full bucket. The first level is at most the bucket,
// so passed ≤ R·Δ + bucket whatever the machine did: too much is never
// excused. While probes arrive at twice the rate the level after a pass
// is under the tokens of the gap before it, at most a probe interval and
// probe.LongGap (10 ms) unless the sender listed a longer gap; a sender
// kept from sending for longer than the bucket lasts (80 ms) offers
// nothing while the bucket is full, and those tokens are lost to it: the
// floor leaves out R·(gap − 80 ms) for each gap the sender stamped. A run
// that passed too little while a stall watcher saw the machine stop for
// 70 ms or more (the bucket's 80 ms less the 10 ms allowed) is repeated,
// at most three runs.
func TestEmulatedPolicer(t *testing.T) {
	testenv.Root(t)
	const rate, bucket = 10e6, 100000.0
	bucketTime := time.Duration(bucket * 8 / rate * float64(time.Second))
	overflowStall := bucketTime - probe.LongGap
	const interval = time.Second / 2500 // offer21Mbit's probes
	n := pairNet(t, topo.Params{"police": "10mbit 100000"})
	const T = 4 * time.Second
	var st LinkStats
	for attempt := 1; ; attempt++ {
		watch := stallwatch.Start()
		res, mid, end := offer21Mbit(t, n, T)
		stalls := watch.Stop()
		st = end
		s := st.Forward.Emulator
		overhead := st.ForwardConfig.Overhead
		wire := float64(14+20+8+1000) + float64(overhead)
		got, window := stampedRate(mid, s, overhead)
		var idle time.Duration
		for _, g := range res.LongGaps {
			idle += max(0, g-bucketTime)
		}
		over := bucket * 8 / window.Seconds()
		under := (rate*(interval+probe.LongGap+idle).Seconds() + wire*8) / window.Seconds()
		t.Logf("attempt %d: probe: %v; emulator (all attempts): received %d sent %d policed %d; passed %.4f Mbit/s over the %v stamped, want [%.4f, %.4f]; sender's gaps over %v: %v (%v beyond the bucket); machine: %v",
			attempt, res, s.Received, s.Sent, s.Policed, got/1e6, window, (rate-under)/1e6, (rate+over)/1e6, probe.LongGap, res.LongGaps, idle, stalls)
		if got < rate-under && stalls.Worst >= overflowStall && attempt < 3 {
			t.Logf("attempt %d: the machine stopped for %v, longer than the bucket's tokens cover less the timing allowed (%v): again",
				attempt, stalls.Worst.Round(time.Millisecond), overflowStall)
			continue
		}
		// Resolution: the window's ends are arrival stamps of passed
		// frames, and the level after a pass is under one probe
		// interval's tokens while the probes arrive at twice the rate.
		stamp := testenv.StampedWindow(rate/1e6, window, interval, "SentBytes up to LastSentDue, a frame due at its arrival; the bucket's level after a pass, under one probe interval's tokens")
		testenv.Judge(t, testenv.Measurement{Quantity: "rate the policer passed, ceiling (Mbit/s on the wire)", Got: got / 1e6, Target: rate / 1e6,
			Tolerance: over / 1e6, Bound: testenv.AtMost, Resolution: stamp})
		testenv.Judge(t, testenv.Measurement{Quantity: "rate the policer passed, floor (Mbit/s on the wire)", Got: got / 1e6, Target: rate / 1e6,
			Tolerance: under / 1e6, Bound: testenv.AtLeast, Resolution: stamp})
		// End to end (counts, no time): every frame the link delivered
		// reached h2's socket, less what the machine dropped on the way.
		if acc := st.Forward.Accounting(); acc.Delivered < res.Received || !acc.Balanced() {
			t.Errorf("probe received %d, link: %v", res.Received, acc)
		}
		break
	}
	s := st.Forward.Emulator
	if s.Policed == 0 || s.SpacerDropped != 0 || s.Received != s.Sent+s.Dropped()+uint64(s.Queued) {
		t.Errorf("counters: %+v", s)
	}
	// A policer never queues: the emulator schedules what passes at its
	// arrival time. (The probes' own one-way times also carry the
	// machine's scheduling, so they are not the test.)
	if s.Delay.Count == 0 || s.Delay.Max != 0 {
		t.Errorf("the policer delayed frames: %+v", s.Delay)
	}
}

// TestEmulatedBadInput: clear messages naming the problem, nothing changed.
func TestEmulatedBadInput(t *testing.T) {
	testenv.Root(t)
	n := pairNet(t, topo.Params{"delay": "5ms"})
	for params, want := range map[string]string{
		"frobnicate 3":  "frobnicate",
		"delay -5ms":    "delay",
		"bw=0":          "bw",
		"color=blue":    "color",
		"delay 1ms foo": "foo",
	} {
		err := n.SetLinkParams("h1", "h2", BothDirections, params)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want it to name %s", params, err, want)
		}
	}
	if err := n.SetLinkParams("h1", "h3", BothDirections, "delay 1ms"); !errors.Is(err, ErrUnknownNode) || !strings.Contains(err.Error(), "h3") {
		t.Errorf("unknown node: %v", err)
	}
	st, err := n.LinkStats("h1", "h2")
	if err != nil {
		t.Fatal(err)
	}
	if st.ForwardConfig.Delay != 5*time.Millisecond || st.ReverseConfig.Delay != 5*time.Millisecond {
		t.Errorf("a failed change changed the link: %v / %v", st.ForwardConfig, st.ReverseConfig)
	}
}

// TestEmulatorInsertedLive: SetLinkParams on a plain link inserts an
// emulator; TCP still works through it.
func TestEmulatorInsertedLive(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "iperf3")
	n := startNet(t, mustTopo(t, "single,2"), Options{})
	if _, err := n.LinkStats("h1", "s1"); err == nil || !strings.Contains(err.Error(), "SetLinkParams") {
		t.Errorf("LinkStats on a plain link: %v", err)
	}
	if err := n.SetLinkParams("h1", "s1", BothDirections, "delay 5ms"); err != nil {
		t.Fatal(err)
	}
	pingAvg(t, n, "h1", "h2", "-c", "1") // ARP and the bridge relearn the new ends
	// 5 ms each way on h1-s1: no RTT below 10 ms, the median (and, if the
	// machine did not stall, the mean of 20) at most 13 ms.
	checkPingRTT(t, n, "h1", "h2", 20, 100*time.Millisecond, 10*time.Millisecond, 13*time.Millisecond)
	const window = 2 * time.Second
	res, err := n.Iperf(context.Background(), "h1", "h2", window)
	if err != nil {
		t.Fatal(err)
	}
	// At least 50 Mbit/s: an emulator in the way, not a bottleneck.
	testenv.Judge(t, testenv.Measurement{
		Quantity: "TCP through the inserted zero-loss 5 ms emulator (Mbit/s)", Got: res.ServerBps / 1e6, Target: 100, Tolerance: 50,
		Bound: testenv.AtLeast, Resolution: testenv.CallerWindow(100, window),
	})
}

// TestEmulatedBandwidth: TCP through bw=100 is within ±5 % of the goodput
// the rate allows, counting what Mininet's HTB counts (frames without FCS).
func TestEmulatedBandwidth(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "iperf3")
	n := pairNet(t, topo.Params{"bw": "100"})
	// 10 s: iperf3 reads its own window's ends, so one pause moves the
	// rate by CallerPause/10 s, ten times under the ±5 % judged.
	const window = 10 * time.Second
	res, err := n.Iperf(context.Background(), "h1", "h2", window)
	if err != nil {
		t.Fatal(err)
	}
	mbps := res.ServerBps / 1e6
	t.Logf("TCP through bw=100: %.2f Mbit/s (ideal goodput 100·1448/1514 = 95.6)", mbps)
	// ±5 % of what TCP can carry at 100 Mbit/s of frames: 1448 bytes of
	// payload per 1514-byte frame.
	ideal := 100 * 1448.0 / 1514
	testenv.Judge(t, testenv.Measurement{
		Quantity: "TCP goodput through bw=100 (Mbit/s)", Got: mbps, Target: ideal, Tolerance: 0.05 * ideal,
		Resolution: testenv.CallerWindow(ideal, window),
	})
}

// TestEmulatedOverload offers twice the configured rate: the limiter
// drops the excess, the queue stays within its limit, memory stays
// bounded, the link's end-to-end accounting adds up exactly (offered =
// delivered + every kind of drop + queued) and the link is free again
// right after. Two queues: Mininet's bw + max_queue_size (the spacer's
// byte limit drops) and NetEm's rate + limit (the buffer drops; before the
// fix the dropped packets booked spacer time and blocked the link).
func TestEmulatedOverload(t *testing.T) {
	testenv.Root(t)
	// 3 s in the suite; HYMN_OVERLOAD_SECONDS=30 for the long run.
	seconds := 3.0
	if v, err := strconv.ParseFloat(os.Getenv("HYMN_OVERLOAD_SECONDS"), 64); err == nil && v > 0 {
		seconds = v
	}
	t.Run("spacer limit", func(t *testing.T) {
		overload(t, topo.Params{"bw": "10", "max_queue_size": "50"}, seconds, 90)
	})
	t.Run("buffer limit", func(t *testing.T) {
		overload(t, topo.Params{"emu": "rate 10mbit limit 50"}, seconds, 50)
	})
}

// overload runs TestEmulatedOverload on one link; maxQueue bounds the
// emulator's queue.
func overload(t *testing.T, params topo.Params, seconds float64, maxQueue int) {
	n := pairNet(t, params)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	rssBefore := procStatusKiB(t, "VmRSS")
	watch := stallwatch.Start()
	res, mid, _ := offer21Mbit(t, n, time.Duration(seconds*float64(time.Second))) // into 10 Mbit/s
	stalls := watch.Stop()
	st := quietLinkStats(t, n, "h1", "h2")
	s := st.Forward.Emulator
	acc := st.Forward.Accounting()
	t.Logf("%v for %v s; probe: %v; emulator: received %d sent %d spacer drops %d buffer full %d max queue %d",
		params, seconds, res, s.Received, s.Sent, s.SpacerDropped, s.BufferFull, s.MaxQueued)
	t.Logf("h1→h2 accounting: %v", acc)
	t.Logf("h2→h1 accounting: %v", func() emulator.Accounting { r := st.Reverse; return r.Accounting() }())
	if s.Received != s.Sent+s.Dropped()+uint64(s.Queued) {
		t.Errorf("emulator counters do not add up: %+v", s)
	}
	if !acc.Balanced() {
		t.Errorf("end-to-end counters do not add up: %v", acc)
	}
	// Every probe the sender got out reached the link, and every one the
	// receiver saw left it (the rest of the traffic is ARP and the like).
	if acc.Offered < res.Sent || acc.Delivered < res.Received {
		t.Errorf("probe sent %d, received %d; link offered %d, delivered %d", res.Sent, res.Received, acc.Offered, acc.Delivered)
	}
	// With bw the backlog limit is 50 full-size frames in bytes
	// (50·1538 B), 74 of these 1042-byte frames, plus a few that are due but
	// not yet released; with limit, 50 packets.
	if s.SpacerDropped+s.BufferFull == 0 || s.MaxQueued > maxQueue {
		t.Errorf("overload: %d dropped by the spacer, %d by the buffer, max queue %d (limit %d)", s.SpacerDropped, s.BufferFull, s.MaxQueued, maxQueue)
	}
	// Memory stays bounded by the configured limits, however long it runs.
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	rssAfter := procStatusKiB(t, "VmRSS")
	t.Logf("heap in use: %d KiB before, %d KiB after; RSS %d KiB before, %d KiB after (peak %d KiB)",
		before.HeapInuse>>10, after.HeapInuse>>10, rssBefore, rssAfter, procStatusKiB(t, "VmHWM"))
	if after.HeapInuse > before.HeapInuse+64<<20 {
		t.Errorf("heap grew from %d to %d bytes under overload", before.HeapInuse, after.HeapInuse)
	}
	if rssAfter > rssBefore+64<<10 {
		t.Errorf("RSS grew from %d to %d KiB under overload", rssBefore, rssAfter)
	}
	// About half gets through; the delivered rate is the spacer's. It is
	// judged over a window the emulator stamps (stampedRate): from a
	// reading taken mid-run to the end, when the queue has drained. While
	// the queue holds frames the spacer books their slots back to back,
	// each frame's due time the end of the one before, so the bytes over
	// the due times are its rate to one frame's slot at either end. The
	// ceiling allows 1 %, thirty slots over these windows: a spacer
	// booking its slots short fails it. The link idles only when the
	// queue runs dry (the sender held up longer than the queue lasts,
	// 42-62 ms, a gap the sender stamps), or when a forwarder releasing
	// late keeps a full buffer full, which nothing here stamps; the floor
	// allows the link to idle for 15 % of the window, as Mininet's
	// walkthrough bound 8.5 Mbit/s did, plus every gap the sender
	// stamped. A spacer that books time for dropped frames (the bug this
	// caught) halves the rate.
	cfg := st.ForwardConfig
	rate := float64(cfg.Space.Rate)
	got, window := stampedRate(mid, s, cfg.Overhead)
	var idle time.Duration
	for _, g := range res.LongGaps {
		idle += g
	}
	slot := time.Duration(float64(1042+cfg.Overhead) * 8 / rate * float64(time.Second))
	t.Logf("%v: %.4f Mbit/s on the wire over %v of due times (nominal %.4f); sender's gaps over %v: %v; machine: %v",
		params, got/1e6, window, rate/1e6, probe.LongGap, res.LongGaps, stalls)
	stamp := testenv.StampedWindow(rate/1e6, window, slot, "SentBytes up to LastSentDue, the spacer's slots booked back to back: one 1042-byte frame's slot")
	testenv.Judge(t, testenv.Measurement{Quantity: "rate the spacer sent under overload, ceiling (Mbit/s on the wire)", Got: got / 1e6, Target: rate / 1e6,
		Tolerance: 0.01 * rate / 1e6, Bound: testenv.AtMost, Resolution: stamp})
	testenv.Judge(t, testenv.Measurement{Quantity: "rate the spacer sent under overload, floor (Mbit/s on the wire)", Got: got / 1e6, Target: rate / 1e6,
		Tolerance: (0.15 + idle.Seconds()/window.Seconds()) * rate / 1e6, Bound: testenv.AtLeast, Resolution: stamp})
	// The link is free once the queue has drained: no time stays booked
	// for the dropped packets. A link still blocked would hold a ping for
	// at least the full queue's 61.5 ms (50·1538 B at 10 Mbit/s); an idle
	// one carries it in well under a millisecond plus scheduling noise.
	// The fastest of five echoes 50 ms apart moves with a pause only if
	// every one is held up.
	_, out := pingAvg(t, n, "h1", "h2", "-c", "5", "-i", "0.05", "-W", "2")
	m := pingRTT.FindStringSubmatch(out)
	minRTT, _ := strconv.ParseFloat(m[1], 64)
	testenv.JudgeTime(t, testenv.Timing{Quantity: "fastest echo after the overload (a full queue holds it 61.5 ms)", Got: time.Duration(minRTT * float64(time.Millisecond)),
		Tolerance: 61500 * time.Microsecond, Bound: testenv.AtMost,
		Resolution: testenv.Ms(pingStamp, "ping's kernel stamps, printed to 0.1 ms at these RTTs (to 1 µs under 1 ms); a pause only lengthens an echo")})
}

// quietLinkStats waits until the link's counters stop moving (nothing in
// flight, queue empty) and returns them, so their sums can be compared
// exactly.
func quietLinkStats(t *testing.T, n *Network, a, b string) LinkStats {
	t.Helper()
	var last LinkStats
	deadline := time.Now().Add(10 * time.Second)
	for {
		time.Sleep(100 * time.Millisecond)
		st, err := n.LinkStats(a, b)
		if err != nil {
			t.Fatal(err)
		}
		quiet := st.Forward.Emulator.Queued == 0 && st.Reverse.Emulator.Queued == 0 &&
			st.Forward.Accounting() == last.Forward.Accounting() && st.Reverse.Accounting() == last.Reverse.Accounting()
		if quiet || time.Now().After(deadline) {
			return st
		}
		last = st
	}
}

// procStatusKiB reads a field (VmRSS, VmHWM) of /proc/self/status in KiB.
func procStatusKiB(t *testing.T, field string) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			v, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return v
		}
	}
	return 0
}

// TestEmulatedJumboFrames: on a link with MTU 9000 the emulator's frame
// buffers follow the MTU, so 8972-byte pings (9014-byte frames) pass whole
// in both directions, with nothing truncated.
func TestEmulatedJumboFrames(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "ping")
	n := pairNet(t, topo.Params{"mtu": "9000", "delay": "1ms"})
	_, out := pingAvg(t, n, "h1", "h2", "-c", "5", "-i", "0.05", "-s", "8972", "-M", "do", "-W", "2")
	if !strings.Contains(out, " 0% packet loss") {
		t.Errorf("jumbo pings lost:\n%s", out)
	}
	st := quietLinkStats(t, n, "h1", "h2")
	for _, d := range []struct {
		name string
		s    emulator.DirectionStats
		cfg  emulator.Config
	}{{"h1→h2", st.Forward, st.ForwardConfig}, {"h2→h1", st.Reverse, st.ReverseConfig}} {
		acc := d.s.Accounting()
		t.Logf("%s: max-frame %d; %v", d.name, d.cfg.MaxFrame, acc)
		if d.cfg.MaxFrame != 9018 {
			t.Errorf("%s: max-frame %d, want 9018 (MTU 9000 + 18)", d.name, d.cfg.MaxFrame)
		}
		if acc.RxTruncated != 0 || acc.Delivered < 5 || !acc.Balanced() {
			t.Errorf("%s: %v", d.name, acc)
		}
	}
	// max-frame above the link's frame is refused when the link is built.
	top := topo.New()
	top.AddHost("h1")
	top.AddHost("h2")
	top.AddLink("h1", "h2", topo.Params{"mtu": "1500", "max_frame": "9018"})
	bad, err := New(top, Options{})
	if err == nil {
		err = bad.Start(context.Background())
		// Start failed and removed what it made: Stop has nothing to do.
		_ = bad.Stop()
	}
	if err == nil || !strings.Contains(err.Error(), "max-frame") || !strings.Contains(err.Error(), "MTU 1500") {
		t.Errorf("max_frame=9018 on an MTU 1500 link: %v", err)
	}
}

func TestLinkDirections(t *testing.T) {
	for _, tc := range []struct {
		dir  Direction
		fwd  bool
		want [2]bool
	}{
		{Forward, true, [2]bool{true, false}}, {Reverse, true, [2]bool{false, true}},
		{Forward, false, [2]bool{false, true}}, {Reverse, false, [2]bool{true, false}},
		{BothDirections, true, [2]bool{true, true}}, {BothDirections, false, [2]bool{true, true}},
	} {
		if got := linkDirections(tc.dir, tc.fwd); got != tc.want {
			t.Errorf("linkDirections(%v, fwd %v) = %v, want %v", tc.dir, tc.fwd, got, tc.want)
		}
	}
}

// forwardEmulatorStats is the h1->h2 emulator's counters, read now.
func forwardEmulatorStats(t *testing.T, n *Network) emulator.Stats {
	t.Helper()
	st, err := n.LinkStats("h1", "h2")
	if err != nil {
		t.Fatal(err)
	}
	return st.Forward.Emulator
}
