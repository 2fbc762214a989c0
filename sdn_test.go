package hymn

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/topo"
)

func sdnTools(t *testing.T) {
	testenv.RootAndTools(t, "ovs-vswitchd", "ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovs-ofctl", "ovs-testcontroller")
}

// startSDN starts an OpenFlow network and stops it (checking that nothing
// is left) when the test ends.
func startSDN(t *testing.T, spec string, opts Options, controllers ...topo.Params) (*Network, *strings.Builder) {
	t.Helper()
	tp, err := topo.FromSpecString(spec)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range controllers {
		tp.AddController(fmt.Sprintf("c%d", i), c)
	}
	var out strings.Builder
	opts.Switch = SwitchOVS
	opts.Log = mnlog.New(&out, mnlog.Output)
	n, err := New(tp, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
		assertRunGone(t, n.RunID())
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatalf("start: %v\n%s", err, out.String())
	}
	if err := n.WaitConnected(ctx); err != nil {
		t.Fatalf("wait: %v", err)
	}
	return n, &out
}

func TestOpenFlowLinearPingAllAndFlows(t *testing.T) {
	sdnTools(t)
	n, out := startSDN(t, "linear,4", Options{}, topo.Params{"kind": "default"})
	ctx := context.Background()
	if _, err := n.PingAll(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "*** Results: 0% dropped (12/12 received)") {
		t.Errorf("pingall:\n%s", out.String())
	}
	for _, s := range n.Switches() {
		flows, err := n.OVS().Ofctl(ctx, s.Name, "dump-flows")
		if err != nil {
			t.Fatalf("%s: %v: %s", s.Name, err, flows)
		}
		if !strings.Contains(flows, "idle_timeout=") || !strings.Contains(flows, "actions=output:") {
			t.Errorf("switch %s has no learned flow:\n%s", s.Name, flows)
		}
	}
	cs := n.Controllers()
	if len(cs) != 1 || !regexp.MustCompile(`^<(OVS)?Controller c0: 127\.0\.0\.\d+:\d+ pid=\d+> $`).MatchString(cs[0].String()) {
		t.Errorf("controllers: %v", cs)
	}
	if got := n.ControllerNames(); len(got) != 1 || got[0] != "c0" {
		t.Errorf("controller names %v", got)
	}
}

func TestOpenFlowSwitchOptions(t *testing.T) {
	sdnTools(t)
	n, _ := startSDN(t, "single,2", Options{FailMode: "standalone", Protocols: "OpenFlow13"})
	ctx := context.Background()
	// Standalone without a controller: the bridge learns by itself.
	loss, err := n.PingAll(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if loss != 0 {
		t.Errorf("standalone switch: %v%% dropped", loss)
	}
	got, err := n.OVS().Vsctl(ctx, "get", "bridge", "s1", "fail_mode", "protocols", "other-config:datapath-id")
	if err != nil {
		t.Fatal(err)
	}
	if want := "standalone\n[OpenFlow13]\n\"0000000000000001\"\n"; got != want {
		t.Errorf("bridge settings %q, want %q", got, want)
	}
	// dpctl speaks the switch's protocol.
	if flows, err := n.OVS().Ofctl(ctx, "s1", "dump-flows"); err != nil || !strings.Contains(flows, "OFPST_FLOW reply (OF1.3)") {
		t.Errorf("dump-flows: %v %s", err, flows)
	}
}

func TestOpenFlowSecureWithoutControllerDrops(t *testing.T) {
	sdnTools(t)
	n, _ := startSDN(t, "single,2", Options{})
	loss, err := n.PingAll(context.Background(), 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if loss != 100 {
		t.Errorf("a secure switch without a controller forwarded: %v%% dropped", loss)
	}
}

func TestOpenFlowSwitchStopStart(t *testing.T) {
	sdnTools(t)
	n, _ := startSDN(t, "linear,2", Options{}, topo.Params{"kind": "ovsc"})
	ctx := context.Background()
	if err := n.StopSwitch(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if loss, _ := n.PingAll(ctx, 200*time.Millisecond); loss != 100 {
		t.Errorf("pings crossed a stopped switch: %v%% dropped", loss)
	}
	if err := n.StartSwitch(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := n.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if loss, _ := n.PingAll(ctx, 0); loss != 0 {
		t.Errorf("after start: %v%% dropped", loss)
	}
	if err := n.StartSwitch(ctx, "h1"); err == nil {
		t.Error("a host started as a switch")
	}
}

// A switch added to a running OpenFlow network is an OpenFlow switch too,
// connected to the network's controller (it was a Linux bridge once, as
// AddNode made every node a namespace), and a host added beside it
// reaches the others through flows the controller set up.
func TestOpenFlowSwitchAddedLive(t *testing.T) {
	sdnTools(t)
	n, _ := startSDN(t, "single,2", Options{}, topo.Params{"kind": "ovsc"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.AddNode(ctx, "s2", topo.KindSwitch, nil); err != nil {
		t.Fatal(err)
	}
	if err := n.AddNode(ctx, "h3", topo.KindHost, nil); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{"h3", "s2"}, {"s2", "s1"}} {
		if _, err := n.AddLink(ctx, l[0], l[1], nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := n.OVS().Vsctl(ctx, "get-controller", "s2"); err != nil || !strings.Contains(got, "unix:") && !strings.Contains(got, "tcp:") {
		t.Errorf("s2's controller: %q %v", got, err)
	}
	if loss, err := n.Ping(ctx, []string{"h1", "h3"}, time.Second); err != nil || loss != 0 {
		t.Fatalf("h1 <-> h3 through s2, added live: %v%% dropped, %v", loss, err)
	}
	if flows, err := n.OVS().Ofctl(ctx, "s2", "dump-flows"); err != nil || !strings.Contains(flows, "actions=output:") {
		t.Errorf("s2 has no flow from the controller: %v\n%s", err, flows)
	}
}

// TestOpenFlowMoreThan16Switches: ovs-testcontroller refuses a 17th
// switch, so hymn runs a second process behind the controller's relay.
func TestOpenFlowMoreThan16Switches(t *testing.T) {
	sdnTools(t)
	n, _ := startSDN(t, "linear,17", Options{}, topo.Params{"kind": "ovsc"})
	if p := n.Controllers()[0].Processes(); p != 2 {
		t.Errorf("c0 runs %d processes for 17 switches, want 2", p)
	}
	if loss, err := n.Ping(context.Background(), []string{"h1", "h17"}, 0); err != nil || loss != 0 {
		t.Errorf("h1 <-> h17 across 17 switches: %v%% dropped, %v", loss, err)
	}
}

// TestOpenFlowSeventeenthSwitchAddedLive: a switch added to a running
// network whose controller's one process already serves 16 switches makes
// the relay start a second process, which the new switch connects to.
func TestOpenFlowSeventeenthSwitchAddedLive(t *testing.T) {
	sdnTools(t)
	n, _ := startSDN(t, "linear,16", Options{}, topo.Params{"kind": "ovsc"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if p := n.Controllers()[0].Processes(); p != 1 {
		t.Fatalf("c0 runs %d processes for 16 switches, want 1", p)
	}
	for _, node := range []struct {
		name string
		kind topo.Kind
	}{{"s17", topo.KindSwitch}, {"h17", topo.KindHost}} {
		if err := n.AddNode(ctx, node.name, node.kind, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range [][2]string{{"h17", "s17"}, {"s17", "s16"}} {
		if _, err := n.AddLink(ctx, l[0], l[1], nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if p := n.Controllers()[0].Processes(); p != 2 {
		t.Errorf("c0 runs %d processes for 17 switches, want 2", p)
	}
	if loss, err := n.Ping(ctx, []string{"h16", "h17"}, time.Second); err != nil || loss != 0 {
		t.Errorf("h16 <-> h17 through s17, the 17th switch: %v%% dropped, %v", loss, err)
	}
}

// TestRemoteControllerReceivesSwitches: a controller the user started
// before the network gets one OpenFlow connection per switch, over the
// root namespace's loopback.
func TestRemoteControllerReceivesSwitches(t *testing.T) {
	sdnTools(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }() // ends the accept loop; nothing to flush
	hellos := make(chan []byte, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				// A stand-in controller: a switch that hangs up early is
				// what the test's hellos channel shows, not an error here.
				defer func() { _ = c.Close() }()
				_, _ = c.Write([]byte{1, 0, 0, 8, 0, 0, 0, 1, 1, 5, 0, 8, 0, 0, 0, 2}) // OpenFlow 1.0 hello, features request
				hdr := make([]byte, 8)
				if _, err := c.Read(hdr); err == nil {
					hellos <- hdr
				}
				_, _ = c.Read(make([]byte, 1024)) // until the switch goes
			}()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	startSDN(t, "linear,3", Options{}, topo.Params{"kind": "remote", "ip": "127.0.0.1", "port": strconv.Itoa(port)})
	for i := 0; i < 3; i++ {
		select {
		case h := <-hellos:
			if h[1] != 0 {
				t.Errorf("switch's first message has type %d, want OFPT_HELLO", h[1])
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of 3 switches connected", i)
		}
	}
}

func TestControllerValidation(t *testing.T) {
	testenv.Tools(t, "ovs-testcontroller")
	tp, _ := topo.FromSpecString("single,2")
	tp.AddController("h1", topo.Params{"kind": "ovsc"})
	if _, err := New(tp, Options{Switch: SwitchOVS}); err == nil || !strings.Contains(err.Error(), "is a node and a controller") {
		t.Errorf("a controller named like a host: %v", err)
	}
	tp, _ = topo.FromSpecString("single,2")
	if _, err := New(tp, Options{Switch: SwitchOVS, FailMode: "open"}); err == nil {
		t.Error("failMode open accepted")
	}
}

// TestKill9ThenClean: after kill -9 of the process running a network,
// nothing of its Open vSwitch or controller survives hymn.Clean.
func TestKill9ThenClean(t *testing.T) {
	sdnTools(t)
	cmd := exec.Command(os.Args[0]) // TestMain runs sdnHelperNetwork instead of the tests
	cmd.Env = append(os.Environ(), "HYMN_SDN_HELPER=1")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	run := ""
	for sc.Scan() {
		if r, ok := strings.CutPrefix(sc.Text(), "RUN "); ok {
			run = r
			break
		}
	}
	if run == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // killed: its error says so
		t.Fatal("the helper did not start its network")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // "signal: killed" is the point
	rep, err := Clean(context.Background(), CleanOptions{Runs: []string{run}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 {
		t.Errorf("clean report %+v", rep)
	}
	assertRunGone(t, run)
}

// sdnHelperNetwork is TestKill9ThenClean's child (TestMain runs it under
// HYMN_SDN_HELPER=1): it starts an OpenFlow network, prints its run id and
// waits to be killed.
func sdnHelperNetwork() int {
	tp, _ := topo.FromSpecString("linear,2")
	tp.AddController("c0", topo.Params{"kind": "ovsc"})
	n, err := New(tp, Options{Switch: SwitchOVS})
	if err == nil {
		err = n.Start(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("RUN %s\n", n.RunID())
	time.Sleep(time.Minute)
	if err := n.Stop(); err != nil { // the test kills it long before
		fmt.Println(err)
		return 1
	}
	return 0
}

// TestSwitchControllersPerSwitch is Mininet's controllers2.py: two
// controllers, each switch connected to its own (s1.start([c0]),
// s2.start([c1])). OVS then has one controller per bridge, mn -w waits
// for those connections only, the choice survives a switch restart, and
// an unknown controller is refused with nothing changed.
func TestSwitchControllersPerSwitch(t *testing.T) {
	sdnTools(t)
	n, _ := startSDN(t, "linear,2", Options{}, topo.Params{"kind": "ovsc"}, topo.Params{"kind": "ovsc"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	targets := map[string]string{}
	for _, c := range n.Controllers() {
		targets[c.Name()] = c.Target()
	}
	getController := func(sw string) string {
		t.Helper()
		out, err := n.OVS().Vsctl(ctx, "get-controller", sw)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	if got := strings.Fields(getController("s1")); len(got) != 2 {
		t.Fatalf("s1 before: controllers %v, want both", got)
	}
	if err := n.SetSwitchControllers(ctx, "s1", []string{"c0"}); err != nil {
		t.Fatal(err)
	}
	if err := n.SetSwitchControllers(ctx, "s2", []string{"c1"}); err != nil {
		t.Fatal(err)
	}
	if got := getController("s1"); got != targets["c0"] {
		t.Errorf("s1's controller %q, want c0's %q", got, targets["c0"])
	}
	if got := getController("s2"); got != targets["c1"] {
		t.Errorf("s2's controller %q, want c1's %q", got, targets["c1"])
	}
	if err := n.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if loss := pingLoss(t, n, "h1", "h2"); loss != 0 {
		t.Errorf("h1 <-> h2, each switch on its own controller: %v%% dropped", loss)
	}
	if err := n.StopSwitch(ctx, "s2"); err != nil {
		t.Fatal(err)
	}
	if err := n.StartSwitch(ctx, "s2"); err != nil {
		t.Fatal(err)
	}
	if got := getController("s2"); got != targets["c1"] {
		t.Errorf("s2's controller after stop and start %q, want c1's %q", got, targets["c1"])
	}
	if err := n.SetSwitchControllers(ctx, "s1", []string{"c9"}); err == nil || !strings.Contains(err.Error(), "c9") {
		t.Errorf("an unknown controller: %v", err)
	}
	if got := getController("s1"); got != targets["c0"] {
		t.Errorf("s1's controller after a refused change %q, want c0's", got)
	}
	if err := n.SetSwitchControllers(ctx, "h1", nil); err == nil {
		t.Error("a host's controllers: no error")
	}
	// controllers.py: a RemoteController at c1's address means c1, reached
	// through its relay (ovs-vswitchd's loopback is its namespace's own).
	c1 := n.Controllers()[1]
	if err := n.SetSwitchControllers(ctx, "s1", []string{"tcp:" + c1.Addr()}); err != nil {
		t.Fatal(err)
	}
	if got := getController("s1"); got != targets["c1"] {
		t.Errorf("s1 given tcp:%s: controller %q, want c1's %q", c1.Addr(), got, targets["c1"])
	}
	if err := n.SetSwitchControllers(ctx, "s1", []string{"tcp:127.0.0.1:1"}); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("an address no controller of the network listens on: %v", err)
	}
}
