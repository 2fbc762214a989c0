package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
)

// graph runs "hymn graph" with args and returns stdout, stderr and the error.
func graph(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := NewGraphCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func TestGraphBuiltin(t *testing.T) {
	out, _, err := graph(t, "--topo", "single,2")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`graph "hymn" {`,
		`"h1" [shape=box, style="rounded", label="h1\n10.0.0.1/8"];`,
		`"s1" [shape=ellipse, style=filled, fillcolor="#dbe9f6", label="s1"];`,
		`"h1" -- "s1" [taillabel="h1-eth0", headlabel="s1-eth1"];`,
		`"h2" -- "s1" [taillabel="h2-eth0", headlabel="s1-eth2"];`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
}

func TestGraphFileRoutersAndParams(t *testing.T) {
	out, _, err := graph(t, "../examples/wan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"r1" [shape=hexagon, style=filled, fillcolor="#fde4c8", label="r1\n10.1.0.1/24"];`,
		`"r1" -- "r2" [taillabel="r1-eth1\n10.12.0.1/24", headlabel="r2-eth1\n10.12.0.2/24", label="bw=100\nr1→r2: delay=12ms jitter=1ms\nr2→r1: delay=14ms jitter=1ms"];`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
}

func TestGraphMiniEditWarnings(t *testing.T) {
	out, stderr, err := graph(t, "../topo/testdata/miniedit.mn")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"h5" [shape=box, style="rounded", label="h5\n10.0.0.5/8"];`) {
		t.Errorf("output:\n%s", out)
	}
	if !strings.Contains(stderr, "*** Warning: controller c0 is ignored") {
		t.Errorf("stderr = %q", stderr)
	}
}

func TestGraphCustom(t *testing.T) {
	testenv.Tools(t, "python3")
	for _, args := range [][]string{
		{"--custom", "../topo/testdata/custom-2sw2host.py", "--topo", "twosw"},
		{"../topo/testdata/custom-2sw2host.py", "--topo", "twosw"},
	} {
		out, _, err := graph(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !strings.Contains(out, `"s3" -- "s4" [taillabel="s3-eth2", headlabel="s4-eth1"];`) {
			t.Errorf("%v: output:\n%s", args, out)
		}
	}
	_, _, err := graph(t, "--custom", "../topo/testdata/custom-raise.py", "--topo", "broken")
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "ValueError: no room for h2") {
		t.Errorf("raising file: err = %v", err)
	}
}

func TestGraphSVG(t *testing.T) {
	testenv.Tools(t, "dot")
	path := filepath.Join(t.TempDir(), "g.svg")
	if _, _, err := graph(t, "--topo", "linear,3", "-o", path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(data, []byte("<svg")) || !bytes.Contains(data, []byte("s3&#45;eth2")) {
		t.Errorf("SVG file: %v\n%.300s", err, data)
	}
}

func TestGraphSVGWithoutGraphviz(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, _, err := graph(t, "--format", "svg")
	if !errors.Is(err, ErrNoGraphviz) || !strings.Contains(err.Error(), "apt-get install graphviz") || errors.Is(err, ErrUsage) {
		t.Errorf("err = %v", err)
	}
}

func TestGraphUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("nodes: [h1]\nlinks:\n  - endpoints: [h1, s9]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--format", "png"}, "--format png: use dot or svg"},
		{[]string{"--topo", "nosuch"}, `unknown topology "nosuch"`},
		{[]string{bad}, bad + `:3:21: links[0].endpoints[1]: link to undefined node "s9"`},
		{[]string{bad, "--topo", "x"}, "does not apply"},
		{[]string{bad, "--custom", "x.py"}, "either a FILE or --custom"},
		{[]string{"--custom", bad}, "expected a Mininet custom file"},
		{[]string{"../topo/testdata/custom-2sw2host.py"}, "name one of its topologies with --topo NAME"},
		{[]string{filepath.Join(dir, "missing.yaml")}, "no such file"},
		{[]string{"a", "b"}, "accepts at most 1 arg"},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
		{[]string{"--ipbase", "x"}, `--ipbase "x" is not an IPv4 network`},
	}
	for _, c := range cases {
		_, _, err := graph(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v; want %q", c.args, err, c.want)
			continue
		}
		// cobra's own argument-count errors are not wrapped; the others are.
		if !errors.Is(err, ErrUsage) && c.want != "accepts at most 1 arg" {
			t.Errorf("%v: %v is not a usage error", c.args, err)
		}
	}
}
