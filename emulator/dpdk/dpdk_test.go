//go:build dpdk

package dpdk

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/emulator/afpacket"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/probe"
	"github.com/hymn-net/hymn/internal/stallwatch"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/links"
)

var initErr error

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		initErr = fmt.Errorf("needs root (EAL writes %s)", RunDir)
	} else {
		initErr = Init(Config{})
	}
	code := m.Run()
	if initErr == nil {
		if err := Cleanup(); err != nil {
			fmt.Fprintln(os.Stderr, "dpdk cleanup:", err)
			code = 1
		}
		if _, err := os.Stat(filepath.Join(RunDir, FilePrefix())); err == nil {
			fmt.Fprintln(os.Stderr, "EAL runtime directory left behind")
			code = 1
		}
	}
	os.Exit(code)
}

func needEAL(t *testing.T) {
	t.Helper()
	if initErr != nil {
		testenv.Skip(t, fmt.Sprintf("DPDK EAL unavailable: %v", initErr))
	}
}

func frame(seq, size int) []byte {
	f := make([]byte, size)
	copy(f[0:6], []byte{0x02, 0, 0, 0, 0, 2})
	copy(f[6:12], []byte{0x02, 0, 0, 0, 0, 1})
	f[12], f[13] = 0x88, 0xb5 // local experimental ethertype
	binary.BigEndian.PutUint32(f[14:], uint32(seq))
	binary.BigEndian.PutUint64(f[18:], uint64(time.Now().UnixNano()))
	return f
}

func bufs(n, size int) ([][]byte, []int, []int64) {
	b := make([][]byte, n)
	for i := range b {
		b[i] = make([]byte, size)
	}
	return b, make([]int, n), make([]int64, n)
}

// recvAll polls p until want frames arrived or the deadline passes.
// drain is recvAll for a goroutine: it stops at the first error, and
// returns with the frames the wall clock (as frame stamps them) read just
// after each RecvBatch that took them.
func drain(p *Port, want int, deadline time.Duration) ([][]byte, []int64) {
	var got [][]byte
	var at []int64
	b, l, s := bufs(32, 2048)
	end := time.Now().Add(deadline)
	for len(got) < want && time.Now().Before(end) {
		n, err := p.RecvBatch(b, l, s)
		if err != nil {
			return got, at
		}
		now := time.Now().UnixNano()
		for i := 0; i < n; i++ {
			got = append(got, append([]byte(nil), b[i][:l[i]]...))
			at = append(at, now)
		}
		if n == 0 {
			time.Sleep(50 * time.Microsecond)
		}
	}
	return got, at
}

func recvAll(t *testing.T, p *Port, want int, deadline time.Duration) [][]byte {
	t.Helper()
	var got [][]byte
	b, l, s := bufs(32, 2048)
	end := time.Now().Add(deadline)
	for len(got) < want && time.Now().Before(end) {
		n, err := p.RecvBatch(b, l, s)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			got = append(got, append([]byte(nil), b[i][:l[i]]...))
		}
		if n == 0 {
			time.Sleep(50 * time.Microsecond)
		}
	}
	return got
}

func TestRingLoopback(t *testing.T) {
	needEAL(t)
	if err := CreateVdev("net_ring0", ""); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := RemoveVdev("net_ring0"); err != nil {
			t.Error(err)
		}
	}()
	p, err := Open("net_ring0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}()
	var sent [][]byte
	for i := 0; i < 50; i++ {
		sent = append(sent, frame(i, 60+i*20))
	}
	sent = append(sent, make([]byte, 4000)) // longer than MaxFrame: dropped and counted
	n, err := p.SendBatch(sent)
	if err != nil || n != 50 {
		t.Fatalf("SendBatch = %d, %v; want 50", n, err)
	}
	got := recvAll(t, p, 50, time.Second)
	if len(got) != 50 {
		t.Fatalf("got %d frames back, want 50", len(got))
	}
	for i := range got {
		if !bytes.Equal(got[i], sent[i]) {
			t.Fatalf("frame %d differs (len %d, want %d)", i, len(got[i]), len(sent[i]))
		}
	}
	st := p.Stats()
	if st.TxFrames != 50 || st.RxFrames != 50 || st.TxDropped != 1 {
		t.Fatalf("stats %+v", st)
	}
	// A buffer too small for a frame: dropped and counted, as the
	// emulator.Port contract says.
	if _, err := p.SendBatch([][]byte{frame(1, 1000)}); err != nil {
		t.Fatal(err)
	}
	small, l, s := bufs(1, 100)
	time.Sleep(time.Millisecond)
	if n, _ := p.RecvBatch(small, l, s); n != 0 || p.Stats().RxTruncated != 1 {
		t.Fatalf("short buffer: n=%d stats %+v", n, p.Stats())
	}
}

func TestNullDevice(t *testing.T) {
	needEAL(t)
	if err := CreateVdev("net_null0", "size=64"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := RemoveVdev("net_null0"); err != nil {
			t.Error(err)
		}
	}()
	p, err := Open("net_null0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}()
	got := recvAll(t, p, 32, time.Second)
	if len(got) < 32 || len(got[0]) != 64 {
		t.Fatalf("net_null gave %d frames", len(got))
	}
	if n, err := p.SendBatch([][]byte{frame(0, 64), frame(1, 64)}); n != 2 || err != nil {
		t.Fatalf("SendBatch = %d, %v", n, err)
	}
}

func TestOpenErrors(t *testing.T) {
	needEAL(t)
	if _, err := Open("net_nosuch0", Options{}); err == nil {
		t.Fatal("opened a device that does not exist")
	}
	if err := CreateVdev("net_bogus0", ""); err == nil {
		t.Fatal("created a vdev of an unknown driver")
	}
}

// wireNamer gives a test run its own ring wire names: DPDK keeps a ring's
// name for the life of the process, so a second run of a test in one
// process (go test -count=10, as scripts/flake-check.sh runs them) could
// not make its wire again ("Invalid argument").
func wireNamer() func(string) string {
	k := wireRuns.Add(1)
	return func(name string) string { return fmt.Sprintf("%s_%d", name, k) }
}

var wireRuns atomic.Int64

// threadStat is what the kernel's schedstat says of a thread: its CPU time
// and how many times it was switched in (a wake-up, or a return after
// preemption). Both are accounted when the thread stops running, so a
// reading is exact up to the run in progress, if any.
type threadStat struct {
	cpu   time.Duration
	slots uint64
}

func readThreadStat(path string) (threadStat, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return threadStat{}, err
	}
	var ns, wait, slots uint64
	if _, err := fmt.Sscan(string(b), &ns, &wait, &slots); err != nil {
		return threadStat{}, fmt.Errorf("%s: %w", path, err)
	}
	return threadStat{time.Duration(ns), slots}, nil
}

// fifoThreads lists the process's threads that run under SCHED_FIFO.
func fifoThreads(t *testing.T) []string {
	t.Helper()
	dirs, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		b, err := os.ReadFile("/proc/self/task/" + d.Name() + "/stat")
		if err != nil {
			continue // the thread ended meanwhile
		}
		// After the command's closing parenthesis come fields 3 onwards;
		// the scheduling policy is field 41.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 38 && f[38] == "1" {
			out = append(out, d.Name())
		}
	}
	return out
}

// threadsStat sums the schedstat of the threads tids.
func threadsStat(t *testing.T, tids []string) threadStat {
	t.Helper()
	var sum threadStat
	for _, tid := range tids {
		st, err := readThreadStat("/proc/self/task/" + tid + "/schedstat")
		if err != nil {
			t.Fatal(err)
		}
		sum.cpu += st.cpu
		sum.slots += st.slots
	}
	return sum
}

// stampBracket is how close together the two clock reads around a read
// must lie for the read to count (see stampedRead).
const stampBracket = time.Millisecond

// stampedRead calls read between two reads of the monotonic clock, again
// until those lie at most stampBracket apart (the test was not paused in
// between), and returns what it read with the middle of the two: a window
// between two such readings is stamped to a bracket at each end, whatever
// pauses the test suffers around them.
func stampedRead[T any](t *testing.T, read func() T) (T, time.Time) {
	t.Helper()
	for range 1000 {
		before := time.Now()
		v := read()
		after := time.Now()
		if d := after.Sub(before); d <= stampBracket {
			return v, before.Add(d / 2)
		}
	}
	t.Fatalf("1000 reads each took over %v", stampBracket)
	var zero T
	return zero, time.Time{}
}

// TestIdleLinkCPU: a forwarder on two polled ports with nothing to do
// falls into deep idle, a wake-up per millisecond per direction (polling
// every IdleSleep, 20 µs, cost 0.87–0.9 s of CPU per second). What a
// wake-up costs depends on the machine (about 50 µs on the development
// VM), so the forwarder is held to the same process with two threads
// doing nothing but 1 ms sleeps, measured at the same time, over 3 s: per
// wake-up at most 1.5 times theirs and 5 µs (the 10 ms a second this test
// allowed when it compared CPU a second, at two wake-ups a millisecond:
// the forwarder also polls its rings and checks its queue on each), and
// at most 1.5 times their 2000 wake-ups a second.
//
// Both are read from the kernel's schedstat of the threads themselves
// (the forwarder's are its SCHED_FIFO threads): CPU time and wake-ups
// accounted where they happen, so that a pause of the test or a stall of
// the machine takes away wake-ups and their CPU together, and the cost of
// a wake-up is known to the run in progress at each end of the thousands
// counted. The wake-up rate is counted over a window whose ends bracket
// the reads (stampedRead) and judged from above: a stall only lowers it.
func TestIdleLinkCPU(t *testing.T) {
	needEAL(t)
	nm := wireNamer()
	var ports []*Port
	for _, w := range [][2]string{{nm("net_ring_it1"), nm("net_ring_ie1")}, {nm("net_ring_ie2"), nm("net_ring_it2")}} {
		if err := CreateWire(w[0], w[1]); err != nil {
			t.Fatal(err)
		}
		p, err := Open(w[1], Options{IdleSleep: 20 * time.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, p)
	}
	fwd, err := emulator.NewForwarder(ports[0], ports[1], emulator.ForwarderConfig{AtoB: emulator.DefaultConfig(), BtoA: emulator.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	// FIFO threads that are not the forwarder's: another test's, ending.
	others := fifoThreads(t)
	fwd.Start()
	defer func() {
		fwd.Stop()
		for _, p := range ports {
			if err := p.Close(); err != nil {
				t.Error(err)
			}
		}
		// Wires are not vdevs: a wire's ethdev went with its port's
		// Close, and RemoveVdev finds nothing (ENOENT).
		for _, n := range []string{nm("net_ring_it1"), nm("net_ring_ie1"), nm("net_ring_ie2"), nm("net_ring_it2")} {
			_ = RemoveVdev(n)
		}
	}()
	time.Sleep(50 * time.Millisecond) // past DeepIdleAfter
	tids := slices.DeleteFunc(fifoThreads(t), func(tid string) bool { return slices.Contains(others, tid) })
	if len(tids) == 0 {
		t.Fatal("the forwarder runs no SCHED_FIFO thread: its threads cannot be told apart")
	}
	// Two threads sleeping 1 ms at a time, 3000 times each, each reading
	// its own schedstat, at the same time as the forwarder idles: both
	// wake under the same load (measured one after the other, a burst of
	// load in one window made the forwarder's wake-ups dearer than the
	// sleepers' by half).
	const sleeps = 3000
	var wg sync.WaitGroup
	var sleepers [2]threadStat
	var sleepErr [2]error
	f0, at0 := stampedRead(t, func() threadStat { return threadsStat(t, tids) })
	for i := range sleepers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			emulator.RealTimeThread(0)
			s0, err := readThreadStat("/proc/thread-self/schedstat")
			for range sleeps {
				emulator.ThreadSleep(time.Millisecond)
			}
			s1, err1 := readThreadStat("/proc/thread-self/schedstat")
			sleepers[i], sleepErr[i] = threadStat{s1.cpu - s0.cpu, s1.slots - s0.slots}, errors.Join(err, err1)
		}()
	}
	wg.Wait()
	f1, at1 := stampedRead(t, func() threadStat { return threadsStat(t, tids) })
	fwd.Stop()
	window := at1.Sub(at0)
	fwdWakes := f1.slots - f0.slots
	var sleep threadStat
	for i, st := range sleepers {
		if sleepErr[i] != nil {
			t.Fatal(sleepErr[i])
		}
		sleep.cpu += st.cpu
		sleep.slots += st.slots
	}
	if fwdWakes == 0 || sleep.slots == 0 {
		t.Fatalf("no wake-up counted: forwarder %d, sleepers %d", fwdWakes, sleep.slots)
	}
	fwdPer := (f1.cpu - f0.cpu).Seconds() * 1e6 / float64(fwdWakes)
	sleepPer := sleep.cpu.Seconds() * 1e6 / float64(sleep.slots)
	t.Logf("idle DPDK-port forwarder (%d threads): %v of CPU in %d wake-ups over %v; meanwhile two threads sleeping 1 ms at a time: %v in %d",
		len(tids), f1.cpu-f0.cpu, fwdWakes, window.Round(time.Millisecond), sleep.cpu, sleep.slots)
	// At each end of each count, each thread may be in a run: its CPU
	// time lacks at most that run (about one wake-up's) and its count at
	// most one switch, so a cost per wake-up is known to 4 × threads over
	// the wake-ups counted, of itself.
	perWakeRes := fwdPer*4*float64(len(tids))/float64(fwdWakes) + 1.5*sleepPer*4*2/float64(sleep.slots)
	testenv.Judge(t, testenv.Measurement{
		Quantity: "idle forwarder's CPU per wake-up (µs)", Got: fwdPer, Target: 1.5 * sleepPer, Tolerance: 5, Bound: testenv.AtMost,
		Resolution: testenv.Resolution{Value: perWakeRes,
			Derived: fmt.Sprintf("schedstat's CPU time and switches, accounted as each run ends: one run and one switch per thread at each end, over %d and %d wake-ups", fwdWakes, sleep.slots)},
	})
	wakeRate := float64(fwdWakes) / window.Seconds()
	testenv.Judge(t, testenv.Measurement{
		Quantity: "idle forwarder's wake-ups a second", Got: wakeRate, Target: 2000, Tolerance: 1000, Bound: testenv.AtMost,
		Resolution: testenv.Resolution{Value: wakeRate * float64(2*stampBracket+2*time.Millisecond) / float64(window),
			Derived: fmt.Sprintf("switches the kernel counted over %v whose ends bracket the reads to %v, and a 1 ms wake-up in progress at each end", window.Round(time.Millisecond), stampBracket)},
	})
}

// TestForwarderOverWire runs hymn's emulator between two DPDK ports:
// T1 ═wire═ E1 [forwarder, 2 ms delay] E2 ═wire═ T2. Every frame arrives,
// in order, no earlier than the delay.
func TestForwarderOverWire(t *testing.T) {
	needEAL(t)
	nm := wireNamer()
	for _, w := range [][2]string{{nm("net_ring_t1"), nm("net_ring_e1")}, {nm("net_ring_e2"), nm("net_ring_t2")}} {
		if err := CreateWire(w[0], w[1]); err != nil {
			t.Fatal(err)
		}
	}
	ports := map[string]*Port{}
	for _, n := range []string{nm("net_ring_t1"), nm("net_ring_e1"), nm("net_ring_e2"), nm("net_ring_t2")} {
		p, err := Open(n, Options{IdleSleep: 20 * time.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		ports[n] = p
	}
	cfg := emulator.DefaultConfig()
	cfg.Delay = 2 * time.Millisecond
	fwd, err := emulator.NewForwarder(ports[nm("net_ring_e1")], ports[nm("net_ring_e2")], emulator.ForwarderConfig{AtoB: cfg, BtoA: emulator.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	fwd.Start()
	defer func() {
		fwd.Stop()
		for n, p := range ports {
			if err := p.Close(); err != nil {
				t.Error(err)
			}
			_ = RemoveVdev(n) // a wire, not a vdev: ENOENT (see TestIdleLinkCPU)
		}
	}()
	const total = 2000
	var frames [][]byte
	for i := 0; i < total; i++ {
		frames = append(frames, frame(i, 64))
	}
	// The receiver reads while the sender sends: the far ring holds 1024
	// frames, fewer than the test sends.
	type arrivals struct {
		frames [][]byte
		at     []int64
	}
	received := make(chan arrivals, 1)
	go func() {
		f, at := drain(ports[nm("net_ring_t2")], total, 5*time.Second)
		received <- arrivals{f, at}
	}()
	// Paced at 32 frames per 100 µs, so the 2 ms delay never holds more
	// than about 640 frames: one release burst fits the far ring.
	for len(frames) > 0 {
		k := min(len(frames), 32)
		now := uint64(time.Now().UnixNano()) // restamped as sent, not as made
		for _, f := range frames[:k] {
			binary.BigEndian.PutUint64(f[18:], now)
		}
		n, _ := ports[nm("net_ring_t1")].SendBatch(frames[:k])
		frames = frames[n:]
		time.Sleep(100 * time.Microsecond)
	}
	r := <-received
	if len(r.frames) != total {
		t.Fatalf("%d of %d frames crossed the emulated link; stats %+v", len(r.frames), total, fwd.Stats(emulator.AtoB))
	}
	// Each frame's crossing runs from its stamp, taken before it was
	// sent, to the receiver's clock read after the RecvBatch that took
	// it: a pause of either thread only lengthens it, so none is shorter
	// than the delay, which the forwarder counts from when it read the
	// frame, later still.
	shortest := time.Duration(1<<63 - 1)
	for i, f := range r.frames {
		if seq := int(binary.BigEndian.Uint32(f[14:])); seq != i {
			t.Fatalf("frame %d has sequence %d", i, seq)
		}
		shortest = min(shortest, time.Duration(r.at[i]-int64(binary.BigEndian.Uint64(f[18:]))))
	}
	testenv.JudgeTime(t, testenv.Timing{
		Quantity: "the shortest crossing of 2000 frames through a 2 ms delay", Got: shortest, Target: cfg.Delay,
		Tolerance: 10 * time.Microsecond, Bound: testenv.AtLeast,
		Resolution: testenv.Ms(time.Microsecond, "the wall clock read in user space at both ends (ns steps); the forwarder's monotonic due parts from it by at most the kernel's 500 ppm slew, 1 µs in 2 ms"),
	})
}

var (
	benchOnce sync.Once
	benchPort *Port
	benchErr  error
)

// BenchmarkRingIO measures the port's own cost: a 32-frame burst sent
// into a loopback ring and received back, in Mpps (frames sent and
// received per second of both calls together).
func BenchmarkRingIO(b *testing.B) {
	if initErr != nil {
		b.Skipf("DPDK EAL unavailable: %v", initErr)
	}
	// The benchmark function runs several times; a ring vdev's rings stay
	// reserved after its removal, so the device is made once.
	benchOnce.Do(func() {
		if benchErr = CreateVdev("net_ring9", ""); benchErr == nil {
			benchPort, benchErr = Open("net_ring9", Options{})
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	p := benchPort
	var out [][]byte
	for i := 0; i < 32; i++ {
		out = append(out, frame(i, 64))
	}
	in, l, s := bufs(32, 2048)
	b.ResetTimer()
	start := time.Now()
	frames := 0
	for i := 0; i < b.N; i++ {
		if _, err := p.SendBatch(out); err != nil {
			b.Fatal(err)
		}
		frames += func() int { n, _ := p.RecvBatch(in, l, s); return n }()
	}
	b.ReportMetric(float64(frames)/time.Since(start).Seconds()/1e6, "Mpps")
}

// TestAFPacketBetweenNamespaces is the DPDK port on veth stand-ins for
// VFs: ns A ═veth═ d1 [DPDK net_af_packet vdevs, forwarder with 5 ms
// delay each way] d2 ═veth═ ns B. Probes measure the delay's accuracy
// (an attempt in which the machine stalled is repeated, see below), and
// ping crosses with the delay.
func TestAFPacketBetweenNamespaces(t *testing.T) {
	needEAL(t)
	testenv.Tools(t, "ping")
	run := owner.NewRunID()
	ns := map[string]*links.HelperNS{}
	for _, n := range []string{"a", "dp", "b"} {
		h, err := links.CreateHelperNS(owner.NamespaceName(run, n))
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := h.Delete(); err != nil {
				t.Error(err)
			}
		}()
		ns[n] = h
	}
	for _, v := range []struct{ ns, name, peer, ip string }{{"a", "a0", "d1", "10.78.0.1/24"}, {"b", "b0", "d2", "10.78.0.2/24"}} {
		end := links.End{NS: ns[v.ns], Name: v.name, IP: netip.MustParsePrefix(v.ip)}
		if _, err := links.CreateVeth(end, links.End{NS: ns["dp"], Name: v.peer}); err != nil {
			t.Fatal(err)
		}
		// Frames cross user space: checksums must be complete.
		for _, e := range []links.End{end, {NS: ns["dp"], Name: v.peer}} {
			if err := links.DisableOffloads(e.NS, e.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The PMD opens its packet sockets in the calling thread's namespace.
	for i, iface := range []string{"d1", "d2"} {
		if err := CreateVdevIn(ns["dp"].NsHandle(), fmt.Sprintf("net_af_packet%d", i), "iface="+iface); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, n := range []string{"net_af_packet0", "net_af_packet1"} {
			if err := RemoveVdev(n); err != nil {
				t.Error(err)
			}
		}
	}()
	var ports []*Port
	for _, n := range []string{"net_af_packet0", "net_af_packet1"} {
		p, err := OpenIn(ns["dp"].NsHandle(), n, Options{IdleSleep: 20 * time.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := p.Close(); err != nil {
				t.Error(err)
			}
		}()
		ports = append(ports, p)
	}
	// start runs a fresh forwarder between the ports, d each way: each
	// measurement below reads the statistics of its own frames, not of
	// everything the link carried before.
	start := func(d time.Duration) *emulator.Forwarder {
		t.Helper()
		c := emulator.DefaultConfig()
		c.Delay = d
		f, err := emulator.NewForwarder(ports[0], ports[1], emulator.ForwarderConfig{AtoB: c, BtoA: c})
		if err != nil {
			t.Fatal(err)
		}
		f.Start()
		return f
	}
	probeRun := func(what string, d time.Duration) probe.Result {
		t.Helper()
		res, err := probe.Run(context.Background(), probe.Config{
			Sender: ns["a"].NsHandle(), Receiver: ns["b"].NsHandle(),
			Dst: netip.MustParseAddrPort("10.78.0.2:9999"), Rate: 1000, Duration: d, Drain: 200 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("probes over DPDK af_packet, %s: %v", what, res)
		if res.Lost != 0 || res.Reordered != 0 {
			t.Errorf("probes over DPDK af_packet, %s: %v; want nothing lost or reordered", what, res)
		}
		return res
	}
	const delay = 5 * time.Millisecond
	// Delay accuracy, in two parts, each judged by a quantile. The
	// emulator's own: frames leave at their due time, the lateness the
	// forwarder stamps (departure less due) at p50 within 50 µs (the
	// bound on added latency the port was built to). End to end, against
	// the path without delay measured just before on a fresh forwarder:
	// none earlier than 5 ms, and the first quartile at most 200 µs (4 %)
	// above 5 ms plus the path's own first quartile (on this loaded
	// machine the path's median moved by up to 68 µs with 50 probes, its
	// first quartile by a few; a forwarder late by a steady amount moves
	// both alike). The path without delay is measured first so
	// that the delay is judged by what it adds, not by this machine's load
	// (the probes' own cost: two veths, the polled ports, the sockets).
	// The DPDK port stamps a frame when it is polled, so the wait for the
	// poll is the path's, not the delay's; what remains is the forwarding
	// thread and the traffic sharing two vCPUs whose timer wake-ups
	// oversleep by 30-50 µs at p50 and up to 120 µs at p99 (a 20 µs
	// nanosleep, measured on the development VM).
	//
	// Why quantiles: every delay here is stamped where it happens (the
	// probe's send stamp, the kernel's receive stamp, the forwarder's
	// clock), but a pause of the machine makes late every frame due in it,
	// and the pauses this shared VM suffers reach testenv.CallerPause
	// without the stall watcher always recording them. One such pause
	// delays the 50 probes due in it at 1000 a second by 25 ms on average:
	// 0.3 ms on the mean of 4000, more than the bound a mean would be held
	// to, so no mean is known well enough (this test used to judge means
	// when the watcher saw no stall; they are logged). The same pause
	// moves a quantile only by those 50 probes: by 1.25 percentiles of the
	// 4000 delayed ones, 2.5 of the 2000 without delay, 1.2 of the
	// forwarder's 4200 frames. That distance, read from the run's own
	// samples (probe.Result.Delays, exact), is the quantile's resolution,
	// so a loaded run knows its quantiles less well.
	// The forwarder's lateness is known only by its summary: its 51.2nd
	// percentile is taken on the chord from p50 to p90, which lies above
	// a quantile function that is convex there (a density falling past
	// its mode, as a lateness's does), plus the histogram's bucket. An
	// attempt whose quantiles are known to less than a tenth of their bounds
	// is measured again, at most three attempts. A probe earlier than 5 ms
	// fails whatever happened: a pause only makes frames late.
	const (
		lateBound  = 50 * time.Microsecond
		addedBound = 200 * time.Microsecond
		perPause   = 50 // probes due in one pause of CallerPause at 1000 a second
	)
	// quantile is the q-quantile of a run's probe delays and how far one
	// pause can move it: to the quantile perPause probes further up.
	quantile := func(r probe.Result, q float64) (v, shift time.Duration) {
		d := slices.Sorted(slices.Values(r.Delays))
		if len(d) == 0 {
			t.Fatalf("no probe delays: %v", r)
		}
		i := int(q * float64(len(d)-1))
		return d[i], d[min(len(d)-1, i+perPause)] - d[i]
	}
	type measurement struct {
		base, res probe.Result
		late      emulator.HistogramSummary // the delayed run's, a to b
		added     time.Duration             // end to end, first quartile
		lateRes   time.Duration
		addedRes  time.Duration
		s25, bs25 time.Duration
		lateShift time.Duration
		machine   stallwatch.Report
		addedMean time.Duration
	}
	measure := func() (m measurement) {
		w := stallwatch.Start()
		f := start(0)
		m.base = probeRun("no delay", 2*time.Second)
		f.Stop()
		f = start(delay)
		m.res = probeRun("5 ms one way", 4*time.Second)
		m.late = f.Stats(emulator.AtoB).Emulator.Lateness
		f.Stop()
		m.machine = w.Stop()
		p25, s25 := quantile(m.res, 0.25)
		b25, bs25 := quantile(m.base, 0.25)
		m.added, m.s25, m.bs25 = p25-b25-delay, s25, bs25
		m.addedRes = max(s25+bs25, time.Microsecond)
		share := float64(perPause) / float64(max(m.late.Count, 1))
		m.lateShift = time.Duration(float64(m.late.P90-m.late.P50)*share/0.4) + m.late.P50*16/1000
		m.lateRes = max(m.lateShift, time.Microsecond)
		m.addedMean = time.Duration((m.res.MeanMs-m.base.MeanMs)*1e6) - delay
		return m
	}
	var m measurement
	for attempt := 1; ; attempt++ {
		m = measure()
		t.Logf("attempt %d: forwarder lateness over %d frames: p50 %v mean %v p90 %v p99 %v; end to end beyond 5 ms and the path's own: p25 %v, mean %v; %v",
			attempt, m.late.Count, m.late.P50, m.late.Mean, m.late.P90, m.late.P99, m.added, m.addedMean, m.machine)
		if m.res.Delay.Min < delay {
			break // judged below, whatever else happened
		}
		if (lateBound >= testenv.TimingRule*m.lateRes && addedBound >= testenv.TimingRule*m.addedRes) || attempt == 3 {
			break
		}
		t.Logf("attempt %d: one pause could move the quantiles by %v and %v: measuring again", attempt, m.lateRes, m.addedRes)
	}
	testenv.JudgeTime(t, testenv.Timing{
		Quantity: "the shortest probe through the 5 ms delay", Got: m.res.Delay.Min, Target: delay, Tolerance: 10 * time.Microsecond, Bound: testenv.AtLeast,
		Resolution: testenv.Ms(time.Microsecond, "the probe's CLOCK_REALTIME stamp before the send and the kernel's on arrival (ns); pauses only lengthen a probe's crossing"),
	})
	testenv.JudgeTime(t, testenv.Timing{
		Quantity: "the forwarder's median lateness", Got: m.late.P50, Tolerance: lateBound, Bound: testenv.AtMost,
		Resolution: testenv.Ms(m.lateRes, fmt.Sprintf("stamped by the forwarder; one pause of 50 frames moves the median on the chord to p90 (%v) by %v, with the histogram's 1.6 %% bucket; 1 µs at least", m.late.P90, m.lateShift)),
	})
	testenv.JudgeTime(t, testenv.Timing{
		Quantity: "first quartile of the delay through the DPDK port beyond 5 ms and the path's own", Got: m.added, Tolerance: addedBound, Bound: testenv.AtMost,
		Resolution: testenv.Ms(m.addedRes, fmt.Sprintf("exact probe delays stamped by sender and kernel; one pause of 50 probes moves the delayed run's quartile by %v, the undelayed's by %v (their own samples); 1 µs at least", m.s25, m.bs25)),
	})
	fwd := start(delay)
	defer fwd.Stop()
	out, err := exec.Command("ip", "netns", "exec", ns["a"].Name(), "ping", "-c", "5", "-i", "0.2", "-W", "2", "10.78.0.2").CombinedOutput()
	if err != nil {
		t.Fatalf("ping across the DPDK forwarder: %v\n%s", err, out)
	}
	var min, avg float64
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "rtt") {
			if _, err := fmt.Sscanf(line[strings.Index(line, "=")+2:], "%f/%f", &min, &avg); err != nil {
				t.Fatalf("ping's summary %q: %v", line, err)
			}
		}
	}
	t.Logf("ping over DPDK af_packet, 5 ms each way: rtt min %.2f avg %.2f ms", min, avg)
	testenv.Judge(t, testenv.Measurement{
		Quantity: "ping's fastest echo across both 5 ms delays (ms)", Got: min, Target: 10, Tolerance: 0.01, Bound: testenv.AtLeast,
		Resolution: testenv.Resolution{Value: 0.001, Derived: "ping prints µs, from its send stamp and the kernel's receive stamp; pauses only lengthen an echo"},
	})
	if _, err := exec.LookPath("iperf3"); err != nil {
		return
	}
	srv := exec.Command("ip", "netns", "exec", ns["b"].Name(), "iperf3", "-s", "-1", "-B", "10.78.0.2")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	// The server may have ended by itself after its one client; killed,
	// Wait reports the signal: neither says anything about the test.
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	time.Sleep(300 * time.Millisecond)
	out, err = exec.Command("ip", "netns", "exec", ns["a"].Name(), "iperf3", "-c", "10.78.0.2", "-t", "1", "-f", "m").CombinedOutput()
	if err != nil {
		t.Fatalf("iperf3 across the DPDK forwarder: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "receiver") {
			t.Logf("iperf3: %s", strings.TrimSpace(line))
		}
	}
}

var (
	fwdOnce  sync.Once
	fwdPorts map[string]*Port
	fwdErr   error
)

// BenchmarkForwarderRing measures hymn's emulator engine plus the DPDK
// port's I/O: frames pushed into one ring wire cross a forwarder (no
// impairment) and are pulled out of the other; Mpps is what arrived per
// second. Sender, receiver and the forwarder's two threads share the
// machine's cores, so on two cores this is a lower bound.
func BenchmarkForwarderRing(b *testing.B) {
	if initErr != nil {
		b.Skipf("DPDK EAL unavailable: %v", initErr)
	}
	fwdOnce.Do(func() {
		fwdPorts = map[string]*Port{}
		for _, w := range [][2]string{{"net_ring_bt1", "net_ring_be1"}, {"net_ring_be2", "net_ring_bt2"}} {
			if fwdErr = CreateWire(w[0], w[1]); fwdErr != nil {
				return
			}
		}
		for _, n := range []string{"net_ring_bt1", "net_ring_be1", "net_ring_be2", "net_ring_bt2"} {
			var p *Port
			// Polled ports under a forwarder whose threads run at real-
			// time priority would starve this benchmark's sender and
			// receiver on two cores; sleeping when idle leaves them the CPU.
			if p, fwdErr = Open(n, Options{IdleSleep: 10 * time.Microsecond}); fwdErr != nil {
				return
			}
			fwdPorts[n] = p
		}
	})
	if fwdErr != nil {
		b.Fatal(fwdErr)
	}
	fwd, err := emulator.NewForwarder(fwdPorts["net_ring_be1"], fwdPorts["net_ring_be2"],
		emulator.ForwarderConfig{AtoB: emulator.DefaultConfig(), BtoA: emulator.DefaultConfig()})
	if err != nil {
		b.Fatal(err)
	}
	fwd.Start()
	defer fwd.Stop()
	var out [][]byte
	for i := 0; i < 32; i++ {
		out = append(out, frame(i, 64))
	}
	// A closed loop: at most window frames in flight, so the rate is what
	// the path sustains, not how fast the sender can overflow it.
	const window = 512
	var recvd atomic.Int64
	got := make(chan int)
	go func() {
		in, l, s := bufs(32, 2048)
		n := 0
		idle := time.Now()
		for n < b.N && time.Since(idle) < 200*time.Millisecond {
			k, _ := fwdPorts["net_ring_bt2"].RecvBatch(in, l, s)
			if k > 0 {
				n += k
				recvd.Add(int64(k))
				idle = time.Now()
			} else {
				runtime.Gosched()
			}
		}
		got <- n
	}()
	b.ResetTimer()
	start := time.Now()
	var lost int64
	var stalled time.Time
	for sent := 0; sent < b.N; {
		if int64(sent)-recvd.Load()-lost > window {
			// Frames the forwarder dropped never arrive: after 10 ms
			// without room, count what is outstanding as lost.
			if stalled.IsZero() {
				stalled = time.Now()
			} else if time.Since(stalled) > 10*time.Millisecond {
				lost, stalled = int64(sent)-recvd.Load(), time.Time{}
			}
			runtime.Gosched()
			continue
		}
		stalled = time.Time{}
		k, _ := fwdPorts["net_ring_bt1"].SendBatch(out[:min(32, b.N-sent)])
		sent += k
	}
	n := <-got
	el := time.Since(start)
	b.ReportMetric(float64(n)/el.Seconds()/1e6, "Mpps")
	b.ReportMetric(100*float64(b.N-n)/float64(b.N), "%lost")
}

// TestCompareWithAFPacket forwards the same traffic over the same veth
// pair through hymn's emulator twice, once on the pure-Go AF_PACKET port
// and once on this DPDK port (net_af_packet vdevs), and logs both rates
// and their ratio. It takes a few seconds; run it alone to read the rates:
//
//	go test -tags dpdk -run CompareWithAFPacket -v ./emulator/dpdk
func TestCompareWithAFPacket(t *testing.T) {
	needEAL(t)
	run := owner.NewRunID()
	ns := map[string]*links.HelperNS{}
	for _, n := range []string{"a", "dp", "b"} {
		h, err := links.CreateHelperNS(owner.NamespaceName(run, n))
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := h.Delete(); err != nil {
				t.Error(err)
			}
		}()
		ns[n] = h
	}
	for _, v := range [][3]string{{"a", "a0", "d1"}, {"b", "b0", "d2"}} {
		if _, err := links.CreateVeth(links.End{NS: ns[v[0]], Name: v[1]}, links.End{NS: ns["dp"], Name: v[2]}); err != nil {
			t.Fatal(err)
		}
	}
	send, err := afpacket.OpenIn(ns["a"].NsHandle(), "a0", afpacket.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := send.Close(); err != nil {
			t.Error(err)
		}
	}()
	recv, err := afpacket.OpenIn(ns["b"].NsHandle(), "b0", afpacket.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := recv.Close(); err != nil {
			t.Error(err)
		}
	}()
	const total = 300000
	measure := func(a, b emulator.Port) float64 {
		fwd, err := emulator.NewForwarder(a, b, emulator.ForwarderConfig{AtoB: emulator.DefaultConfig(), BtoA: emulator.DefaultConfig()})
		if err != nil {
			t.Fatal(err)
		}
		fwd.Start()
		defer fwd.Stop()
		var out [][]byte
		for i := 0; i < 32; i++ {
			out = append(out, frame(i, 64))
		}
		in, l, s := bufs(64, 2048)
		sent, got := 0, 0
		start := time.Now()
		last := start
		for got < total && time.Since(last) < time.Second {
			if sent-got < 1024 && sent < total {
				k, _ := send.SendBatch(out)
				sent += k
			}
			if err := recv.Wait(100 * time.Microsecond); err != nil {
				t.Fatal(err)
			}
			n, _ := recv.RecvBatch(in, l, s)
			for i := 0; i < n; i++ {
				if f := in[i][:l[i]]; len(f) >= 14 && f[12] == 0x88 && f[13] == 0xb5 {
					got++
				}
			}
			if n > 0 {
				last = time.Now()
			}
			if sent-got >= 1024 && time.Since(last) > 20*time.Millisecond {
				sent = got // frames lost on the way: stop waiting for them
			}
		}
		return float64(got) / time.Since(start).Seconds()
	}
	var afp []*afpacket.Port
	for _, n := range []string{"d1", "d2"} {
		p, err := afpacket.OpenIn(ns["dp"].NsHandle(), n, afpacket.Options{})
		if err != nil {
			t.Fatal(err)
		}
		afp = append(afp, p)
	}
	rateAF := measure(afp[0], afp[1])
	// HYMN_BENCH_IDLE (a duration) sets the DPDK ports' IdleSleep; 0
	// polls, which on two shared cores competes with sender and receiver.
	idle := 10 * time.Microsecond
	if v := os.Getenv("HYMN_BENCH_IDLE"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			idle = d
		}
	}
	for _, p := range afp {
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i, iface := range []string{"d1", "d2"} {
		if err := CreateVdevIn(ns["dp"].NsHandle(), fmt.Sprintf("net_af_packet%d", 10+i), "iface="+iface); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, n := range []string{"net_af_packet10", "net_af_packet11"} {
			if err := RemoveVdev(n); err != nil {
				t.Error(err)
			}
		}
	}()
	var dp []*Port
	for i := 0; i < 2; i++ {
		p, err := OpenIn(ns["dp"].NsHandle(), fmt.Sprintf("net_af_packet%d", 10+i), Options{IdleSleep: idle})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := p.Close(); err != nil {
				t.Error(err)
			}
		}()
		dp = append(dp, p)
	}
	rateDPDK := measure(dp[0], dp[1])
	t.Logf("same veth pair, 64-byte frames, closed loop of 1024: AF_PACKET port %.0f kpps, DPDK net_af_packet port (IdleSleep %v) %.0f kpps, DPDK/AF_PACKET %.2f",
		rateAF/1e3, idle, rateDPDK/1e3, rateDPDK/rateAF)
}
