package vm

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/vm/agent"
)

// startLocalAgent runs an agent.Server on this machine behind a pipe, so
// the protocol and the shell semantics are tested without a VM.
func startLocalAgent(t *testing.T) *Agent {
	t.Helper()
	host, guest := net.Pipe()
	srv := agent.NewServer()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(guest, guest) }()
	a := NewAgent(host)
	t.Cleanup(func() {
		// A net.Pipe end's Close never fails; the server ends at the EOF.
		_ = a.Close()
		_ = guest.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
		srv.Close()
	})
	return a
}

func TestAgentShellPersists(t *testing.T) {
	a := startLocalAgent(t)
	ctx := context.Background()
	if _, _, err := a.Shell(ctx, "cd /tmp; X=42"); err != nil {
		t.Fatal(err)
	}
	out, status, err := a.Shell(ctx, "pwd; echo $X; echo err >&2; false")
	if err != nil {
		t.Fatal(err)
	}
	if out != "/tmp\n42\nerr\n" || status != 1 {
		t.Fatalf("got %q status %d", out, status)
	}
	// A background job survives the line that started it.
	if _, _, err := a.Shell(ctx, "sleep 30 & echo $! > /dev/null"); err != nil {
		t.Fatal(err)
	}
	out, _, _ = a.Shell(ctx, "jobs")
	if !strings.Contains(out, "Running") {
		t.Fatalf("background job lost: jobs gives %q", out)
	}
	if _, _, err := a.Shell(ctx, "kill %1"); err != nil {
		t.Error(err)
	}
}

func TestAgentShellCancel(t *testing.T) {
	a := startLocalAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, _, err := a.Shell(ctx, "sleep 20")
	if took := time.Since(t0); err == nil || !testenv.Elapsed(t, "a cancelled Shell", took, 5*time.Second) {
		t.Fatalf("cancel: err %v after %v", err, took)
	}
	out, _, err := a.Shell(context.Background(), "echo alive")
	if err != nil || out != "alive\n" {
		t.Fatalf("shell after cancel: %q %v", out, err)
	}
}

func TestAgentExec(t *testing.T) {
	a := startLocalAgent(t)
	ctx := context.Background()
	res, err := a.Exec(ctx, []byte("in"), "sh", "-c", "cat; echo out; echo err >&2; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "inout\n" || string(res.Stderr) != "err\n" || res.ExitCode != 3 {
		t.Fatalf("got %+v", res)
	}
	if _, err := a.Exec(ctx, nil, "/no/such/program"); err == nil {
		t.Fatal("exec of a missing program succeeded")
	}
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err = a.Exec(cctx, nil, "sleep", "20")
	if took := time.Since(t0); err == nil || !testenv.Elapsed(t, "a cancelled Exec", took, 5*time.Second) {
		t.Fatalf("exec cancel: %v after %v", err, took)
	}
}

func TestAgentFiles(t *testing.T) {
	a := startLocalAgent(t)
	ctx := context.Background()
	path := t.TempDir() + "/f"
	data := []byte{0, 1, 2, 255, '\n'}
	if err := a.WriteFile(ctx, path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := a.ReadFile(ctx, path)
	if err != nil || string(got) != string(data) {
		t.Fatalf("read back %v %v", got, err)
	}
	if _, err := a.ReadFile(ctx, path+".missing"); err == nil {
		t.Fatal("reading a missing file succeeded")
	}
}

func TestAgentGone(t *testing.T) {
	host, guest := net.Pipe()
	a := NewAgent(host)
	_ = guest.Close() // a net.Pipe end's Close never fails
	if _, err := a.Ping(context.Background()); err == nil {
		t.Fatal("ping over a closed connection succeeded")
	}
	if err := a.Close(); err != nil {
		t.Error(err)
	}
}

func TestAgentShellStream(t *testing.T) {
	a := startLocalAgent(t)
	var chunks []string
	w := writerFunc(func(p []byte) (int, error) {
		chunks = append(chunks, string(p))
		return len(p), nil
	})
	status, err := a.ShellStream(context.Background(), "echo one; sleep 0.3; echo two; exit_code() { return 4; }; exit_code", w)
	if err != nil || status != 4 {
		t.Fatalf("status %d err %v", status, err)
	}
	if got := strings.Join(chunks, ""); got != "one\ntwo\n" {
		t.Fatalf("streamed %q", got)
	}
	if len(chunks) < 2 || chunks[0] != "one\n" {
		t.Fatalf("output was not streamed: %q", chunks)
	}
	// The shell stays in sync for the next, unstreamed line.
	if out, _, err := a.Shell(context.Background(), "echo three"); err != nil || out != "three\n" {
		t.Fatalf("after stream: %q %v", out, err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
