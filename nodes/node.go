package nodes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/topo"
)

// Node is what every node backend offers.
type Node interface {
	Name() string
	Kind() topo.Kind
	// Cmd runs a command line in the node's persistent shell and returns its
	// combined output, as Mininet's node.cmd does.
	Cmd(ctx context.Context, line string) (string, error)
	// Exec runs a program in the node and waits for it.
	Exec(ctx context.Context, name string, args ...string) (Result, error)
	// Close stops everything running in the node and frees the node.
	Close() error
}

// Result is the outcome of Exec.
type Result struct {
	Stdout, Stderr []byte
	ExitCode       int
}

// NsNode is a node living in a named network namespace. The embedded
// Named gives it Namespace, NsHandle and Netlink.
type NsNode struct {
	*netnsx.Named
	name string
	kind topo.Kind

	shellMu sync.Mutex
	shell   *Shell
	closed  bool

	cg    *cgroup     // CPU limits; nil for an unlimited node
	plane switchPlane // how a switch forwards (plane.go); nil for hosts and routers
}

// Config says how to create a namespace node.
type Config struct {
	Name      string    // node name (h1)
	Kind      topo.Kind // host, switch or router
	Namespace string    // namespace name (hymn-<run>-h1)
	STP       bool      // switches: run the kernel's spanning tree
	OVS       bool      // switches: Open vSwitch in userspace mode instead of a Linux bridge
	BPF       bool      // switches: a MAC-learning BPF program on the ports instead of a Linux bridge (bpf.go)
	Ports     int       // switches: how many ports are planned (a BPF switch sizes its program by it)
	CPU       *CPULimit // hosts: Mininet's CPULimitedHost; nil for none
	// Shared: the switch joins Namespace, which the network made for all
	// its BPF switches (NewSwitchNamespace), instead of creating its own;
	// deleting the node leaves the namespace. BPF switches only.
	Shared bool
}

// New creates the node's namespace and sets it up for its kind: loopback up
// for every node, the bridge for a switch, IPv4 forwarding for a router. On
// failure nothing is left behind.
func New(cfg Config) (_ *NsNode, err error) {
	if cfg.BPF && cfg.STP { // refused before anything is made
		return nil, fmt.Errorf("switch %s: %w", cfg.Name, ErrBPFSTP)
	}
	if cfg.Shared && !cfg.BPF {
		return nil, fmt.Errorf("node %s: only BPF switches share a namespace", cfg.Name)
	}
	open := netnsx.CreateNamed
	if cfg.Shared {
		open = netnsx.OpenNamed
	}
	named, err := open(cfg.Namespace)
	if err != nil {
		return nil, err
	}
	n := &NsNode{Named: named, name: cfg.Name, kind: cfg.Kind}
	defer func() {
		if err != nil { // best effort: err is the one to report
			if cfg.Shared {
				_ = n.Close() // the namespace is the network's
			} else {
				_ = n.Delete()
			}
		}
	}()
	if cfg.CPU != nil {
		if n.cg, err = newCgroup(cfg.Namespace, *cfg.CPU, runtime.NumCPU()); err != nil {
			return nil, fmt.Errorf("node %s: %w", cfg.Name, err)
		}
	}
	switch cfg.Kind {
	case topo.KindSwitch:
		if n.plane, err = newSwitchPlane(n, cfg); err != nil {
			return nil, fmt.Errorf("switch %s: %w", cfg.Name, err)
		}
	case topo.KindRouter:
		if err := n.Sysctl("net/ipv4/ip_forward", "1"); err != nil {
			return nil, fmt.Errorf("router %s: enabling IPv4 forwarding: %w", cfg.Name, err)
		}
	}
	return n, nil
}

// Name returns the node's name.
func (n *NsNode) Name() string { return n.name }

// Kind returns the node's kind.
func (n *NsNode) Kind() topo.Kind { return n.kind }

// Cmd runs a command line in the node's persistent shell.
func (n *NsNode) Cmd(ctx context.Context, line string) (string, error) {
	sh, err := n.getShell()
	if err != nil {
		return "", err
	}
	return sh.Run(ctx, line)
}

// CmdStream runs a command line in the node's persistent shell, writing
// its output to w as it comes, and returns its exit status.
func (n *NsNode) CmdStream(ctx context.Context, line string, w io.Writer) (int, error) {
	sh, err := n.getShell()
	if err != nil {
		return -1, err
	}
	return sh.RunStream(ctx, line, w)
}

// ShellPid returns the pid of the node's shell, starting it if needed.
func (n *NsNode) ShellPid() (int, error) {
	sh, err := n.getShell()
	if err != nil {
		return 0, err
	}
	return sh.Pid(), nil
}

// Shell returns the node's persistent shell, starting it on first use.
func (n *NsNode) getShell() (*Shell, error) {
	n.shellMu.Lock()
	defer n.shellMu.Unlock()
	if n.closed {
		return nil, ErrClosed
	}
	if n.shell == nil || n.shell.Exited() {
		sh, err := StartShell(n.NsHandle(), n.name, n.OVSEnv()...)
		if err != nil {
			return nil, fmt.Errorf("node %s: starting its shell: %w", n.name, err)
		}
		if err := n.cg.join(sh.Pid()); err != nil {
			_ = sh.Close() // best effort: err is the one to report
			return nil, fmt.Errorf("node %s: %w", n.name, err)
		}
		n.shell = sh
	}
	return n.shell, nil
}

// Command prepares a program to run in the node; Start it with StartIn.
func (n *NsNode) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if env := n.OVSEnv(); env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	return cmd
}

// Start starts cmd inside the node's namespace. The child inherits the
// namespace of the thread that forks it; that thread never ends, so the
// child's Pdeathsig fires only with hymn (netnsx.Launch).
func (n *NsNode) Start(cmd *exec.Cmd) error {
	if err := netnsx.Launch(n.NsHandle(), cmd.Start); err != nil {
		return err
	}
	if err := n.cg.join(cmd.Process.Pid); err != nil {
		// Best effort: the join's error is the one to report.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	return nil
}

// Exec runs a program in the node and waits for it.
func (n *NsNode) Exec(ctx context.Context, name string, args ...string) (Result, error) {
	var out, errOut bytes.Buffer
	cmd := n.Command(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := n.Start(cmd); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("node %s: %w", n.name, err)
	}
	err := cmd.Wait()
	res := Result{Stdout: out.Bytes(), Stderr: errOut.Bytes(), ExitCode: cmd.ProcessState.ExitCode()}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && ctx.Err() == nil {
		err = nil // a non-zero exit is a result, not an error
	}
	if err != nil {
		err = fmt.Errorf("node %s: %s: %w", n.name, name, err)
	}
	return res, err
}

// StopShell ends the node's persistent shell and its background jobs; the
// node stays usable and starts a new shell on the next Cmd.
func (n *NsNode) StopShell() {
	n.shellMu.Lock()
	sh := n.shell
	n.shell = nil
	n.shellMu.Unlock()
	if sh != nil {
		_ = sh.Close() // nothing to report (a shell's Close returns nil)
	}
}

// Halt stops what runs in the node on hymn's behalf (its shell and
// background jobs) before the network sweeps the namespace's processes.
func (n *NsNode) Halt() { n.StopShell() }

// Close stops the node's shell and frees its netlink handle and namespace
// handle. It does not delete the namespace: the network does that after
// every link is gone, in reverse order of creation.
func (n *NsNode) Close() error {
	n.shellMu.Lock()
	n.closed = true
	sh := n.shell
	n.shell = nil
	n.shellMu.Unlock()
	var errs []error
	if sh != nil {
		errs = append(errs, sh.Close())
	}
	if n.plane != nil {
		errs = append(errs, n.plane.close())
	}
	n.Named.Close()
	return errors.Join(errs...)
}

// Delete closes the node and removes its namespace and cgroup. The
// processes inside must be gone already.
func (n *NsNode) Delete() error {
	closeErr := n.Close()
	if n.SharesNamespace() {
		return closeErr // its owner (OVSNet.Delete, the network's switch namespace) removes it
	}
	if n.plane != nil {
		n.plane.release()
	}
	return errors.Join(closeErr, n.cg.remove(), n.Named.Delete())
}

// Listen opens a listening socket inside the node's namespace, so a Go test
// can serve from a node; the socket stays in the namespace whichever
// goroutine uses it afterwards.
func (n *NsNode) Listen(network, address string) (net.Listener, error) {
	var l net.Listener
	err := netnsx.Do(n.NsHandle(), func() error {
		var err error
		l, err = net.Listen(network, address)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("node %s: listen %s %s: %w", n.name, network, address, err)
	}
	return l, nil
}

// DialContext connects from inside the node's namespace (use it as an
// http.Transport's DialContext to make requests from a node).
func (n *NsNode) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var c net.Conn
	err := netnsx.Do(n.NsHandle(), func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, address)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("node %s: dial %s %s: %w", n.name, network, address, err)
	}
	return c, nil
}
