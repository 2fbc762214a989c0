package bpfswitch

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

func TestBoundFor(t *testing.T) {
	for n, want := range map[int]int{0: 8, 1: 8, 8: 8, 9: 16, 200: 256, 1024: 1024, 5000: 1024} {
		if got := boundFor(n); got != want {
			t.Errorf("boundFor(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestProgramAssembles(t *testing.T) {
	p, err := program(3, 4, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(p)%8 != 0 || len(p)/8 < 50 {
		t.Fatalf("%d bytes", len(p))
	}
}

// Too many ports are refused before anything is made.
func TestTooManyPorts(t *testing.T) {
	_, err := New("big", MaxPorts+1)
	if !errors.Is(err, ErrTooManyPorts) || !strings.Contains(err.Error(), "at most 1024 ports") {
		t.Fatalf("New with %d ports: %v", MaxPorts+1, err)
	}
}

// The assembled program passes the verifier at every size it is loaded
// at, and the largest loads well within a second.
func TestProgramLoads(t *testing.T) {
	testenv.Root(t)
	for _, ports := range []int{1, 3, 100, MaxPorts} {
		s, err := New("t"+strconv.Itoa(ports), ports)
		if err != nil {
			t.Fatalf("%d ports: %v", ports, err)
		}
		if s.bound != initialBound(ports) {
			t.Errorf("%d ports: room for %d", ports, s.bound)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil { // twice is fine
			t.Fatal(err)
		}
	}
}

// lab is a switch namespace with hosts, each host linked to a switch port
// by a veth: host i is h<i> (10.9.0.<i>, MAC 02:00:00:00:00:<i>) on port
// p<i>.
type lab struct {
	t      *testing.T
	prefix string
	sw     netns.NsHandle
	h      *netlink.Handle // in the switch's namespace
}

func newLab(t *testing.T, hosts int) *lab {
	t.Helper()
	l := &lab{t: t, prefix: fmt.Sprintf("bpfswt%d-", os.Getpid())}
	l.ip("netns", "add", l.prefix+"sw")
	t.Cleanup(func() { l.delNetns(l.prefix + "sw") })
	for i := 1; i <= hosts; i++ {
		l.addHost(i)
	}
	var err error
	if l.sw, err = netns.GetFromName(l.prefix + "sw"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.sw.Close(); err != nil {
			t.Error(err)
		}
	})
	if l.h, err = netlink.NewHandleAt(l.sw); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.h.Close)
	return l
}

func (l *lab) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// delNetns deletes a namespace in a cleanup, failing the test (not
// stopping it) if the namespace is left behind.
func (l *lab) delNetns(name string) {
	if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
		l.t.Errorf("ip netns del %s: %v: %s", name, err, out)
	}
}

func (l *lab) host(i int) string { return l.prefix + "h" + strconv.Itoa(i) }

func (l *lab) addHost(i int) {
	h, sw := l.host(i), l.prefix+"sw"
	l.ip("netns", "add", h)
	l.t.Cleanup(func() { l.delNetns(h) })
	// No IPv6: its router solicitations and reports are multicast, flooded
	// to every host, and would blur the learning test's counts.
	l.ip("netns", "exec", h, "sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1", "net.ipv6.conf.all.disable_ipv6=1")
	l.ip("-n", sw, "link", "add", "p"+strconv.Itoa(i), "type", "veth", "peer", "name", "eth0", "netns", h)
	l.ip("-n", h, "link", "set", "eth0", "address", fmt.Sprintf("02:00:00:00:00:%02x", i), "up")
	l.ip("-n", h, "addr", "add", fmt.Sprintf("10.9.0.%d/24", i), "dev", "eth0")
}

// attach attaches port p<i> and sets it up.
func (l *lab) attach(s *Switch, i int) {
	l.t.Helper()
	if err := s.Attach(l.h, "p"+strconv.Itoa(i)); err != nil {
		l.t.Fatal(err)
	}
	link, err := l.h.LinkByName("p" + strconv.Itoa(i))
	if err == nil {
		err = l.h.LinkSetUp(link)
	}
	if err != nil {
		l.t.Fatal(err)
	}
	// The carrier comes up when the kernel's link watcher gets to it,
	// which a loaded machine delays by a second and more: a ping before
	// that is lost (fresh-root run: "h1 cannot ping h3" right after the
	// attach). hymn's links wait for it the same way (links.WaitOperUp).
	deadline := time.Now().Add(10 * time.Second)
	for {
		link, err := l.h.LinkByName("p" + strconv.Itoa(i))
		if err != nil {
			l.t.Fatal(err)
		}
		if link.Attrs().OperState == netlink.OperUp {
			return
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("p%d is not operationally up 10 s after it was set up: %v", i, link.Attrs().OperState)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ping sends count pings from host a to host b and reports whether all
// came back.
func (l *lab) ping(a, b, count int) bool {
	out, err := exec.Command("ip", "netns", "exec", l.host(a), "ping", "-q", "-n", "-c", strconv.Itoa(count),
		"-i", "0.01", "-W", "1", fmt.Sprintf("10.9.0.%d", b)).CombinedOutput()
	ok := err == nil && strings.Contains(string(out), fmt.Sprintf("%d received", count))
	if !ok {
		l.t.Logf("h%d ping h%d: %v\n%s", a, b, err, out)
	}
	return ok
}

// reach reports whether host a reaches host b: one ping, sent again (at
// most three in all) when it is lost, since a machine with a dozen
// runnable tasks per CPU can keep ping from its reply for longer than
// its one-second wait; a switch that does not forward loses all three.
func (l *lab) reach(a, b int) bool {
	for try := 0; try < 3; try++ {
		if l.ping(a, b, 1) {
			return true
		}
	}
	return false
}

// rx returns host i's eth0 received-packet counter.
func (l *lab) rx(i int) uint64 {
	l.t.Helper()
	res, err := exec.Command("ip", "netns", "exec", l.host(i), "cat", "/sys/class/net/eth0/statistics/rx_packets").Output()
	if err != nil {
		l.t.Fatal(err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(res)), 10, 64)
	if err != nil {
		l.t.Fatal(err)
	}
	return n
}

func (l *lab) fdb(s *Switch) map[string]int {
	l.t.Helper()
	entries, err := s.FDB()
	if err != nil {
		l.t.Fatal(err)
	}
	m := map[string]int{}
	for _, e := range entries {
		m[e.MAC.String()] = e.Ifindex
	}
	return m
}

// The switch forwards, learns (a known unicast destination gets its
// frames alone), forgets a detached port and floods to a port attached
// again.
func TestSwitchForwardsAndLearns(t *testing.T) {
	testenv.Root(t)
	l := newLab(t, 3)
	s, err := New("lab", 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	for i := 1; i <= 3; i++ {
		l.attach(s, i)
	}
	for _, p := range [][2]int{{1, 2}, {1, 3}, {2, 3}} {
		if !l.reach(p[0], p[1]) {
			t.Fatalf("h%d cannot ping h%d", p[0], p[1])
		}
	}
	fdb := l.fdb(s)
	ports := s.Ports()
	for i := 1; i <= 3; i++ {
		mac := fmt.Sprintf("02:00:00:00:00:%02x", i)
		if fdb[mac] != ports[i-1].Ifindex {
			t.Errorf("%s learned on %d, want port p%d (%d); table %v", mac, fdb[mac], i, ports[i-1].Ifindex, fdb)
		}
	}

	// Unicast between h1 and h2 is not flooded to h3.
	before := l.rx(3)
	if !l.ping(1, 2, 50) {
		t.Fatal("h1 -> h2: loss")
	}
	got := l.rx(3) - before
	t.Logf("h3 received %d frames while h1 pinged h2 50 times", got)
	if got > 10 { // ARP broadcasts may come; flooding would bring 100
		t.Errorf("h3 received %d frames while h1 pinged h2 50 times", got)
	}

	// A detached port is out: no flooding to it, nothing learned on it.
	if err := s.Detach(l.h, "p3"); err != nil {
		t.Fatal(err)
	}
	if l.ping(1, 3, 1) {
		t.Error("h1 reaches h3 through a detached port")
	}
	if _, ok := l.fdb(s)["02:00:00:00:00:03"]; ok {
		t.Error("h3's address is still in the table after its port left")
	}
	if len(s.Ports()) != 2 {
		t.Errorf("ports after Detach: %v", s.Ports())
	}
	if err := s.Detach(l.h, "p3"); err != nil { // twice is fine
		t.Fatal(err)
	}
	l.attach(s, 3)
	if !l.reach(1, 3) {
		t.Error("h1 cannot reach h3 once its port is back")
	}

	// A port deleted and made again under its name takes its entry over.
	old := s.Ports()[2].Ifindex
	l.ip("-n", l.prefix+"sw", "link", "del", "p3")
	l.ip("-n", l.prefix+"sw", "link", "add", "p3", "type", "veth", "peer", "name", "eth0", "netns", l.host(3))
	l.ip("-n", l.host(3), "link", "set", "eth0", "address", "02:00:00:00:00:03", "up")
	l.ip("-n", l.host(3), "addr", "add", "10.9.0.3/24", "dev", "eth0")
	l.attach(s, 3)
	if p := s.Ports(); len(p) != 3 || p[2].Ifindex == old {
		t.Errorf("ports after p3 was made again: %v (old index %d)", p, old)
	}
	if !l.reach(2, 3) {
		t.Error("h2 cannot reach h3 on its new port")
	}
}

// A switch grows past the room it was made with: a larger program and
// port list on every port, the learned table kept.
func TestSwitchGrows(t *testing.T) {
	testenv.Root(t)
	const n = 10 // room for 2, then 8 (minBound), then 16
	l := newLab(t, n)
	s, err := New("grow", 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	for i := 1; i <= 2; i++ {
		l.attach(s, i)
	}
	if !l.reach(1, 2) {
		t.Fatal("h1 cannot ping h2")
	}
	for i := 3; i <= n; i++ {
		l.attach(s, i)
	}
	if s.bound != 16 {
		t.Errorf("room for %d ports, want 16", s.bound)
	}
	if _, ok := l.fdb(s)["02:00:00:00:00:01"]; !ok {
		t.Error("the table was lost when the switch grew")
	}
	for _, b := range []int{2, 9, n} {
		if !l.reach(1, b) {
			t.Errorf("h1 cannot ping h%d after growing", b)
		}
	}
}

// send writes one raw frame out of host i's eth0.
func (l *lab) send(i int, frame []byte) {
	l.t.Helper()
	ns, err := netns.GetFromName(l.host(i))
	if err != nil {
		l.t.Fatal(err)
	}
	defer func() { _ = ns.Close() }() // our own descriptor
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends in the host's namespace
		if err := netns.Set(ns); err != nil {
			done <- err
			return
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		if err != nil {
			done <- err
			return
		}
		defer func() { _ = unix.Close(fd) }() // a socket of our own
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			done <- err
			return
		}
		done <- unix.Sendto(fd, frame, 0, &unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6})
	}()
	if err := <-done; err != nil {
		l.t.Fatalf("sending from h%d: %v", i, err)
	}
}

// icmp6Frame is an IPv6 frame from host i to a link-local group with an
// ICMPv6 message of type typ (the hop-by-hop router alert first for MLD,
// as hosts send it); checksums are not filled in: the switch does not
// look at them, and the receiving counter counts the frame anyway.
func icmp6Frame(i int, group byte, typ byte, hbh bool) []byte {
	f := []byte{0x33, 0x33, 0, 0, 0, group, 2, 0, 0, 0, 0, byte(i), 0x86, 0xdd}
	ip := make([]byte, 40)
	ip[0] = 0x60
	payload := []byte{typ, 0, 0, 0, 0, 0, 0, 0}
	ip[6] = 58
	if hbh {
		ip[6] = 0
		payload = append([]byte{58, 0, 5, 2, 0, 0, 1, 0}, payload...)
	}
	ip[5] = byte(len(payload))
	ip[8], ip[9] = 0xfe, 0x80
	ip[23] = byte(i)
	ip[24], ip[25], ip[39] = 0xff, 0x02, group
	return append(append(f, ip...), payload...)
}

// Router solicitations and MLD reports reach the other ports only once
// the switch has seen a router; other IPv6 multicast floods as before.
func TestSwitchKeepsRouterMessagesUntilARouter(t *testing.T) {
	testenv.Root(t)
	l := newLab(t, 3)
	s, err := New("rtr", 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	for i := 1; i <= 3; i++ {
		l.attach(s, i)
	}
	// received counts what h2 gets of frames h1 sends.
	received := func(frames ...[]byte) uint64 {
		before := l.rx(2)
		for _, f := range frames {
			l.send(1, f)
		}
		time.Sleep(50 * time.Millisecond)
		return l.rx(2) - before
	}
	rs, mld := icmp6Frame(1, 2, icmp6RouterSol, false), icmp6Frame(1, 0x16, icmp6MLDv2Report, true)
	echo := icmp6Frame(1, 1, 128, false) // an echo request to all nodes
	// h2's counter also counts what the hosts' own kernels send (a
	// duplicate address check floods as it should), so the test sends many
	// frames of each kind and allows a few strays: 40 router messages that
	// flooded would be 40, not a few.
	const n, strays = 20, 4
	repeat := func(frames ...[]byte) [][]byte {
		var out [][]byte
		for range n {
			out = append(out, frames...)
		}
		return out
	}
	if got := received(repeat(rs, mld)...); got > strays {
		t.Errorf("h2 received %d of h1's %d router solicitations and MLD reports without a router on the switch", got, 2*n)
	}
	if got := received(repeat(echo)...); got < n || got > n+strays {
		t.Errorf("h2 received %d of %d echo requests to all nodes", got, n)
	}
	if saw, err := s.SawRouter(); err != nil || saw {
		t.Fatalf("SawRouter before any router: %v, %v", saw, err)
	}
	l.send(3, icmp6Frame(3, 1, icmp6RouterAdv, false)) // h3 advertises itself as a router
	time.Sleep(50 * time.Millisecond)
	if saw, err := s.SawRouter(); err != nil || !saw {
		t.Fatalf("SawRouter after h3's router advertisement: %v, %v", saw, err)
	}
	if got := received(repeat(rs, mld)...); got < 2*n || got > 2*n+strays {
		t.Errorf("h2 received %d of h1's %d router messages once a router was seen (they flood, as a bridge without a querier floods)", got, 2*n)
	}
	if _, ok := l.fdb(s)["00:00:00:00:00:00"]; ok {
		t.Error("the router record is listed as a learned address")
	}
}
