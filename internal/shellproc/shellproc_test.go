package shellproc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/shellproc"
	"github.com/hymn-net/hymn/internal/testenv"
)

// startBash starts a shell as namespace nodes do, minus the namespace.
func startBash(t *testing.T) *shellproc.Shell {
	t.Helper()
	testenv.Tools(t, "bash")
	cmd := exec.Command("bash", "--norc", "--noprofile", "-s")
	cmd.Env = append(os.Environ(), "PS1=", "PS2=", "HISTFILE=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	sh, err := shellproc.Start(cmd, (*exec.Cmd).Start)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sh.Close(); err != nil {
			t.Error(err)
		}
	})
	return sh
}

// startNodeShell starts a node's shell in a namespace of its own, the way
// hymn runs h1's.
func startNodeShell(t *testing.T) *shellproc.Shell {
	t.Helper()
	testenv.RootAndTools(t, "bash")
	name := fmt.Sprintf("hymnt-sp%d", os.Getpid()%100000)
	ns, err := netnsx.CreateNamed(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.Delete(); err != nil {
			t.Error(err)
		}
	})
	// As nodes.StartShell does (not imported: the nodes package depends on
	// much that is unrelated to the framing).
	cmd := exec.Command("bash", "--norc", "--noprofile", "-s", "hymn:h1")
	cmd.Env = append(os.Environ(), "PS1=", "PS2=", "HISTFILE=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	sh, err := shellproc.Start(cmd, func(c *exec.Cmd) error { return netnsx.Do(ns.NsHandle(), c.Start) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sh.Close(); err != nil {
			t.Error(err)
		}
	})
	return sh
}

func run(t *testing.T, sh *shellproc.Shell, line string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, status, err := sh.RunStatus(ctx, line)
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	return out, status
}

// forgeries are command lines that print every marker a command could
// know the shape of: the old "\x01hymn-<seq>:" for many seqs, the new
// format with made-up nonces, and the /proc ways to read the real one.
var forgeries = []struct{ name, line string }{
	{"old format", `printf '\001hymn-1:0\001'; sleep 1; echo late`},
	{"old format every seq", `for i in $(seq 0 300); do printf '\001hymn-%d:0\001' $i; done; sleep 0.2; echo late`},
	{"made-up nonces", `printf '\001hymn-%032x:0\001' 0; printf '\001hymn-%s:0\001' $(head -c16 /dev/urandom | od -An -tx1 | tr -d ' \n'); echo late`},
	// The line that prints the real marker waits in the shell's stdin: the
	// command's stdin is /dev/null and the shell's own is a socket, which
	// /proc cannot reopen.
	{"nonce read from proc", `cat; cat /proc/$$/fd/0 2>/dev/null; for f in /proc/$$/fd/*; do timeout 0.2 cat $f </dev/null 2>/dev/null | tr -dc '\001-\377' | grep -ao 'hymn-[0-9a-f]*' | while read m; do printf '\001%s:0\001' "$m"; done; done; echo late`},
}

func testForgery(t *testing.T, sh *shellproc.Shell) {
	for _, f := range forgeries {
		t.Run(f.name, func(t *testing.T) {
			line := f.line
			start := time.Now()
			out, status := run(t, sh, line)
			if !strings.HasSuffix(out, "late\n") || status != 0 {
				t.Errorf("%q: ended early: status %d, output %q", line, status, out)
			}
			if strings.HasPrefix(line, "printf '\\001hymn-1:0") {
				testenv.Floor(t, "a forged marker followed by sleep 1", time.Since(start), time.Second, 10*time.Millisecond)
			}
			if next, _ := run(t, sh, "echo next"); next != "next\n" {
				t.Errorf("after %q the next command printed %q", line, next)
			}
		})
	}
}

func TestShellForgedMarkerBash(t *testing.T) { testForgery(t, startBash(t)) }

// TestShellForgedMarkerNode is the must-show in a node's namespace.
func TestShellForgedMarkerNode(t *testing.T) { testForgery(t, startNodeShell(t)) }

// TestShellKeepsState: Mininet's cmd semantics survive the framing.
func TestShellKeepsState(t *testing.T) {
	sh := startBash(t)
	run(t, sh, "cd /usr; X=hymn; f() { echo fn$1; }; sleep 30 &")
	if out, _ := run(t, sh, `pwd; echo $X; f 1; jobs | wc -l`); out != "/usr\nhymn\nfn1\n1\n" {
		t.Errorf("state lost: %q", out)
	}
	for name, c := range map[string]struct {
		line   string
		out    string
		status int
	}{
		"exit status":         {"(exit 3)", "", 3},
		"quotes":              {"echo 'it''s'; echo \"a'b\"", "its\na'b\n", 0},
		"here document":       {"cat <<EOF\nx\ny\nEOF", "x\ny\n", 0},
		"empty stdin":         {"cat; read y; echo got$y", "got\n", 0},
		"stderr and status":   {"echo a; echo b >&2; false", "a\nb\n", 1},
		"ctrl-a in output":    {"printf 'a\\001b\\001\\001'", "a\x01b\x01\x01", 0},
		"marker prefix":       {"echo $'\\x01hymn-'", "\x01hymn-\n", 0},
		"two lines":           {"echo multi\necho line", "multi\nline\n", 0},
		"trailing newlines":   {"echo trailing\n\n", "trailing\n", 0},
		"unterminated output": {"echo -n partial; printf '\\001hy'", "partial\x01hy", 0},
	} {
		t.Run(name, func(t *testing.T) {
			if out, status := run(t, sh, c.line); out != c.out || status != c.status {
				t.Errorf("%q: %q status %d, want %q status %d", c.line, out, status, c.out, c.status)
			}
		})
	}
	// Unbalanced quotes are the command's syntax error, not a shell waiting
	// for more input.
	out, status := run(t, sh, "echo 'abc")
	if status != 2 || !strings.Contains(out, "unexpected EOF") {
		t.Errorf("unbalanced quote: %q status %d", out, status)
	}
	if out, _ := run(t, sh, "}"); !strings.Contains(out, "syntax error") {
		t.Errorf("stray brace: %q", out)
	}
	if _, _, err := sh.RunStatus(context.Background(), "echo a\x00b"); !errors.Is(err, shellproc.ErrNulInLine) {
		t.Errorf("NUL in line: %v", err)
	}
	if out, _ := run(t, sh, "echo still; pwd"); out != "still\n/usr\n" {
		t.Errorf("shell broken after errors: %q", out)
	}
}

// countWriter counts bytes without keeping them.
type countWriter struct{ n atomic.Int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n.Add(int64(len(p))); return len(p), nil }

// peakHeap samples the Go heap while fn runs.
func peakHeap(fn func()) uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	fn()
	close(stop)
	<-done
	return peak.Load()
}

// TestShellStreamsBounded: 100 MB of output with no newline, and output
// after a lone \x01, stream through with flat memory.
func TestShellStreamsBounded(t *testing.T) {
	sh := startBash(t)
	runtime.GC()
	for _, c := range []struct {
		name, line string
		want       int64
	}{
		{"no newline", "yes | head -c 100000000 | tr -d '\\n'", 50000000},
		{"after ctrl-a", "printf '\\001'; yes | head -c 20000000", 20000001},
		{"after marker prefix", "printf '\\001hymn-'; head -c 20000000 /dev/zero", 20000006},
	} {
		t.Run(c.name, func(t *testing.T) {
			var w countWriter
			var err error
			peak := peakHeap(func() {
				_, err = sh.RunStream(context.Background(), c.line, &w)
			})
			if err != nil {
				t.Fatal(err)
			}
			if w.n.Load() != c.want {
				t.Errorf("%q: passed on %d bytes, want %d", c.line, w.n.Load(), c.want)
			}
			if peak > 48<<20 {
				t.Errorf("%q: heap in use peaked at %d MiB", c.line, peak>>20)
			}
			t.Logf("%q: %d bytes, heap peak %d MiB", c.line, w.n.Load(), peak>>20)
		})
	}
}

// TestShellInterrupt: a command that never ends returns when its context
// does, and the shell (or its replacement) takes the next command.
func TestShellInterrupt(t *testing.T) {
	sh := startBash(t)
	run(t, sh, "sleep 60 &")
	for _, c := range []struct{ name, line string }{
		{"sleep", "sleep 1000"},
		{"yes", "yes"},
		{"pipeline", "cat /dev/zero | sleep 1000"},
		{"marker prefix", "printf '\\001hymn-'; sleep 1000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			start := time.Now()
			_, err := sh.RunStream(ctx, c.line, &countWriter{})
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%q: %v", c.line, err)
			}
			testenv.Elapsed(t, "interrupting "+c.line, time.Since(start), 5*time.Second)
			if out, _ := run(t, sh, "echo ok; jobs | wc -l"); out != "ok\n1\n" {
				t.Errorf("after interrupting %q: %q (the earlier background job must survive)", c.line, out)
			}
		})
	}
	// A loop inside the shell itself: the shell is ended.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := sh.RunStream(ctx, "while :; do :; done", &countWriter{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("builtin loop: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("builtin loop: took %v to interrupt", d)
	}
	if !sh.Exited() {
		t.Error("the stuck shell is still running")
	}
	if _, err := sh.Run(context.Background(), "echo x"); !errors.Is(err, shellproc.ErrShellExited) {
		t.Errorf("command on the ended shell: %v", err)
	}
}

// TestShellNodeYesBounded is the must-show in a node's namespace.
func TestShellNodeYesBounded(t *testing.T) {
	sh := startNodeShell(t)
	var w countWriter
	var err error
	peak := peakHeap(func() {
		_, err = sh.RunStream(context.Background(), "yes | head -c 100000000 | tr -d '\\n'", &w)
	})
	if err != nil || w.n.Load() != 50000000 {
		t.Fatalf("%d bytes, %v", w.n.Load(), err)
	}
	if peak > 48<<20 {
		t.Errorf("heap in use peaked at %d MiB", peak>>20)
	}
	if out, _ := run(t, sh, "echo next"); out != "next\n" {
		t.Errorf("next command: %q", out)
	}
}

// TestShellPOSIXShells: the VM guest agent falls back to sh (busybox's in
// the boot image): the framing and cmd semantics hold there too.
func TestShellPOSIXShells(t *testing.T) {
	for _, argv := range [][]string{{"sh"}, {"busybox", "sh"}} {
		t.Run(strings.Join(argv, "-"), func(t *testing.T) {
			testenv.Tools(t, argv[0])
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			sh, err := shellproc.Start(cmd, (*exec.Cmd).Start)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := sh.Close(); err != nil {
					t.Error(err)
				}
			})
			run(t, sh, "cd /usr; X=\"it's\"; sleep 30 &")
			if out, status := run(t, sh, `pwd; echo "$X"; cat; (exit 4)`); out != "/usr\nit's\n" || status != 4 {
				t.Errorf("state: %q status %d", out, status)
			}
			out, status := run(t, sh, `printf '\001hymn-1:0\001'; sleep 0.3; echo late`)
			if !strings.HasSuffix(out, "late\n") || status != 0 {
				t.Errorf("forged: %q status %d", out, status)
			}
			// A syntax error must not end the shell and its state.
			if out, _ := run(t, sh, "echo 'unbalanced"); out == "" {
				t.Error("no syntax error for an unbalanced quote")
			}
			if out, _ := run(t, sh, "pwd"); out != "/usr\n" {
				t.Errorf("state lost after a syntax error: %q", out)
			}
			if out, _ := run(t, sh, "echo next"); out != "next\n" {
				t.Errorf("next: %q", out)
			}
		})
	}
}
