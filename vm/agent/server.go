package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hymn-net/hymn/internal/shellproc"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Server is the guest side: it executes Requests. One Server lives as long
// as the agent process, across reconnections of the host, so the persistent
// shell (its cwd, variables and background jobs) survives a host restart.
type Server struct {
	// Shell is the persistent shell's command line (default: bash as the
	// namespace nodes run it when there is one, else sh). Busybox's sh
	// would run its own applets before the host's tools on PATH.
	Shell []string
	// Poweroff powers the machine off; nil means the operation fails.
	Poweroff func() error

	wmu sync.Mutex // one Response written at a time

	mu      sync.Mutex
	running map[uint64]context.CancelFunc

	shMu sync.Mutex // one shell line at a time, as on a terminal
	sh   *shellproc.Shell
}

// NewServer returns a Server with its defaults.
func NewServer() *Server {
	sh := []string{"sh"}
	if _, err := exec.LookPath("bash"); err == nil {
		sh = []string{"bash", "--norc", "--noprofile", "-s"}
	}
	return &Server{Shell: sh, running: map[uint64]context.CancelFunc{}}
}

// Serve reads Requests from r and writes Responses to w until r ends. Each
// request runs on its own goroutine; Serve waits for them before it
// returns, so their responses are not written to a new connection.
func (s *Server) Serve(r io.Reader, w io.Writer) error {
	lines := NewLineReader(r, MaxRequestBytes)
	enc := json.NewEncoder(w)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		line, err := lines.Next()
		if errors.Is(err, ErrTooLong) {
			// Its ID is unknown: the request is dropped, and the host's
			// call ends by its own context.
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		req, err := DecodeRequest(line)
		if req == nil {
			// Garbage (a host that died mid-line): the next line is the
			// next request.
			continue
		}
		if err != nil {
			resp := fail("%v", err)
			resp.ID = req.ID
			s.write(enc, &resp)
			continue
		}
		if req.Op == OpCancel {
			s.mu.Lock()
			if cancel := s.running[req.Target]; cancel != nil {
				cancel()
			}
			s.mu.Unlock()
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		s.mu.Lock()
		s.running[req.ID] = cancel
		s.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := s.handle(ctx, enc, req)
			resp.ID = req.ID
			if ctx.Err() != nil && resp.Error == "" {
				resp.Canceled = true
			}
			s.mu.Lock()
			delete(s.running, req.ID)
			s.mu.Unlock()
			cancel()
			s.write(enc, &resp)
		}()
	}
}

// Close ends the persistent shell and its jobs.
func (s *Server) Close() {
	s.shMu.Lock()
	defer s.shMu.Unlock()
	if s.sh != nil {
		// Close has no error to give (the guest is shutting the agent
		// down): a shell that failed to end is gone with the guest.
		_ = s.sh.Close()
		s.sh = nil
	}
}

func fail(format string, args ...any) Response {
	return Response{Exit: -1, Error: fmt.Sprintf(format, args...)}
}

func (s *Server) write(enc *json.Encoder, resp *Response) {
	s.wmu.Lock()
	// A failed write means the host end is gone; the request loop sees
	// that on its next read and ends.
	_ = enc.Encode(resp)
	s.wmu.Unlock()
}

func (s *Server) handle(ctx context.Context, enc *json.Encoder, req *Request) Response {
	switch req.Op {
	case OpPing:
		var u unix.Utsname
		_ = unix.Uname(&u) // uname(2) fails only on a bad pointer
		return Response{Info: unix.ByteSliceToString(u.Release[:])}
	case OpExec:
		return runExec(ctx, req)
	case OpShell:
		var emit func([]byte)
		if req.Stream {
			emit = func(b []byte) { s.write(enc, &Response{ID: req.ID, More: true, Stdout: b}) }
		}
		return s.runShell(ctx, req.Line, emit)
	case OpIntf:
		return configureIntf(ctx, req)
	case OpLinkUp:
		if err := setLinkUp(req.Name, req.Up); err != nil {
			return fail("%v", err)
		}
		return Response{}
	case OpWrite:
		mode := os.FileMode(req.Mode)
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(req.Path, req.Data, mode); err != nil {
			return fail("%v", err)
		}
		// WriteFile keeps the mode of an existing file; the caller asked
		// for this one.
		if err := os.Chmod(req.Path, mode); err != nil {
			return fail("%v", err)
		}
		return Response{}
	case OpRead:
		data, err := readFileMax(req.Path, MaxOutputBytes)
		if err != nil {
			return fail("%v", err)
		}
		return Response{Data: data}
	case OpPoweroff:
		if s.Poweroff == nil {
			return fail("poweroff is not available")
		}
		if err := s.Poweroff(); err != nil {
			return fail("poweroff: %v", err)
		}
		return Response{}
	}
	return fail("unknown operation %q", req.Op)
}

func runExec(ctx context.Context, req *Request) Response {
	if len(req.Argv) == 0 {
		return fail("exec: no program")
	}
	cmd := exec.Command(req.Argv[0], req.Argv[1:]...)
	cmd.Dir = req.Dir
	if len(req.Env) > 0 {
		cmd.Env = append(os.Environ(), req.Env...)
	}
	out, errOut := &capBuffer{max: MaxOutputBytes / 2}, &capBuffer{max: MaxOutputBytes / 2}
	cmd.Stdin = bytes.NewReader(req.Stdin)
	cmd.Stdout, cmd.Stderr = out, errOut
	// Its own process group, so a cancel stops whatever it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fail("%v", err)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group may be gone already
		case <-done:
		}
	}()
	// The exit status is read from ProcessState below; the output goes
	// to buffers, which cannot fail, so Wait's error adds nothing.
	_ = cmd.Wait()
	close(done)
	resp := Response{Exit: cmd.ProcessState.ExitCode(), Stdout: out.buf.Bytes(), Stderr: errOut.buf.Bytes()}
	if out.dropped+errOut.dropped > 0 {
		resp.Error = fmt.Sprintf("output over %d bytes: %d bytes dropped", MaxOutputBytes, out.dropped+errOut.dropped)
	}
	return resp
}

func (s *Server) runShell(ctx context.Context, line string, emit func([]byte)) Response {
	s.shMu.Lock()
	defer s.shMu.Unlock()
	if s.sh == nil || s.sh.Exited() {
		sh, err := startShell(s.Shell)
		if err != nil {
			return fail("starting the shell: %v", err)
		}
		s.sh = sh
	}
	// Streamed output goes out as it comes; otherwise it is collected.
	collected := &capBuffer{max: MaxOutputBytes}
	var w io.Writer = collected
	if emit != nil {
		w = emitWriter(emit)
	}
	status, err := s.sh.RunStream(ctx, line, w)
	out := collected.buf.Bytes()
	if err != nil {
		if s.sh.Exited() {
			s.sh = nil
		}
		return Response{Exit: status, Stdout: out, Error: errString(err, ctx)}
	}
	resp := Response{Exit: status, Stdout: out}
	if collected.dropped > 0 {
		resp.Error = fmt.Sprintf("output over %d bytes: %d bytes dropped (stream it instead)", MaxOutputBytes, collected.dropped)
	}
	return resp
}

// errString reports a shell error, except the cancellation the host asked
// for (that one is Response.Canceled).
func errString(err error, ctx context.Context) string {
	if ctx.Err() != nil {
		return ""
	}
	return err.Error()
}

// startShell starts the persistent shell (the same scheme as namespace
// nodes': see package shellproc).
func startShell(argv []string) (*shellproc.Shell, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PS1=", "PS2=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return shellproc.Start(cmd, (*exec.Cmd).Start)
}

// capBuffer keeps the first max bytes written to it and counts the rest,
// so a command printing without end cannot exhaust the guest's memory.
type capBuffer struct {
	buf     bytes.Buffer
	max     int
	dropped int64
}

func (c *capBuffer) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
	} else {
		if room > 0 {
			c.buf.Write(p[:room])
		}
		c.dropped += int64(len(p) - max(room, 0))
	}
	return len(p), nil
}

// readFileMax reads a file of at most max bytes.
func readFileMax(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, max)
	}
	return data, nil
}

// emitWriter hands streamed shell output to the protocol.
type emitWriter func([]byte)

func (e emitWriter) Write(p []byte) (int, error) {
	e(bytes.Clone(p))
	return len(p), nil
}

// configureIntf waits for the interface with the requested MAC (a NIC
// hot-plugged a moment ago may still be probing), renames it, adds the
// addresses and sets it up.
func configureIntf(ctx context.Context, req *Request) Response {
	mac, err := net.ParseMAC(req.MAC)
	if err != nil {
		return fail("intf: bad MAC %q: %v", req.MAC, err)
	}
	timeout := time.Duration(req.TimeoutMS) * time.Millisecond
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	deadline := time.Now().Add(timeout)
	var link netlink.Link
	for link == nil {
		links, err := netlink.LinkList()
		if err != nil {
			return fail("intf: listing links: %v", err)
		}
		for _, l := range links {
			if bytes.Equal(l.Attrs().HardwareAddr, mac) && l.Type() != "bridge" {
				link = l
				break
			}
		}
		if link != nil {
			break
		}
		if time.Now().After(deadline) {
			return fail("intf: no interface with MAC %s appeared within %v", mac, timeout)
		}
		select {
		case <-ctx.Done():
			return Response{Exit: -1}
		case <-time.After(10 * time.Millisecond):
		}
	}
	if req.Name != "" && link.Attrs().Name != req.Name {
		// A rename needs the interface down.
		if err := netlink.LinkSetDown(link); err != nil {
			return fail("intf %s: down: %v", link.Attrs().Name, err)
		}
		if err := netlink.LinkSetName(link, req.Name); err != nil {
			return fail("intf: renaming %s to %s: %v", link.Attrs().Name, req.Name, err)
		}
	}
	if req.MTU > 0 && link.Attrs().MTU != req.MTU {
		if err := netlink.LinkSetMTU(link, req.MTU); err != nil {
			return fail("intf %s: MTU %d: %v", req.Name, req.MTU, err)
		}
	}
	for _, a := range req.Addrs {
		addr, err := netlink.ParseAddr(a)
		if err != nil {
			return fail("intf %s: bad address %q: %v", req.Name, a, err)
		}
		if err := netlink.AddrReplace(link, addr); err != nil {
			return fail("intf %s: adding %s: %v", req.Name, a, err)
		}
	}
	if req.Up {
		if err := netlink.LinkSetUp(link); err != nil {
			return fail("intf %s: up: %v", req.Name, err)
		}
	}
	return Response{Info: link.Attrs().Name}
}

func setLinkUp(name string, up bool) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if up {
		return netlink.LinkSetUp(link)
	}
	return netlink.LinkSetDown(link)
}
