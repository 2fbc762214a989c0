package nodes

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hymn-net/hymn/links"
)

// OVSRunDir holds each Open vSwitch switch's private database, sockets and
// logs, one directory per switch namespace (hymn clean removes them).
const OVSRunDir = "/run/hymn/ovs"

// ovsSwitch is an Open vSwitch bridge in userspace mode (datapath_type
// netdev, no kernel module needed) with its own ovsdb-server and
// ovs-vswitchd running inside the switch's namespace, where its ports are.
type ovsSwitch struct {
	dir   string
	procs []*exec.Cmd
}

// OVSAvailable reports whether Open vSwitch's programs are installed.
func OVSAvailable() error {
	for _, p := range []string{"ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl"} {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("%s is not installed (apt-get install openvswitch-switch)", p)
		}
	}
	return nil
}

func ovsSchema() string {
	for _, p := range []string{"/usr/share/openvswitch/vswitch.ovsschema", "/usr/local/share/openvswitch/vswitch.ovsschema"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "/usr/share/openvswitch/vswitch.ovsschema"
}

func (o *ovsSwitch) vsctl(args ...string) error {
	args = append([]string{"--db=unix:" + filepath.Join(o.dir, "db.sock"), "--timeout=10"}, args...)
	out, err := exec.Command("ovs-vsctl", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ovs-vsctl %s: %v: %s", strings.Join(args[2:], " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// newOVSSwitch starts the switch's Open vSwitch and creates its bridge.
// On failure, what it started is stopped.
func newOVSSwitch(n *NsNode, cfg Config) (_ switchPlane, err error) {
	if err := OVSAvailable(); err != nil {
		return nil, err
	}
	o := &ovsSwitch{dir: filepath.Join(OVSRunDir, n.Namespace())}
	defer func() {
		if err != nil {
			o.release()
		}
	}()
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return nil, err
	}
	db := filepath.Join(o.dir, "conf.db")
	if out, err := exec.Command("ovsdb-tool", "create", db, ovsSchema()).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ovsdb-tool create: %v: %s", err, out)
	}
	env := append(os.Environ(), ovsEnv(o.dir)...)
	start := func(name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		// They die with hymn (and are swept with the namespace anyway).
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := n.Start(cmd); err != nil {
			return fmt.Errorf("starting %s: %w", name, err)
		}
		o.procs = append(o.procs, cmd)
		return nil
	}
	sock := filepath.Join(o.dir, "db.sock")
	if err := start("ovsdb-server", db, "--remote=punix:"+sock, "--pidfile="+filepath.Join(o.dir, "ovsdb-server.pid"),
		"--unixctl="+filepath.Join(o.dir, "ovsdb-server.ctl"), "--log-file="+filepath.Join(o.dir, "ovsdb-server.log")); err != nil {
		return nil, err
	}
	if err := waitForSocket(sock, 10*time.Second); err != nil {
		return nil, fmt.Errorf("ovsdb-server: %w", err)
	}
	if err := o.vsctl("--no-wait", "init"); err != nil {
		return nil, err
	}
	if err := start("ovs-vswitchd", "unix:"+sock, "--pidfile="+filepath.Join(o.dir, "ovs-vswitchd.pid"),
		"--unixctl="+filepath.Join(o.dir, "ovs-vswitchd.ctl"), "--log-file="+filepath.Join(o.dir, "ovs-vswitchd.log")); err != nil {
		return nil, err
	}
	// Standalone: without a controller the bridge learns like a switch,
	// as Mininet's OVSBridge.
	args := []string{"add-br", n.name, "--", "set", "bridge", n.name, "datapath_type=netdev", "fail_mode=standalone"}
	if cfg.STP {
		args = append(args, "stp_enable=true")
	}
	if err := o.vsctl(args...); err != nil {
		return nil, err
	}
	return o, nil
}

// waitForSocket waits until a Unix socket accepts connections. The file
// appearing is not enough: ovsdb-server binds (the file appears) before it
// listens, and a client in between is refused (seen under load).
func waitForSocket(path string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			_ = c.Close() // a probe connection
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s accepts no connection after %v: %w", path, limit, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// enlargeBuffers is OVSNet.enlargeBuffers for a switch's own
// ovs-vswitchd; a failure only costs drops under load, so it is ignored.
func (o *ovsSwitch) enlargeBuffers() {
	for _, p := range o.procs {
		if filepath.Base(p.Path) == "ovs-vswitchd" {
			_, _ = enlargePortBuffers(p.Process.Pid)
		}
	}
}

func (o *ovsSwitch) attach(n *NsNode, intf string) error {
	if err := o.vsctl("add-port", n.name, intf); err != nil {
		return err
	}
	o.enlargeBuffers()
	return links.SetUp(n, intf, true)
}

func (o *ovsSwitch) detach(n *NsNode, intf string) error {
	return o.vsctl("--if-exists", "del-port", n.name, intf)
}

func (o *ovsSwitch) ovsEnv() []string      { return ovsEnv(o.dir) }
func (o *ovsSwitch) close() error          { return nil }
func (o *ovsSwitch) sharesNamespace() bool { return false }

// release ends the switch's daemons and removes its directory.
func (o *ovsSwitch) release() {
	for _, p := range o.procs {
		// Best effort, like stop itself: killed, Wait reports the signal.
		_ = p.Process.Kill()
		_ = p.Wait()
	}
	_ = os.RemoveAll(o.dir)  // what stays, hymn clean removes (owner's removeDirs)
	_ = os.Remove(OVSRunDir) // only if no other switch uses it
}
