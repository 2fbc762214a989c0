package hymn

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/nodes"
	"golang.org/x/sys/unix"
)

// nativePing6 is nativePing for IPv6: one ICMPv6 echo request from inside
// a namespace node (the kernel fills in the checksum of a raw ICMPv6
// socket's messages, and hands back messages without the IPv6 header).
func nativePing6(ctx context.Context, node *nodes.NsNode, dst netip.Addr, timeout time.Duration) (PingResult, error) {
	r := PingResult{Sent: 1}
	var fd int
	err := netnsx.Do(node.NsHandle(), func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMPV6)
		return err
	})
	if err != nil {
		return r, fmt.Errorf("ping6 socket in %s: %w", node.Name(), err)
	}
	defer func() { _ = unix.Close(fd) }() // a read-only socket: nothing to flush

	id := uint16(echoID.Add(1))
	req := []byte{128, 0, 0, 0, byte(id >> 8), byte(id), 0, 1, 'h', 'y', 'm', 'n', 0, 0, 0, 0}
	isReply := func(buf []byte, from unix.Sockaddr) bool {
		src, ok := from.(*unix.SockaddrInet6)
		return ok && netip.AddrFrom16(src.Addr) == dst && len(buf) >= 8 &&
			buf[0] == 129 && uint16(buf[4])<<8|uint16(buf[5]) == id
	}
	return echo(ctx, fd, req, &unix.SockaddrInet6{Addr: dst.As16()}, timeout, isReply)
}
