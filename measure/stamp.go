package measure

import (
	"encoding/binary"
	"net"
	"net/netip"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Kernel receive timestamps for probes of one's own: a UDP socket in a
// node's namespace that the kernel stamps on arrival, the stamp read back,
// and an echo responder that says how long it held each datagram. With
// them a program times a path without its own scheduling in the result
// (Measure and the examples' UDP echo use them).

// KernelStamp extracts the SO_TIMESTAMPNS receive time (ns on the
// CLOCK_REALTIME clock) from a datagram's control messages, or 0.
func KernelStamp(oob []byte) int64 {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:]))
			return sec*1e9 + nsec
		}
	}
	return 0
}

// ListenStamped opens a UDP socket on addr (port 0: any) in namespace ns
// (-1: the caller's) with kernel receive timestamps (SO_TIMESTAMPNS) on;
// read them with ReadMsgUDP and KernelStamp.
func ListenStamped(ns netns.NsHandle, addr netip.AddrPort) (*net.UDPConn, error) {
	var c *net.UDPConn
	err := inNS(ns, func() error {
		network := "udp4"
		if addr.Addr().Is6() {
			network = "udp6"
		}
		var err error
		if c, err = net.ListenUDP(network, net.UDPAddrFromAddrPort(addr)); err != nil {
			return err
		}
		raw, err := c.SyscallConn()
		if err != nil {
			return err
		}
		var serr error
		if err := raw.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
		}); err != nil {
			return err
		}
		return serr
	})
	if err != nil {
		if c != nil {
			_ = c.Close() // best effort: err is the one to report
		}
		return nil, err
	}
	return c, nil
}

// Echo is a request/response responder: it sends every datagram of at
// least 16 bytes that c receives back to its sender with, in bytes 8..16
// (big-endian ns), how long it held it (its kernel receive stamp to the
// reply), so the client can take that out of its round-trip time. It
// returns when c is closed.
func Echo(c *net.UDPConn) {
	buf, oob := make([]byte, 64), make([]byte, 128)
	for {
		k, oobn, _, from, err := c.ReadMsgUDP(buf, oob)
		if err != nil {
			return
		}
		if k < 16 {
			continue
		}
		rx := KernelStamp(oob[:oobn])
		if rx == 0 {
			rx = time.Now().UnixNano()
		}
		binary.BigEndian.PutUint64(buf[8:], uint64(time.Now().UnixNano()-rx))
		_, _ = c.WriteToUDP(buf[:k], from) // a reply lost here is lost like one on the wire: the client counts it
	}
}

func inNS(ns netns.NsHandle, fn func() error) error {
	if ns < 0 {
		return fn()
	}
	return netnsx.Do(ns, fn)
}
