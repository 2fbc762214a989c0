package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/mnlog"
)

// bareShell is a mininet> shell without a network, for the commands that
// need none (help, source, time, noecho).
func bareShell() (*shell, *bytes.Buffer) {
	var out bytes.Buffer
	return &shell{lg: mnlog.New(&out, mnlog.Info), stdout: &bytes.Buffer{}}, &out
}

// TestSourceItselfStops: a file that sources itself (twice per level, so a
// limit without unwinding would still run 2^16 levels) gives one error
// line and the shell goes on.
func TestSourceItselfStops(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "self")
	if err := os.WriteFile(self, []byte("source "+self+"\nsource "+self+"\nhelp help\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, out := bareShell()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.runLines(context.Background(), bufio.NewReader(strings.NewReader("source "+self+"\nhelp exit\n")), false)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("source of a self-sourcing file did not end")
	}
	text := out.String()
	if n := strings.Count(text, "nested more than"); n != 1 {
		t.Errorf("%d depth errors, want 1:\n%.2000s", n, text)
	}
	if !strings.Contains(text, "*** Error: source "+self+": nested more than 16 deep") {
		t.Errorf("no clear error:\n%.2000s", text)
	}
	// The shell goes on after the whole chain unwound.
	if !strings.HasSuffix(text, "Exit\n") || strings.Contains(text, "Describe") {
		t.Errorf("the chain did not unwind, or the next command did not run:\n%.2000s", text)
	}
	if s.sourceDepth != 0 || s.unwinding {
		t.Errorf("depth %d unwinding %v after the chain", s.sourceDepth, s.unwinding)
	}
	// And a later source works again.
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte("help exit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	s.onecmd(context.Background(), "source "+ok)
	if out.String() != "Exit\n" {
		t.Errorf("source after the limit: %q", out.String())
	}
}

// TestPrefixChainLimited: time time time ... is refused before anything
// runs, however long; a short chain runs.
func TestPrefixChainLimited(t *testing.T) {
	s, out := bareShell()
	long := strings.Repeat("time ", 100000) + "help exit"
	s.onecmd(context.Background(), long)
	if text := out.String(); text != "*** Error: time: more than 8 nested time/noecho prefixes\n" {
		t.Errorf("long chain: %.300q", text)
	}
	out.Reset()
	s.onecmd(context.Background(), strings.Repeat("noecho time ", 10)+"help exit")
	if text := out.String(); !strings.HasPrefix(text, "*** Error: noecho: more than 8") || strings.Contains(text, "Exit") {
		t.Errorf("mixed chain: %.300q", text)
	}
	out.Reset()
	s.onecmd(context.Background(), "time noecho time help exit")
	if text := out.String(); !strings.HasPrefix(text, "Exit\n") || strings.Count(text, "Elapsed time") != 2 {
		t.Errorf("short chain: %q", text)
	}
	if s.prefixDepth != 0 {
		t.Errorf("prefix depth %d after the chains", s.prefixDepth)
	}
	// A source file with prefixes inside a prefixed source still counts
	// both limits separately.
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, []byte("time time help exit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	s.onecmd(context.Background(), "time time source "+f)
	if text := out.String(); !strings.HasPrefix(text, "Exit\n") {
		t.Errorf("prefixed source: %q", text)
	}
}

// TestSourceRefusesNonFiles: a FIFO with no writer, a device and an endless
// line neither hang nor eat memory.
func TestSourceRefusesNonFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	long := filepath.Join(dir, "long")
	if err := os.WriteFile(long, bytes.Repeat([]byte("x"), maxLineLen+10), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo:        "*** Error: source " + fifo + ": not a regular file\n",
		"/dev/zero": "*** Error: source /dev/zero: not a regular file\n",
		dir:         "*** Error: source " + dir + ": not a regular file\n",
		long:        "*** Error: command line longer than 1048576 bytes: stopped reading\n",
		dir + "/no": "error reading file " + dir + "/no\n",
	} {
		s, out := bareShell()
		done := make(chan struct{})
		go func() { defer close(done); s.onecmd(context.Background(), "source "+path) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("source %s hangs", path)
		}
		if out.String() != want {
			t.Errorf("source %s: %q, want %q", path, out.String(), want)
		}
	}
}

// TestShellLimitsBinary: the built binary, driven from a pipe, survives a
// self-sourcing file and a long time chain, then exits cleanly (the network
// torn down, exit 0).
func TestShellLimitsBinary(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	self := filepath.Join(dir, "self")
	if err := os.WriteFile(self, []byte("source "+self+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sharedBinary(t), "--topo", "minimal")
	cmd.Env = append(os.Environ(), "HOME="+dir)
	cmd.Stdin = strings.NewReader("source " + self + "\n" + strings.Repeat("time ", 5000) + "h1 echo x\nh1 echo ALIVE\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%.3000s", err, out)
	}
	for _, want := range []string{"nested more than 16 deep", "more than 8 nested time/noecho prefixes", "ALIVE", "*** Done"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%.3000s", want, out)
		}
	}
}

// TestShellForgeryAndCtrlCBinary: through the built binary on a pty, a node
// command that prints the old marker and a py h1.cmd that never ends are
// ended by Ctrl-C without ending the network; nothing leaks into the next
// command.
func TestShellForgeryAndCtrlCBinary(t *testing.T) {
	s := startSession(t, "--topo", "minimal")
	s.expect(`mininet> `, 60*time.Second)
	start := time.Now()
	out := s.command(`h1 printf '\001hymn-1:0\001\001hymn-2:0\001'; sleep 1; echo late`)
	if took := time.Since(start); !strings.Contains(out, "late") || !testenv.Floor(t, "a forged marker followed by sleep 1", took, time.Second, 10*time.Millisecond) {
		t.Errorf("forged command ended early (%v): %q", took, out)
	}
	if out := s.command("h1 echo next"); strings.Contains(out, "late") || !strings.Contains(out, "next") {
		t.Errorf("next command: %q", out)
	}
	if out := s.command("py h1.cmd('echo', 'hi')"); !strings.Contains(out, "hi\n\n") {
		t.Errorf("py h1.cmd: %q", out)
	}
	for _, line := range []string{"py h1.cmd('sleep 1000')", "h1 while :; do :; done"} {
		s.send(line)
		time.Sleep(500 * time.Millisecond)
		if _, err := io.WriteString(s.tty, "\x03"); err != nil {
			t.Fatal(err)
		}
		s.expect(`mininet> `, 10*time.Second)
		if out := s.command("h1 echo ALIVE"); !strings.Contains(out, "ALIVE") {
			t.Errorf("after Ctrl-C on %q: %q", line, out)
		}
	}
	s.exit()
}
