package hymn

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/internal/testnet"
	"github.com/hymn-net/hymn/topo"
)

// The root package's tests are inside package hymn, so they use the
// helpers hymntest is built on (internal/testnet), not hymntest itself.

// assertRunGone fails the test if anything of the run is left.
func assertRunGone(t *testing.T, run string) {
	t.Helper()
	testnet.AssertRunGone(t, run)
}

// startNet builds and starts a network and stops it (checking for leaks)
// when the test ends.
func startNet(t *testing.T, top *topo.Topo, opts Options) *Network {
	t.Helper()
	net, err := New(top, opts)
	if err != nil {
		t.Fatal(err)
	}
	testnet.Start(t, net, 2*time.Minute)
	return net
}

func mustTopo(t *testing.T, spec string) *topo.Topo {
	t.Helper()
	return testnet.Topo(t, spec)
}

func TestPingAllTopologies(t *testing.T) {
	testenv.Root(t)
	for _, spec := range []string{"single,3", "linear,4", "tree,depth=2,fanout=2", "reversed,3", "linear,2,2"} {
		t.Run(spec, func(t *testing.T) {
			net := startNet(t, mustTopo(t, spec), Options{})
			loss, err := net.PingAll(context.Background(), 0)
			if err != nil || loss != 0 {
				t.Fatalf("PingAll = %v%%, %v; want 0%% loss", loss, err)
			}
		})
	}
}

func TestPingFullAndPair(t *testing.T) {
	testenv.Root(t)
	net := startNet(t, mustTopo(t, "single,3"), Options{})
	res, err := net.PingAllFull(context.Background(), 0)
	if err != nil || len(res) != 6 {
		t.Fatalf("PingAllFull = %d results, %v", len(res), err)
	}
	for _, r := range res {
		if r.Sent != 1 || r.Received != 1 || r.RTTAvg <= 0 {
			t.Errorf("%s->%s = %+v, want 1/1 with an rtt", r.Src, r.Dst, r)
		}
	}
	if loss, err := net.PingPair(context.Background()); err != nil || loss != 0 {
		t.Fatalf("PingPair = %v, %v", loss, err)
	}
}

func TestNamesAddressesAndMACs(t *testing.T) {
	testenv.Root(t)
	net := startNet(t, mustTopo(t, "single,2"), Options{AutoMAC: true})
	h2, err := net.Node("h2")
	if err != nil {
		t.Fatal(err)
	}
	out, err := h2.Cmd(context.Background(), "ip -o addr show dev h2-eth0; ip -o link show h2-eth0")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"10.0.0.2/8", "00:00:00:00:00:02"} {
		if !strings.Contains(out, want) {
			t.Errorf("h2-eth0 lacks %s:\n%s", want, out)
		}
	}
	s1, _ := net.Node("s1")
	res, err := s1.Exec(context.Background(), "ip", "-o", "link", "show", "master", "s1")
	if err != nil {
		t.Fatal(err)
	}
	for _, port := range []string{"s1-eth1@", "s1-eth2@"} {
		if !strings.Contains(string(res.Stdout), port) {
			t.Errorf("bridge s1 lacks port %s:\n%s", port, res.Stdout)
		}
	}
	// Nothing of the network may show in the root namespace. (Names alone
	// would not do: Mininet, running beside us, uses the same ones.)
	root, _ := exec.Command("ip", "-o", "link").Output()
	if strings.Contains(string(root), "link-netns "+owner.NamespaceName(net.RunID(), "")) {
		t.Errorf("root namespace holds an end of the network's links:\n%s", root)
	}
}

func TestLinkDownUp(t *testing.T) {
	testenv.Root(t)
	// A BPF switch's ports keep their program across down and up.
	for _, kind := range []SwitchKind{SwitchLinuxBridge, SwitchBPF} {
		t.Run(string(kind), func(t *testing.T) { testLinkDownUp(t, kind) })
	}
}

func testLinkDownUp(t *testing.T, kind SwitchKind) {
	net := startNet(t, mustTopo(t, "single,2"), Options{Switch: kind})
	ctx := context.Background()
	if err := net.ConfigLinkStatus("s1", "h1", "down"); err != nil {
		t.Fatal(err)
	}
	if loss, _ := net.Ping(ctx, []string{"h1", "h2"}, time.Second); loss != 100 {
		t.Errorf("with h1's link down, loss = %v%%, want 100%%", loss)
	}
	if err := net.ConfigLinkStatus("s1", "h1", "up"); err != nil {
		t.Fatal(err)
	}
	// ConfigLinkStatus returns once the link carries traffic: no retries.
	if loss, _ := net.Ping(ctx, []string{"h1", "h2"}, time.Second); loss != 0 {
		t.Errorf("after link up, loss = %v%%, want 0%%", loss)
	}
	for _, c := range []struct{ a, b, status, want string }{
		{"h1", "h2", "down", "not connected"},
		{"h1", "h9", "down", "unknown node"},
		{"h1", "s1", "sideways", "invalid type"},
	} {
		if err := net.ConfigLinkStatus(c.a, c.b, c.status); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ConfigLinkStatus(%s, %s, %s) = %v, want %q", c.a, c.b, c.status, err, c.want)
		}
	}
}

func TestIperf(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "iperf3")
	net := startNet(t, mustTopo(t, "single,2"), Options{})
	r, err := net.Iperf(context.Background(), "", "", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Client != "h1" || r.Server != "h2" || r.ServerBps <= 0 || r.ClientBps <= 0 {
		t.Fatalf("Iperf = %+v, want h1->h2 with positive rates", r)
	}
	if !strings.HasSuffix(r.ServerText, "bits/sec") {
		t.Errorf("server text %q", r.ServerText)
	}
}

func TestPersistentShell(t *testing.T) {
	testenv.Root(t)
	net := startNet(t, mustTopo(t, "single,2"), Options{})
	h1, _ := net.Node("h1")
	ctx := context.Background()
	if _, err := h1.Cmd(ctx, "cd /tmp && X=42"); err != nil {
		t.Fatal(err)
	}
	out, err := h1.Cmd(ctx, "pwd; echo $X")
	if err != nil || out != "/tmp\n42\n" {
		t.Fatalf("state did not persist: %q, %v", out, err)
	}
	// A background job survives later commands and their cancellation.
	if _, err := h1.Cmd(ctx, "sleep 300 & echo $! > /tmp/hymn-test-bg-$$"); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = h1.Cmd(short, "sleep 30")
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || !testenv.Elapsed(t, "a cancelled Cmd", took, 5*time.Second) {
		t.Fatalf("cancelled command returned %v after %v", err, took)
	}
	out, err = h1.Cmd(ctx, "jobs -r | grep -c 'sleep 300'; rm -f /tmp/hymn-test-bg-$$")
	if err != nil || strings.TrimSpace(out) != "1" {
		t.Fatalf("background job gone after a cancelled command: %q, %v", out, err)
	}
	// Output without a trailing newline comes back as is.
	if out, _ := h1.Cmd(ctx, "printf abc"); out != "abc" {
		t.Errorf("printf abc -> %q", out)
	}
}

func TestExecAndCancel(t *testing.T) {
	testenv.Root(t)
	net := startNet(t, mustTopo(t, "single,2"), Options{})
	h1, _ := net.Node("h1")
	res, err := h1.Exec(context.Background(), "sh", "-c", "ip -o link; echo err >&2; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || !strings.Contains(string(res.Stdout), "h1-eth0") || string(res.Stderr) != "err\n" {
		t.Errorf("Exec = %+v", res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = h1.Exec(ctx, "sleep", "30")
	if took := time.Since(start); err == nil || !testenv.Elapsed(t, "a cancelled Exec", took, 5*time.Second) {
		t.Errorf("cancelled Exec: %v after %v", err, took)
	}
}

func TestRouterForwardsOnlyInItsNamespace(t *testing.T) {
	testenv.Root(t)
	top := topo.New()
	r := top.AddRouter("r1", topo.Params{"ip": "10.1.0.1/24"})
	h1 := top.AddHost("h1", topo.Params{"ip": "10.1.0.2/24"})
	h2 := top.AddHost("h2", topo.Params{"ip": "10.2.0.2/24"})
	top.AddLink(h1, r)
	top.AddLink(h2, r, topo.Params{"ip2": "10.2.0.1/24"})
	net := startNet(t, top, Options{})
	ctx := context.Background()
	for name, gw := range map[string]string{"h1": "10.1.0.1", "h2": "10.2.0.1"} {
		n, _ := net.Node(name)
		if out, err := n.Cmd(ctx, "ip route add default via "+gw); err != nil || out != "" {
			t.Fatalf("%s route: %q %v", name, out, err)
		}
	}
	if loss, err := net.Ping(ctx, []string{"h1", "h2"}, time.Second); err != nil || loss != 0 {
		t.Errorf("ping through router: %v%% %v", loss, err)
	}
	rn, _ := net.Node("r1")
	if out, _ := rn.Cmd(ctx, "cat /proc/sys/net/ipv4/ip_forward"); out != "1\n" {
		t.Errorf("router ip_forward = %q", out)
	}
	if data, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); string(data) == "1\n" && os.Getenv("CI") != "" {
		t.Log("note: the root namespace forwards IPv4 on this machine (not hymn's doing)")
	}
}

func TestBuildFailureRollsBack(t *testing.T) {
	testenv.Root(t)
	top := topo.New()
	s1 := top.AddSwitch("s1")
	top.AddLink(top.AddHost("h1"), s1)
	// Well-formed, so New accepts it, but no connected subnet holds the
	// gateway: only the kernel can refuse it, in the middle of Build.
	top.AddLink(top.AddHost("h2", topo.Params{"routes": "10.99.0.0/16 via 192.168.77.1"}), s1)
	net, err := New(top, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = net.Build(context.Background())
	if err == nil {
		_ = net.Stop() // the test fails either way
		t.Fatal("Build with an unreachable gateway succeeded")
	}
	if !strings.Contains(err.Error(), "h2") || !strings.Contains(err.Error(), "192.168.77.1") {
		t.Errorf("error does not name the node and the route: %v", err)
	}
	assertRunGone(t, net.RunID())
}

func TestDuplicateNodeRejectedBeforeBuild(t *testing.T) {
	top := topo.New()
	top.AddHost("h1")
	top.AddHost("h1")
	if _, err := New(top, Options{}); !errors.Is(err, topo.ErrDuplicateNode) {
		t.Fatalf("New = %v, want ErrDuplicateNode", err)
	}
}

// TestCleanRemovesStaleRunsOnly fakes a crashed run (namespace, a process
// inside it, a state file naming a dead owner) next to a live network, and
// checks that Clean removes the first and leaves the second alone.
func TestCleanRemovesStaleRunsOnly(t *testing.T) {
	testenv.Root(t)
	live := startNet(t, mustTopo(t, "single,2"), Options{})

	stale := owner.NewRunID()
	ns := owner.NamespaceName(stale, "h1")
	if err := owner.Claim(stale); err != nil {
		t.Fatal(err)
	}
	// Make the owner a process that has exited.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(owner.StateDir+"/"+stale+".json",
		[]byte(`{"run":"`+stale+`","pid":`+strconv.Itoa(dead.Process.Pid)+`,"start_time":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := netnsx.Create(ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, _, err := owner.RemoveRun(stale); err != nil {
			t.Error(err)
		}
	})
	sleeper := exec.Command("ip", "netns", "exec", ns, "sleep", "300")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	waitDone := make(chan error, 1)
	go func() { waitDone <- sleeper.Wait() }()
	time.Sleep(100 * time.Millisecond)

	rep, err := owner.Clean(false)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rep.Runs {
		found = found || r == stale
		if r == live.RunID() {
			t.Errorf("Clean removed the live run %s", r)
		}
	}
	if !found || rep.Processes < 1 {
		t.Errorf("Clean report %+v: want run %s with its process", rep, stale)
	}
	select {
	case err := <-waitDone:
		if err == nil {
			t.Error("the process inside the stale namespace exited by itself instead of being killed")
		}
	case <-time.After(3 * time.Second):
		t.Error("the process inside the stale namespace was not killed")
	}
	assertRunGone(t, stale)
	if loss, err := live.PingAll(context.Background(), 0); err != nil || loss != 0 {
		t.Errorf("live network broken by Clean: %v%% %v", loss, err)
	}
}

func TestNATReachesTheRootNamespace(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "iptables")
	top := mustTopo(t, "single,2")
	if err := AddNAT(top, ""); err != nil {
		t.Fatal(err)
	}
	var rootLink string
	// Registered first, so it runs after the network's Stop.
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "link", "show", rootLink).CombinedOutput(); err == nil {
			t.Errorf("root end of the NAT link left behind: %s", out)
		}
	})
	net := startNet(t, top, Options{})
	rootLink = net.rootLinkName()
	rootIP, _ := net.natSubnet()
	h1, _ := net.Node("h1")
	out, err := h1.Cmd(context.Background(), "ip route show default; ping -c1 -W2 "+rootIP.Addr().String())
	if err != nil || !strings.Contains(out, "default via 10.0.0.3") || !strings.Contains(out, "1 received") {
		t.Fatalf("h1 through nat0 to the root namespace:\n%s %v", out, err)
	}
	root, _ := exec.Command("ip", "-o", "link", "show", net.rootLinkName()).CombinedOutput()
	if !strings.Contains(string(root), net.rootLinkName()) {
		t.Errorf("root end %s missing: %s", net.rootLinkName(), root)
	}
}

// mn --host cfs,cpu=0.1: every host in a CPU cgroup with CFS quota
// 0.1 x period x cores, gone with the network.
func TestCPULimitedHosts(t *testing.T) {
	testenv.Root(t)
	var cgroups []string
	// Registered first, so it runs after the network's Stop.
	t.Cleanup(func() {
		for _, cg := range cgroups {
			for _, dir := range []string{"/sys/fs/cgroup/cpu/", "/sys/fs/cgroup/"} {
				if _, err := os.Stat(dir + cg); err == nil {
					t.Errorf("cgroup %s left behind", dir+cg)
				}
			}
		}
	})
	net := startNet(t, mustTopo(t, "single,2"), Options{CPU: &CPUOptions{Fraction: 0.1}})
	cgroups = []string{owner.NamespaceName(net.RunID(), "h1"), owner.NamespaceName(net.RunID(), "h3")}
	h1, _ := net.Node("h1")
	out, err := h1.Cmd(context.Background(), "cat /proc/self/cgroup")
	if err != nil || !strings.Contains(out, owner.NamespaceName(net.RunID(), "h1")) {
		t.Fatalf("h1's shell is not in its cgroup: %q %v", out, err)
	}
	quota := "/sys/fs/cgroup/cpu/" + owner.NamespaceName(net.RunID(), "h1") + "/cpu.cfs_quota_us"
	want := strconv.Itoa(int(0.1 * 100000 * float64(runtime.NumCPU())))
	if data, err := os.ReadFile("/sys/fs/cgroup/" + owner.NamespaceName(net.RunID(), "h1") + "/cpu.max"); err == nil {
		if !strings.HasPrefix(string(data), want+" 100000") {
			t.Errorf("cpu.max = %q, want %s 100000", data, want)
		}
	} else if data, err := os.ReadFile(quota); err != nil || strings.TrimSpace(string(data)) != want {
		t.Errorf("%s = %q %v, want %s", quota, data, err, want)
	}
	if loss, err := net.PingAll(context.Background(), 0); err != nil || loss != 0 {
		t.Errorf("pingall with CPU-limited hosts: %v%% %v", loss, err)
	}
	// A host added live gets its cgroup as well; its Stop removes it too.
	if err := net.AddNode(context.Background(), "h3", topo.KindHost, nil); err != nil {
		t.Fatal(err)
	}
	h3, _ := net.Node("h3")
	if out, err := h3.Cmd(context.Background(), "cat /proc/self/cgroup"); err != nil || !strings.Contains(out, owner.NamespaceName(net.RunID(), "h3")) {
		t.Errorf("h3, added live, is not in a cgroup of its own: %q %v", out, err)
	}
}
