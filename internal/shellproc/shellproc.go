// Package shellproc runs a persistent shell and delimits the output of each
// command line with a marker that carries its exit status, so Mininet's
// cmd semantics hold without a pty: the working directory, variables and
// background jobs persist between commands. Namespace nodes and the VM
// guest agent both use it.
//
// The marker cannot be forged by what a command prints or reads:
//   - it carries a fresh 128-bit nonce from crypto/rand per command;
//   - the command line reaches the shell as a single-quoted argument of
//     eval with stdin from /dev/null, so the command cannot read the line
//     that prints the marker (it waits, unread, in the shell's stdin);
//   - that stdin is a socket, not a pipe: /proc/<shell>/fd/0 cannot be
//     opened, so not even a process that knows the scheme can read ahead.
//
// A status on a separate descriptor was the alternative, but it still needs
// a point in the output stream where the command's output ends, and a pipe
// can be reopened for writing through /proc. Output is passed on as it
// comes and only a possible marker prefix is held back, so memory stays
// flat under `yes`.
package shellproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hymn-net/hymn/internal/proctree"
)

// chunkSize is the read size from the shell's output; with chunkQueue it
// bounds what waits between the shell and the command that takes it.
const (
	chunkSize  = 64 << 10
	chunkQueue = 16
)

// Shell is a persistent shell, fed command lines on its stdin. After
// each line it prints a sentinel with the exit status, so output is
// delimited without a pty and without parsing prompts.
type Shell struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu      sync.Mutex // one command at a time
	pending []byte     // output read after the previous command's marker
	chunks  chan []byte
	exited  chan struct{}
	closing chan struct{} // closed by Close: the reader stops waiting
	closeMu sync.Once
}

// Start starts cmd as a persistent shell: its stdin takes command lines,
// its stdout and stderr come back through one pipe. start starts the
// command (nodes start it inside a namespace); the caller sets cmd's
// environment and process attributes.
func Start(cmd *exec.Cmd, start func(*exec.Cmd) error) (*Shell, error) {
	// A socket, not a pipe, for stdin: a pipe can be reopened through
	// /proc/<pid>/fd/0 and the pending marker line read by a command.
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("creating the shell's stdin socket: %w", err)
	}
	stdinR := os.NewFile(uintptr(fds[0]), "shell-stdin")
	stdinW := os.NewFile(uintptr(fds[1]), "shell-stdin-writer")
	outR, outW, err := os.Pipe()
	if err != nil {
		// Best effort on the error paths: err is the one to report.
		_ = stdinR.Close()
		_ = stdinW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, outW, outW
	err = start(cmd)
	// The child's ends: it has its own copies now (or never will).
	_ = stdinR.Close()
	_ = outW.Close()
	if err != nil {
		_ = stdinW.Close()
		_ = outR.Close()
		return nil, err
	}
	s := &Shell{
		cmd:     cmd,
		stdin:   stdinW,
		chunks:  make(chan []byte, chunkQueue),
		exited:  make(chan struct{}),
		closing: make(chan struct{}),
	}
	go s.readLoop(outR)
	go func() { _ = cmd.Wait(); close(s.exited) }() // that the shell ended matters, not how (Close kills it)
	return s, nil
}

func (s *Shell) readLoop(r io.ReadCloser) {
	defer close(s.chunks)
	defer func() { _ = r.Close() }() // the read end
	for {
		buf := make([]byte, chunkSize)
		n, err := r.Read(buf)
		if n > 0 {
			select {
			case s.chunks <- buf[:n]:
			case <-s.closing:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Exited reports whether the shell has ended.
func (s *Shell) Exited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// Pid returns the shell's pid.
func (s *Shell) Pid() int { return s.cmd.Process.Pid }

// ErrShellExited is returned when the shell ended while a command ran.
var ErrShellExited = errors.New("shell exited")

// ErrNulInLine is returned for a command line with a NUL byte, which no
// shell word can hold.
var ErrNulInLine = errors.New("command line contains a NUL byte")

// Run runs one command line and returns its output (stdout and stderr
// interleaved, as a terminal shows them).
func (s *Shell) Run(ctx context.Context, line string) (string, error) {
	out, _, err := s.RunStatus(ctx, line)
	return out, err
}

// RunStatus is Run that also returns the command's exit status. When ctx
// ends first, the processes the command started are killed (background jobs
// from earlier commands are spared) and ctx's error is returned.
func (s *Shell) RunStatus(ctx context.Context, line string) (string, int, error) {
	var out bytes.Buffer
	status, err := s.RunStream(ctx, line, &out)
	return out.String(), status, err
}

// script is what the shell reads for one command line: the line as one
// single-quoted word for eval (so an unbalanced quote is a syntax error of
// that command, not a shell waiting for more), run with stdin from
// /dev/null, then the marker with its status. "command" strips eval of its
// special-builtin status, so a syntax error does not end a POSIX sh (dash,
// busybox) and with it the node's cwd, variables and jobs.
func script(line, nonce string) string {
	quoted := "'" + strings.ReplaceAll(strings.TrimRight(line, "\n"), "'", `'\''`) + "'"
	return "command eval " + quoted + " </dev/null\nprintf '\\001hymn-" + nonce + ":%d\\001' \"$?\"\n"
}

// RunStream runs one command line and writes its output to w as it comes,
// for commands a person watches (ping -c 4). It returns the exit status.
func (s *Shell) RunStream(ctx context.Context, line string, w io.Writer) (int, error) {
	if strings.IndexByte(line, 0) >= 0 {
		return -1, ErrNulInLine
	}
	nonce, err := newNonce()
	if err != nil {
		return -1, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Exited() {
		return -1, ErrShellExited
	}
	before := proctree.Children(s.Pid())
	if _, err := io.WriteString(s.stdin, script(line, nonce)); err != nil {
		return -1, fmt.Errorf("writing to the shell: %w", err)
	}
	f := newFramer(nonce)
	var killDeadline <-chan time.Time
	done := ctx.Done()
	// A writer that fails (a closed connection) must not stop the reading:
	// the marker still has to be found for the shell to stay usable.
	var werr error
	write := func(p []byte) {
		if len(p) > 0 && werr == nil {
			_, werr = w.Write(p)
		}
	}
	chunk := s.pending
	s.pending = nil
	for {
		if len(chunk) > 0 {
			out, status, ended, rest := f.feed(chunk)
			write(out)
			if ended {
				s.pending = bytes.Clone(rest)
				if killDeadline != nil {
					return status, ctx.Err()
				}
				return status, nil
			}
		}
		select {
		case c, ok := <-s.chunks:
			if !ok {
				write(f.flush())
				return -1, ErrShellExited
			}
			chunk = c
		case <-done:
			proctree.KillTree(s.Pid(), before)
			done = nil
			chunk = nil
			killDeadline = time.After(2 * time.Second)
		case <-killDeadline:
			// The shell itself is stuck (a builtin loop, say): end it; the
			// node starts a new one on the next command.
			_ = s.Close() // it always returns nil
			return -1, ctx.Err()
		}
	}
}

// Close ends the shell and every process in its process group.
func (s *Shell) Close() error {
	s.closeMu.Do(func() { close(s.closing) })
	// Nothing to report from either: EOF on stdin, then SIGKILL to the
	// group (ESRCH if it has gone already).
	_ = s.stdin.Close()
	if s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
	select {
	case <-s.exited:
	case <-time.After(2 * time.Second):
	}
	return nil
}
