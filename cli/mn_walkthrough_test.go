package cli

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
)

// Mininet's walkthrough (mininet/test/test_walkthrough.py) against hymn
// installed as mn: the built binary under the name mn, so Mininet's
// defaults hold (Open vSwitch switches in userspace mode, the default
// controller, ovs-testcontroller here), driven through a pseudo-terminal.

// mnBinary is the shared hymn binary behind a link named mn.
func mnBinary(t *testing.T) string {
	t.Helper()
	mn := filepath.Join(t.TempDir(), "mn")
	if err := os.Symlink(sharedBinary(t), mn); err != nil {
		t.Fatal(err)
	}
	return mn
}

func startMN(t *testing.T, args ...string) *session {
	t.Helper()
	testenv.RootAndTools(t, "ovs-vswitchd", "ovsdb-server", "ovs-testcontroller")
	return startSessionOf(t, mnBinary(t), args...)
}

// holdOpenFlowPort listens on 127.0.0.1:6653 for the test's length, as
// another network's controller (or any program) may: hymn's controller
// must then still be on lo's port 6653. If something else holds it
// already, that does the same.
func holdOpenFlowPort(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:6653")
	if err != nil {
		t.Logf("127.0.0.1:6653 is already taken (%v): that is the case under test", err)
		return
	}
	t.Cleanup(func() { _ = l.Close() }) // only held, never read
}

var iperfResults = regexp.MustCompile(`\*\*\* Results: \['([\d.]+) ([KMG]?)bits/sec', '([\d.]+) ([KMG]?)bits/sec'\]`)

// iperfMbits returns the server's rate of an iperf results line in Mbit/s.
func iperfMbits(t *testing.T, out string) float64 {
	t.Helper()
	m := iperfResults.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no iperf results:\n%s", out)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v * map[string]float64{"": 1e-6, "K": 1e-3, "M": 1, "G": 1e3}[m[2]]
}

// linkChangeIperf runs testLinkChange's first two steps under mn with
// switch (and Mininet's defaults otherwise): a ping, then iperf over two
// emulated links of 10 Mbit/s and 10 ms. It returns the iperf server rate
// in Mbit/s and the session, at the prompt.
func linkChangeIperf(t *testing.T, switchArgs ...string) (float64, *session) {
	t.Helper()
	s := startMN(t, append([]string{"-w", "--link", "tc,bw=10,delay=10ms"}, switchArgs...)...)
	s.expect(`mininet> `, 60*time.Second)
	if out := s.command("h1 route && ping -c1 h2"); !strings.Contains(out, "1 received") {
		t.Fatalf("h1 ping -c1 h2:\n%s", out)
	}
	// iperf takes 5 s; before the fix it ended after 2 minutes with
	// "iperf3 from h1 to h2: interrupt - the client has terminated".
	s.send("iperf")
	out := strings.ReplaceAll(s.expect(`(^|\n)mininet> $`, 40*time.Second), "\r", "")
	return iperfMbits(t, out), s
}

// The walkthrough's testLinkChange with Open vSwitch switches: TCP through
// an emulated link into an OVS userspace-datapath port. The emulator
// carries the hosts' GSO super-frames and checksum-offload state, and
// ovs-vswitchd reads its ports without that state, forwarding a checksum
// left for the NIC unfilled: h2 dropped every SYN and iperf never ended.
//
// The rate's bounds come from the policer: 10 Mbit/s of wire bytes carry
// 1448 bytes of TCP payload per 1538 (1448 + 52 TCP/IP + 14 Ethernet + 24
// preamble, FCS and gap), 9.415 Mbit/s, what --switch lxbr measures. The
// upper bound adds 3% for iperf3's own clock; the lower one allows 10%:
// the reactive controller sets up both TCP connections by packet-in (the
// first ping takes twice the RTT), slow start takes two 40 ms RTTs, and a
// 30 ms machine stall, together about 5% of the 5 s, doubled. With the
// default 208 KiB receive buffer on the packet sockets through which
// ovs-vswitchd reads its ports (110 ms of this link's segments), the
// kernel dropped segments there whenever ovs-vswitchd waited that long
// for a CPU (3.6-6.8 Mbit/s at load 30 on 2 CPUs, lxbr 9.1); hymn now
// gives them 4 MiB (nodes.portRcvBuf). Should an overcommitted machine
// still fill them, an attempt below the bound with drops at those sockets
// (ss shows them), or with Linux bridges below it too right after, is the
// machine's and is repeated, at most three times; one below it while
// Linux bridges carry the rate fails. Pings: the fastest of four is never below the
// 4 x 10 ms of the links and within Mininet's 50 ms.
//
// Resolutions (testenv.Judge). The rate is the iperf3 server's: bytes
// received over its own window, which it opens before it tells the
// client to send (TEST_RUNNING) and closes after the client's TEST_END.
// For the ceiling a pause only lengthens that window, so only the clock
// counts: testenv.TimerSlack over the 5 s, 0.02 %. For the floor a pause
// of the machine, at either end or in the middle (the sender stops),
// costs up to testenv.CallerPause of the 5 s: 1 %, ten of which are the
// 10 % allowed.
func TestMNWalkthroughLinkChangeOVS(t *testing.T) {
	testenv.Tools(t, "iperf3", "telnet", "ss")
	const limit = 10 * 1448.0 / 1538
	const window = 5 * time.Second // Mininet's iperf
	lo := 0.9 * limit
	ceiling := testenv.Resolution{Value: float64(testenv.TimerSlack) / float64(window),
		Derived: "iperf3's receiver window opens before the client may send and closes after it stopped: a pause only lengthens it; the clock (testenv.TimerSlack) over 5 s"}
	judgeRate := func(rate float64, bound testenv.Bound) bool {
		m := testenv.Measurement{Quantity: "iperf server rate through OVS / the policer's limit (10 Mbit/s of 1538-byte frames carrying 1448 bytes)",
			Got: rate / limit, Target: 1, Tolerance: 0.03, Bound: bound, Resolution: ceiling}
		if bound == testenv.AtLeast {
			m.Tolerance, m.Resolution = 0.1, testenv.CallerWindow(1, window)
		}
		return testenv.Judge(t, m)
	}
	var rate float64
	for attempt := 1; ; attempt++ {
		var s *session
		rate, s = linkChangeIperf(t)
		judgeRate(rate, testenv.AtMost)
		if rate >= lo {
			judgeRate(rate, testenv.AtLeast) // in bounds: logs the judgement
			checkLinkChangePing(t, s)
			s.exit()
			break
		}
		drops := socketDrops(s.command("s1 ss -0 -a -m -p"))
		s.exit()
		load, _ := os.ReadFile("/proc/loadavg")
		// Without drops at those sockets, the same iperf through Linux
		// bridges, right after, says whether the machine could carry the
		// rate at all (a neighbour's VMs: OVS 8.01, lxbr 6.30 Mbit/s): if
		// it could not either, the attempt is the machine's too.
		machine := drops > 0
		if !machine {
			lx, ls := linkChangeIperf(t, "--switch", "lxbr")
			ls.exit()
			machine = lx < lo
			t.Logf("attempt %d: OVS %.2f Mbit/s, lxbr right after %.2f", attempt, rate, lx)
		}
		if !machine || attempt == 3 {
			judgeRate(rate, testenv.AtLeast) // out of bounds: fails the test
			t.Logf("iperf through OVS: %.2f Mbit/s, below %.2f (attempt %d; ovs-vswitchd's port sockets dropped %d; load %s)",
				rate, lo, attempt, drops, strings.TrimSpace(string(load)))
			break
		}
		t.Logf("attempt %d: %.2f Mbit/s with %d drops at ovs-vswitchd's port sockets (load %s): the machine's, repeating",
			attempt, rate, drops, strings.TrimSpace(string(load)))
	}
	// The same with Linux bridges, side by side for the log.
	lx, s := linkChangeIperf(t, "--switch", "lxbr")
	s.exit()
	t.Logf("iperf server rate: OVS %.2f Mbit/s, lxbr %.2f Mbit/s (ratio %.3f; the policer's limit %.3f)", rate, lx, rate/lx, limit)
}

// checkLinkChangePing is testLinkChange's last step. The fastest RTT is
// ping's summary minimum, printed to 1 µs from ping's send stamp and the
// kernel's receive stamp. A pause only lengthens an RTT, so the floor (the
// links' 40 ms, less 0.1 ms) needs no more; it raises the minimum of four
// probes a second apart only if it overlaps all four, and a pause of this
// machine kind (testenv.CallerPause) is 20 times shorter than their
// spacing: the ceiling's resolution is ping's too.
func checkLinkChangePing(t *testing.T, s *session) {
	t.Helper()
	out := s.command("h1 ping -c 4 h2")
	var rtts []float64
	for _, m := range regexp.MustCompile(`time=([\d.]+) ms`).FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		rtts = append(rtts, v)
	}
	if len(rtts) == 0 {
		t.Fatalf("h1 ping -c 4 h2: no reply: %q", out)
	}
	if len(rtts) < 4 {
		t.Logf("h1 ping -c 4 h2: %d of 4 replies: %q", len(rtts), out)
	}
	m := regexp.MustCompile(`rtt min/avg/max/mdev = ([\d.]+)/`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("h1 ping -c 4 h2: no summary: %q", out)
	}
	ms, _ := strconv.ParseFloat(m[1], 64)
	fastest := time.Duration(ms * float64(time.Millisecond))
	res := testenv.Ms(time.Microsecond, "ping's summary minimum, printed to 1 µs; a pause only lengthens an RTT, and raises the minimum of four probes 1 s apart only if it overlaps all four")
	q := fmt.Sprintf("fastest of the RTTs %v ms (four 10 ms link crossings)", rtts)
	testenv.JudgeTime(t, testenv.Timing{Quantity: q, Got: fastest, Target: 40 * time.Millisecond,
		Tolerance: 100 * time.Microsecond, Bound: testenv.AtLeast, Resolution: res})
	testenv.JudgeTime(t, testenv.Timing{Quantity: q + ", Mininet's 50 ms", Got: fastest, Target: 40 * time.Millisecond,
		Tolerance: 10 * time.Millisecond, Bound: testenv.AtMost, Resolution: res})
}

// socketDrops sums the drop counters (skmem's d) of ovs-vswitchd's
// packet sockets in ss -0 -a -m -p output.
func socketDrops(out string) int {
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, "ovs-vswitchd") {
			continue
		}
		if m := regexp.MustCompile(`skmem:\(.*,d(\d+)\)`).FindStringSubmatch(line); m != nil {
			d, _ := strconv.Atoi(m[1])
			n += d
		}
	}
	return n
}

// The walkthrough's testHostCommands: h1 sees its own interface and lo;
// s1's commands run where its ports are (the namespace of the network's
// Open vSwitch, as Mininet's run in the root namespace where its switch
// ports are), so s1 ifconfig -a lists s1-eth1 and s1-eth2 and lo and none
// of h1's; h1 and s1 share the PID namespace, so ps differs by at most
// two lines (the ps and egrep themselves). Mininet's test also counts the
// machine's own NIC in s1's list, which is in the root namespace and so
// not in hymn's switch namespace (kept out of the root namespace so that
// networks run side by side): that one check is left out.
func TestMNWalkthroughHostCommands(t *testing.T) {
	testenv.Tools(t, "ifconfig")
	s := startMN(t, "-w")
	s.expect(`mininet> `, 60*time.Second)
	names := func(out string) []string {
		var n []string
		for _, m := range regexp.MustCompile(`(?m)^([\w@.-]+): flags`).FindAllStringSubmatch(out, -1) {
			n = append(n, m[1])
		}
		return n
	}
	if got := names(s.command("h1 ifconfig -a")); strings.Join(got, " ") != "h1-eth0 lo" {
		t.Errorf("h1 ifconfig -a lists %v, want h1-eth0 and lo", got)
	}
	got := names(s.command("s1 ifconfig -a"))
	for _, want := range []string{"s1-eth1", "s1-eth2", "lo"} {
		if !slices.Contains(got, want) {
			t.Errorf("s1 ifconfig -a lists %v: no %s", got, want)
		}
	}
	if slices.Contains(got, "h1-eth0") {
		t.Errorf("s1 ifconfig -a lists h1's interface: %v", got)
	}
	lines := func(out string) map[string]bool {
		set := map[string]bool{}
		for _, l := range strings.Split(out, "\n")[1:] {
			set[l] = true
		}
		return set
	}
	// Other work on the machine starts and ends processes between two
	// listings: only h1's lines that are there before and after s1's
	// listing count.
	h1 := lines(s.command("h1 ps -a | egrep -v 'ps|grep'"))
	s1 := lines(s.command("s1 ps -a | egrep -v 'ps|grep'"))
	h1again := lines(s.command("h1 ps -a | egrep -v 'ps|grep'"))
	var diffs []string
	for l := range h1 {
		if h1again[l] && !s1[l] {
			diffs = append(diffs, l)
		}
	}
	if len(diffs) > 2 {
		t.Errorf("h1 and s1 ps differ in %d lines: %q", len(diffs), diffs)
	}
	// Open vSwitch's tools reach the switches from s1's shell and from
	// sh, as Mininet's reach the system's Open vSwitch in the root
	// namespace (ovs-vsctl failed: /var/run/openvswitch/db.sock).
	// (A node name as an argument becomes its IP, as in Mininet, so the
	// bridge is not named.)
	if out := s.command("s1 ovs-vsctl list-br"); !strings.HasPrefix(out, "s1 ovs-vsctl list-br\ns1\nmininet> ") {
		t.Errorf("s1 ovs-vsctl list-br: %q", out)
	}
	// The OpenFlow port numbers are Mininet's (s1-eth1 is port 1).
	if out := s.command("sh ovs-ofctl show s1"); !strings.Contains(out, " 1(s1-eth1): ") || !strings.Contains(out, " 2(s1-eth2): ") {
		t.Errorf("sh ovs-ofctl show s1:\n%s", out)
	}
	s.exit()
}

// The walkthrough's testVerbosity: mn -v output prints nothing before the
// first prompt, also when 127.0.0.1:6653 is taken (by another network's
// controller: hymn's then listens on 6653 of another loopback address,
// which needs no warning; it printed "*** c0: port 6653 is in use;
// listening on 6654" before). The network still works: c0 is on a port
// 6653 and the switch reaches it.
func TestMNWalkthroughVerbosityOutput(t *testing.T) {
	holdOpenFlowPort(t)
	s := startMN(t, "-v", "output")
	if before := s.expect(`mininet> `, 60*time.Second); before != "mininet> " {
		t.Errorf("mn -v output printed %d characters before the prompt: %q", len(before)-len("mininet> "), before)
	}
	if out := s.command("dump"); !regexp.MustCompile(`<OVSController c0: 127\.0\.0\.\d+:6653 pid=\d+> `).MatchString(out) {
		t.Errorf("c0 is not on a loopback port 6653:\n%s", out)
	}
	if out := s.command("pingall"); !strings.Contains(out, "*** Results: 0% dropped (2/2 received)") {
		t.Errorf("pingall:\n%s", out)
	}
	s.exit()
}

// The walkthrough's testWireshark: tshark -i lo -Y openflow_v1, started
// before mn --test pingall, shows a 74-byte OFPT_HELLO (the controller's:
// an OpenFlow 1.0 header alone). hymn's switches reach their controller
// through a relay in hymn, which connects to it over TCP on lo, and the
// controller is on port 6653 (Wireshark decodes OpenFlow on that port
// only) even when 127.0.0.1:6653 is taken. Other networks on the machine
// may show up in the capture too, so the hello must come from this run's
// controller address to one of this run's relay connections (both in
// mn's -v debug lines).
func TestMNWalkthroughWireshark(t *testing.T) {
	testenv.RootAndTools(t, "tshark", "ovs-vswitchd", "ovsdb-server", "ovs-testcontroller")
	holdOpenFlowPort(t)
	tshark := exec.Command("tshark", "-i", "lo", "-l", "-Y", "openflow_v1", "-T", "fields",
		"-e", "frame.len", "-e", "ip.src", "-e", "tcp.srcport", "-e", "ip.dst", "-e", "tcp.dstport", "-e", "_ws.col.Info")
	tshark.Dir = t.TempDir()
	stdout, err := tshark.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := tshark.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tshark.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var frames []string
	captured := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			mu.Lock()
			frames = append(frames, sc.Text())
			mu.Unlock()
		}
		close(captured)
	}()
	capturing := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Capturing on") {
				once.Do(func() { close(capturing) })
			}
		}
	}()
	stop := func() {
		// Errors here mean tshark has ended already, which is the aim.
		_ = tshark.Process.Signal(os.Interrupt)
		select {
		case <-captured:
		case <-time.After(10 * time.Second):
			_ = tshark.Process.Kill()
		}
		_ = tshark.Wait() // interrupted: a non-zero exit is expected
	}
	t.Cleanup(stop)
	select {
	case <-capturing:
	case <-time.After(30 * time.Second):
		t.Fatal("tshark never said it was capturing on lo")
	}
	out, err := exec.Command(mnBinary(t), "--test", "pingall", "-v", "debug").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "0% dropped") {
		t.Fatalf("mn --test pingall: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`\*\*\* c0: listening on (127\.0\.0\.\d+):(\d+)[ \n]`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no listening line in mn -v debug:\n%s", out)
	}
	if m[2] != "6653" {
		t.Errorf("c0 listened on %s:%s, not on port 6653", m[1], m[2])
	}
	relays := map[string]bool{}
	for _, r := range regexp.MustCompile(`switch connected \(tcp 127\.0\.0\.1:(\d+) -> `).FindAllStringSubmatch(string(out), -1) {
		relays[r[1]] = true
	}
	time.Sleep(time.Second) // tshark prints what it decoded with a delay
	stop()
	mu.Lock()
	defer mu.Unlock()
	for _, f := range frames {
		fl := strings.Split(f, "\t")
		if len(fl) == 6 && fl[0] == "74" && fl[1] == m[1] && fl[2] == m[2] && relays[fl[4]] && strings.Contains(fl[5], "Type: OFPT_HELLO") {
			return
		}
	}
	t.Errorf("tshark -i lo -Y openflow_v1 showed no 74-byte OFPT_HELLO from %s:%s to the relay ports %v; it showed %d frames:\n%s",
		m[1], m[2], relays, len(frames), strings.Join(frames, "\n"))
}
