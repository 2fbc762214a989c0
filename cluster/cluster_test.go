package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/hymntest"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/partition"
	"github.com/hymn-net/hymn/topo"
)

// workerEnv makes the test binary a worker: Local starts it as "hymn
// worker" would be started, and TestMain runs RunWorker, the code the
// worker command runs, with the same flags.
const workerEnv = "HYMN_CLUSTER_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(testWorker())
	}
	os.Exit(m.Run())
}

func testWorker() int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	specFile := fs.String("spec", "", "")
	address := fs.String("address", "", "")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	data, err := os.ReadFile(*specFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	spec, err := LoadSpec(data)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := RunWorker(ctx, WorkerOptions{Spec: spec, Address: netip.MustParseAddr(*address)}, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func localTransport(t *testing.T) *Local {
	t.Setenv(workerEnv, "1")
	return &Local{Command: []string{os.Args[0]}, Stderr: testWriter{t}, StopGrace: 2 * time.Second}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Logf("%s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// assertLocalGone checks a local cluster left nothing: no namespace of the
// transport's run or of any worker's network, no worker process.
func assertLocalGone(t *testing.T, l *Local, c *Cluster) {
	t.Helper()
	if l.run != "" {
		hymntest.AssertRunGone(t, l.run)
	}
	if c != nil {
		for _, e := range c.Ready {
			if e.Run != "" {
				hymntest.AssertRunGone(t, e.Run)
			}
		}
	}
	for _, p := range l.procs {
		if p.cmd.ProcessState == nil {
			t.Errorf("worker %d still running", p.worker)
		}
	}
}

func TestLocalCluster(t *testing.T) {
	testenv.RootAndTools(t, "ip", "ping")
	l := localTransport(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, l, "linear,4", "", "", false, Options{Partition: partition.Options{Parts: 2}, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			if err := c.Stop(context.Background()); err != nil {
				t.Error(err)
			}
		}
		assertLocalGone(t, l, c)
	})
	t.Logf("built in %v, linked in %v", c.BuildTime, c.LinkTime)
	for i, e := range c.Ready {
		if e.Address != l.Address(i).String() || len(e.Nodes) != 4 {
			t.Errorf("worker %d ready: %+v", i, e)
		}
	}
	// Every host pings every other, each ping run by its source's worker.
	pingAll(ctx, t, c)
	st, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range st {
		if len(e.Cut) != 1 || e.Cut[0].Tunnel.TxPackets == 0 || e.Cut[0].Tunnel.RxPackets == 0 {
			t.Errorf("worker %d stats: %+v", i, e)
		}
	}
	// A command for a node that is not there, and a failing program.
	if _, err := c.Exec(ctx, "h9", time.Second, "true"); err == nil {
		t.Error("exec on an unknown node accepted")
	}
	e, err := c.Exec(ctx, "h1", 5*time.Second, "sh", "-c", "echo out; echo err >&2; exit 3")
	if err != nil || *e.Exit != 3 || e.Stdout != "out\n" || e.Stderr != "err\n" {
		t.Errorf("exec: %+v %v", e, err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Error(err)
	}
	stopped = true
}

// SIGTERM to a worker: it tears its part down and exits 0; the rest of
// the cluster stops cleanly after.
func TestWorkerSIGTERM(t *testing.T) {
	testenv.RootAndTools(t, "ip")
	l := localTransport(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, l, "linear,2", "", "", false, Options{Partition: partition.Options{Parts: 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { assertLocalGone(t, l, c) })
	p := l.procs[0]
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var last Event
	for e := range p.Events() {
		last = e
	}
	<-p.done
	if last.Event != "stopped" || p.waitErr != nil {
		t.Errorf("after SIGTERM: last event %+v, exit %v", last, p.waitErr)
	}
	hymntest.AssertRunGone(t, c.Ready[0].Run)
	if err := c.Stop(ctx); err != nil {
		t.Error(err)
	}
}

// Workers that never become ready, or die at once: Start fails with a
// clear error and removes everything.
func TestWorkerNeverReady(t *testing.T) {
	testenv.RootAndTools(t, "ip", "sleep")
	for _, tc := range []struct {
		name    string
		command []string
		want    string
	}{
		{"hangs", []string{"sh", "-c", "exec sleep 600", "worker"}, "worker 0: no ready event: context deadline exceeded"},
		{"exits", []string{"false"}, "exited before its ready event"},
		{"garbage", []string{"echo", "not json"}, "worker output: bad line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &Local{Command: tc.command, StopGrace: time.Second}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			t0 := time.Now()
			_, err := Start(ctx, l, "linear,2", "", "", false, Options{Partition: partition.Options{Parts: 2}, ReadyTimeout: 2 * time.Second})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			t.Logf("%v after %v", err, time.Since(t0).Round(time.Millisecond))
			assertLocalGone(t, l, nil)
		})
	}
}

// The protocol run in-process: every bad command is answered with a
// non-fatal error, the worker goes on, and "stop" tears down.
func TestWorkerProtocolBadInput(t *testing.T) {
	testenv.RootAndTools(t, "ip")
	ms, addrs := machines(t, 1, 1550)
	specs, _, err := NewSpec("linear,2", "", "", false, 1, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- RunWorker(context.Background(), WorkerOptions{Spec: specs[0], Underlay: ms[0], Address: addrs[0]}, inR, outW)
		_ = outW.Close() // an io.PipeWriter's Close never fails
	}()
	dec := json.NewDecoder(outR)
	next := func() Event {
		t.Helper()
		var e Event
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("reading events: %v", err)
		}
		return e
	}
	ready := next()
	if ready.Event != "ready" {
		t.Fatalf("first event %+v", ready)
	}
	for _, tc := range []struct{ line, want string }{
		{"not json", "bad line"},
		{`{"cmd":"exec","id":1}`, "exec: no program"},
		{`{"cmd":"exec","id":2,"node":"h9","argv":["true"]}`, `node "h9" is not on worker 0`},
		{`{"cmd":"exec","id":3,"node":"h1","argv":["true"],"timeout":-1}`, "timeout -1 s is outside"},
		{`{"cmd":"exec","id":4,"node":"h1","argv":["true"],"timeout":1e9}`, "is outside"},
		{`{"cmd":"fly","id":5}`, `unknown command "fly"`},
		{`{"cmd":"stats","id":6,"colour":"red"}`, `unknown field "colour"`},
		{`{"cmd":"link","id":7,"peers":["10.0.0.300"]}`, `"10.0.0.300" is not an IP address`},
		{`{"cmd":"stats"} {"cmd":"stats"}`, "more than one JSON value"},
		{`{"cmd":"relink","id":11}`, "relink: no peer"},
		{`{"cmd":"relink","id":12,"peer":0,"address":"nowhere"}`, `"nowhere" is not an IP address`},
		{`{"cmd":"relink","id":13,"peer":5,"address":"10.0.0.1"}`, "worker 5 does not exist"},
		{`{"cmd":"relink","id":14,"peer":-1,"address":"10.0.0.1"}`, "worker -1 does not exist"},
		{`{"cmd":"relink","id":15,"peer":0,"address":"10.0.0.1"}`, "cannot relink to itself"},
	} {
		if _, err := fmt.Fprintln(inW, tc.line); err != nil {
			t.Fatal(err)
		}
		e := next()
		if e.Event != "error" || e.Fatal || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s: got %+v, want a non-fatal error saying %q", tc.line, e, tc.want)
		}
	}
	// Still serving: an exec works.
	if _, err := fmt.Fprintln(inW, `{"cmd":"exec","id":9,"node":"h1","argv":["echo","hi"]}`); err != nil {
		t.Fatal(err)
	}
	if e := next(); e.Event != "exec" || e.ID != 9 || e.Stdout != "hi\n" {
		t.Errorf("exec after bad input: %+v", e)
	}
	// A link command whose peer count is wrong is fatal: the part cannot
	// be wired; it tears down.
	if _, err := fmt.Fprintln(inW, `{"cmd":"link","id":10,"peers":["10.0.0.1","10.0.0.2"]}`); err != nil {
		t.Fatal(err)
	}
	if e := next(); e.Event != "error" || !e.Fatal || !strings.Contains(e.Error, "2 peer addresses for 1 workers") {
		t.Errorf("bad link: %+v", e)
	}
	if e := next(); e.Event != "stopped" {
		t.Errorf("after a fatal error: %+v", e)
	}
	if err := <-done; err == nil {
		t.Error("RunWorker returned no error after a fatal one")
	}
	_ = inW.Close() // an io.PipeWriter's Close never fails
	hymntest.AssertRunGone(t, ready.Run)
}

// A line longer than MaxLine ends the worker (it cannot resynchronise),
// torn down; the end of input does too, cleanly.
func TestWorkerInputEnds(t *testing.T) {
	testenv.RootAndTools(t, "ip")
	ms, addrs := machines(t, 1, 1550)
	specs, _, err := NewSpec("minimal", "", "", false, 1, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		input func(w io.Writer)
		fatal bool
	}{
		{"eof", func(io.Writer) {}, false},
		// The worker stops reading part-way: the write's result is no news.
		{"long line", func(w io.Writer) { _, _ = w.Write([]byte(strings.Repeat("x", MaxLine+10))) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- RunWorker(context.Background(), WorkerOptions{Spec: specs[0], Underlay: ms[0], Address: addrs[0]}, inR, outW)
				_ = outW.Close() // an io.PipeWriter's Close never fails
			}()
			dec := json.NewDecoder(outR)
			var events []Event
			go func() {
				tc.input(inW)
				_ = inW.Close()
			}()
			for {
				var e Event
				if dec.Decode(&e) != nil {
					break
				}
				events = append(events, e)
			}
			err := <-done
			if (err != nil) != tc.fatal {
				t.Errorf("RunWorker: %v", err)
			}
			if len(events) < 2 || events[0].Event != "ready" || events[len(events)-1].Event != "stopped" {
				t.Errorf("events %+v", events)
			}
			hymntest.AssertRunGone(t, events[0].Run)
		})
	}
}

func TestLoadSpecBad(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{``, "EOF"},
		{`[]`, "cannot unmarshal array"},
		{`{"topology":"linear,2","workers":2,"colour":1}`, `unknown field "colour"`},
		{`{"topology":"linear,2"} {}`, "data after the JSON object"},
		{`{"topology":"linear,2","workers":"two"}`, "cannot unmarshal string"},
	} {
		_, err := LoadSpec([]byte(tc.data))
		if err == nil || !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.data, err, tc.want)
		}
	}
}

func TestResolveBad(t *testing.T) {
	all := map[string]int{"h1": 0, "h2": 1, "s1": 0, "s2": 1}
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"no workers", Spec{Topology: "linear,2", Workers: 0, Assign: all}, "workers must be at least 1"},
		{"worker out of range", Spec{Topology: "linear,2", Workers: 2, Worker: 2, Assign: all}, "worker 2 does not exist"},
		{"negative worker", Spec{Topology: "linear,2", Workers: 2, Worker: -1, Assign: all}, "worker -1 does not exist"},
		{"port", Spec{Topology: "linear,2", Workers: 2, Assign: all, Port: 70000}, "port 70000 is not a UDP port"},
		{"vni", Spec{Topology: "linear,2", Workers: 2, Assign: all, VNIBase: MaxVNI}, "would need VNI"},
		{"vni negative", Spec{Topology: "linear,2", Workers: 2, Assign: all, VNIBase: -1}, "vni_base -1"},
		{"no topology", Spec{Workers: 1, Assign: all}, "no topology"},
		{"bad topology", Spec{Topology: "linear,x", Workers: 1, Assign: all}, "topology"},
		{"bad file", Spec{Topology: "nodes: [h1, h1]", File: "t.yaml", Workers: 1, Assign: map[string]int{"h1": 0}}, "t.yaml:1:13"},
		{"unassigned", Spec{Topology: "linear,2", Workers: 2, Assign: map[string]int{"h1": 0, "h2": 1, "s1": 0}}, "node s2 is assigned to no worker"},
		{"assigned nowhere", Spec{Topology: "linear,2", Workers: 2, Assign: map[string]int{"h1": 0, "h2": 1, "s1": 0, "s2": 5}}, "node s2 is assigned to worker 5, which does not exist"},
		{"unknown node", Spec{Topology: "linear,2", Workers: 2, Assign: map[string]int{"h1": 0, "h2": 1, "s1": 0, "s2": 1, "x": 0}}, `assign names node "x"`},
		{"idle worker", Spec{Topology: "linear,2", Workers: 3, Worker: 2, Assign: all}, "worker 2 has no nodes"},
		{"bad ipbase", Spec{Topology: "linear,2", Workers: 2, Assign: all, IPBase: "10.0.0.0/33"}, "ipbase"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.spec.Resolve()
			if err == nil || !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
}

// Both sides of every cut link agree on its VNI and on which end each
// holds; each side emulates the direction it sends.
func TestCutLinksAgree(t *testing.T) {
	specs, res, err := NewSpec("torus,3,3", "", "", false, 3, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	byLink := map[string][]CutLink{}
	for _, s := range specs {
		r, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Cut {
			byLink[c.Link.String()] = append(byLink[c.Link.String()], c)
			if c.Peer == s.Worker || res.Part(c.Local.Node) != s.Worker || res.Part(c.Remote.Node) != c.Peer {
				t.Errorf("worker %d: %+v", s.Worker, c)
			}
		}
		// The part holds exactly the worker's nodes and the links between
		// them, with the planned addresses.
		part, err := r.Part()
		if err != nil {
			t.Fatal(err)
		}
		if part.NodeCount() != len(res.Nodes[s.Worker]) {
			t.Errorf("worker %d part has %d nodes, split gave %d", s.Worker, part.NodeCount(), len(res.Nodes[s.Worker]))
		}
	}
	if len(byLink) != res.CutSize() {
		t.Fatalf("%d cut links seen by workers, split cut %d", len(byLink), res.CutSize())
	}
	for name, sides := range byLink {
		if len(sides) != 2 || sides[0].VNI != sides[1].VNI || sides[0].First == sides[1].First {
			t.Errorf("%s: sides %+v", name, sides)
		}
	}
}

// A part keeps the plan's addresses even when a node's first interface is
// a cut link (its address must not move to its next interface).
func TestPartKeepsAddresses(t *testing.T) {
	file := `
nodes:
  - {name: r1, kind: router, placement: 0}
  - {name: h1, placement: 1}
  - {name: h2, placement: 0}
links:
  - a: {node: r1, ip: 10.1.0.1/24}
    b: {node: h1, ip: 10.1.0.2/24}
  - a: {node: r1, ip: 10.2.0.1/24}
    b: {node: h2, ip: 10.2.0.2/24}
`
	specs, _, err := NewSpec(file, "r.yaml", "", false, 2, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := specs[0].Resolve()
	if err != nil {
		t.Fatal(err)
	}
	part, err := r.Part()
	if err != nil {
		t.Fatal(err)
	}
	sub, err := topo.Resolve(part, topo.AddressOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, n := range sub.Nodes {
		for _, i := range n.Intfs {
			got[i.Name] = i.IP.String()
		}
	}
	want := map[string]string{"r1-eth1": "10.2.0.1/24", "h2-eth0": "10.2.0.2/24"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all %v)", k, got[k], v, got)
		}
	}
	if len(r.Cut) != 1 || r.Cut[0].Local.Name != "r1-eth0" || r.Cut[0].Local.IP.String() != "10.1.0.1/24" {
		t.Errorf("cut %+v", r.Cut)
	}
}

// kill -9 of a worker (an emulated cut link, so a helper namespace too):
// its namespaces stay, owned by a dead process, and hymn.Clean of its run
// removes them all; the coordinator then stops the rest cleanly.
func TestWorkerKill9Cleaned(t *testing.T) {
	testenv.RootAndTools(t, "ip")
	l := localTransport(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	file := "nodes: [h1, h2, {name: s1, kind: switch}, {name: s2, kind: switch}]\n" +
		"links:\n  - endpoints: [h1, s1]\n  - endpoints: [h2, s2]\n  - endpoints: [s1, s2]\n    params: {delay: 1ms}\n"
	c, err := Start(ctx, l, file, "k.yaml", "", false, Options{Partition: partition.Options{Parts: 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { assertLocalGone(t, l, c) })
	p := l.procs[0]
	run := c.Ready[0].Run
	if left, _ := owner.Namespaces(run); !slices.Contains(left, owner.NamespaceName(run, "@vx")) {
		t.Fatalf("no helper namespace for the emulated cut link: %v", left)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	rep, err := hymn.Clean(ctx, hymn.CleanOptions{Runs: []string{run}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("clean: %+v", rep)
	hymntest.AssertRunGone(t, run)
	if err := c.Stop(ctx); err == nil || !strings.Contains(err.Error(), "worker 0") {
		t.Errorf("stop after a killed worker: %v (want worker 0's exit reported)", err)
	}
}

// pingAll has every host ping every other, each ping run by its source's
// worker.
func pingAll(ctx context.Context, t *testing.T, c *Cluster) {
	t.Helper()
	plan, err := c.Specs[0].Resolve()
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range plan.Plan.Hosts() {
		for _, dst := range plan.Plan.Hosts() {
			if src == dst {
				continue
			}
			e, err := c.Exec(ctx, src.Name, 10*time.Second, "ping", "-c1", "-W5", dst.IP.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			if *e.Exit != 0 {
				t.Errorf("%s -> %s: exit %d\n%s", src.Name, dst.Name, *e.Exit, e.Stdout)
			}
		}
	}
}

// startTwo starts topology on two local workers and, when the test ends,
// stops them and checks that nothing is left: of the first workers' runs
// (returned), of any worker the cluster has then, of the transport.
func startTwo(ctx context.Context, t *testing.T, topology, file string) (*Local, *Cluster, []string) {
	t.Helper()
	l := localTransport(t)
	c, err := Start(ctx, l, topology, file, "", false, Options{Partition: partition.Options{Parts: 2}, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	runs := []string{c.Ready[0].Run, c.Ready[1].Run}
	t.Cleanup(func() {
		// The tests kill workers, whose exits Stop reports: logged, and
		// what is left behind is checked below.
		if err := c.Stop(context.Background()); err != nil {
			t.Logf("stop: %v", err)
		}
		assertLocalGone(t, l, c)
		for _, run := range runs {
			hymntest.AssertRunGone(t, run)
		}
	})
	return l, c, runs
}

// A worker killed with -9 (its run cleaned as hymn clean would) is
// replaced: launched again on a new machine with a new address, its peer
// re-creates its side of the cut link toward it, and every host reaches
// every other again across the tunnel. The cut link may be emulated:
// both sides' emulators are made again. Before that, bad replacements
// fail clearly and leave the cluster able to try again.
func TestReplaceWorker(t *testing.T) {
	testenv.RootAndTools(t, "ip", "ping")
	for _, tc := range []struct{ name, topology, file string }{
		{"linear", "linear,4", ""},
		{"emulated", "nodes: [h1, h2, {name: s1, kind: switch}, {name: s2, kind: switch}]\n" +
			"links:\n  - endpoints: [h1, s1]\n  - endpoints: [h2, s2]\n  - endpoints: [s1, s2]\n    params: {delay: 1ms}\n", "r.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			l, c, runs := startTwo(ctx, t, tc.topology, tc.file)
			pingAll(ctx, t, c)

			// Bad indexes.
			for _, i := range []int{-1, 2, 1 << 30} {
				if err := c.Replace(ctx, i); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("no worker %d (the cluster has workers 0-1)", i)) {
					t.Errorf("Replace(%d): %v", i, err)
				}
			}

			// Hostile relinks: refused before anything is deleted, and
			// the worker goes on serving.
			for _, tc := range []struct{ addr, want string }{
				{"224.0.0.1", "is not a unicast address"},
				{"127.0.0.1", "is not a unicast address"},
				{"192.0.2.1", "no route to peer 192.0.2.1"},
			} {
				peer := 1
				id := c.nextID()
				c.mu[0].Lock()
				err := c.conn(0).Send(Command{Cmd: "relink", ID: id, Peer: &peer, Address: tc.addr})
				if err == nil {
					_, err = c.await(ctx, 0, "relinked", id)
				}
				c.mu[0].Unlock()
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("relink to %s: %v, want %q", tc.addr, err, tc.want)
				}
			}
			pingAll(ctx, t, c)

			p := l.procs[1]
			if err := p.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-p.done
			rep, err := hymn.Clean(ctx, hymn.CleanOptions{Runs: []string{runs[1]}})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("clean: %+v", rep)
			if _, err := c.Exec(ctx, c.Ready[1].Nodes[0], 5*time.Second, "true"); err == nil {
				t.Fatal("exec on the killed worker worked")
			}

			// A worker that does not come up again: a clear error, and
			// the cluster can be asked again.
			good := l.Command
			l.Command = []string{"false"}
			err = c.Replace(ctx, 1)
			if err == nil || !strings.Contains(err.Error(), "worker 1 exited before its ready event") {
				t.Fatalf("Replace with a worker that exits: %v", err)
			}
			t.Logf("a worker that exits: %v", err)
			if _, err := c.Exec(ctx, c.Ready[1].Nodes[0], 5*time.Second, "true"); err == nil {
				t.Fatal("exec on the failed worker worked")
			}
			l.Command = good

			t0 := time.Now()
			if err := c.Replace(ctx, 1); err != nil {
				t.Fatal(err)
			}
			t.Logf("replaced in %v", time.Since(t0).Round(time.Millisecond))
			pingAll(ctx, t, c)
			st, err := c.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range st {
				if len(e.Cut) != 1 || e.Cut[0].Tunnel.TxPackets == 0 || e.Cut[0].Tunnel.RxPackets == 0 {
					t.Errorf("worker %d stats: %+v", i, e)
				}
				if want := c.Ready[1-i].Address; e.Cut[0].Remote.String() != want {
					t.Errorf("worker %d's tunnel goes to %v, want %s", i, e.Cut[0].Remote, want)
				}
				if e.Cut[0].Emulated != (tc.file != "") {
					t.Errorf("worker %d's cut link emulated: %v", i, e.Cut[0].Emulated)
				}
			}
			if err := c.Stop(ctx); err != nil {
				t.Error(err)
			}
			if err := c.Replace(ctx, 1); err == nil || !strings.Contains(err.Error(), "the cluster is stopped") {
				t.Errorf("Replace after Stop: %v", err)
			}
		})
	}
}
