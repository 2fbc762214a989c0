package hymn

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/internal/stallwatch"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/topo"
)

// writeTraces writes the test traces: a constant 12 Mbit/s (one
// opportunity per ms) and 10 s with a 2 s outage (opportunities at 1..8000
// ms and 10000 ms).
func writeTraces(t testing.TB) (constant, outage string) {
	dir := t.TempDir()
	constant = filepath.Join(dir, "12mbit.trace")
	if err := os.WriteFile(constant, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for ms := 1; ms <= 8000; ms++ {
		b.WriteString(strconv.Itoa(ms) + "\n")
	}
	b.WriteString("10000\n")
	outage = filepath.Join(dir, "outage.trace")
	if err := os.WriteFile(outage, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return constant, outage
}

// pingLine: "[1732960000.123456] 64 bytes from 10.0.0.2: icmp_seq=3 ttl=64 time=20.3 ms"
var pingLine = regexp.MustCompile(`^\[([0-9.]+)\] .*icmp_seq=([0-9]+) .*time=([0-9.]+) ms`)

type pingReply struct {
	seq  int
	sent time.Duration // from the schedule's time zero
	rtt  time.Duration
}

// pingSeries pings dst from src every interval, count times, and returns
// the replies in the order they came, with their send times relative to
// zero (receive stamp − RTT).
func pingSeries(t *testing.T, n *Network, src, dst string, count int, interval time.Duration, zero time.Time) []pingReply {
	t.Helper()
	node, err := n.Node(src)
	if err != nil {
		t.Fatal(err)
	}
	ip, _ := n.IP(dst)
	res, err := node.Exec(context.Background(), "ping", "-D", "-n", "-i", strconv.FormatFloat(interval.Seconds(), 'f', 3, 64),
		"-c", strconv.Itoa(count), "-W", "2", ip.String())
	if err != nil {
		t.Fatal(err)
	}
	var out []pingReply
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		m := pingLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		stamp, _ := strconv.ParseFloat(m[1], 64)
		seq, _ := strconv.Atoi(m[2])
		rtt, _ := strconv.ParseFloat(m[3], 64)
		recv := time.Unix(0, int64(stamp*1e9))
		r := pingReply{seq: seq, rtt: time.Duration(rtt * 1e6)}
		r.sent = recv.Sub(zero) - r.rtt
		out = append(out, r)
	}
	return out
}

// TestSchedulePingStep is the first must-show: a link 10 ms →
// 30 ms at 2 s (both directions, so the RTT goes 20 → 60 ms), pinged every
// 100 ms: every echo sent after 2 s shows the new RTT (so the change was in
// force by the first of them, which ping sends within an interval of 2 s
// unless ping itself is paused), no echo is lost or reordered, few are
// held up beyond the configured delays,
// and the emulator applied the change within 1 ms of 2 s (unless a stall
// of the machine explains its lateness: checkApplied).
//
// Every time judged here is stamped, not read by the test: the echoes'
// RTTs by ping (the kernel's receive stamp, printed to 0.1 ms: pingStamp;
// a pause of ping or the machine only lengthens an echo), the applied
// times by the forwarder on its own clock.
func TestSchedulePingStep(t *testing.T) {
	testenv.Root(t)
	n := pairNet(t, topo.Params{"delay": "10ms"})
	pingAvg(t, n, "h1", "h2", "-c", "2", "-i", "0.2") // ARP resolved
	s, err := emulator.ParseSchedule("step.csv", []byte("time,delay\n2s,30ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	// The stall watcher runs from before the schedule starts to the check
	// of its applied times (see checkApplied).
	watch := stallwatch.Start()
	defer watch.Stop()
	zero, err := n.SetLinkSchedule("h1", "h2", BothDirections, s)
	if err != nil {
		t.Fatal(err)
	}
	const interval = 100 * time.Millisecond
	const step = 2 * time.Second
	replies := pingSeries(t, n, "h1", "h2", 40, interval, zero)
	if len(replies) != 40 {
		t.Fatalf("%d of 40 echoes came back", len(replies))
	}
	// An echo sent at s (receive stamp minus RTT, from the schedule's time
	// zero) sees 10 ms out and back if its reply enters the emulator before
	// 2 s (s+10 ms < 2 s: 20 ms), 10 + 30 if only the reply is after it
	// (40 ms), 30 both ways if s ≥ 2 s (60 ms).
	inForce := func(s time.Duration) time.Duration {
		switch {
		case s+10*time.Millisecond < step:
			return 20 * time.Millisecond
		case s < step:
			return 40 * time.Millisecond
		}
		return 60 * time.Millisecond
	}
	// From below the bound is strict, as the machine can only add delay: no
	// echo faster than the delays it must have met, 20 ms before 2 s (an
	// echo sent just before may meet one or two 30 ms legs) and 60 ms after
	// (then both directions have changed: the change was not late). The
	// forwarder converts kernel receive stamps with a clock offset read
	// just after the monotonic clock, so a preemption between the two
	// reads makes a frame look as if it arrived earlier (0.9 ms seen once
	// under load): early, 1 ms, is that allowance and ten ping stamps.
	const early = time.Millisecond
	floor := func(s time.Duration) time.Duration {
		if s < step {
			return 20 * time.Millisecond
		}
		return 60 * time.Millisecond
	}
	lowest, lowestAt := time.Duration(math.MaxInt64), 0
	excess := make([]time.Duration, 0, len(replies))
	firstAfter := time.Duration(-1)
	for i, r := range replies {
		if r.seq != i+1 {
			t.Fatalf("echo %d came back as the %d-th: reordered", r.seq, i+1)
		}
		if d := r.rtt - floor(r.sent); d < lowest {
			lowest, lowestAt = d, i
		}
		if r.sent >= step && firstAfter < 0 {
			firstAfter = r.sent
		}
		excess = append(excess, r.rtt-inForce(r.sent))
		if r.rtt > inForce(r.sent)+5*time.Millisecond {
			t.Logf("echo %d sent at %v: RTT %v, %v in force (held up)", r.seq, r.sent, r.rtt, inForce(r.sent))
		}
	}
	if firstAfter < 0 {
		t.Fatalf("no echo was sent after %v: the change was not sampled", step)
	}
	lr := replies[lowestAt]
	t.Logf("first echo sent after %v: at %v; lowest RTT over its floor: echo %d sent at %v, %v", step, firstAfter, lr.seq, lr.sent, lr.rtt)
	stamp := testenv.Ms(pingStamp, "ping's kernel receive stamp less its send stamp, printed to 0.1 ms; a pause only lengthens an echo")
	testenv.JudgeTime(t, testenv.Timing{Quantity: "lowest echo RTT less the delays it must have met (20 ms before 2 s, 60 ms after)",
		Got: lowest, Target: 0, Tolerance: early, Bound: testenv.AtLeast, Resolution: stamp})
	// From above, an echo held up by the machine says nothing about the
	// schedule, but an emulator that holds echoes up would: at most 10 %
	// of them (4) may be more than 5 ms over the delays in force, i.e. the
	// 90th percentile of the excess is at most 5 ms. A pause of the
	// machine of up to testenv.CallerPause (50 ms) lengthens by more than
	// 5 ms only the echoes sent in a span of RTT + 50 − 10 ms ≤ 100 ms:
	// one, two if one lands on each end, at 100 ms spacing; so this
	// quantile is known to the stamp unless three such pauses land within
	// the 4 s (stall-inject.py makes one every 2-6 s).
	slices.Sort(excess)
	p90 := excess[len(excess)-len(excess)/10-1]
	testenv.JudgeTime(t, testenv.Timing{Quantity: "echo RTT over the delays in force, 90th percentile (at most 4 of 40 held up)",
		Got: p90, Target: 0, Tolerance: 5 * time.Millisecond, Bound: testenv.AtMost,
		Resolution: testenv.Ms(pingStamp, "ping's kernel stamps, printed to 0.1 ms; a pause moves this quantile only if it holds up more than a tenth of the echoes")})
	ls, err := n.LinkScheduleStatus("h1", "h2")
	if err != nil {
		t.Fatal(err)
	}
	stalls := watch.Stop()
	t.Logf("machine during the schedule: %v", stalls)
	if stalls.Stalled() {
		t.Logf("the stalls, from the schedule's time zero: %s", stallTimes(stalls, ls.Start))
	}
	var applied []emulator.AppliedChange
	for _, st := range []emulator.ScheduleStatus{ls.Forward, ls.Reverse} {
		if st.Applied != 1 || len(st.Recent) != 1 || st.Recent[0].Due != step {
			t.Fatalf("schedule status %+v", st)
		}
		t.Logf("applied at %v (late %v)", st.Recent[0].At, st.Recent[0].Late())
		applied = append(applied, st.Recent[0])
	}
	checkApplied(t, applied, ls.Start, stalls)
	stats, _ := n.LinkStats("h1", "h2")
	if stats.Forward.Emulator.Reordered != 0 || stats.Forward.Emulator.Dropped() != 0 || stats.Reverse.Emulator.Dropped() != 0 {
		t.Errorf("emulator reordered %d, dropped %d/%d", stats.Forward.Emulator.Reordered, stats.Forward.Emulator.Dropped(), stats.Reverse.Emulator.Dropped())
	}
}

// applyBound is how late a schedule point may be applied: the 1 ms
// (measured: 21 µs at most without the race detector), 30 ms under it,
// where fresh-root runs saw 5.3 ms and 12.1 ms (the forwarder's frames in
// that run were up to 20.8 ms late: the shared host stalled the VM).
func applyBound() time.Duration {
	if raceEnabled {
		return 30 * time.Millisecond
	}
	return time.Millisecond
}

// maxExcused is how many of a test's late schedule points a stall may
// excuse: one stall of 20-50 ms hits one point, two at most a few apart;
// a slow or wrong schedule makes every point late.
const maxExcused = 2

// applyStamp is the resolution of a point's lateness: Due and At are on
// the forwarder's own clock, At read when it woke for the point, so no
// pause of the test moves either; the timer it sleeps on fires within the
// kernel's timer slack, 50 µs for a normal thread (none at SCHED_FIFO),
// which is the finest a lateness can be told apart from none.
var applyStamp = testenv.Ms(50*time.Microsecond, "At − Due on the forwarder's own clock, At read when it woke for the point; its timer fires within the kernel's timer slack (50 µs)")

// checkApplied judges the latest applied point against applyBound
// (testenv.JudgeTime), leaving out the late points the machine's stall
// explains (excusedByStall), at most maxExcused. A point applied before
// its time always fails: the forwarder applies a point only once its
// clock has reached it, and a stall can only make it late. start is the
// schedule's wall-clock time zero; stalls is what a watcher saw from
// before it to now.
func checkApplied(t *testing.T, applied []emulator.AppliedChange, start time.Time, stalls stallwatch.Report) {
	t.Helper()
	excused := 0
	var latest time.Duration
	latestPoint := -1
	for _, a := range applied {
		late := a.Late()
		if late < 0 {
			t.Errorf("point %d due %v applied at %v: %v early", a.Point, a.Due, a.At, -late)
			continue
		}
		if late > applyBound() && excused < maxExcused {
			// prev: when the point before it was applied (0: none).
			var prev time.Duration
			for _, b := range applied {
				if b.Due < a.Due && b.At > prev {
					prev = b.At
				}
			}
			if s, ok := excusedByStall(stalls, start, a, prev, applyBound()); ok {
				excused++
				t.Logf("point %d due %v applied at %v: %v late, %v after a %v stall of the machine ended (excused, %d of at most %d)",
					a.Point, a.Due, a.At, late, start.Add(a.At).Sub(s.To).Round(time.Microsecond), s.Len().Round(100*time.Microsecond), excused, maxExcused)
				continue
			}
		}
		if late >= latest {
			latest, latestPoint = late, a.Point
		}
	}
	ok := testenv.JudgeTime(t, testenv.Timing{
		Quantity: fmt.Sprintf("lateness of the latest of %d schedule points not excused by a stall (point %d; %d excused)", len(applied)-excused, latestPoint, excused),
		Got:      latest, Target: 0, Tolerance: applyBound(), Bound: testenv.AtMost, Resolution: applyStamp,
	})
	if (!ok || excused > 0) && stalls.Stalled() {
		t.Logf("machine: %v; the stalls, from the schedule's time zero: %s", stalls, stallTimes(stalls, start))
	}
}

// stallTimes lists where the stalls were, from start.
func stallTimes(r stallwatch.Report, start time.Time) string {
	var at []string
	for _, s := range r.Stalls {
		at = append(at, s.From.Sub(start).Round(100*time.Microsecond).String()+".."+s.To.Sub(start).Round(100*time.Microsecond).String())
	}
	return strings.Join(at, ", ")
}

// excusedByStall reports the stall that explains a late point. Either it
// overlaps [Due, At] (on the wall clock, from start) and the point was
// applied at most bound after it ended, as a punctual forwarder, stopped
// with the rest of the machine, applies it once it runs again; or the
// process alone was stopped (SIGSTOP, as a host that stops one process
// does) while the forwarder slept towards the point, after the point
// before it (prev) was applied: the kernel restarts the interrupted ppoll
// with the time that was left when the stop began, so the point is late
// by at most the stop's length, plus bound. A host's stall of the whole
// machine does not do that; a point late by more than the stall lasted is
// never excused.
func excusedByStall(r stallwatch.Report, start time.Time, a emulator.AppliedChange, prev, bound time.Duration) (stallwatch.Stall, bool) {
	due, at := start.Add(a.Due), start.Add(a.At)
	for _, s := range r.Stalls {
		if s.From.Before(at) && s.To.After(due) && at.Sub(s.To) <= bound {
			return s, true
		}
	}
	for _, s := range r.Stalls {
		if s.From.After(start.Add(prev)) && s.From.Before(due) && a.Late() <= s.Len()+bound {
			return s, true
		}
	}
	return stallwatch.Stall{}, false
}

// TestScheduleFromParams: a schedule given as a link parameter starts
// with the network; on an idle link every point is still applied within
// 1 ms of its time (the forwarding thread wakes for each). A point the
// machine's stall made late is excused (checkApplied), at most two. The
// lateness is the forwarder's own stamp; the test only waits for the
// schedule to finish, which bounds the wait and judges no time.
func TestScheduleFromParams(t *testing.T) {
	testenv.Root(t)
	// The schedule starts with the network: the stall watcher runs from
	// before then to the check.
	watch := stallwatch.Start()
	defer watch.Stop()
	var b strings.Builder
	b.WriteString("time,delay\n")
	for i := 0; i < 20; i++ {
		b.WriteString(strconv.Itoa(100*i+50) + "," + strconv.Itoa(5+10*(i%2)) + "\n")
	}
	s, err := emulator.ParseSchedule("p.csv", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	n := pairNet(t, topo.Params{"delay": "5ms", "a>b.schedule": s.Encode()})
	ls, err := n.LinkScheduleStatus("h1", "h2")
	if err != nil {
		t.Fatal(err)
	}
	if ls.Reverse.Points != 0 || ls.Forward.Points != 20 {
		t.Fatalf("schedules: forward %d points, reverse %d", ls.Forward.Points, ls.Reverse.Points)
	}
	// The last point is due at 1.95 s; a forwarder that has not applied it
	// 10 s later is stuck, not late.
	time.Sleep(time.Until(ls.Start.Add(2 * time.Second)))
	for deadline := ls.Start.Add(12 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if ls, err = n.LinkScheduleStatus("h1", "h2"); err != nil {
			t.Fatal(err)
		}
		if ls.Forward.Finished || time.Now().After(deadline) {
			break
		}
	}
	stalls := watch.Stop()
	st := ls.Forward
	t.Logf("applied %d, max late %v; machine: %v", st.Applied, st.MaxLate, stalls)
	if st.Applied != 20 || !st.Finished || len(st.Recent) != 20 {
		t.Fatalf("status %+v", st)
	}
	checkApplied(t, st.Recent, ls.Start, stalls)
	if n.LinkSchedules()[0].Forward.Applied != 20 {
		t.Error("LinkSchedules does not list the link")
	}
}

// TestTraceIperf: a constant 12 Mbit/s delivery trace (1500 B of IP packet
// per ms). iperf3's TCP goodput is the IP rate times 1448/1500 (40 B of
// IP+TCP header and 12 B of timestamps per full segment): 11.584 Mbit/s;
// UDP with iperf3's 1460 B datagrams: 12·1460/1488 = 11.774 Mbit/s, within
// 3 % of 12 Mbit/s. Both must be within 3 % of those figures.
//
// The rates are iperf3's own: bytes over a window whose ends iperf3 reads
// with its clock, which a pause of the machine or of iperf3 moves by up to
// testenv.CallerPause. For 3 % to be ten such resolutions the window is
// at least 10 × 50 ms / 3 % = 16.7 s: each run lasts iperfWindow.
func TestTraceIperf(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "iperf3")
	const iperfWindow = 17 * time.Second
	iperfRes := func(v float64) testenv.Resolution {
		r := testenv.CallerWindow(v, iperfWindow)
		r.Derived = fmt.Sprintf("iperf3's window of %v, whose ends iperf3 reads with its own clock: one pause (testenv.CallerPause, %v) moves its length by %.3g of it",
			iperfWindow, testenv.CallerPause, testenv.CallerPause.Seconds()/iperfWindow.Seconds())
		return r
	}
	constant, _ := writeTraces(t)
	// TCP gets a 100-packet buffer (100 ms at 1 packet/ms: a bloated
	// buffer slows its recovery from drops); UDP 1000 packets (1 s), to
	// absorb the stalls of iperf3's sender on a loaded machine, which
	// catches up in bursts.
	n := pairNet(t, topo.Params{"a>b.trace": constant, "limit": "100"})
	ctx := context.Background()
	// TCP below the bound is measured again, at most three runs: a loaded
	// machine can starve iperf3's sender, whose idle turns cost a trace
	// its delivery opportunities. Above the bound fails at once; a trace
	// delivered slowly fails every run. (This test found the emulator's
	// buffer counting a GSO super-frame as one packet: 100 of them queued
	// 2.6 s, TCP timed out spuriously and got 7.1-10.2 Mbit/s.)
	want := 12e6 * 1448 / 1500
	var tcp float64
	for attempt := 1; attempt <= 3; attempt++ {
		res, err := n.Iperf(ctx, "h1", "h2", iperfWindow)
		if err != nil {
			t.Fatal(err)
		}
		tcp = res.ServerBps
		// The sender's TCP counters say why a run fell short: timeouts or
		// many retransmissions (nstat -a: absolute, since h1 was made; -s:
		// nstat's history file, which namespaces share, left alone).
		h1, _ := n.Node("h1")
		tcpStats, _ := h1.Cmd(ctx, "nstat -asz TcpRetransSegs TcpOutSegs TcpExtTCPTimeouts TcpExtTCPLossProbes TcpExtTCPSackRecovery 2>&1 | tail -n +2 | tr -s ' ' | cut -d' ' -f1,2 | tr '\\n' ' '")
		t.Logf("TCP, run %d: %.3f Mbit/s (%.2f%% from 12 Mbit/s·1448/1500 = %.3f); sender counters so far: %s", attempt, tcp/1e6, 100*(tcp-want)/want, want/1e6, tcpStats)
		if st, err := n.LinkStats("h1", "h2"); err == nil {
			e := st.Forward.Emulator
			t.Logf("TCP, run %d: the trace's queue so far: received %d, sent %d, dropped full %d, max queued %d; delay p50 %v p99 %v max %v; lateness p99 %v",
				attempt, e.Received, e.Sent, e.BufferFull, e.MaxQueued, e.Delay.P50, e.Delay.P99, e.Delay.Max, e.Lateness.P99)
		}
		if tcp >= want*0.97 {
			break
		}
	}
	testenv.Judge(t, testenv.Measurement{Quantity: "iperf3 TCP goodput through the 12 Mbit/s trace (Mbit/s)",
		Got: tcp / 1e6, Target: want / 1e6, Tolerance: 0.03 * want / 1e6, Resolution: iperfRes(want / 1e6)})
	n = pairNet(t, topo.Params{"a>b.trace": constant, "limit": "1000"})
	// UDP below the bound is measured again too (at most three runs):
	// beside stall-inject iperf3's server once measured 11.31 Mbit/s while
	// the emulator had sent as many frames as in the runs at 11.77, so the
	// shortfall was in iperf3's clock, not in the trace's delivery.
	want = 12e6 * 1460 / 1488
	var udp float64
	for attempt := 1; attempt <= 3; attempt++ {
		res, err := n.IperfUDP(ctx, "15M", "h1", "h2", iperfWindow)
		if err != nil {
			t.Fatal(err)
		}
		udp = res.ServerBps
		t.Logf("UDP, run %d: %.3f Mbit/s", attempt, udp/1e6)
		if math.Abs(udp-want)/want <= 0.03 && math.Abs(udp-12e6)/12e6 <= 0.03 {
			break
		}
	}
	if st, err := n.LinkStats("h1", "h2"); err == nil {
		e := st.Forward.Emulator
		// Dropped by the full buffer means the sender kept the link busy;
		// none means iperf3's sender fell below the trace's rate.
		t.Logf("UDP through the emulator: %d frames received, %d sent, %d dropped by the full buffer, lateness p99 %v",
			e.Received, e.Sent, e.BufferFull, e.Lateness.P99)
	}
	t.Logf("UDP: %.3f Mbit/s (%.2f%% from 12 Mbit/s; %.2f%% from %.3f)", udp/1e6, 100*(udp-12e6)/12e6, 100*(udp-want)/want, want/1e6)
	testenv.Judge(t, testenv.Measurement{Quantity: "iperf3 UDP goodput through the 12 Mbit/s trace (Mbit/s)",
		Got: udp / 1e6, Target: want / 1e6, Tolerance: 0.03 * want / 1e6, Resolution: iperfRes(want / 1e6)})
	testenv.Judge(t, testenv.Measurement{Quantity: "iperf3 UDP goodput against the trace's 12 Mbit/s of IP (Mbit/s)",
		Got: udp / 1e6, Target: 12, Tolerance: 0.03 * 12, Resolution: iperfRes(12)})
}

// TestTraceOutage: with a 2 s outage in a 10 s trace the bytes received
// over whole periods drop by the outage's share (8001 of 10 000
// opportunities remain), and the constant trace never delivers more than
// its rate. The link is saturated with UDP at 15 Mbit/s and the bytes
// handed to h2 (the emulator's sent bytes) are read twice, from 1.5 s on;
// a 300-packet buffer keeps the link busy through the sender's stalls.
// Each rate is judged over a window whose resolution is ten times finer
// than its tolerance (testenv.Judge): see the two windows below.
func TestTraceOutage(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "iperf3")
	constant, outage := writeTraces(t)
	ctx := context.Background()
	// snapshot is one reading of the h1→h2 direction: the bytes it sent,
	// the due time of the last of them on the emulator's clock, and the
	// test's own clock right after.
	type snapshot struct {
		bytes, bufferFull uint64
		due               time.Duration
		at                time.Time
	}
	// measure saturates the link for window plus a second either side
	// and reads it at both ends of window.
	measure := func(trace string, window time.Duration) (first, last snapshot) {
		n := pairNet(t, topo.Params{"a>b.trace": trace, "limit": "300"})
		done := make(chan error, 1)
		go func() {
			_, err := n.IperfUDP(ctx, "15M", "h1", "h2", window+3*time.Second)
			done <- err
		}()
		sample := func() snapshot {
			st, err := n.LinkStats("h1", "h2")
			if err != nil {
				t.Error(err)
			}
			e := st.Forward.Emulator
			return snapshot{e.SentBytes, e.BufferFull, time.Duration(e.LastSentDue), time.Now()}
		}
		time.Sleep(1500 * time.Millisecond)
		first = sample()
		time.Sleep(time.Until(first.at.Add(window)))
		last = sample()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return first, last
	}
	rate := func(a, b snapshot, over time.Duration) float64 { return float64(b.bytes-a.bytes) * 8 / over.Seconds() }
	// Saturated, the constant trace delivers 1514 B per ms: 12.112 Mbit/s
	// of frames, as TestTraceConstantRate shows exactly on the virtual
	// clock. On a loaded machine iperf3's sender sometimes cannot keep the
	// link busy, which lowers a measured rate and says nothing about the
	// trace: the rates are judged from above, the outage's share both ways.
	const nominal = 1514 * 8 * 1000.0
	const slot = time.Millisecond // the trace's delivery opportunities

	// The constant trace must never deliver more than its rate. Judged to
	// 0.1 % that needs a window whose ends no pause moves: the bytes sent
	// up to the last packet's due time, over the due times (known to one
	// slot at either end). The emulator's clock is real time: the due
	// window is as long as the test's own, to the test's resolution.
	const constWindow = 12 * time.Second
	f0, f1 := measure(constant, constWindow)
	dueSpan, callerSpan := f1.due-f0.due, f1.at.Sub(f0.at)
	full := rate(f0, f1, dueSpan)
	testenv.Judge(t, testenv.Measurement{
		Quantity: "constant trace's rate over its due times / nominal", Got: full / nominal, Target: 1, Tolerance: 0.001,
		Bound: testenv.AtMost, Resolution: testenv.StampedWindow(1, dueSpan, slot, "SentBytes up to LastSentDue, one delivery slot"),
	})
	testenv.Judge(t, testenv.Measurement{
		Quantity: "emulator-clock window / the test's window", Got: dueSpan.Seconds() / callerSpan.Seconds(), Target: 1, Tolerance: 0.05,
		Resolution: testenv.CallerWindow(1, callerSpan),
	})
	t.Logf("constant trace: %.3f Mbit/s of frames over the due times, %.3f over the test's window (nominal %.3f)",
		full/1e6, rate(f0, f1, callerSpan)/1e6, nominal/1e6)

	// The outage trace repeats every 10 s (8 s of slots, 2 s without):
	// its share needs a window of whole periods, whatever the phase, so
	// the test's own clock reads it; two periods make one pause at an end
	// small enough for ±3 %. The share is a share of a busy link: a run in
	// which the full buffer dropped nothing is one in which iperf3's
	// sender (on a loaded machine) did not keep the link busy, and is
	// measured again, at most three runs. A trace that delivers too little
	// overflows the buffer and is judged; one that delivers too much is
	// judged after the third run.
	const outageWindow = 20 * time.Second
	var c0, c1 snapshot
	for attempt := 1; attempt <= 3; attempt++ {
		c0, c1 = measure(outage, outageWindow)
		if c1.bufferFull > c0.bufferFull || attempt == 3 {
			break
		}
		t.Logf("outage trace, run %d: %.4f of nominal and no frame dropped by the full buffer: the sender did not keep the link busy; again",
			attempt, rate(c0, c1, c1.at.Sub(c0.at))/nominal)
	}
	span := c1.at.Sub(c0.at)
	cut := rate(c0, c1, span)
	want := 8001.0 / 10000
	t.Logf("outage trace: %.3f Mbit/s of frames over %v, %.4f of nominal; the outage's share is %.4f; %d frames dropped by the full buffer",
		cut/1e6, span, cut/nominal, want, c1.bufferFull-c0.bufferFull)
	testenv.Judge(t, testenv.Measurement{
		Quantity: "outage trace's rate over two periods / nominal", Got: cut / nominal, Target: want, Tolerance: 0.03 * want,
		Resolution: testenv.CallerWindow(cut/nominal, span),
	})
}

func TestScheduleBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	badTrace := filepath.Join(dir, "bad.trace")
	jitter := filepath.Join(dir, "jitter.csv")
	for name, body := range map[string]string{bad: "time,delay\n2s,1ms\n1s,1ms\n", badTrace: "5\n3\n", jitter: "time,jitter\n1s,1ms\n"} {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		params topo.Params
		want   string
	}{
		{topo.Params{"schedule": bad}, bad + ":3: time 1s is not after"},
		{topo.Params{"b>a.schedule": filepath.Join(dir, "missing.csv")}, "missing.csv: open"},
		{topo.Params{"trace": badTrace}, badTrace + ":2: time before the previous line's"},
		{topo.Params{"trace": badTrace + "x"}, "bad.tracex: open"},
		{topo.Params{"dist": "deterministic", "schedule": jitter}, jitter + ":2: at 1s: emulator: jitter"},
		{topo.Params{"bw": "10", "trace": writeConst(t)}, "a delivery trace is the link's rate"},
		{topo.Params{"schedule": "time,delay;1s,-1ms"}, "inline schedule:2: delay: negative"},
	} {
		top := topo.New()
		top.AddHost("h1")
		top.AddHost("h2")
		top.AddLink("h1", "h2", c.params)
		_, err := New(top, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !(errors.Is(err, ErrLinkParams) || errors.Is(err, emulator.ErrInvalidConfig)) {
			t.Errorf("%v: got %v, want %q", c.params, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error spans lines: %q", c.params, err)
		}
	}
}

func writeConst(t *testing.T) string {
	c, _ := writeTraces(t)
	return c
}
