//go:build dpdk

package hymn

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn/emulator/dpdk"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/stallwatch"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/measure"
	"github.com/hymn-net/hymn/sriov"
	"github.com/hymn-net/hymn/topo"
	"github.com/vishvananda/netlink"
)

// TestDPDKPortsInTopology builds linear,2 on the simulated SR-IOV NIC with
// every link emulated (h1 ─ s1 ─ s2 ─ h2, three emulated VF links), once
// with AF_PACKET ports and once with DPDK ports (net_af_packet vdevs on
// the VFs), side by side. Each run measures the path with 1 ms on every
// link first, then with 5 ms: the one-way delay h1→h2 must be the path's
// own plus 15 ms within 1 % (150 µs), none earlier than 15 ms, and every
// forwarder must release its frames on time (lateness p50 ≤ 50 µs).
// A DPDK port is polled, so its path's own latency varies from run to
// run on this VM (p50 38-138 µs); that is why the delay is judged against
// the path measured in the same network a moment before. The path's own
// is measured through 1 ms links (minus 3 ms), not zero-delay ones: an
// AF_PACKET forwarder is woken by a frame it must send at once, which
// costs about 50 µs a hop, while under a delay that wake-up is hidden
// (frames carry their kernel arrival stamps); a zero-delay base made the
// 5 ms path look 0.9-1.1 % short once forwarders were punctual. Then pingall and
// iperf cross, and after Stop no DPDK device, namespace or VF is left.
//
// This shared VM sometimes stops every thread for tens of ms (seen: both
// port kinds' p99 at 80-90 ms in the same run, the rest as usual). Such a
// stall is the machine's, not the emulator's, and it moves a mean by
// percents: a thread that sleeps 1 ms at a time watches for it, and a
// measurement during which it overslept by more than 5 ms, or in which a
// probe took more than 5 ms beyond the median, is repeated
// (at most five attempts, each of 1.5 s without and 1.5 s with delay, so
// that one falls between stalls; the log says so). If the machine stalled every
// time, the mean says nothing about the emulator, and the median is
// judged instead, by the same 1 %.
func TestDPDKPortsInTopology(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "ping", "iperf3")
	for _, ports := range []string{linkparams.PortsAFPacket, linkparams.PortsDPDK} {
		t.Run(ports, func(t *testing.T) { testPortsInTopology(t, ports) })
	}
	for _, d := range dpdk.Devices() {
		if strings.HasPrefix(d, "net_af_packet_hymn") {
			t.Errorf("DPDK device %s left after the networks stopped", d)
		}
	}
}

// namespaceInodes maps the inodes of a run's named namespaces to their
// names.
func namespaceInodes(t *testing.T, run string) map[uint64]string {
	t.Helper()
	names, err := owner.Namespaces(run)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]string{}
	for _, n := range names {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join("/run/netns", n), &st); err == nil {
			out[st.Ino] = n
		}
	}
	return out
}

// assertNoProcessIn fails if any process is still in one of the network
// namespaces (by inode): a namespace whose name is gone lives on as long
// as a process holds it.
func assertNoProcessIn(t *testing.T, inodes map[uint64]string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	for _, p := range procs {
		link, err := os.Readlink(p)
		if err != nil {
			continue
		}
		var ino uint64
		if _, err := fmt.Sscanf(link, "net:[%d]", &ino); err != nil {
			continue
		}
		if name, ok := inodes[ino]; ok {
			cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(p)), "cmdline"))
			t.Errorf("process %s (%q) is still in namespace %s after Stop", filepath.Base(filepath.Dir(filepath.Dir(p))), strings.ReplaceAll(string(cmd), "\x00", " "), name)
		}
	}
}

func testPortsInTopology(t *testing.T, ports string) {
	top := topo.New()
	for _, h := range []string{"h1", "h2"} {
		top.AddHost(h, nil)
	}
	for _, s := range []string{"s1", "s2"} {
		top.AddSwitch(s, nil)
	}
	// delay=0: an emulator on every link, doing nothing yet.
	path := [][2]string{{"h1", "s1"}, {"s1", "s2"}, {"s2", "h2"}}
	for _, l := range path {
		top.AddLink(l[0], l[1], linkparams.Params(linkparams.Delay(0)))
	}
	// Registered before the network's own cleanup, so it runs after Stop:
	// no process may be left in any of the run's namespaces.
	var nsInodes map[uint64]string
	t.Cleanup(func() { assertNoProcessIn(t, nsInodes) })
	net := startSRIOVNet(t, top, Options{Links: LinksSRIOV, SRIOV: &sriov.Config{Simulate: sriov.SimAlways, Emulator: ports}})
	nsInodes = namespaceInodes(t, net.RunID())
	if len(nsInodes) < 5 { // h1 h2 s1 s2, the helper, the simulated NIC's
		t.Fatalf("found the namespaces %v of run %s; want at least 5", nsInodes, net.RunID())
	}
	ctx := context.Background()
	if ports == linkparams.PortsDPDK {
		n := 0
		for _, d := range dpdk.Devices() {
			if strings.HasPrefix(d, "net_af_packet_hymn") {
				n++
			}
		}
		if n != 2*len(path) {
			t.Fatalf("%d DPDK net_af_packet devices for %d emulated links; want two each (%v)", n, len(path), dpdk.Devices())
		}
	}
	if loss, err := net.PingAll(ctx, 0); err != nil || loss != 0 {
		t.Fatalf("pingall: %v%% lost, %v", loss, err)
	}
	probe := func(what string) *measure.Result {
		t.Helper()
		rep, err := net.Measure(ctx, "h1", "h2", measure.Config{Rates: []float64{1000}, Duration: 1500 * time.Millisecond, Drain: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		r := rep.Results[0]
		l := r.Latency
		t.Logf("%s ports, %s: one-way h1→h2 mean %.1f µs, min %.1f, p50 %.1f, p99 %.1f, max %.1f; sent %d lost %d reordered %d",
			ports, what, l.Mean, l.Min, l.P50, l.P99, l.Max, r.Sent, r.Lost, r.Reordered)
		return r
	}
	const delay = 5 * time.Millisecond
	setDelay := func(d time.Duration) {
		t.Helper()
		for _, l := range path {
			if err := net.SetLink(l[0], l[1], BothDirections, linkparams.Delay(d)); err != nil {
				t.Fatal(err)
			}
		}
	}
	const baseDelay = time.Millisecond
	want := float64(len(path)) * float64(delay/time.Microsecond)
	// The path's own latency: the 1 ms measurement less its 3 ms.
	baseWant := float64(len(path)) * float64(baseDelay/time.Microsecond)
	var base, res *measure.Result
	stalled := false
	// Each attempt is a round of the two measurements taken in turn; its
	// median's excess over the path's own, kept for every round.
	var roundsP50 []float64
	for attempt := 1; ; attempt++ {
		watch := stallwatch.Start()
		setDelay(baseDelay)
		base = probe("1 ms on each of 3 links")
		setDelay(delay)
		res = probe("5 ms on each of 3 links")
		r := watch.Stop()
		// 5 ms: one such stall holds about five probes; a few of them
		// move the mean by the whole 1 % (150 µs). The sleeper does not
		// see every stall (fresh-root run 7: it overslept 4.2 ms while a
		// probe took 16 ms more than the median and the forwarders'
		// lateness p99 stayed at 0.2 ms), so a probe that far beyond
		// its run's median counts as one too.
		roundsP50 = append(roundsP50, res.Latency.P50-(base.Latency.P50-baseWant)-want)
		// No probe crosses faster than the delay: a pause only lengthens
		// a probe, and the histogram reports its minimum up to a bucket
		// low.
		testenv.Judge(t, testenv.Measurement{Quantity: ports + " ports: fastest probe through 5 ms on each of 3 links (µs)", Got: res.Latency.Min, Target: want,
			Tolerance: 100, Bound: testenv.AtLeast, Resolution: hdrBucketAt(want)})
		tail := max(base.Latency.Max-base.Latency.P50, res.Latency.Max-res.Latency.P50)
		stalled = r.Stalled() || tail > 5000
		if !stalled || attempt == 5 {
			t.Logf("%s ports: stall watcher during the measurements: %v; longest probe beyond its median: %.0f µs", ports, r, tail)
			break
		}
		t.Logf("%s ports: the machine stalled (stall watcher: %v; a probe took %.0f µs beyond its median) during attempt %d; measuring again", ports, r, tail, attempt)
	}
	ownMean, ownP50 := base.Latency.Mean-baseWant, base.Latency.P50-baseWant
	added := res.Latency.Mean - ownMean - want
	addedP50 := res.Latency.P50 - ownP50 - want
	t.Logf("%s ports: beyond %.0f µs and the path's own: mean %+.1f µs (%+.2f %%), p50 %+.1f µs (%+.2f %%)", ports, want, added, 100*added/want, addedP50, 100*addedP50/want)
	for _, r := range []*measure.Result{base, res} {
		// A stall of the whole machine overflows the rings; otherwise
		// nothing may be lost or reordered.
		if (r.Lost != 0 && !stalled) || r.Reordered != 0 {
			t.Errorf("%s ports: %d lost, %d reordered of %d", ports, r.Lost, r.Reordered, r.Sent)
		}
	}
	what, got, path0, now := "mean", added, ownMean, res.Latency.Mean
	bound := 0.01 * want
	// Resolution of the mean's excess: the histogram's mean takes each
	// probe at its bucket's middle, half a bucket off at most (at 15-18
	// ms; the path's own at 3-4 ms a quarter of that), and a pause under
	// the stall watcher's threshold, which neither it nor the tail test
	// sees, holds up rate·Threshold probes by half of it on average.
	const rate = 1000.0
	th := stallwatch.Threshold.Seconds()
	pause := rate * th * th / 2 / float64(max(res.Received, 1)) * 1e6
	resolution := testenv.Resolution{Value: hdrBucketAt(want).Value*5/8 + pause,
		Derived: fmt.Sprintf("half of measure's histogram buckets at 15 and 3 ms, and one pause under stallwatch.Threshold (%v) over %d probes at %.0f/s (%.1f µs)", stallwatch.Threshold, res.Received, rate, pause)}
	if stalled {
		// An episode of slow wake-ups moves a whole measurement's
		// median, and the path's own latency with it, by hundreds of µs
		// while the forwarders release on time (fresh-root run of
		// 2026-12-02: rounds -34, +28, -128, +165, +632 µs, lateness p50
		// 150 ns; beside stall-inject three rounds in a row +321 to
		// +673 µs). Then the median round is judged against what the
		// rounds can resolve: three standard errors of a median of n,
		// 1.2533·σ/√n with σ from the rounds' median absolute deviation
		// (1.4826·MAD), at least the 1 % of a quiet machine and at most
		// 5 %, so a systematic error of the emulator still fails. The
		// emulator's own timing is judged below (lateness).
		slices.Sort(roundsP50)
		med := roundsP50[len(roundsP50)/2]
		dev := make([]float64, len(roundsP50))
		for i, r := range roundsP50 {
			dev[i] = math.Abs(r - med)
		}
		slices.Sort(dev)
		se := 1.2533 * 1.4826 * dev[len(dev)/2] / math.Sqrt(float64(len(roundsP50)))
		bound = min(max(bound, 3*se), 0.05*want)
		t.Logf("%s ports: the machine stalled in every attempt: judging the median round of %.1f µs within %.0f µs", ports, roundsP50, bound)
		what, got, path0, now = "median round's median", med, ownP50, res.Latency.P50
		// A median moves with a stall only if it holds up half of a
		// measurement's probes; the histogram reports it to a bucket, at
		// 15-18 ms and at 3-4 ms for the path's own.
		resolution = testenv.Resolution{Value: hdrBucketAt(want).Value * 5 / 4,
			Derived: "measure's histogram buckets at 15 ms and at 3 ms (3 significant digits); a stall moves a median only if it holds up half the probes"}
	}
	t.Logf("%s ports: %s one-way delay %.1f µs is %+.1f µs from %.0f µs plus the path's own %.1f µs; want within %.0f µs", ports, what, now, got, want, path0, bound)
	testenv.Judge(t, testenv.Measurement{Quantity: ports + " ports: " + what + " one-way delay beyond 15 ms and the path's own (µs)", Got: got,
		Tolerance: bound, Resolution: resolution})
	for _, l := range path {
		st, err := net.LinkStats(l[0], l[1])
		if err != nil {
			t.Fatal(err)
		}
		late := st.Forward.Emulator.Lateness
		t.Logf("%s ports, link %s-%s: forwarder lateness p50 %v mean %v p99 %v", ports, l[0], l[1], late.P50, late.Mean, late.P99)
		// The forwarder stamps its own lateness (send time less due
		// time, ns); the histogram's buckets are 512 ns wide at 32-65 µs.
		testenv.JudgeTime(t, testenv.Timing{Quantity: fmt.Sprintf("%s ports, link %s-%s: forwarder lateness p50", ports, l[0], l[1]), Got: late.P50,
			Tolerance: 50 * time.Microsecond, Bound: testenv.AtMost,
			Resolution: testenv.Ms(512*time.Nanosecond, "the forwarder's send time less the due time (ns), in the emulator's histogram: 64 buckets per power of two, 512 ns at 32-65 µs")})
	}
	if loss, err := net.PingAll(ctx, 0); err != nil || loss != 0 {
		t.Fatalf("pingall with 5 ms links: %v%% lost, %v", loss, err)
	}
	ip, err := net.Iperf(ctx, "h1", "h2", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s ports: iperf h1→h2 over 3 emulated links of 5 ms: %s", ports, ip.ServerText)
	if ip.ServerBps <= 0 {
		t.Errorf("%s ports: iperf carried nothing: %+v", ports, ip)
	}
}

// hdrBucketAt is the resolution (µs) of a one-way delay near us as
// measure's histogram reports it: three significant digits, so buckets
// of a power of two ns, between 1/2048 and 1/1024 of the value.
func hdrBucketAt(us float64) testenv.Resolution {
	h := measure.NewHistogram()
	_ = h.RecordValue(int64(us * 1e3)) // in range: under a minute
	// One value: Min and Max are its bucket's lowest and highest.
	width := h.Max() - h.Min() + 1
	return testenv.Resolution{Value: float64(width) / 1e3,
		Derived: fmt.Sprintf("measure's histogram (3 significant digits) reports a value near %.0f µs to its bucket of %d ns", us, width)}
}

// TestDPDKOpenFailureLeavesNothing: when the second VF's port cannot be
// made (no such interface), the first's device is removed again; a pair
// opened and released leaves no device either.
func TestDPDKOpenFailureLeavesNothing(t *testing.T) {
	testenv.Root(t)
	helper, err := links.CreateHelperNS(owner.NamespaceName(owner.NewRunID(), "@emu"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := helper.Delete(); err != nil {
			t.Error(err)
		}
	})
	if _, err := links.CreateVeth(links.End{NS: helper, Name: "x0"}, links.End{NS: helper, Name: "x1"}); err != nil {
		t.Fatal(err)
	}
	ours := func() []string {
		var out []string
		for _, d := range dpdk.Devices() {
			if strings.HasPrefix(d, "net_af_packet_hymn") {
				out = append(out, d)
			}
		}
		return out
	}
	before := len(ours())
	if _, err := openSimDPDK(helper, [2]string{"x0", "nosuch0"}, 1500); err == nil || !strings.Contains(err.Error(), "nosuch0") {
		t.Fatalf("opening a port on a missing VF: %v", err)
	}
	if left := ours(); len(left) != before {
		t.Fatalf("a failed open left DPDK devices: %v", left)
	}
	d, err := openSimDPDK(helper, [2]string{"x0", "x1"}, 1500)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ours()); n != before+2 {
		t.Errorf("%d devices after opening two ports; want %d", n, before+2)
	}
	if err := d.release(); err != nil {
		t.Fatal(err)
	}
	if left := ours(); len(left) != before {
		t.Fatalf("released ports left DPDK devices: %v", left)
	}
}

// TestDPDKHardwareWithoutVFIO runs the hardware path of an emulated VF
// link with DPDK ports on stand-ins (a fake sysfs whose VF netdevs are
// veth ends, as TestSRIOVHardwarePath): the emulator's VFs must go to
// vfio-pci, which this machine does not have, so Start fails saying so,
// and everything is undone: every VF back in the root namespace with its
// settings, no DPDK device, no namespace.
func TestDPDKHardwareWithoutVFIO(t *testing.T) {
	testenv.Root(t)
	if _, err := os.Stat("/dev/vfio"); err == nil {
		t.Skip("this machine has /dev/vfio: the failure this test needs does not happen")
	}
	hw := newFakeSRIOVHardware(t, "dv", "emulator=dpdk,vlans=700-799")
	pfA, pfB, vf, conf, backend, cfg := hw.pfA, hw.pfB, hw.vf, hw.conf, hw.backend, hw.cfg
	top := topo.New()
	top.AddHost("h1", nil)
	top.AddHost("h2", nil)
	top.AddLink("h1", "h2", linkparams.Params(linkparams.Delay(2*time.Millisecond)))
	net, err := New(top, Options{Links: backend, SRIOV: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	err = net.Start(context.Background())
	_ = net.Stop() // Start failed and removed what it made
	if err == nil || !strings.Contains(err.Error(), "vfio") {
		t.Fatalf("Start with the emulator's VFs unable to reach vfio-pci: %v", err)
	}
	t.Logf("as expected: %v", err)
	for _, side := range []string{"a", "b"} {
		for i := 0; i < 2; i++ {
			if _, err := netlink.LinkByName(vf(side, i)); err != nil {
				t.Errorf("VF %s is not back in the root namespace: %v", vf(side, i), err)
			}
		}
	}
	for _, pf := range []string{pfA, pfB} {
		for i := 0; i < 2; i++ {
			if st, _ := conf.GetVF(pf, i); st.VLAN != 0 || !st.SpoofChk || st.Trust || st.LinkState != sriov.LinkAuto {
				t.Errorf("%s vf %d not restored: %+v", pf, i, st)
			}
		}
	}
	for _, d := range dpdk.Devices() {
		if !strings.HasPrefix(d, "net_af_packet") {
			t.Errorf("DPDK device %s attached", d)
		}
	}
	assertRunGone(t, net.RunID())
	assertSRIOVGone(t, net.RunID())
}
