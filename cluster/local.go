package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/links"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// LocalMTU is the underlay MTU of local machines: 1500 inside the tunnels
// plus VXLAN's 50 bytes.
const LocalMTU = 1500 + VXLANOverhead

// Local runs workers as processes on this machine, each in a "machine" of
// its own: a network namespace with one interface (eth0, MTU 1550) on a
// bridge in a hub namespace, address 10.251.hi.lo/16 for worker i (see
// Address). The worker process is Command (a hymn binary: "hymn worker")
// started inside its machine (netnsx.Launch), the spec in a memory file (fd 3), the protocol on its
// stdin/stdout.
// Everything carries a run id of its own claimed with internal/owner, so
// `hymn clean` removes the machines of a coordinator killed with -9
// (whose workers tear down themselves when their stdin closes).
type Local struct {
	// Command is the worker program and its leading arguments, such as
	// {"/usr/local/bin/hymn", "worker"}.
	Command []string
	// Args are added after the spec and address flags (--switch ...).
	Args []string
	// Stderr receives the workers' stderr, each line as it comes; nil
	// discards it.
	Stderr io.Writer
	// StopGrace is how long a worker has to exit after its stdin closes
	// before it gets SIGTERM (0: 20 s; tearing down a large part takes
	// seconds).
	StopGrace time.Duration

	mu      sync.Mutex
	run     string
	claimed bool
	hub     *netnsx.Named
	nss     []*netnsx.Named
	procs   []*localConn
	// machines are each worker's current machine; relaunched counts the
	// launches of a worker already launched (Cluster.Replace).
	machines   map[int]*localMachine
	relaunched int
}

// localMachine is one worker's machine: its namespace, its port on the
// hub and its address.
type localMachine struct {
	ns   *netnsx.Named
	port string
	addr netip.Addr
	proc *localConn
}

// maxRelaunch bounds the relaunches of one Local: each gets an address of
// its own after every first launch's (Address(60001) on).
const maxRelaunch = 65533 - 60001

func (l *Local) setup() error {
	if l.run != "" {
		return nil
	}
	if len(l.Command) == 0 {
		return errors.New("local transport: no worker command")
	}
	l.run = owner.NewRunID()
	if err := owner.Claim(l.run); err != nil {
		return err
	}
	l.claimed = true
	var err error
	if l.hub, err = netnsx.CreateNamed(owner.NamespaceName(l.run, "@hub")); err != nil {
		return err
	}
	return l.hub.Netlink(func(h *netlink.Handle) error {
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "hub", MTU: LocalMTU}}
		if err := h.LinkAdd(br); err != nil {
			return fmt.Errorf("hub bridge: %w", err)
		}
		return h.LinkSetUp(br)
	})
}

// Address is worker i's machine address (at its first launch; a worker
// launched again gets Address(60000+k) for the transport's k-th
// relaunch).
func (l *Local) Address(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 251, byte((i + 1) >> 8), byte((i + 1) & 0xff)})
}

// machine creates worker i's namespace and plugs it into the hub. A
// worker launched again (Cluster.Replace) gets a new machine with a new
// address, as a new pod would; the old machine goes first.
func (l *Local) machine(i int) (*localMachine, error) {
	name, port, addr := fmt.Sprintf("@m%d", i), fmt.Sprintf("m%d", i), l.Address(i)
	if old := l.machines[i]; old != nil {
		if old.proc != nil {
			select {
			case <-old.proc.done:
			default:
				return nil, fmt.Errorf("local transport: worker %d is still running; stop it before launching it again", i)
			}
		}
		if l.relaunched >= maxRelaunch {
			return nil, fmt.Errorf("local transport: more than %d relaunches", maxRelaunch)
		}
		l.relaunched++
		name, port = fmt.Sprintf("@m%dr%d", i, l.relaunched), fmt.Sprintf("m%dr%d", i, l.relaunched)
		addr = l.Address(60000 + l.relaunched)
		err := errors.Join(DeleteIn(l.hub, old.port), old.ns.Delete())
		l.nss = slices.DeleteFunc(l.nss, func(n *netnsx.Named) bool { return n == old.ns })
		delete(l.machines, i)
		if err != nil {
			return nil, fmt.Errorf("local transport: removing worker %d's old machine: %w", i, err)
		}
	}
	m, err := netnsx.CreateNamed(owner.NamespaceName(l.run, name))
	if err != nil {
		return nil, err
	}
	l.nss = append(l.nss, m)
	lm := &localMachine{ns: m, port: port, addr: addr}
	if l.machines == nil {
		l.machines = map[int]*localMachine{}
	}
	l.machines[i] = lm
	if _, err := links.CreateVeth(links.End{NS: m, Name: "eth0", IP: netip.PrefixFrom(addr, 16), MTU: LocalMTU},
		links.End{NS: l.hub, Name: port, MTU: LocalMTU}); err != nil {
		return nil, err
	}
	err = l.hub.Netlink(func(h *netlink.Handle) error {
		p, err := h.LinkByName(port)
		if err != nil {
			return err
		}
		br, err := h.LinkByName("hub")
		if err != nil {
			return err
		}
		return h.LinkSetMaster(p, br)
	})
	return lm, err
}

// Launch creates the worker's machine and starts the worker in it.
func (l *Local) Launch(ctx context.Context, spec *Spec) (Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.setup(); err != nil {
		return nil, err
	}
	i := spec.Worker
	if i < 0 || i > 60000 {
		return nil, fmt.Errorf("local transport: worker %d out of range", i)
	}
	m, err := l.machine(i)
	if err != nil {
		return nil, err
	}
	data, err := spec.JSON()
	if err != nil {
		return nil, err
	}
	// The spec goes in a memory file handed down as fd 3: no file on
	// disk that a killed coordinator would leave behind.
	specFile, err := memFile(fmt.Sprintf("hymn-worker%d-spec", i), data)
	if err != nil {
		return nil, err
	}
	// The child holds its own copy of the memfd; closing ours cannot
	// lose data (a memfd write has no deferred error).
	defer func() { _ = specFile.Close() }()
	if len(l.Command) == 0 {
		return nil, fmt.Errorf("starting worker %d: no worker command", i)
	}
	args := append(slices.Clone(l.Command[1:]), "--spec", "/dev/fd/3", "--address", m.addr.String())
	args = append(args, l.Args...)
	cmd := exec.Command(l.Command[0], args...)
	cmd.ExtraFiles = []*os.File{specFile}
	// Its own process group: a Ctrl-C at the coordinator's terminal is
	// the coordinator's to handle, not every worker's at once.
	// No Pdeathsig: a worker whose coordinator dies sees its stdin close
	// and tears its part down, which a SIGKILL would not let it do.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if l.Stderr != nil {
		cmd.Stderr = &prefixWriter{w: l.Stderr, prefix: fmt.Sprintf("[worker %d] ", i)}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	// Forked inside its machine, as a pod's process runs in the pod's
	// network namespace.
	if err := netnsx.Launch(m.ns.NsHandle(), cmd.Start); err != nil {
		return nil, fmt.Errorf("starting worker %d: %w", i, err)
	}
	grace := l.StopGrace
	if grace <= 0 {
		grace = 20 * time.Second
	}
	c := &localConn{cmd: cmd, stdin: stdin, events: make(chan Event, 16), done: make(chan struct{}), worker: i, grace: grace}
	go c.read(stdout)
	l.procs = append(l.procs, c)
	m.proc = c
	return c, nil
}

// Close kills any worker still running and removes the machines, the hub
// and the run's record.
func (l *Local) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, c := range l.procs {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := c.Stop(ctx)
		cancel()
		// A worker that was launched again (replaced) ended as it
		// ended: that is no news now.
		if m := l.machines[c.worker]; m == nil || m.proc == c {
			errs = append(errs, err)
		}
	}
	l.procs = nil
	for _, m := range l.nss {
		errs = append(errs, m.Delete())
	}
	l.nss = nil
	l.machines = nil
	if l.hub != nil {
		errs = append(errs, l.hub.Delete())
		l.hub = nil
	}
	if l.claimed {
		errs = append(errs, owner.Release(l.run))
		l.claimed = false
	}
	return errors.Join(errs...)
}

type localConn struct {
	worker  int
	grace   time.Duration
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	events  chan Event
	done    chan struct{} // closed when the process has been waited for
	waitErr error
	w       lineWriter
	once    sync.Once
}

func (c *localConn) read(stdout io.Reader) {
	lr := newLineReader(stdout)
	for {
		var e Event
		err, fatal := lr.next(&e)
		if fatal {
			break
		}
		if err != nil {
			e = Event{Event: "error", Worker: c.worker, Error: "worker output: " + err.Error()}
		}
		c.events <- e
	}
	// Draining so the worker never blocks on a full pipe; a read error
	// here means the pipe is gone, and Wait reports the exit.
	_, _ = io.Copy(io.Discard, stdout)
	c.waitErr = c.cmd.Wait()
	close(c.events)
	close(c.done)
}

func (c *localConn) Send(cmd Command) error {
	c.w.mu.Lock()
	c.w.w = c.stdin
	c.w.mu.Unlock()
	return c.w.write(cmd)
}

func (c *localConn) Events() <-chan Event { return c.events }

// Stop closes the worker's stdin (it tears down and exits), sends SIGTERM
// if it is still running after a moment, and SIGKILL when ctx ends.
func (c *localConn) Stop(ctx context.Context) error {
	// The close is the stop request; an error means the pipe is already
	// gone (the worker exited), which the wait below reports.
	c.once.Do(func() { _ = c.stdin.Close() })
	// Drain events so the reader can reach Wait.
	go func() {
		for range c.events {
		}
	}()
	select {
	case <-c.done:
		return c.exitErr()
	case <-time.After(c.grace):
		_ = c.cmd.Process.Signal(syscall.SIGTERM) // it may have exited meanwhile
	case <-ctx.Done():
	}
	select {
	case <-c.done:
		return c.exitErr()
	case <-ctx.Done():
		_ = c.cmd.Process.Kill() // it may have exited meanwhile
		<-c.done
		return fmt.Errorf("worker %d killed: it did not stop in time", c.worker)
	}
}

func (c *localConn) exitErr() error {
	if c.waitErr != nil {
		return fmt.Errorf("worker %d: %w", c.worker, c.waitErr)
	}
	return nil
}

// prefixWriter writes each line with a prefix.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	mid    bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		if !p.mid {
			if _, err := io.WriteString(p.w, p.prefix); err != nil {
				return 0, err
			}
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.mid = true
			_, err := p.w.Write(b)
			return n, err
		}
		if _, err := p.w.Write(b[:i+1]); err != nil {
			return 0, err
		}
		p.mid = false
		b = b[i+1:]
	}
	return n, nil
}

// memFile returns a memory-backed file (memfd) holding data, readable from
// its start through /dev/fd/N by a child that inherits it.
func memFile(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, 0)
	if err != nil {
		return nil, fmt.Errorf("memfd for %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		_ = f.Close() // the write error is the one reported
		return nil, err
	}
	return f, nil
}
