package nodes

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// portRcvBuf is the receive buffer hymn gives each packet socket through
// which ovs-vswitchd (userspace datapath) reads a switch port: SO_RCVBUFFORCE
// of 4 MiB, which the kernel doubles for its accounting.
//
// ovs-vswitchd sets none, so its sockets get net.core.rmem_default,
// 208 KiB: the segments of about 110 ms of a 10 Mbit/s link (each one
// charged its 2 KiB of truesize). On a machine whose CPUs are shared with
// other work ovs-vswitchd, an ordinary process, waits longer than that for
// a CPU now and then, and the kernel drops what no longer fits: iperf
// through mn's default switches over --link tc,bw=10 measured 3.6-6.8
// Mbit/s at load 30 on 2 CPUs, with hundreds of drops at the port sockets
// (ss -0 -m shows them), and 8.9-9.2 Mbit/s with no drop once the buffers
// were this size, against 9.1 through Linux bridges. The kernel's datapath
// (Mininet's, and the bridges') has no such queue. rmem_default cannot be
// raised for the switches' namespace alone (it is read-only outside the
// root namespace), and raising it for the whole machine would change every
// socket on it, so the sockets themselves get it: hymn takes a copy of
// each through pidfd_getfd (its own child; root may), sets the option on
// the copy (the socket is the same) and closes the copy.
const portRcvBuf = 4 << 20

// enlargePortBuffers gives every packet socket of process pid a receive
// buffer of at least portRcvBuf; it returns how many it enlarged. Sockets
// of other families are left as they are.
func enlargePortBuffers(pid int) (int, error) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return 0, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer func() { _ = unix.Close(pidfd) }() // only read through
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, e := range entries {
		target, err := os.Readlink(dir + "/" + e.Name())
		if err != nil || !strings.HasPrefix(target, "socket:") {
			continue // closed meanwhile, or not a socket
		}
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ok, err := enlargeIfPacket(pidfd, fd)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			n++
		}
	}
	return n, errors.Join(errs...)
}

// enlargeIfPacket sets the receive buffer of the process's socket fd
// (through a copy) if it is a packet socket with a smaller one.
func enlargeIfPacket(pidfd, fd int) (bool, error) {
	dup, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return false, fmt.Errorf("pidfd_getfd %d: %w", fd, err)
	}
	defer func() { _ = unix.Close(dup) }() // a copy: the process keeps its own
	if family, err := unix.GetsockoptInt(dup, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil || family != unix.AF_PACKET {
		return false, nil
	}
	if cur, err := unix.GetsockoptInt(dup, unix.SOL_SOCKET, unix.SO_RCVBUF); err == nil && cur >= 2*portRcvBuf {
		return false, nil
	}
	if err := unix.SetsockoptInt(dup, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, portRcvBuf); err != nil {
		return false, fmt.Errorf("SO_RCVBUFFORCE on socket %d: %w", fd, err)
	}
	return true, nil
}
