package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
)

// TestUIFlagsCheckedBeforeBuild: a live view that cannot be served as
// asked (beyond the loopback without TLS or the opt-out, an address that
// is not HOST:PORT, a key pair that does not load) is a usage error (exit
// 2) on every command that takes --ui, and nothing is loaded, built or
// started first: stderr holds the refusal alone, no "***" progress line
// (the network's "*** Creating network", a cluster's workers), and a
// Python script that would mark a file never runs.
func TestUIFlagsCheckedBeforeBuild(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "two.yaml")
	if err := os.WriteFile(file, []byte("nodes:\n  - {name: h1}\n  - {name: h2}\n  - {name: s1, kind: switch}\nlinks:\n  - endpoints: [h1, s1]\n  - endpoints: [h2, s1]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "ran")
	script := filepath.Join(dir, "mark.py")
	if err := os.WriteFile(script, []byte("open("+`"`+marker+`"`+", 'w').close()\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const optOut = "--ui-tls-cert and --ui-tls-key to serve HTTPS, or --ui-insecure-listen"
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--topo", "linear,2", "--ui=0.0.0.0:0"}, optOut},
		{[]string{"--topo", "linear,2", "--ui=192.0.2.1:8080", "--test", "pingall"}, optOut},
		{[]string{"--topo", "linear,2", "--ui=[::]:0"}, optOut},
		{[]string{"run", file, "--ui=:8080"}, optOut},
		{[]string{"cluster", "run", "--topo", "linear,4", "--cluster", "local:2", "--ui=0.0.0.0:0"}, optOut},
		{[]string{"python", "--ui=0.0.0.0:0", script}, optOut},
		{[]string{"--topo", "linear,2", "--ui=localhost"}, `--ui "localhost": give HOST:PORT`},
		{[]string{"--topo", "linear,2", "--ui=127.0.0.1:99999"}, `the port "99999" is not a port number`},
		{[]string{"cluster", "run", "--topo", "linear,4", "--ui=127.0.0.1:http-alt-nonsense"}, "is not a port number"},
		{[]string{"--topo", "linear,2", "--ui=0.0.0.0:0", "--ui-tls-cert", filepath.Join(dir, "none.pem"), "--ui-tls-key", filepath.Join(dir, "none.key")}, "none.pem"},
		{[]string{"--topo", "linear,2", "--ui=0.0.0.0:0", "--ui-tls-cert", file, "--ui-tls-key", file}, "--ui-tls-cert " + file},
		{[]string{"--topo", "linear,2", "--ui-tls-key", file}, "--ui-tls-cert and --ui-tls-key go together"},
	} {
		code, out, stderr := run(t, c.args...)
		name := "hymn " + strings.Join(c.args, " ")
		if code != 2 || !strings.Contains(stderr, c.says) {
			t.Errorf("%s: exit %d, stderr %q, want 2 saying %q", name, code, stderr, c.says)
		}
		if strings.Contains(stderr, "***") || out != "" {
			t.Errorf("%s: something ran before the refusal:\nstdout %q\nstderr %q", name, out, stderr)
		}
		if strings.Contains(stderr, "BEGIN") || strings.Contains(stderr, "nodes:") {
			t.Errorf("%s: the refusal quotes a file: %q", name, stderr)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("hymn python ran the script before refusing --ui")
	}
}

// TestUIFlagsAllowed: the same flags with the opt-out pass the early
// check and the network runs, with the warning and the page's URL (the
// control: the refusals above are the flags', not the command's).
func TestUIFlagsAllowed(t *testing.T) {
	testenv.Root(t)
	code, _, stderr := run(t, "--topo", "linear,2", "--ui=0.0.0.0:0", "--ui-insecure-listen", "--test", "pingall")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"beyond the loopback", "plain HTTP (--ui-insecure-listen)", "*** Live view: http://", "*** Results: 0% dropped (2/2 received)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// The warning comes once the network stands, with the URL it is
	// about, not before the build.
	if i, j := strings.Index(stderr, "*** Creating network"), strings.Index(stderr, "beyond the loopback"); i < 0 || j < i {
		t.Errorf("the warning came before the network:\n%s", stderr)
	}
}
