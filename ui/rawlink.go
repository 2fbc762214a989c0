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
	// names and state from the first interface dump, kept current by the
	// kernel's link notifications (the socket is in RTMGRP_LINK): the
	// counters come from RTM_GETSTATS, whose kernel side fills only the
	// 64-bit counters. An RTM_GETLINK dump fills every attribute, IPv6's
	// configuration and statistics included: repeated every fifth
	// sampling, as it was, it cost about a quarter of the sampler's CPU
	// on linear,1000. The full dump runs again only when stale is set (an
	// action, an interface the notifications did not name, or
	// notifications lost to a full socket buffer).
	names map[int32]string
	up    map[string]bool
	stale bool
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
		defer func() { _ = cur.Close() }() // a handle of our own thread's namespace
		if err := netns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, err}
			return
		}
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
		if err == nil {
			// Link changes (up, down, carrier, new, deleted) arrive
			// between samplings and are read with the next one.
			if err = unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: unix.RTMGRP_LINK}); err != nil {
				_ = unix.Close(fd) // never used
			}
		}
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

func (s *linkSock) close() { _ = unix.Close(s.fd) } // nothing to do if it fails

// read fills out with every interface of the namespace by name.
func (s *linkSock) read(out map[string]ifStats) error {
	if s.names == nil || s.stale {
		s.stale = false
		s.names, s.up = map[int32]string{}, map[string]bool{}
		if err := s.request(unix.RTM_GETLINK, unix.SizeofIfInfomsg, out); err != nil {
			return err
		}
		return nil
	}
	return s.request(unix.RTM_GETSTATS, sizeofIfStatsMsg, out)
}

const (
	sizeofIfStatsMsg = 12 // struct if_stats_msg
	iflaStatsLink64  = 1  // IFLA_STATS_LINK_64
	iflaIfname       = 3
	iflaOperstate    = 16
	iflaStats64      = 23
	operDown         = 2
)

// dump is the full interface dump (names, state, counters).
func (s *linkSock) dump(out map[string]ifStats) error {
	s.names, s.up = map[int32]string{}, map[string]bool{}
	return s.request(unix.RTM_GETLINK, unix.SizeofIfInfomsg, out)
}

// request sends one dump request (RTM_GETLINK or RTM_GETSTATS) and parses
// its answers into out.
func (s *linkSock) request(typ uint16, bodyLen int, out map[string]ifStats) error {
	s.seq++
	req := make([]byte, unix.NLMSG_HDRLEN+bodyLen)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], typ)
	if typ == unix.RTM_GETSTATS {
		binary.NativeEndian.PutUint32(req[unix.NLMSG_HDRLEN+8:], 1<<(iflaStatsLink64-1)) // filter_mask
	}
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(req[8:], s.seq)
	if err := unix.Sendto(s.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink dump: %w", err)
	}
	for {
		n, _, err := unix.Recvfrom(s.fd, s.buf, 0)
		if errors.Is(err, unix.ENOBUFS) {
			s.stale = true // notifications were dropped: dump it all next time
			continue
		}
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
			if seq == 0 && s.names != nil { // a notification
				switch typ {
				case unix.RTM_NEWLINK:
					s.parseLink(msg, out)
				case unix.RTM_DELLINK:
					s.forget(msg)
				}
				continue
			}
			if seq != s.seq {
				continue // an answer to an earlier, abandoned dump
			}
			switch typ {
			case unix.NLMSG_DONE:
				return nil
			case unix.NLMSG_ERROR:
				return errors.New("netlink dump: error from the kernel")
			case unix.RTM_NEWLINK:
				s.parseLink(msg, out)
			case unix.RTM_NEWSTATS:
				s.parseStats(msg, out)
			}
		}
	}
}

func nlAlign(n int) int { return (n + 3) &^ 3 }

func (s *linkSock) parseLink(msg []byte, out map[string]ifStats) {
	if len(msg) < unix.SizeofIfInfomsg {
		return
	}
	index := int32(binary.NativeEndian.Uint32(msg[4:]))
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
			stats64(v, &st)
		}
		a = a[min(nlAlign(l), len(a)):]
	}
	if name != "" {
		out[name] = st
		s.names[index] = name
		s.up[name] = st.up
	}
}

// forget drops an interface an RTM_DELLINK names.
func (s *linkSock) forget(msg []byte) {
	if len(msg) < unix.SizeofIfInfomsg {
		return
	}
	index := int32(binary.NativeEndian.Uint32(msg[4:]))
	if name, ok := s.names[index]; ok {
		delete(s.names, index)
		delete(s.up, name)
	}
}

// parseStats reads an RTM_NEWSTATS message: if_stats_msg, then the
// IFLA_STATS_LINK_64 attribute.
func (s *linkSock) parseStats(msg []byte, out map[string]ifStats) {
	if len(msg) < sizeofIfStatsMsg {
		return
	}
	name, ok := s.names[int32(binary.NativeEndian.Uint32(msg[4:]))]
	if !ok {
		s.stale = true // a new interface: learn its name next time
		return
	}
	st := ifStats{up: s.up[name]}
	a := msg[sizeofIfStatsMsg:]
	for len(a) >= 4 {
		l := int(binary.NativeEndian.Uint16(a[0:]))
		if l < 4 || l > len(a) {
			break
		}
		if binary.NativeEndian.Uint16(a[2:])&^unix.NLA_F_NESTED == iflaStatsLink64 {
			stats64(a[4:l], &st)
		}
		a = a[min(nlAlign(l), len(a)):]
	}
	out[name] = st
}

// stats64 reads struct rtnl_link_stats64: rx_packets, tx_packets,
// rx_bytes, tx_bytes, rx_errors, tx_errors, rx_dropped, tx_dropped, ...
func stats64(v []byte, st *ifStats) {
	if len(v) < 8*8 {
		return
	}
	u := func(i int) uint64 { return binary.NativeEndian.Uint64(v[8*i:]) }
	st.rxPackets, st.txPackets, st.rxBytes, st.txBytes = u(0), u(1), u(2), u(3)
	st.rxDropped, st.txDropped = u(6), u(7)
}
