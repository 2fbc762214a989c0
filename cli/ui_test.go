package cli

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
)

// TestUICommandUsage: hymn ui without a live run to show, or with a run id
// that is not one, is a usage error (exit 2) that says why; so is an
// address beyond the loopback without TLS or --insecure-listen, and half
// a key pair.
func TestUICommandUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"ui", "--run", "not-a-run"}, "not a run id"},
		{[]string{"ui", "--run", "0123456789abcdef"}, "not running"},
		{[]string{"ui", "extra"}, ""},
		{[]string{"ui", "--listen", "0.0.0.0:0"}, "--tls-cert and --tls-key to serve HTTPS, or --insecure-listen"},
		{[]string{"ui", "--listen", ":8080"}, "not a loopback address"},
		{[]string{"ui", "--listen", "192.0.2.1:80", "--tls-cert", "c.pem"}, "--tls-cert and --tls-key go together"},
	} {
		var out, errb bytes.Buffer
		code := Execute(context.Background(), c.args, nil, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), c.says) {
			t.Errorf("hymn %s: exit %d, stderr %q, want 2 saying %q", strings.Join(c.args, " "), code, errb.String(), c.says)
		}
		if out.Len() != 0 {
			t.Errorf("hymn %s printed %q", strings.Join(c.args, " "), out.String())
		}
	}
}

// TestUIRefusesSquattedSocket: another user binds a run's control socket
// name before the run does; hymn ui --run refuses to show what answers
// there (exit 1), naming the process that holds it.
func TestUIRefusesSquattedSocket(t *testing.T) {
	testenv.Root(t)
	const py = "/usr/bin/python3" // Debian's: user nobody can run it
	if _, err := os.Stat(py); err != nil {
		testenv.Tools(t, py)
	}
	run := owner.NewRunID()
	if err := owner.Claim(run); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = owner.Release(run) }) // the test's own record
	sq := exec.Command(py, "-c", `import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind("\0hymn-ui-" + sys.argv[1])
s.listen(8)
print("ready", flush=True)
time.sleep(60)`, run)
	sq.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	stdout, err := sq.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sq.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sq.Process.Kill(); _ = sq.Wait() }) // killed: its status says so
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("squatter: %q %v", line, err)
	}
	var out, errb bytes.Buffer
	// A hymn ui that proxies would serve until the context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code := Execute(ctx, []string{"ui", "--run", run}, nil, &out, &errb)
	if code != 1 || out.Len() != 0 || !strings.Contains(errb.String(), "held by pid "+strconv.Itoa(sq.Process.Pid)) {
		t.Errorf("hymn ui --run on a squatted socket: exit %d, stdout %q, stderr %q: want 1, no URL, the squatter named", code, out.String(), errb.String())
	}
}
