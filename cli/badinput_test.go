package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
)

// badInputFiles are topology files with one mistake each.
var badInputFiles = map[string]string{
	"delay.yaml":    "nodes: [h1, h2]\nlinks:\n  - endpoints: [h1, h2]\n    params: {delay: abc}\n",
	"intf.yaml":     "nodes: [h1, h2]\nlinks:\n  - a: {node: h1, intf: \"../x\"}\n    b: h2\n",
	"intfname.yaml": "nodes: [h1, h2]\nlinks:\n  - endpoints: [h1, h2]\n    params: {intfName1: \"a b\"}\n",
	"long.yaml":     "nodes: [averyveryverylongname, h2]\nlinks:\n  - endpoints: [averyveryverylongname, h2]\n",
	"dotdot.yaml":   "nodes: [\"..\", h2]\n",
	"dash.yaml":     "nodes: [\"-h\", h2]\n",
	"dup.yaml":      "nodes: [h1, h1]\n",
	"cpupin.yaml":   "nodes:\n  - name: h1\n    backend: vm\n    params: {cpupin: \"0-9223372036854775807\"}\n",
	"cpu.yaml":      "nodes:\n  - {name: h1, params: {cpu: .nan}}\n",
	"mtu.yaml":      "nodes: [h1, h2]\nlinks:\n  - endpoints: [h1, h2]\n    params: {mtu: 99999999}\n",
	"route.yaml":    "nodes:\n  - {name: h1, params: {defaultRoute: \"via -batch\"}}\n",
	"bigvm.yaml":    "nodes:\n  - {name: h1, backend: vm, params: {memory: 1T}}\n",
	"mac.yaml":      "nodes:\n  - {name: h1, mac: \"ff:ff:ff:ff:ff:ff\"}\n",
	"links.yaml":    "nodes: [h1, h2]\nlinks:\n" + strings.Repeat("  - endpoints: [h1, h2]\n", 41),
	"nested.yaml":   strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n",
	"alias.yaml":    "a: &a [*a]\nnodes: *a\n",
	"bad.mn":        `{"hosts": [{"number": "1", "opts": {"hostname": ".."}}], "switches": [], "links": []}`,
	"delay.mn": `{"hosts": [{"number": "1", "opts": {"hostname": "h1"}}, {"number": "2", "opts": {"hostname": "h2"}}],
"switches": [], "links": [{"src": "h1", "dest": "h2", "opts": {"delay": "abc"}}]}`,
	"intf.py": "from mininet.topo import Topo\nclass T(Topo):\n    def build(self):\n" +
		"        self.addLink(self.addHost('h1'), self.addHost('h2'), intfName1='bad name')\ntopos = {'t': T}\n",
	"loop.py": "while True:\n    pass\n",
}

// TestBadInputEndToEnd runs the built binary on bad inputs: each must end
// with exit status 2 and one line on stderr within a second, having built
// nothing.
func TestBadInputEndToEnd(t *testing.T) {
	testenv.RootAndTools(t, "unshare")
	bin := sharedBinary(t)
	dir := t.TempDir()
	for name, src := range badInputFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sparse := filepath.Join(dir, "huge.yaml")
	if err := os.WriteFile(sparse, nil, 0o600); err != nil || os.Truncate(sparse, 17<<20) != nil {
		t.Fatal("cannot make a sparse file")
	}
	cases := []struct {
		name string
		args []string
		want string // in the one line of stderr
	}{
		{"dev zero", []string{"run", "/dev/zero"}, "open /dev/zero: not a regular file: it is a character device"},
		{"huge file", []string{"run", "huge.yaml"}, "larger than the limit of 16 MiB"},
		{"small file limit", []string{"run", "delay.yaml", "--max-file-size", "10"}, "larger than the limit of 10 bytes"},
		{"bad file limit", []string{"--max-file-size", "-1"}, "--max-file-size"},
		{"linear huge", []string{"--topo", "linear,100000000", "--test", "build"}, "--topo linear,100000000: 200000000 nodes exceeds the limit of"},
		{"tree huge", []string{"--topo", "tree,depth=30,fanout=2"}, "--topo tree,depth=30,fanout=2: 2147483647 nodes exceeds the limit of"},
		{"tree overflow", []string{"--topo", "tree,depth=64,fanout=64", "--test", "build"}, "nodes exceeds the limit of"},
		{"max nodes", []string{"--topo", "single,3", "--max-nodes", "3", "--test", "build"}, "4 nodes exceeds the limit of 3"},
		{"cpupin", []string{"run", "cpupin.yaml", "--test", "build"}, "cpupin.yaml:2:11: nodes[0]: node h1: invalid VM parameter: cpupin="},
		{"host cpu NaN", []string{"--host", "cfs,cpu=NaN", "--test", "build"}, "--host cfs,cpu=NaN: cpu must be a fraction in (0, 1]"},
		{"host cpu Inf", []string{"--host", "cfs,cpu=+Inf", "--test", "build"}, "cpu must be a fraction"},
		{"node cpu NaN", []string{"run", "cpu.yaml", "--test", "build"}, "cpu.yaml:2:12: nodes[0]: node h1: cpu"},
		{"node ..", []string{"run", "dotdot.yaml", "--test", "build"}, `dotdot.yaml:1:9: nodes[0].name: node name ".."`},
		{"node -h", []string{"run", "dash.yaml", "--test", "build"}, `dash.yaml:1:9: nodes[0].name: node name "-h"`},
		{"duplicate node", []string{"run", "dup.yaml", "--test", "build"}, "duplicate node name"},
		{"link delay abc", []string{"run", "delay.yaml", "--test", "build"}, "delay.yaml:4:21: links[0].params.delay: invalid link parameters: delay=abc"},
		{"intf path", []string{"run", "intf.yaml", "--test", "build"}, "intf.yaml:3:25: links[0].a.intf"},
		{"intfName1", []string{"run", "intfname.yaml", "--test", "build"}, "intfname.yaml:4:25: links[0].params.intfName1"},
		{"long intf name", []string{"run", "long.yaml", "--test", "build"}, "interface name averyveryverylongname-eth0 is 26 bytes"},
		{"mtu", []string{"run", "mtu.yaml", "--test", "build"}, "links[0].params.mtu"},
		{"route option", []string{"run", "route.yaml", "--test", "build"}, "defaultRoute"},
		{"nested yaml", []string{"run", "nested.yaml", "--test", "build"}, "nested.yaml"},
		{"alias loop", []string{"run", "alias.yaml", "--test", "build"}, "alias.yaml"},
		{"miniedit name", []string{"run", "bad.mn", "--test", "build"}, `node name ".."`},
		{"miniedit delay", []string{"run", "delay.mn", "--test", "build"}, "links[0].opts.delay"},
		{"sriov vfs", []string{"--links", "sriov,vfs=1000000", "--test", "build"}, "vfs=1000000: at most 256 VFs per PF"},
		{"link tc delay", []string{"--link", "tc,delay=abc", "--test", "build"}, "--link tc,delay=abc"},
		{"vm memory", []string{"run", "bigvm.yaml", "--test", "build"}, "topology: 1 VM nodes: 1048576 MiB of memory is more than the"},
		{"pre script device", []string{"--pre", "/dev/zero", "--test", "build"}, "--pre /dev/zero: not a regular file"},
		{"broadcast mac", []string{"run", "mac.yaml", "--test", "build"}, "mac.yaml:2:21: nodes[0].mac"},
		{"too many links", []string{"run", "links.yaml", "--max-nodes", "10", "--test", "build"}, "links.yaml:3:3: links: 41 links exceeds the limit of 40"},
		{"directory", []string{"run", "."}, "open .: not a regular file: it is a directory"},
		{"twait NaN", []string{"--twait", "NaN", "--test", "build"}, "--twait NaN"},
		{"topo not a number", []string{"--topo", "linear," + strings.Repeat("9", 5000), "--test", "build"}, "must be an integer"},
	}
	// Custom .py files run python3, whose start alone can take a second on
	// a loaded machine: they get longer, but still bounded.
	var pyCases []struct {
		name, want string
		args       []string
	}
	if _, err := exec.LookPath("python3"); err == nil {
		pyCases = []struct {
			name, want string
			args       []string
		}{
			{"custom intfName1", `intfName1: interface name "bad name"`, []string{"--custom", "intf.py", "--topo", "t", "--test", "build"}},
			{"custom endless", "ran longer than the limit of 300ms (set --custom-timeout to raise it)", []string{"--custom", "loop.py", "--topo", "t", "--custom-timeout", "300ms", "--test", "build"}},
		}
	}
	maxTime := map[string]time.Duration{}
	for _, p := range pyCases {
		cases = append(cases, struct {
			name string
			args []string
			want string
		}{p.name, p.args, p.want})
		maxTime[p.name] = 5 * time.Second
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The binary runs in a private mount namespace with empty
			// /run/netns and /run/hymn, so what it creates can be listed
			// there without mistaking the namespaces of tests running
			// beside it for its own.
			list := filepath.Join(t.TempDir(), "netns")
			script := `mkdir -p /run/netns /run/hymn && mount -t tmpfs hymn-test /run/netns && mount -t tmpfs hymn-test /run/hymn || exit 99
"$@"; rc=$?; ls -A /run/netns /run/hymn > "$HYMN_TEST_LIST"; exit $rc`
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh", bin}, c.args...)...)
			cmd.Env = append(os.Environ(), "HYMN_TEST_LIST="+list)
			cmd.Dir = dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			took := time.Since(start)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("hymn %s: %v, want exit status 2; stderr:\n%s", strings.Join(c.args, " "), err, stderr.String())
			}
			msg := strings.TrimRight(stderr.String(), "\n")
			if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "hymn: ") {
				t.Errorf("want one line on stderr, got:\n%s", stderr.String())
			}
			if !strings.Contains(msg, c.want) {
				t.Errorf("stderr %q does not say %q", msg, c.want)
			}
			if len(msg) > 1024 {
				t.Errorf("error line of %d bytes", len(msg))
			}
			limit := time.Second
			if d, ok := maxTime[c.name]; ok {
				limit = d
			}
			testenv.Elapsed(t, "refusal of hymn "+c.name, took, limit)
			left, err := os.ReadFile(list)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Fields(strings.NewReplacer("/run/netns:", "", "/run/hymn:", "").Replace(string(left))); len(got) > 0 {
				t.Errorf("hymn created %v", got)
			}
		})
	}
}

// TestInterruptWhileLoading: SIGTERM (and Ctrl-C) end a custom file that
// runs forever within a second, leaving no python3 behind.
func TestInterruptWhileLoading(t *testing.T) {
	testenv.Tools(t, "python3")
	bin := sharedBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "forever.py")
	if err := os.WriteFile(file, []byte("while True:\n    pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin, "--custom", file, "--topo", "t", "--test", "build")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(700 * time.Millisecond)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				testenv.Elapsed(t, "end after the signal", time.Since(start), time.Second)
				if err != nil {
					t.Errorf("exit: %v; stderr:\n%s", err, stderr.String())
				}
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill() // the test fails anyway; it may have just ended
				t.Fatal("still running 10 s after the signal")
			}
			if !strings.Contains(stderr.String(), "Keyboard Interrupt") {
				t.Errorf("stderr:\n%s", stderr.String())
			}
			if out, _ := exec.Command("pgrep", "-f", file).Output(); len(out) > 0 {
				t.Errorf("python3 left running: %s", out)
			}
		})
	}
}
