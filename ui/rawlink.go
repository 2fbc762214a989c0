package ui

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// linkSock is a NETLINK_ROUTE socket opened inside one node's namespace
// for the sampler: an interface dump parsed only for the name, flags,
// operational state and 64-bit counters costs a fraction of the netlink
// package's LinkList, which decodes every attribute of every interface
// (the difference is most of the live view's CPU on a 1000-switch
// network). It holds the namespace alive, so the sampler closes it when
// the network stops or the stream ends.
type linkSock struct {
	fd  int
	seq uint32
	buf []byte
}

// ifStats is what a dump says of one interface.
type ifStats struct {
	up                   bool
	rxPackets, txPackets uint64
	rxBytes, txBytes     uint64
	rxDropped, txDropped uint64
}

// openLinkSock opens the socket inside ns, on a locked thread that goes
// back to the pool only if it could return to its own namespace.
func openLinkSock(ns netns.NsHandle) (*linkSock, error) {
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		cur, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, err}
			return
		}
		defer cur.Close()
		if err := netns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, err}
			return
		}
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
		if err := netns.Set(cur); err == nil {
			runtime.UnlockOSThread()
		} // else: the thread ends with this goroutine, still locked
		ch <- result{fd, err}
	}()
	r := <-ch
	if r.err != nil {
		return nil, fmt.Errorf("netlink socket in namespace: %w", r.err)
	}
	// A dump that does not fit the buffer would be cut: 64 KiB holds
	// dozens of interfaces per message batch, and recv loops anyway.
	return &linkSock{fd: r.fd, buf: make([]byte, 64<<10)}, nil
}

func (s *linkSock) close() { unix.Close(s.fd) }

const (
	iflaIfname    = 3
	iflaOperstate = 16
	iflaStats64   = 23
	operDown      = 2
)

// dump returns every interface of the namespace by name.
func (s *linkSock) dump(out map[string]ifStats) error {
	s.seq++
	req := make([]byte, unix.NLMSG_HDRLEN+unix.SizeofIfInfomsg)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], unix.RTM_GETLINK)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(req[8:], s.seq)
	if err := unix.Sendto(s.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink dump: %w", err)
	}
	for {
		n, _, err := unix.Recvfrom(s.fd, s.buf, 0)
		if err != nil {
			return fmt.Errorf("netlink dump: %w", err)
		}
		b := s.buf[:n]
		for len(b) >= unix.NLMSG_HDRLEN {
			l := int(binary.NativeEndian.Uint32(b[0:]))
			typ := binary.NativeEndian.Uint16(b[4:])
			seq := binary.NativeEndian.Uint32(b[8:])
			if l < unix.NLMSG_HDRLEN || l > len(b) {
				return errors.New("netlink dump: malformed message")
			}
			msg := b[unix.NLMSG_HDRLEN:l]
			b = b[min(nlAlign(l), len(b)):]
			if seq != s.seq {
				continue // an answer to an earlier, abandoned dump
			}
			switch typ {
			case unix.NLMSG_DONE:
				return nil
			case unix.NLMSG_ERROR:
				return errors.New("netlink dump: error from the kernel")
			case unix.RTM_NEWLINK:
				parseLink(msg, out)
			}
		}
	}
}

func nlAlign(n int) int { return (n + 3) &^ 3 }

func parseLink(msg []byte, out map[string]ifStats) {
	if len(msg) < unix.SizeofIfInfomsg {
		return
	}
	flags := binary.NativeEndian.Uint32(msg[8:])
	st := ifStats{up: flags&unix.IFF_UP != 0}
	name := ""
	a := msg[unix.SizeofIfInfomsg:]
	for len(a) >= 4 {
		l := int(binary.NativeEndian.Uint16(a[0:]))
		typ := binary.NativeEndian.Uint16(a[2:]) &^ unix.NLA_F_NESTED
		if l < 4 || l > len(a) {
			break
		}
		v := a[4:l]
		switch typ {
		case iflaIfname:
			if len(v) > 0 && v[len(v)-1] == 0 {
				v = v[:len(v)-1]
			}
			name = string(v)
		case iflaOperstate:
			if len(v) >= 1 && v[0] == operDown {
				st.up = false
			}
		case iflaStats64:
			if len(v) >= 8*8 {
				u := func(i int) uint64 { return binary.NativeEndian.Uint64(v[8*i:]) }
				// struct rtnl_link_stats64: rx_packets, tx_packets,
				// rx_bytes, tx_bytes, rx_errors, tx_errors, rx_dropped,
				// tx_dropped, ...
				st.rxPackets, st.txPackets, st.rxBytes, st.txBytes = u(0), u(1), u(2), u(3)
				st.rxDropped, st.txDropped = u(6), u(7)
			}
		}
		a = a[min(nlAlign(l), len(a)):]
	}
	if name != "" {
		out[name] = st
	}
}
