package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
)

func runHymn(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	in, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close() }() // /dev/null, read-only
	var out, errOut bytes.Buffer
	code = Execute(t.Context(), args, in, &out, &errOut)
	return code, out.String(), errOut.String()
}

// Every bad input to hymn cluster and hymn worker is a usage error (exit
// status 2) with one line saying what, before anything is built.
func TestClusterBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badTopo := write("bad.yaml", "nodes: [h1, h1]\n")
	pinned := write("pinned.yaml", "nodes:\n  - {name: h1, placement: 3}\n  - h2\nlinks:\n  - endpoints: [h1, h2]\n")
	crowded := write("crowded.yaml", "nodes:\n  - {name: h1, placement: 0}\n  - {name: h2, placement: 0}\n  - {name: h3, placement: 0}\n  - h4\nlinks:\n  - endpoints: [h1, h2]\n  - endpoints: [h2, h3]\n  - endpoints: [h3, h4]\n")
	py := write("t.py", "topos = {}\n")
	good := write("good.json", `{"topology":"linear,2","workers":2,"worker":0,"assign":{"h1":0,"s1":0,"h2":1,"s2":1},"vni_key":"00112233445566778899aabbccddeeff"}`)
	unknownField := write("unknown.json", `{"topology":"linear,2","workers":2,"assign":{},"wrkers":3}`)
	badAssign := write("assign.json", `{"topology":"linear,2","workers":2,"worker":0,"assign":{"h1":0}}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cluster"}, "give a subcommand"},
		{[]string{"cluster", "run"}, "give a topology FILE or --topo SPEC"},
		{[]string{"cluster", "run", good, "--topo", "linear,2"}, "give FILE or --topo, not both"},
		{[]string{"cluster", "run", "--topo", "linear,x"}, "--topo"},
		{[]string{"cluster", "run", "--topo", "linear,2", "--cluster", "k8s:2"}, "use local:N"},
		{[]string{"cluster", "run", "--topo", "linear,2", "--cluster", "kube:2"}, "needs --image"},
		{[]string{"cluster", "run", "--topo", "linear,2", "--image", "x"}, "are for --cluster kube:N"},
		{[]string{"cluster", "run", "--topo", "linear,2", "--cluster", "kube:2", "--image", "x", "--pull-policy", "Sometimes"}, `--pull-policy "Sometimes"`},
		{[]string{"cluster", "run", "--topo", "linear,2", "--cluster", "kube:2", "--image", "x", "--namespace", "Bad_NS"}, `namespace "Bad_NS"`},
		{[]string{"cluster", "run", "--topo", "linear,2", "--cluster", "local:0"}, "N must be a number from 1 to 64"},
		{[]string{"cluster", "run", "--topo", "linear,2", "--switch", "bogus"}, "cluster run: --switch"},
		{[]string{"cluster", "run", "--topo", "linear,2", "--nodes", "docker"}, "cluster run: --nodes"},
		{[]string{"cluster", "run", "--topo", "linear,2", "--test", "iperf"}, `--test "iperf": use pingall, rtt, stats, cli, none`},
		{[]string{"cluster", "run", "--topo", "linear,2", "--cluster", "local:x"}, "N must be a number"},
		{[]string{"cluster", "run", "--topo", "linear,2", "--cluster", "local:99"}, "N must be a number from 1 to 64"},
		{[]string{"cluster", "run", "--topo", "linear,2", "--cluster", "local:5"}, "5 workers for 4 nodes"},
		{[]string{"cluster", "run", "--topo", "linear,2", "--port", "0"}, "--port 0 is not a UDP port"},
		{[]string{"cluster", "run", "--topo", "linear,2", "--port", "65536"}, "--port 65536"},
		{[]string{"cluster", "run", "--topo", "linear,2", "--vni-base", "-1"}, "--vni-base -1 is outside"},
		{[]string{"cluster", "run", "--topo", "linear,2", "--vni-base", "16777216"}, "--vni-base 16777216"},
		{[]string{"cluster", "run", "--topo", "linear,2", "--test", "pingall+fly"}, `--test "fly"`},
		{[]string{"cluster", "run", "--topo", "linear,2", "--slack", "-1"}, "--slack must not be negative"},
		{[]string{"cluster", "run", "--topo", "linear,2", "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"cluster", "run", "--topo", "linear,2", "--ipbase", "10.0.0.0/40"}, "--ipbase"},
		{[]string{"cluster", "run", "--topo", "linear,2", "--bogus"}, "unknown flag"},
		{[]string{"cluster", "run", badTopo}, "bad.yaml:1:13"},
		{[]string{"cluster", "run", pinned}, "node h1: placement 3 names an unknown worker"},
		{[]string{"cluster", "run", crowded}, "placement hints put 3 nodes on worker 0 (h1, h2, h3), more than the 2"},
		{[]string{"cluster", "run", py}, "only hymn's YAML/JSON files"},
		{[]string{"cluster", "run", filepath.Join(dir, "missing.yaml")}, "no such file"},
		{[]string{"cluster", "split", "--topo", "linear,2", "--workers", "0"}, "--workers must be at least 1"},
		{[]string{"cluster", "split", "--topo", "linear,2", "--workers", "9"}, "9 workers for 4 nodes"},
		{[]string{"cluster", "split", "a.yaml", "b.yaml"}, "accepts at most 1 arg"},
		{[]string{"worker"}, "--spec FILE is required"},
		{[]string{"worker", "--spec", filepath.Join(dir, "none.json")}, "no such file"},
		{[]string{"worker", "--spec", unknownField}, `unknown field "wrkers"`},
		{[]string{"worker", "--spec", badAssign}, "is assigned to no worker"},
		{[]string{"worker", "--spec", badTopo}, "bad part specification"},
		{[]string{"worker", "--spec", good, "--address", "10.0.0.300"}, `--address "10.0.0.300"`},
		{[]string{"worker", "--spec", good, "--address", "224.0.0.1"}, "not a unicast IP address"},
		{[]string{"worker", "--spec", good, "--switch", "hub"}, "--switch"},
		{[]string{"worker", "--spec", good, "--nodes", "lxc"}, "--nodes"},
		{[]string{"worker", "--spec", good, "--build-timeout", "-1s"}, "--build-timeout must be positive"},
		{[]string{"worker", "extra"}, "unknown command"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := tc.args
			if len(args) > 1 && args[1] == "run" {
				// Should a case ever get past validation, its workers
				// must not be this test binary.
				args = append(slices.Clone(args), "--worker-binary", "/bin/false")
			}
			code, _, stderr := runHymn(t, args...)
			if code != 2 {
				t.Errorf("exit status %d, want 2; stderr: %s", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not say %q", stderr, tc.want)
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("more than one line: %q", stderr)
			}
		})
	}
}

func TestClusterSplit(t *testing.T) {
	code, stdout, stderr := runHymn(t, "cluster", "split", "--topo", "linear,100", "--workers", "4")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Sizes    []int          `json:"sizes"`
		CutLinks int            `json:"cut_links"`
		Cut      []string       `json:"cut"`
		Assign   map[string]int `json:"assign"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.CutLinks != 3 || len(out.Cut) != 3 || len(out.Assign) != 200 {
		t.Errorf("split: %+v", out)
	}
	for _, s := range out.Sizes {
		if s != 50 {
			t.Errorf("sizes %v", out.Sizes)
		}
	}
	if out.Assign["h1"] != 0 {
		t.Errorf("h1 on worker %d, want 0", out.Assign["h1"])
	}
}

// The built binary end to end: linear,4 over two local workers, pingall
// 12/12, JSON on stdout, nothing left.
func TestClusterRunLocal(t *testing.T) {
	testenv.RootAndTools(t, "ip", "ping")
	bin := sharedBinary(t)
	cmd := exec.Command(bin, "cluster", "run", "--topo", "linear,4", "--cluster", "local:2", "--test", "pingall+stats", "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	t.Logf("%s", stderr.String())
	var rep ClusterReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if rep.PingAll == nil || rep.PingAll.Sent != 12 || rep.PingAll.Received != 12 {
		t.Errorf("pingall %+v", rep.PingAll)
	}
	if !strings.Contains(stderr.String(), "*** Results: 0% dropped (12/12 received)") {
		t.Errorf("no Mininet-style pingall line")
	}
	if len(rep.Stats) != 2 || rep.StopError != "" {
		t.Errorf("report %+v", rep)
	}
	for _, e := range rep.Ready {
		if out, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(out), e.Run) {
			t.Errorf("worker %d's run %s left namespaces", e.Worker, e.Run)
		}
	}
}

// The mininet> shell over a cluster (--test cli): node commands go to the
// worker holding the node, names become addresses, what needs the network
// in this process says so.
func TestClusterShell(t *testing.T) {
	testenv.RootAndTools(t, "ip", "ping")
	bin := sharedBinary(t)
	cmd := exec.Command(bin, "cluster", "run", "--topo", "linear,4", "--cluster", "local:2", "--test", "cli")
	cmd.Stdin = strings.NewReader("nodes\nh4 ping -c1 -W2 h1\nh1 echo $((6*7)) on $(hostname -I)\npingpair\niperf\nh9 true\nh1\nexit\n")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"mininet> ",
		"available nodes are: \nh1 h2 h3 h4 s1 s2 s3 s4\n",
		"1 packets transmitted, 1 received",
		"42 on 10.0.0.1",
		"h1 -> h2 \nh2 -> h1 \n*** Results: 0% dropped (2/2 received)\n",
		"*** iperf is not available here",
		"*** Unknown command: h9 true",
		"*** Please enter a command for node: h1 <cmd>",
		"*** Stopping 2 workers",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the shell's output lacks %q", want)
		}
	}
}

// --switch reaches every worker: Open vSwitch bridges (userspace) and
// OpenFlow switches (each worker with its own controller for its
// switches) on both sides of the cut link; nothing of them is left.
func TestClusterRunOVSBridges(t *testing.T) {
	testenv.RootAndTools(t, "ip", "ping", "ovs-vsctl", "ovsdb-server", "ovs-vswitchd", "ovs-testcontroller")
	for _, sw := range []string{"ovsbr", "ovsk"} {
		t.Run(sw, func(t *testing.T) {
			out, err := exec.Command(sharedBinary(t), "cluster", "run", "--topo", "linear,4", "--cluster", "local:2", "--switch", sw, "--test", "pingall").CombinedOutput()
			t.Logf("%s", out)
			if err != nil || !strings.Contains(string(out), "*** Results: 0% dropped (12/12 received)") {
				t.Fatalf("cluster run --switch %s: %v", sw, err)
			}
			if ps, _ := exec.Command("pgrep", "-f", "ovs-testcontroller|hymn-.*ovs").Output(); len(ps) > 0 {
				t.Errorf("left running after the cluster run: %s", ps)
			}
		})
	}
}
