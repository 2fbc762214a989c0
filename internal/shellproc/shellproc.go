// Package shellproc runs a persistent shell and delimits the output of each
// command line with a marker that carries its exit status, so Mininet's
// cmd semantics hold without a pty: the working directory, variables and
// background jobs persist between commands. Namespace nodes and the VM
// guest agent both use it.
package shellproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hymn-net/hymn/internal/proctree"
)

// Shell is a persistent shell, fed command lines on its stdin. After
// each line it prints a sentinel with the exit status, so output is
// delimited without a pty and without parsing prompts.
type Shell struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu      sync.Mutex // one command at a time
	seq     int
	pending []byte
	chunks  chan []byte
	exited  chan struct{}
}

// Start starts cmd as a persistent shell: its stdin takes command lines,
// its stdout and stderr come back through one pipe. start starts the
// command (nodes start it inside a namespace); the caller sets cmd's
// environment and process attributes.
func Start(cmd *exec.Cmd, start func(*exec.Cmd) error) (*Shell, error) {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, outW, outW
	err = start(cmd)
	stdinR.Close()
	outW.Close()
	if err != nil {
		stdinW.Close()
		outR.Close()
		return nil, err
	}
	s := &Shell{cmd: cmd, stdin: stdinW, chunks: make(chan []byte, 64), exited: make(chan struct{})}
	go s.readLoop(outR)
	go func() { cmd.Wait(); close(s.exited) }()
	return s, nil
}

func (s *Shell) readLoop(r io.ReadCloser) {
	defer close(s.chunks)
	defer r.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			s.chunks <- bytes.Clone(buf[:n])
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

// RunStream runs one command line and writes its output to w as it comes,
// for commands a person watches (ping -c 4). It returns the exit status.
func (s *Shell) RunStream(ctx context.Context, line string, w io.Writer) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Exited() {
		return -1, ErrShellExited
	}
	before := proctree.Children(s.Pid())
	s.seq++
	marker := []byte(fmt.Sprintf("\x01hymn-%d:", s.seq))
	script := strings.TrimRight(line, "\n") + fmt.Sprintf("\nprintf '\\001hymn-%d:%%d\\001' $?\n", s.seq)
	if _, err := io.WriteString(s.stdin, script); err != nil {
		return -1, fmt.Errorf("writing to the shell: %w", err)
	}
	var killDeadline <-chan time.Time
	done := ctx.Done()
	for {
		if out, status, ok := s.cut(marker); ok {
			if out != "" {
				w.Write([]byte(out))
			}
			if killDeadline != nil {
				return status, ctx.Err()
			}
			return status, nil
		}
		// Pass on what cannot be the start of the marker, which begins
		// with \x01 (a byte commands do not print).
		if i := bytes.LastIndexByte(s.pending, '\x01'); i != 0 {
			if i < 0 {
				i = len(s.pending)
			}
			if i > 0 {
				w.Write(s.pending[:i])
			}
			s.pending = append(s.pending[:0], s.pending[i:]...)
		}
		select {
		case c, ok := <-s.chunks:
			if !ok {
				if len(s.pending) > 0 {
					w.Write(s.pending)
				}
				s.pending = nil
				return -1, ErrShellExited
			}
			s.pending = append(s.pending, c...)
		case <-done:
			proctree.KillTree(s.Pid(), before)
			done = nil
			killDeadline = time.After(2 * time.Second)
		case <-killDeadline:
			// The shell itself is stuck (a builtin loop, say): end it; the
			// node starts a new one on the next command.
			s.Close()
			return -1, ctx.Err()
		}
	}
}

// cut looks for the end marker of the current command in what was read.
func (s *Shell) cut(marker []byte) (string, int, bool) {
	i := bytes.Index(s.pending, marker)
	if i < 0 {
		return "", 0, false
	}
	rest := s.pending[i+len(marker):]
	j := bytes.IndexByte(rest, '\x01')
	if j < 0 {
		return "", 0, false
	}
	status, _ := strconv.Atoi(string(rest[:j]))
	out := string(s.pending[:i])
	s.pending = append(s.pending[:0], rest[j+1:]...)
	return out, status, true
}

// Close ends the shell and every process in its process group.
func (s *Shell) Close() error {
	s.stdin.Close()
	if s.cmd.Process != nil {
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
	select {
	case <-s.exited:
	case <-time.After(2 * time.Second):
	}
	return nil
}
