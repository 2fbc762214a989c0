package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/hymn-net/hymn/vm/agent"
)

// Agent is the host side of the guest agent protocol: it sends requests
// over the virtio-serial channel and matches the responses by id, so
// requests can run concurrently.
type Agent struct {
	conn io.ReadWriteCloser

	wmu sync.Mutex
	enc *json.Encoder

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]*call
	err     error // set once the reader ended
	done    chan struct{}
}

// call is a request waiting for its response.
type call struct {
	ch      chan *agent.Response
	onChunk func([]byte) // streamed output, called from the reader
}

// NewAgent starts a client on an established connection (the VM's agent
// chardev socket, or any stream to an agent.Server).
func NewAgent(conn io.ReadWriteCloser) *Agent {
	a := &Agent{conn: conn, enc: json.NewEncoder(conn), pending: map[uint64]*call{}, done: make(chan struct{})}
	go a.readLoop()
	return a
}

// DialAgent connects to the agent socket of a VM.
func DialAgent(path string) (*Agent, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	return NewAgent(c), nil
}

func (a *Agent) readLoop() {
	// A guest cannot make the host hold more than one bounded line: a
	// longer line, or one that is not a response, ends the connection.
	lines := agent.NewLineReader(a.conn, agent.MaxResponseBytes)
	var err error
	for {
		var line []byte
		if line, err = lines.Next(); err != nil {
			break
		}
		var resp *agent.Response
		if resp, err = agent.DecodeResponse(line); err != nil {
			break
		}
		a.mu.Lock()
		c := a.pending[resp.ID]
		if !resp.More {
			delete(a.pending, resp.ID)
		}
		a.mu.Unlock()
		// Responses nobody waits for (a request from an earlier host
		// connection, or one whose caller gave up) are dropped.
		switch {
		case c == nil:
		case resp.More:
			if c.onChunk != nil {
				c.onChunk(resp.Stdout)
			}
		default:
			c.ch <- resp
		}
	}
	a.mu.Lock()
	a.err = fmt.Errorf("%w: %v", ErrAgentGone, err)
	for id, c := range a.pending {
		close(c.ch)
		delete(a.pending, id)
	}
	a.mu.Unlock()
	close(a.done)
}

// Close closes the connection; pending calls fail with ErrAgentGone.
func (a *Agent) Close() error {
	err := a.conn.Close()
	<-a.done
	return err
}

// Call sends req and waits for its response. When ctx ends first, the
// agent is told to cancel the request, and Call waits (briefly) for the
// canceled response so the guest side is known to have stopped.
func (a *Agent) Call(ctx context.Context, req agent.Request) (*agent.Response, error) {
	return a.call(ctx, req, nil)
}

func (a *Agent) call(ctx context.Context, req agent.Request, onChunk func([]byte)) (*agent.Response, error) {
	ch := make(chan *agent.Response, 1)
	a.mu.Lock()
	if a.err != nil {
		a.mu.Unlock()
		return nil, a.err
	}
	a.nextID++
	req.ID = a.nextID
	a.pending[req.ID] = &call{ch: ch, onChunk: onChunk}
	a.mu.Unlock()
	if err := a.send(&req); err != nil {
		a.forget(req.ID)
		return nil, err
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, a.gone()
		}
		return resp, nil
	case <-ctx.Done():
	}
	// A cancel that cannot be sent means the agent is gone, which closes
	// ch: the wait below ends at once.
	_ = a.send(&agent.Request{Op: agent.OpCancel, Target: req.ID})
	select {
	case resp, ok := <-ch:
		if ok {
			return resp, ctx.Err()
		}
	case <-time.After(3 * time.Second):
		a.forget(req.ID)
	}
	return nil, ctx.Err()
}

func (a *Agent) gone() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func (a *Agent) forget(id uint64) {
	a.mu.Lock()
	delete(a.pending, id)
	a.mu.Unlock()
}

func (a *Agent) send(req *agent.Request) error {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	if err := a.enc.Encode(req); err != nil {
		return fmt.Errorf("%w: %v", ErrAgentGone, err)
	}
	return nil
}

// respErr turns a failed response into an error.
func respErr(op string, resp *agent.Response) error {
	if resp.Error != "" {
		return fmt.Errorf("guest %s: %s", op, resp.Error)
	}
	return nil
}

// Ping returns the guest's kernel release once the agent answers.
func (a *Agent) Ping(ctx context.Context) (string, error) {
	resp, err := a.Call(ctx, agent.Request{Op: agent.OpPing})
	if err != nil {
		return "", err
	}
	return resp.Info, respErr("ping", resp)
}

// Shell runs a line in the guest's persistent shell and returns its output
// (stdout and stderr interleaved) and exit status.
func (a *Agent) Shell(ctx context.Context, line string) (string, int, error) {
	resp, err := a.Call(ctx, agent.Request{Op: agent.OpShell, Line: line})
	if resp == nil {
		return "", -1, err
	}
	if err == nil {
		err = respErr("shell", resp)
	}
	return string(resp.Stdout), resp.Exit, err
}

// ShellStream runs a line in the persistent shell like Shell, writing the
// output to w as the guest produces it, and returns the exit status.
func (a *Agent) ShellStream(ctx context.Context, line string, w io.Writer) (int, error) {
	// The output goes to the caller's writer (a terminal) as it comes; a
	// failed write there does not change what the line did in the guest,
	// whose status is the result.
	resp, err := a.call(ctx, agent.Request{Op: agent.OpShell, Line: line, Stream: true}, func(b []byte) { _, _ = w.Write(b) })
	if resp == nil {
		return -1, err
	}
	_, _ = w.Write(resp.Stdout)
	if err == nil {
		err = respErr("shell", resp)
	}
	return resp.Exit, err
}

// ExecResult is what Exec returns.
type ExecResult struct {
	Stdout, Stderr []byte
	ExitCode       int
}

// Exec runs a program in the guest (not through the shell) and waits.
func (a *Agent) Exec(ctx context.Context, stdin []byte, name string, args ...string) (ExecResult, error) {
	if len(stdin) > agent.MaxOutputBytes {
		return ExecResult{ExitCode: -1}, fmt.Errorf("exec %s: %d bytes of stdin, more than the %d one request carries", name, len(stdin), agent.MaxOutputBytes)
	}
	resp, err := a.Call(ctx, agent.Request{Op: agent.OpExec, Argv: append([]string{name}, args...), Stdin: stdin})
	if resp == nil {
		return ExecResult{ExitCode: -1}, err
	}
	if err == nil {
		err = respErr("exec "+name, resp)
	}
	return ExecResult{Stdout: resp.Stdout, Stderr: resp.Stderr, ExitCode: resp.Exit}, err
}

// ConfigureIntf finds the guest interface with mac, renames it to name,
// sets its MTU (0: unchanged), adds the addresses and sets it up.
func (a *Agent) ConfigureIntf(ctx context.Context, mac net.HardwareAddr, name string, mtu int, addrs ...netip.Prefix) error {
	req := agent.Request{Op: agent.OpIntf, MAC: mac.String(), Name: name, Up: true, MTU: mtu}
	if dl, ok := ctx.Deadline(); ok {
		req.TimeoutMS = int(min(max(time.Until(dl).Milliseconds(), 1), agent.MaxTimeoutMS))
	}
	for _, p := range addrs {
		if p.IsValid() {
			req.Addrs = append(req.Addrs, p.String())
		}
	}
	resp, err := a.Call(ctx, req)
	if err != nil {
		return err
	}
	return respErr("interface "+name, resp)
}

// SetLinkUp sets a guest interface administratively up or down.
func (a *Agent) SetLinkUp(ctx context.Context, name string, up bool) error {
	resp, err := a.Call(ctx, agent.Request{Op: agent.OpLinkUp, Name: name, Up: up})
	if err != nil {
		return err
	}
	return respErr("link "+name, resp)
}

// WriteFile writes data to a file in the guest.
func (a *Agent) WriteFile(ctx context.Context, path string, data []byte, mode uint32) error {
	if len(data) > agent.MaxOutputBytes {
		return fmt.Errorf("write %s: %d bytes, more than the %d one request carries", path, len(data), agent.MaxOutputBytes)
	}
	resp, err := a.Call(ctx, agent.Request{Op: agent.OpWrite, Path: path, Data: data, Mode: mode})
	if err != nil {
		return err
	}
	return respErr("write "+path, resp)
}

// ReadFile reads a file from the guest.
func (a *Agent) ReadFile(ctx context.Context, path string) ([]byte, error) {
	resp, err := a.Call(ctx, agent.Request{Op: agent.OpRead, Path: path})
	if err != nil {
		return nil, err
	}
	return resp.Data, respErr("read "+path, resp)
}

// Poweroff asks the guest to power off. It does not wait for an answer:
// the guest may be gone before it could send one.
func (a *Agent) Poweroff() error {
	a.mu.Lock()
	a.nextID++
	id := a.nextID
	a.mu.Unlock()
	return a.send(&agent.Request{ID: id, Op: agent.OpPoweroff})
}
