package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeHymnKube puts a hymn-kube on PATH (and nothing else) that records its
// arguments and exits with code.
func fakeHymnKube(t *testing.T, code int) (argsFile string) {
	t.Helper()
	dir := t.TempDir()
	argsFile = filepath.Join(dir, "args")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + argsFile + "\necho hymn-kube ran\nexit " + strconv.Itoa(code) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "hymn-kube"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	return argsFile
}

func TestRunKube(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(file, []byte("nodes: [h1, h2]\nlinks:\n  - endpoints: [h1, h2]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("bad", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"run", file, "--workers", "3"}, "--workers is for --kube"},
			{[]string{"run", file, "--kubeconfig", "k"}, "--kubeconfig is for --kube"},
			{[]string{"run", file, "--kube", "--test", "iperf"}, "--test iperf: with --kube, one of pingall"},
			{[]string{"run", file, "--kube", "--test", "pingall+pingpair"}, "--test pingall+pingpair"},
			{[]string{"run", file, "--kube", "--test", "none", "--hold"}, "--hold and --test"},
			{[]string{"run", file, "--test", "none", "--switch", "ovsbr", "--kube"}, "--switch: not with --kube"},
			{[]string{"run", file, "--kube", "--topo", "linear,3"}, "--topo: not with --kube"},
			{[]string{"run", file, "--kube", "--workers", "0"}, "--workers 0: use 1 to 64"},
			{[]string{"run", file, "--kube", "--workers", "65"}, "--workers 65"},
			{[]string{"run", file, "--kube"}, "found neither next to hymn nor on PATH"},
		} {
			code, _, stderr := run(t, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.args, code, stderr, tc.want)
			}
		}
	})
	t.Run("handed over", func(t *testing.T) {
		argsFile := fakeHymnKube(t, 0)
		code, stdout, stderr := run(t, "run", file, "--kube", "--workers", "3", "--kubeconfig", "/k", "--namespace", "lab", "--image", "localhost/hymn:1", "--hold")
		if code != 0 || !strings.Contains(stdout, "hymn-kube ran") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		got, _ := os.ReadFile(argsFile)
		want := strings.Join([]string{"run", file, "--kubeconfig", "/k", "--namespace", "lab", "--image", "localhost/hymn:1", "--workers", "3", "--hold"}, "\n") + "\n"
		if string(got) != want {
			t.Errorf("hymn-kube got %q, want %q", got, want)
		}
	})
	t.Run("test passed on", func(t *testing.T) {
		argsFile := fakeHymnKube(t, 0)
		if code, stdout, stderr := run(t, "run", file, "--kube", "--test", "build"); code != 0 {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		if got, _ := os.ReadFile(argsFile); string(got) != "run\n"+file+"\n--test\nnone\n" {
			t.Errorf("hymn-kube got %q; want --test none for build", got)
		}
	})
	t.Run("hymn kube", func(t *testing.T) {
		argsFile := fakeHymnKube(t, 0)
		if code, stdout, stderr := run(t, "kube", "list", "-A", "--kubeconfig", "/k"); code != 0 || !strings.Contains(stdout, "hymn-kube ran") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		if got, _ := os.ReadFile(argsFile); string(got) != "list\n-A\n--kubeconfig\n/k\n" {
			t.Errorf("hymn-kube got %q", got)
		}
	})
	// hymn-kube's exit status comes through: 2 for its usage errors, 1
	// for the rest (it printed its own message).
	for _, c := range []struct{ kube, want int }{{2, 2}, {1, 1}, {3, 1}} {
		fakeHymnKube(t, c.kube)
		if code, _, _ := run(t, "run", file, "--kube"); code != c.want {
			t.Errorf("hymn-kube exit %d: hymn exit %d, want %d", c.kube, code, c.want)
		}
	}
}
