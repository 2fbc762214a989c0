// Command hymn-agent is hymn's guest agent. In hymn's boot image it is
// /init: as PID 1 it mounts the pseudo file systems, loads the virtio
// modules, brings up the loopback, then runs a copy of itself that serves
// the host over the virtio-serial port, while PID 1 reaps orphans and
// restarts the server if it dies. In a user's own image it can run as an
// ordinary service (not PID 1): then it only serves.
//
// Build it static: CGO_ENABLED=0 go build ./vm/agent/cmd/hymn-agent
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hymn-net/hymn/vm/agent"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// roleEnv marks the serving child of PID 1.
const roleEnv = "HYMN_AGENT_ROLE=serve"

// moduleDir holds the kernel modules of the boot image and the file
// "order" listing them in load order (dependencies first).
const moduleDir = "/lib/modules/hymn"

func main() {
	if os.Getpid() == 1 {
		initSystem()
		supervise()
		return
	}
	if err := serve(); err != nil {
		logf("hymn-agent: %v", err)
		os.Exit(1)
	}
}

// logf writes to the console (the VM's serial log), which is where a boot
// problem can be read from the host.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func initSystem() {
	logErr("setting PATH", os.Setenv("PATH", "/bin:/sbin:/usr/bin:/usr/sbin"))
	logErr("setting HOME", os.Setenv("HOME", "/root"))
	for _, m := range []struct{ src, dst, fs string }{
		{"proc", "/proc", "proc"},
		{"sysfs", "/sys", "sysfs"},
		{"devtmpfs", "/dev", "devtmpfs"},
		{"devpts", "/dev/pts", "devpts"},
		{"tmpfs", "/tmp", "tmpfs"},
		{"tmpfs", "/run", "tmpfs"},
	} {
		logErr("making "+m.dst, os.MkdirAll(m.dst, 0o755))
		if err := unix.Mount(m.src, m.dst, m.fs, 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			logf("hymn-agent: mounting %s: %v", m.dst, err)
		}
	}
	loadModules()
	mountHostFS()
	if lo, err := netlink.LinkByName("lo"); err == nil {
		logErr("setting lo up", netlink.LinkSetUp(lo))
	}
	if name := cmdlineValue("hymn.name"); name != "" {
		logErr("setting the host name", unix.Sethostname([]byte(name)))
	}
	logErr("making /root", os.MkdirAll("/root", 0o700))
}

// logErr logs a failed step of setting the guest up and goes on: the
// agent is the guest's init, and a missing directory or link costs one
// feature (a host tool, a mount), while stopping would cost the whole VM.
func logErr(what string, err error) {
	if err != nil {
		logf("hymn-agent: %s: %v", what, err)
	}
}

// hostTools are the host programs the guest prefers to busybox's applets,
// so commands print what they print in namespace nodes (iputils ping,
// iproute2) and tools busybox lacks (iperf3, tc, ethtool) exist.
var hostTools = []string{"ping", "ping6", "ip", "tc", "bridge", "ss", "iperf", "iperf3", "ethtool", "tcpdump", "bash", "arping", "traceroute", "nc", "python3"}

// mountHostFS mounts the host directory hymn shares over virtio-9p at
// /host and makes its programs runnable: every top-level name and every
// entry of /lib, /usr/lib, /etc and /usr/share that the image lacks
// becomes a symlink into /host (the dynamic loader and the libraries
// among them), and the host's bin directories go on PATH after the
// image's own.
func mountHostFS() {
	logErr("making /host", os.MkdirAll("/host", 0o755))
	err := unix.Mount(agent.HostFSTag, "/host", "9p", unix.MS_RDONLY, "trans=virtio,version=9p2000.L,cache=loose,msize=262144")
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			logf("hymn-agent: mounting the host file system: %v", err)
		}
		return
	}
	for _, dir := range []string{"/", "/lib", "/usr/lib", "/etc", "/usr/share"} {
		entries, err := os.ReadDir(filepath.Join("/host", dir))
		if err != nil {
			continue
		}
		logErr("making "+dir, os.MkdirAll(dir, 0o755))
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if _, err := os.Lstat(p); err == nil {
				continue
			}
			logErr("linking "+p, os.Symlink(filepath.Join("/host", p), p))
		}
	}
	logErr("making /usr/local/bin", os.MkdirAll("/usr/local/bin", 0o755))
	for _, tool := range hostTools {
		for _, d := range []string{"/host/usr/local/bin", "/host/usr/sbin", "/host/usr/bin", "/host/sbin", "/host/bin"} {
			if st, err := os.Stat(filepath.Join(d, tool)); err == nil && st.Mode().IsRegular() {
				logErr("linking "+tool, os.Symlink(filepath.Join(d, tool), filepath.Join("/usr/local/bin", tool)))
				break
			}
		}
	}
	logErr("setting PATH", os.Setenv("PATH", "/usr/local/bin:/bin:/sbin:/usr/bin:/usr/sbin:/host/usr/local/sbin:/host/usr/local/bin:/host/usr/sbin:/host/usr/bin:/host/sbin:/host/bin"))
}

func loadModules() {
	order, err := os.ReadFile(filepath.Join(moduleDir, "order"))
	if err != nil {
		return // a kernel with built-in drivers needs none
	}
	for _, name := range strings.Fields(string(order)) {
		path := filepath.Join(moduleDir, name)
		f, err := os.Open(path)
		if err != nil {
			logf("hymn-agent: module %s: %v", name, err)
			continue
		}
		flags := 0
		if !strings.HasSuffix(name, ".ko") {
			flags = unix.MODULE_INIT_COMPRESSED_FILE
		}
		if err := unix.FinitModule(int(f.Fd()), "", flags); err != nil && !errors.Is(err, unix.EEXIST) {
			logf("hymn-agent: loading %s: %v", name, err)
		}
		logErr("closing "+path, f.Close()) // read only: nothing is lost
	}
}

func cmdlineValue(key string) string {
	data, _ := os.ReadFile("/proc/cmdline")
	for _, f := range strings.Fields(string(data)) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// supervise is PID 1's loop: run the server, reap every process that ends
// (orphans are re-parented to PID 1), restart the server if it ends.
func supervise() {
	self, err := os.Executable()
	if err != nil {
		self = "/init"
	}
	var server *os.Process
	start := func() {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), roleEnv)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			logf("hymn-agent: starting the server: %v", err)
			server = nil
			return
		}
		server = cmd.Process
	}
	start()
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err != nil {
			if errors.Is(err, unix.ECHILD) || server == nil {
				time.Sleep(time.Second)
				start()
			}
			continue
		}
		if server != nil && pid == server.Pid {
			logf("hymn-agent: server ended (%v); restarting", ws)
			time.Sleep(100 * time.Millisecond)
			start()
		}
	}
}

// findPort waits for the agent's virtio-serial port to show up.
func findPort() (string, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		names, _ := filepath.Glob("/sys/class/virtio-ports/*/name")
		for _, n := range names {
			data, err := os.ReadFile(n)
			if err == nil && strings.TrimSpace(string(data)) == agent.PortName {
				dev := "/dev/" + filepath.Base(filepath.Dir(n))
				if _, err := os.Stat(dev); err == nil {
					return dev, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no virtio-serial port named %s", agent.PortName)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func serve() error {
	path, err := findPort()
	if err != nil {
		return err
	}
	// A virtio port is not a tty, so none of the hvc termios trouble: it
	// is a plain byte pipe to the host's chardev socket.
	port, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	s := agent.NewServer()
	s.Poweroff = func() error {
		unix.Sync()
		return unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	}
	logf("hymn-agent: serving on %s", path)
	w := bufio.NewWriterSize(port, 64<<10)
	fw := flushWriter{w}
	for {
		// Serve returns when the host side disconnects (a read of 0
		// bytes); the port stays open and the next host is served.
		if err := s.Serve(port, fw); err != nil && !errors.Is(err, io.EOF) {
			logf("hymn-agent: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// flushWriter sends each Response in one write as soon as it is encoded.
type flushWriter struct{ w *bufio.Writer }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.w.Flush()
	}
	return n, err
}
