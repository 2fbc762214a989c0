package sriov

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"syscall"
	"unsafe"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// pktConn is a non-blocking AF_PACKET socket on one interface, parked on
// Go's network poller while idle.
//
// Why not the emulator's afpacket.Port: its Wait blocks an OS thread in
// ppoll, and a simulated NIC has one port per VF. With dozens of ports
// blocked in system calls and GOMAXPROCS small, a port whose frame
// arrives must wait for the runtime to take a P back from a blocked
// thread, which on a loaded two-core machine took 20–110 ms per hop
// (measured). The poller wakes exactly the goroutine whose socket is
// readable and holds no thread meanwhile. A simulated NIC carries test
// traffic, so one system call per frame is fine.
type pktConn struct {
	name string
	f    *os.File
	rc   syscall.RawConn
	oob  []byte
}

// openPktConn opens the socket inside ns. PACKET_IGNORE_OUTGOING keeps
// the frames the switch itself sends out of the interface from coming
// back; PACKET_AUXDATA returns the VLAN tag the kernel strips on receive.
func openPktConn(ns netns.NsHandle, ifname string) (*pktConn, error) {
	var c *pktConn
	err := netnsx.Do(ns, func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		// Protocol 0 at creation, ETH_P_ALL at bind: a socket created with
		// a protocol is hooked to every interface at once, and binding it
		// to one then unhooks it, which waits for an RCU grace period
		// (about 15 ms each, measured).
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("socket: %w", err)
		}
		for opt, v := range map[int]int{unix.PACKET_IGNORE_OUTGOING: 1, unix.PACKET_AUXDATA: 1} {
			if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, opt, v); err != nil {
				unix.Close(fd)
				return fmt.Errorf("setsockopt %d: %w", opt, err)
			}
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
			unix.Close(fd)
			return fmt.Errorf("bind: %w", err)
		}
		f := os.NewFile(uintptr(fd), ifname)
		rc, err := f.SyscallConn()
		if err != nil {
			f.Close()
			return err
		}
		c = &pktConn{name: ifname, f: f, rc: rc, oob: make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.TpacketAuxdata{}))))}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("packet socket on %s: %w", ifname, err)
	}
	return c, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// read waits for the next frame and returns it as it was on the wire,
// with its 802.1Q tag put back where the kernel took it from. buf needs 4
// spare bytes beyond the largest frame: the frame is received at buf[4:]
// so the tag can be inserted without copying the payload.
func (c *pktConn) read(buf []byte) ([]byte, error) {
	var n, oobn int
	var rerr error
	err := c.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf[4:], c.oob, unix.MSG_TRUNC)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return nil, err
	}
	if n > len(buf)-4 || n < 14 {
		return nil, nil // truncated or runt: not a frame to forward
	}
	frame := buf[4 : 4+n]
	msgs, _ := unix.ParseSocketControlMessage(c.oob[:oobn])
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_PACKET || m.Header.Type != unix.PACKET_AUXDATA || len(m.Data) < 20 {
			continue
		}
		status := binary.NativeEndian.Uint32(m.Data[0:4])
		if status&unix.TP_STATUS_VLAN_VALID == 0 {
			continue
		}
		tci := binary.NativeEndian.Uint16(m.Data[16:18])
		tpid := uint16(tpid8021)
		if status&unix.TP_STATUS_VLAN_TPID_VALID != 0 {
			tpid = binary.NativeEndian.Uint16(m.Data[18:20])
		}
		copy(buf[0:12], buf[4:16])
		buf[12], buf[13] = byte(tpid>>8), byte(tpid)
		buf[14], buf[15] = byte(tci>>8), byte(tci)
		frame = buf[:n+4]
	}
	return frame, nil
}

// write sends one frame out of the interface.
func (c *pktConn) write(frame []byte) error {
	var werr error
	err := c.rc.Write(func(fd uintptr) bool {
		_, werr = unix.Write(int(fd), frame)
		return werr != unix.EAGAIN
	})
	if err == nil {
		err = werr
	}
	return err
}

// close ends a read in progress.
func (c *pktConn) close() error { return c.f.Close() }
