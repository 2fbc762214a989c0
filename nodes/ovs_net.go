package nodes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/topo"
	"github.com/vishvananda/netns"
)

// OVSNetNode is the node-name part of the namespace all OpenFlow switches
// of a network share (hymn-<run>-@ovs): '@' is not allowed in node names,
// so it never collides with one.
const OVSNetNode = "@ovs"

// OVSNet is one Open vSwitch instance (ovsdb-server and ovs-vswitchd, in
// userspace mode) serving every OpenFlow switch of a network. Its switches
// share one namespace, where their ports are, much as Mininet's switches
// share the root namespace: two daemons and one database transaction for
// the whole network instead of a pair of daemons per switch.
type OVSNet struct {
	named *netnsx.Named
	dir   string
	logf  func(format string, args ...any)

	mu      sync.Mutex
	daemons []*daemon
	ports   map[string][]string   // switch -> ports, in attachment order
	bridges map[string]*OVSBridge // running bridges
}

// OVSBridge is an OpenFlow switch as Open vSwitch runs it.
type OVSBridge struct {
	Name        string
	DPID        string   // hex, ':' allowed; "" derives it from the name's digits as Mininet does
	FailMode    string   // "secure" (Mininet's default) or "standalone"
	Protocols   string   // "OpenFlow10,OpenFlow13"; "" leaves OVS's default
	STP         bool     // spanning tree (the bridge's stp_enable)
	Controllers []string // OpenFlow targets (unix:PATH, tcp:IP:PORT)
}

// NewOVSNet creates the shared namespace and starts the daemons. logf, if
// not nil, receives every command it runs (-v debug).
func NewOVSNet(namespace, dir string, logf func(string, ...any)) (_ *OVSNet, err error) {
	if err := OVSAvailable(); err != nil {
		return nil, err
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	o := &OVSNet{dir: dir, logf: logf, ports: map[string][]string{}, bridges: map[string]*OVSBridge{}}
	logf("*** ip netns add %s (the Open vSwitch switches)\n", namespace)
	if o.named, err = netnsx.CreateNamed(namespace); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = o.Delete() // best effort: err is the one to report
		}
	}()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	db := filepath.Join(dir, "conf.db")
	logf("*** ovsdb-tool create %s %s\n", db, ovsSchema())
	if out, err := exec.Command("ovsdb-tool", "create", db, ovsSchema()).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ovsdb-tool create: %v: %s", err, strings.TrimSpace(string(out)))
	}
	sock := o.dbSock()
	if err := o.start("ovsdb-server", db, "--remote=punix:"+sock, "--pidfile="+filepath.Join(dir, "ovsdb-server.pid"),
		"--unixctl="+filepath.Join(dir, "ovsdb-server.ctl"), "--log-file="+filepath.Join(dir, "ovsdb-server.log")); err != nil {
		return nil, err
	}
	if err := waitForSocket(sock, 10*time.Second); err != nil {
		return nil, fmt.Errorf("ovsdb-server: %w", err)
	}
	if err := o.start("ovs-vswitchd", "unix:"+sock, "--pidfile="+filepath.Join(dir, "ovs-vswitchd.pid"),
		"--unixctl="+filepath.Join(dir, "ovs-vswitchd.ctl"), "--log-file="+filepath.Join(dir, "ovs-vswitchd.log")); err != nil {
		return nil, err
	}
	if _, err := o.Vsctl(context.Background(), "--no-wait", "init"); err != nil {
		return nil, err
	}
	return o, nil
}

// Namespace names the switches' shared namespace.
func (o *OVSNet) Namespace() string { return o.named.Namespace() }

// Dir is the directory of the database, sockets and logs.
func (o *OVSNet) Dir() string { return o.dir }

func (o *OVSNet) dbSock() string { return filepath.Join(o.dir, "db.sock") }

func (o *OVSNet) env() []string { return append(os.Environ(), o.Env()...) }

// Env is what Open vSwitch's tools need in their environment to reach
// this instance (OVS_RUNDIR and the like), to be added to a process's own.
func (o *OVSNet) Env() []string { return ovsEnv(o.dir) }

// ovsEnv points Open vSwitch's programs at the instance in dir.
func ovsEnv(dir string) []string {
	return []string{"OVS_RUNDIR=" + dir, "OVS_LOGDIR=" + dir, "OVS_DBDIR=" + dir, "OVS_SYSCONFDIR=" + dir}
}

func (o *OVSNet) start(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Env = o.env()
	d, err := startDaemon(o.named.NsHandle(), cmd)
	if err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	o.logf("*** %s started in %s: pid %d: %s\n", name, o.Namespace(), cmd.Process.Pid, strings.Join(cmd.Args, " "))
	o.mu.Lock()
	o.daemons = append(o.daemons, d)
	o.mu.Unlock()
	return nil
}

// Vsctl runs ovs-vsctl against the network's database.
func (o *OVSNet) Vsctl(ctx context.Context, args ...string) (string, error) {
	full := append([]string{"--db=unix:" + o.dbSock(), "--timeout=30"}, args...)
	// One line per command of the transaction, as Mininet prints its.
	for _, c := range strings.Split(" "+strings.Join(args, " ")+" ", " -- ") {
		if c = strings.TrimSpace(c); c != "" {
			o.logf("*** ovs-vsctl %s\n", c)
		}
	}
	out, err := exec.CommandContext(ctx, "ovs-vsctl", full...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ovs-vsctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Ofctl runs "ovs-ofctl CMD BRIDGE ARGS..." against one of the network's
// switches (Mininet's dpctl) and returns its combined output.
func (o *OVSNet) Ofctl(ctx context.Context, bridge, cmd string, args ...string) (string, error) {
	full := []string{}
	o.mu.Lock()
	if b := o.bridges[bridge]; b != nil && b.Protocols != "" {
		full = append(full, "-O", b.Protocols)
	}
	o.mu.Unlock()
	full = append(full, cmd, bridge)
	full = append(full, args...)
	o.logf("*** ovs-ofctl %s\n", strings.Join(full, " "))
	c := exec.CommandContext(ctx, "ovs-ofctl", full...)
	c.Env = o.env()
	out, err := c.CombinedOutput()
	return string(out), err
}

// NewSwitch returns the node of a switch: the shared namespace, seen
// through handles of its own.
func (o *OVSNet) NewSwitch(name string) (*NsNode, error) {
	named, err := netnsx.OpenNamed(o.Namespace())
	if err != nil {
		return nil, err
	}
	return &NsNode{Named: named, name: name, kind: topo.KindSwitch, plane: ovsNetPlane{o}}, nil
}

// attach makes an interface a port of a switch: at once if the bridge
// runs, else when StartBridges creates it.
func (o *OVSNet) attach(sw, intf string) error {
	o.mu.Lock()
	o.ports[sw] = append(o.ports[sw], intf)
	running := o.bridges[sw] != nil
	o.mu.Unlock()
	if running {
		if _, err := o.Vsctl(context.Background(), append([]string{"add-port", sw, intf}, ofportRequest(sw, intf)...)...); err != nil {
			return err
		}
		o.enlargeBuffers()
	}
	return nil
}

// detach takes an interface out of a switch's ports, and out of its
// bridge when the bridge runs.
func (o *OVSNet) detach(sw, intf string) error {
	o.mu.Lock()
	o.ports[sw] = slices.DeleteFunc(o.ports[sw], func(p string) bool { return p == intf })
	running := o.bridges[sw] != nil
	o.mu.Unlock()
	if !running {
		return nil
	}
	_, err := o.Vsctl(context.Background(), "--if-exists", "del-port", sw, intf)
	return err
}

// Forget drops a deleted switch's ports (its bridge is stopped first with
// StopBridge).
func (o *OVSNet) Forget(sw string) {
	o.mu.Lock()
	delete(o.ports, sw)
	o.mu.Unlock()
}

// enlargeBuffers gives the packet sockets ovs-vswitchd reads its ports
// through a receive buffer that rides out its waits for a CPU (see
// portRcvBuf). ovs-vsctl returns once ovs-vswitchd has applied a change,
// so the sockets of the ports it added exist. Not doing it only costs
// drops under load, so a failure is reported at debug level.
func (o *OVSNet) enlargeBuffers() {
	pid := 0
	o.mu.Lock()
	for _, d := range o.daemons {
		if filepath.Base(d.cmd.Path) == "ovs-vswitchd" {
			pid = d.cmd.Process.Pid
		}
	}
	o.mu.Unlock()
	if pid == 0 {
		return
	}
	n, err := enlargePortBuffers(pid)
	if n > 0 {
		o.logf("*** ovs-vswitchd: %d port sockets get SO_RCVBUFFORCE %d\n", n, portRcvBuf)
	}
	if err != nil {
		o.logf("*** ovs-vswitchd: enlarging its port sockets' receive buffers: %v\n", err)
	}
}

// ofportRequest asks for a port's Mininet number as its OpenFlow port
// number, as Mininet's OVSSwitch does (ofport_request), so that flows
// written for Mininet (in_port=1, output:2) mean the same ports here:
// without it ovs-vswitchd numbers ports in the order they were added, and
// hymn adds them in parallel. The number is N of the name SWITCH-ethN;
// other names get none and OVS picks.
func ofportRequest(sw, intf string) []string {
	digits, ok := strings.CutPrefix(intf, sw+"-eth")
	if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" || digits[0] == '0' {
		return nil
	}
	// OpenFlow's port numbers end below OFPP_MAX (0xff00).
	if n, err := strconv.Atoi(digits); err != nil || n > 0xfeff {
		return nil
	}
	return []string{"--", "set", "Interface", intf, "ofport_request=" + digits}
}

// DefaultDPID is Mininet's datapath id of a switch: the given one without
// ':' or else the first number in its name, as 16 hex digits.
func DefaultDPID(name, dpid string) (string, error) {
	if dpid == "" {
		// Mininet uses the first number in the name.
		start := strings.IndexAny(name, "0123456789")
		digits := ""
		if start >= 0 {
			digits = name[start:]
			if end := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); end >= 0 {
				digits = digits[:end]
			}
		}
		var v uint64
		if _, err := fmt.Sscan(digits, &v); err != nil {
			return "", fmt.Errorf("switch %s: unable to derive default datapath ID - please either specify a dpid or use a canonical switch name such as s23", name)
		}
		dpid = fmt.Sprintf("%x", v)
	}
	dpid = strings.ReplaceAll(dpid, ":", "")
	if len(dpid) > 16 || strings.Trim(strings.ToLower(dpid), "0123456789abcdef") != "" {
		return "", fmt.Errorf("switch %s: dpid %q is not at most 16 hex digits", name, dpid)
	}
	return strings.Repeat("0", 16-len(dpid)) + strings.ToLower(dpid), nil
}

// StartBridges creates the bridges with their ports and controllers in one
// database transaction and waits until ovs-vswitchd has applied it.
func (o *OVSNet) StartBridges(ctx context.Context, bridges []*OVSBridge) error {
	if len(bridges) == 0 {
		return nil
	}
	var args []string
	o.mu.Lock()
	for _, b := range bridges {
		dpid, err := DefaultDPID(b.Name, b.DPID)
		if err != nil {
			o.mu.Unlock()
			return err
		}
		fail := b.FailMode
		if fail == "" {
			fail = "secure"
		}
		args = append(args, "--", "--may-exist", "add-br", b.Name, "--", "set", "bridge", b.Name, "datapath_type=netdev",
			"fail_mode="+fail, "other-config:datapath-id="+dpid, "other-config:disable-in-band=true",
			fmt.Sprintf("stp_enable=%t", b.STP))
		if b.Protocols != "" {
			args = append(args, "protocols="+b.Protocols)
		}
		args = append(args, controllerArgs(b)...)
		for _, p := range o.ports[b.Name] {
			args = append(args, "--", "--may-exist", "add-port", b.Name, p)
			args = append(args, ofportRequest(b.Name, p)...)
		}
	}
	o.mu.Unlock()
	if _, err := o.Vsctl(ctx, args...); err != nil {
		return err
	}
	o.enlargeBuffers()
	o.mu.Lock()
	for _, b := range bridges {
		o.bridges[b.Name] = b
	}
	o.mu.Unlock()
	return nil
}

// controllerArgs are the ovs-vsctl commands that give a bridge its
// controllers (none when it has none).
func controllerArgs(b *OVSBridge) []string {
	var args, ids []string
	for i, target := range b.Controllers {
		id := fmt.Sprintf("@c%d_%s", i, strings.NewReplacer("-", "_", ".", "_").Replace(b.Name))
		ids = append(ids, id)
		args = append(args, "--", "--id="+id, "create", "controller", "target=\""+target+"\"", "max_backoff=1000")
	}
	if len(ids) > 0 {
		args = append(args, "--", "set", "bridge", b.Name, "controller=["+strings.Join(ids, ",")+"]")
	}
	return args
}

// SetControllers connects a running bridge to the given OpenFlow targets
// only (Mininet's switch.start([c1])), in one transaction.
func (o *OVSNet) SetControllers(ctx context.Context, name string, targets []string) error {
	o.mu.Lock()
	b := o.bridges[name]
	o.mu.Unlock()
	if b == nil {
		return fmt.Errorf("switch %s: no running Open vSwitch bridge", name)
	}
	nb := *b
	nb.Controllers = slices.Clone(targets)
	args := append([]string{"--", "clear", "bridge", name, "controller"}, controllerArgs(&nb)...)
	if _, err := o.Vsctl(ctx, args...); err != nil {
		return fmt.Errorf("switch %s: setting its controllers: %w", name, err)
	}
	o.mu.Lock()
	o.bridges[name] = &nb
	o.mu.Unlock()
	return nil
}

// StopBridge deletes a running bridge; its ports stay and come back with
// StartBridges (Mininet's "switch s1 stop").
func (o *OVSNet) StopBridge(ctx context.Context, name string) error {
	if _, err := o.Vsctl(ctx, "--if-exists", "del-br", name); err != nil {
		return err
	}
	o.mu.Lock()
	delete(o.bridges, name)
	o.mu.Unlock()
	return nil
}

// Bridge returns a running bridge's configuration, or nil.
func (o *OVSNet) Bridge(name string) *OVSBridge {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.bridges[name]
}

// BridgesUsing returns how many running bridges have the controller
// target among theirs.
func (o *OVSNet) BridgesUsing(target string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := 0
	for _, b := range o.bridges {
		if slices.Contains(b.Controllers, target) {
			k++
		}
	}
	return k
}

// Delete stops the daemons, removes the namespace (and with it every
// switch port) and the directory.
func (o *OVSNet) Delete() error {
	o.mu.Lock()
	ds := o.daemons
	o.daemons = nil
	o.mu.Unlock()
	for i := len(ds) - 1; i >= 0; i-- {
		ds[i].stop()
	}
	var err error
	if o.named != nil {
		o.logf("*** ip netns del %s\n", o.Namespace())
		o.logf("*** rm -rf %s\n", o.dir)
		err = o.named.Delete()
	}
	err = errors.Join(err, os.RemoveAll(o.dir))
	_ = os.Remove(filepath.Dir(o.dir)) // only if no other network uses it
	return err
}

// ovsNetPlane is an OpenFlow switch: a bridge of the network's shared
// Open vSwitch (OVSNet), whose namespace the switches share.
type ovsNetPlane struct{ o *OVSNet }

// attach adds the port to the bridge and brings it up.
func (p ovsNetPlane) attach(n *NsNode, intf string) error {
	if err := p.o.attach(n.name, intf); err != nil {
		return err
	}
	return links.SetUp(n, intf, true)
}

func (p ovsNetPlane) detach(n *NsNode, intf string) error { return p.o.detach(n.name, intf) }
func (p ovsNetPlane) ovsEnv() []string                    { return p.o.Env() }
func (p ovsNetPlane) close() error                        { return nil }

// release: the shared Open vSwitch outlives its switches (OVSNet.Delete).
func (p ovsNetPlane) release()              {}
func (p ovsNetPlane) sharesNamespace() bool { return true }

// OVSNet returns the shared Open vSwitch of a switch node, or nil.
func (n *NsNode) OVSNet() *OVSNet {
	if p, ok := n.plane.(ovsNetPlane); ok {
		return p.o
	}
	return nil
}

// daemon is a long-running child: it is started from a goroutine that
// keeps its OS thread locked for the child's whole life, so the child's
// parent-death signal fires when hymn dies (kill -9 included) and never
// because the Go runtime retired the thread that forked it.
type daemon struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startDaemon starts cmd in namespace ns (-1: hymn's own), in a process
// group of its own (a Ctrl-C at the terminal is for hymn, not for it).
func startDaemon(ns netns.NsHandle, cmd *exec.Cmd) (*daemon, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the child
		if ns >= 0 {
			if err := netns.Set(ns); err != nil {
				started <- fmt.Errorf("entering namespace: %w", err)
				return
			}
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait() // that it ended matters (done), not how: stop kills it
		close(d.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return d, nil
}

// stop kills the daemon and waits (bounded) for it.
func (d *daemon) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM) // it may have ended already: done says so
	select {
	case <-d.done:
		return
	case <-time.After(500 * time.Millisecond):
	}
	_ = d.cmd.Process.Kill()
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
	}
}

// exited reports whether the daemon has ended.
func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}
