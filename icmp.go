package hymn

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/nodes"
	"golang.org/x/sys/unix"
)

// echoID numbers the echo requests hymn sends itself, so concurrent pings
// from one namespace (whose raw sockets all see every ICMP reply) each
// pick out their own.
var echoID atomic.Uint32

// nativePing sends one ICMP echo request from inside a namespace node and
// waits for its reply, the way `ping -c1 -W timeout` does but without
// starting a process: for a pingall over many hosts the fork and exec of
// ping, not the network, was most of the time. The result reads as
// ping's: 1 sent, 1 or 0 received, the rtt in ms.
func nativePing(ctx context.Context, node *nodes.NsNode, dst netip.Addr, timeout time.Duration) (PingResult, error) {
	r := PingResult{Sent: 1}
	fd, err := icmpSocket(node)
	if err != nil {
		return r, err
	}
	defer func() { _ = unix.Close(fd) }() // a read-only socket: nothing to flush

	id := uint16(echoID.Add(1))
	req := []byte{8, 0, 0, 0, byte(id >> 8), byte(id), 0, 1, 'h', 'y', 'm', 'n', 0, 0, 0, 0}
	binary.BigEndian.PutUint16(req[2:], icmpChecksum(req))
	isReply := func(buf []byte, from unix.Sockaddr) bool {
		src, ok := from.(*unix.SockaddrInet4)
		if !ok || netip.AddrFrom4(src.Addr) != dst || len(buf) < 20 {
			return false
		}
		ihl := int(buf[0]&0x0f) * 4
		if len(buf) < ihl+8 {
			return false
		}
		icmp := buf[ihl:]
		return icmp[0] == 0 && binary.BigEndian.Uint16(icmp[4:]) == id
	}
	return echo(ctx, fd, req, &unix.SockaddrInet4{Addr: dst.As4()}, timeout, isReply)
}

// echo sends one echo request on a raw socket and waits for the reply
// that isReply recognises (given the bytes read and their sender), the
// way ping -c1 -W timeout does: a send that fails (no route, unreachable
// neighbour) is sent, not received; the wait ends at timeout or when ctx
// ends, whichever comes first.
func echo(ctx context.Context, fd int, req []byte, to unix.Sockaddr, timeout time.Duration, isReply func(buf []byte, from unix.Sockaddr) bool) (PingResult, error) {
	r := PingResult{Sent: 1}
	start := time.Now()
	if err := unix.Sendto(fd, req, 0, to); err != nil {
		return r, nil
	}
	deadline := start.Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	buf := make([]byte, 1500)
	for {
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			return r, ctx.Err()
		}
		// Wake at least every 50 ms to notice a cancelled context.
		tv := unix.NsecToTimeval(min(left, 50*time.Millisecond).Nanoseconds())
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return r, fmt.Errorf("ping socket: SO_RCVTIMEO: %w", err)
		}
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return r, err
		}
		if isReply(buf[:n], from) {
			rtt := time.Since(start)
			r.Received = 1
			r.RTTMin, r.RTTAvg, r.RTTMax = rtt, rtt, rtt
			return r, nil
		}
	}
}

// icmpSocket opens a raw ICMP socket inside a namespace node.
func icmpSocket(node *nodes.NsNode) (int, error) {
	var fd int
	err := netnsx.Do(node.NsHandle(), func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
		return err
	})
	return fd, err
}

// icmpChecksum is the Internet checksum of an ICMP message.
func icmpChecksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
