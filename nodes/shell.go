package nodes

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

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/vishvananda/netns"
)

// Shell is a node's persistent bash, fed command lines on its stdin. After
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

// StartShell starts a persistent shell in namespace ns. Its command line
// carries "hymn:<node>" so an operator can tell it from other shells.
func StartShell(ns netns.NsHandle, node string) (*Shell, error) {
	cmd := exec.Command("bash", "--norc", "--noprofile", "-s", "hymn:"+node)
	cmd.Env = append(os.Environ(), "PS1=", "PS2=", "HISTFILE=")
	// Its own process group, so Close can stop background jobs with it; and
	// it dies with hymn even after kill -9.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
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
	err = netnsx.Do(ns, cmd.Start)
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
	before := childrenOf(s.Pid())
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
			w.Write([]byte(out))
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
			w.Write(s.pending[:i])
			s.pending = append(s.pending[:0], s.pending[i:]...)
		}
		select {
		case c, ok := <-s.chunks:
			if !ok {
				w.Write(s.pending)
				s.pending = nil
				return -1, ErrShellExited
			}
			s.pending = append(s.pending, c...)
		case <-done:
			killTree(s.Pid(), before)
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

// childrenOf returns the pids whose parent is pid.
func childrenOf(pid int) map[int]bool {
	kids := map[int]bool{}
	for p, parent := range parents() {
		if parent == pid {
			kids[p] = true
		}
	}
	return kids
}

// killTree kills the children of pid that are not in spare, with all their
// descendants.
func killTree(pid int, spare map[int]bool) {
	pp := parents()
	var victims []int
	var walk func(p int)
	walk = func(p int) {
		victims = append(victims, p)
		for c, parent := range pp {
			if parent == p {
				walk(c)
			}
		}
	}
	for c, parent := range pp {
		if parent == pid && !spare[c] {
			walk(c)
		}
	}
	for _, v := range victims {
		syscall.Kill(v, syscall.SIGKILL)
	}
}

// parents maps every pid to its parent pid.
func parents() map[int]int {
	out := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:]))
		if len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			out[pid] = ppid
		}
	}
	return out
}
