package nodes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
)

// TestFreeAddrKeepsThePort: a controller whose 127.0.0.1 port is taken
// (another network's) moves to the same port on the next loopback address,
// where Mininet's tools still find OpenFlow (tshark decodes it by port);
// only when the port is taken on every address (a listener on 0.0.0.0)
// does it move to another port.
func TestFreeAddrKeepsThePort(t *testing.T) {
	// A free port of the machine's choosing stands in for 6653, which
	// other networks on the machine may hold.
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := probe.Addr().(*net.TCPAddr).Port
	_ = probe.Close() // only asked for a free port

	ip, p, err := freeAddr("127.0.0.1", port)
	if err != nil || ip != "127.0.0.1" || p != port {
		t.Errorf("free port: %s:%d, %v; want 127.0.0.1:%d", ip, p, err, port)
	}
	held, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	ip, p, err = freeAddr("127.0.0.1", port)
	if err != nil || ip != "127.0.0.2" || p != port {
		t.Errorf("127.0.0.1:%d taken: %s:%d, %v; want 127.0.0.2:%d", port, ip, p, err, port)
	}
	_ = held.Close() // only held

	wild, err := net.Listen("tcp", net.JoinHostPort("0.0.0.0", strconv.Itoa(port)))
	if err != nil {
		t.Skipf("cannot hold port %d on every address: %v", port, err)
	}
	defer func() { _ = wild.Close() }() // only held
	ip, p, err = freeAddr("127.0.0.1", port)
	if err != nil || ip != "127.0.0.1" || p == port {
		t.Errorf("port %d taken on every address: %s:%d, %v; want 127.0.0.1 and another port", port, ip, p, err)
	}
	// A controller given another address keeps it and looks for a port.
	ip, p, err = freeAddr("127.0.0.3", port)
	if err != nil || ip != "127.0.0.3" || p == port {
		t.Errorf("127.0.0.3 with port %d taken everywhere: %s:%d, %v", port, ip, p, err)
	}
}

// The kernel is asked who listens: a socket of this process on a port is
// this process's, not another's; a wildcard listener counts for a
// specific address; a port nobody listens on is not listening yet.
func TestCheckListener(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }() // only held
	port := ln.Addr().(*net.TCPAddr).Port
	if ok, err := checkListener(os.Getpid(), lo, port); !ok || err != nil {
		t.Errorf("own listener on %d: %v, %v", port, ok, err)
	}
	// Seen from another process (a child, same namespace): taken.
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }() // only a pid to ask about
	ok, err := checkListener(child.Process.Pid, lo, port)
	if ok || !errors.Is(err, errListenerTaken) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("listener of another process: %v, %v", ok, err)
	}
	// A port nobody listens on.
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := free.Addr().(*net.TCPAddr).Port
	_ = free.Close() // only asked for a free port
	if ok, err := checkListener(os.Getpid(), lo, freePort); ok || err != nil {
		t.Errorf("nobody on %d: %v, %v", freePort, ok, err)
	}
	// A wildcard listener takes 127.0.0.2's connections.
	wild, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = wild.Close() }() // only held
	wp := wild.Addr().(*net.TCPAddr).Port
	if l, ok, err := tcpListener(os.Getpid(), netip.MustParseAddr("127.0.0.2"), wp); !ok || l.exact || err != nil {
		t.Errorf("wildcard on %d: %+v %v %v", wp, l, ok, err)
	}
	if ok, err := checkListener(child.Process.Pid, netip.MustParseAddr("127.0.0.2"), wp); ok || !errors.Is(err, errListenerTaken) {
		t.Errorf("another's wildcard: %v, %v", ok, err)
	}
	for s, want := range map[string]string{"0100007F:19FD": "127.0.0.1:6653", "00000000000000000000000001000000:0050": "[::1]:80"} {
		a, p, ok := parseProcAddr(s)
		if got := netip.AddrPortFrom(a, uint16(p)).String(); !ok || got != want {
			t.Errorf("%s: %s, want %s", s, got, want)
		}
	}
}

// squat listens on ip:port as another local user would.
func squat(t *testing.T, ip string, port int) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() }) // only held
	return ln
}

// A process that binds the controller's port between hymn finding it free
// and the controller binding it does not get the switches: with a port
// the user named, hymn refuses, naming the squatter; with a port hymn
// picked, it picks another; a controller process that died is no longer
// a target for the relay.
func TestControllerSquattedPort(t *testing.T) {
	testenv.RootAndTools(t, "ovs-testcontroller")
	t.Cleanup(func() { _ = os.Remove(ControllerRunDir) }) // only if empty: other runs' records may be there
	var warned strings.Builder
	cfg := func(port int) ControllerConfig {
		return ControllerConfig{Name: "c0", Kind: ControllerOVSC, Port: port, Record: "hymn-" + owner.NewRunID() + "-c0",
			Warnf: func(f string, a ...any) { fmt.Fprintf(&warned, f, a...) }}
	}
	t.Cleanup(func() { beforeControllerStart = nil })

	// The controller's own start: its process finds the port taken.
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := probe.Addr().(*net.TCPAddr).Port
	_ = probe.Close() // only asked for a free port
	beforeControllerStart = func(ip string, p int) { squat(t, ip, p) }
	c, err := StartController(context.Background(), cfg(port))
	if err == nil {
		_ = c.Stop()
		t.Fatalf("controller started on a squatted port %d: %v", port, c)
	}
	want := fmt.Sprintf("127.0.0.1:%d is not the controller's: taken by another process: pid %d", port, os.Getpid())
	if !errors.Is(err, errListenerTaken) || !strings.Contains(err.Error(), want) {
		t.Errorf("squatted given port: %v\nwant %q", err, want)
	}
	t.Logf("given port: %v", err)

	// A port hymn picks: it moves on.
	var squatted []string
	beforeControllerStart = func(ip string, p int) {
		if len(squatted) == 0 {
			squatted = append(squatted, squat(t, ip, p).Addr().String())
		}
	}
	c, err = StartController(context.Background(), cfg(0))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop() }() // stopped below; again is harmless
	if len(squatted) != 1 || c.Addr() == squatted[0] || !strings.Contains(warned.String(), "trying another port") {
		t.Errorf("picked port squatted at %v: controller on %s; warnings %q", squatted, c.Addr(), warned.String())
	}
	if err := c.checkTarget(c.Addr()); err != nil {
		t.Errorf("the controller's own port: %v", err)
	}
	if err := c.checkTarget(squatted[0]); err == nil {
		t.Errorf("the squatter's %s is a target", squatted[0])
	}
	// More switches than one process takes: each process is checked.
	many := cfg(0)
	many.Switches, many.Relay = 20, filepath.Join(t.TempDir(), "c0.sock")
	cm, err := StartController(context.Background(), many)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Processes() != 2 || len(cm.owners) != 2 {
		t.Errorf("20 switches: %d processes, %d checked", cm.Processes(), len(cm.owners))
	}
	for target := range cm.owners {
		if err := cm.checkTarget(target); err != nil {
			t.Error(err)
		}
	}
	if err := cm.Stop(); err != nil {
		t.Error(err)
	}
	// The controller dies: its port is nobody's target.
	c.d.stop()
	if err := c.checkTarget(c.Addr()); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("after the controller died: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Error(err)
	}
}
