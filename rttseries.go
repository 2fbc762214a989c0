package hymn

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/hymn-net/hymn/measure"
	"golang.org/x/sys/unix"
)

// MaxRTTCount bounds one RTTSeries: at the smallest gap it is a minute.
const MaxRTTCount = 60000

// RTTSeries sends count ICMP echo requests from a namespace node to dst,
// gap apart, and returns the round-trip time of each one answered, in
// order. Each is measured to the nanosecond from the send to the kernel's
// receive stamp (SO_TIMESTAMPNS), so the Go scheduler's wake-up is not in
// it: ping prints RTTs of 10 ms and more to 0.1 ms, too coarse to judge a
// delay to 1 %. The replies come from dst's kernel, so nothing has to run
// there.
func (n *Network) RTTSeries(ctx context.Context, node string, dst netip.Addr, count int, gap time.Duration) ([]time.Duration, error) {
	if count < 1 || count > MaxRTTCount {
		return nil, fmt.Errorf("rtt series: count %d is outside 1-%d", count, MaxRTTCount)
	}
	if gap < time.Millisecond || gap > time.Second {
		return nil, fmt.Errorf("rtt series: gap %v is outside 1ms-1s", gap)
	}
	if !dst.Is4() {
		return nil, fmt.Errorf("rtt series: %v is not an IPv4 address", dst)
	}
	nd, err := n.NsNode(node)
	if err != nil {
		return nil, err
	}
	fd, err := icmpSocket(nd)
	if err != nil {
		return nil, fmt.Errorf("rtt series from %s: %w", node, err)
	}
	defer func() { _ = unix.Close(fd) }() // a read-only socket: nothing to flush
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		return nil, fmt.Errorf("rtt series from %s: SO_TIMESTAMPNS: %w", node, err)
	}
	id := uint16(echoID.Add(1))
	sent := make([]int64, count) // realtime ns, the clock SO_TIMESTAMPNS stamps with
	rtts := make([]time.Duration, count)
	sa := &unix.SockaddrInet4{Addr: dst.As4()}
	buf, oob := make([]byte, 1500), make([]byte, 256)
	// Replies may come late: keep reading until a second after the last
	// request, so a stall does not count as loss.
	next := time.Now()
	var end time.Time
	for seq := 0; ; {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		now := time.Now()
		if seq < count && !now.Before(next) {
			req := []byte{8, 0, 0, 0, byte(id >> 8), byte(id), byte(seq >> 8), byte(seq), 'h', 'y', 'm', 'n', 'r', 't', 't', 0}
			binary.BigEndian.PutUint16(req[2:], icmpChecksum(req))
			sent[seq] = time.Now().UnixNano()
			if err := unix.Sendto(fd, req, 0, sa); err != nil {
				sent[seq] = 0 // unreachable: sent, never answered
			}
			seq++
			next = next.Add(gap)
			if seq == count {
				end = time.Now().Add(time.Second)
			}
			continue
		}
		if seq == count && now.After(end) {
			break
		}
		wait := time.Until(next)
		if seq == count {
			wait = time.Until(end)
		}
		tv := unix.NsecToTimeval(max(wait, 100*time.Microsecond).Nanoseconds())
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return nil, fmt.Errorf("rtt series from %s: SO_RCVTIMEO: %w", node, err)
		}
		k, oobn, _, from, err := unix.Recvmsg(fd, buf, oob, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("rtt series from %s: %w", node, err)
		}
		src, ok := from.(*unix.SockaddrInet4)
		if !ok || netip.AddrFrom4(src.Addr) != dst || k < 20 {
			continue
		}
		ihl := int(buf[0]&0x0f) * 4
		if k < ihl+8 {
			continue
		}
		icmp := buf[ihl:k]
		if icmp[0] != 0 || binary.BigEndian.Uint16(icmp[4:]) != id {
			continue
		}
		s := int(binary.BigEndian.Uint16(icmp[6:]))
		if s >= count || sent[s] == 0 || rtts[s] != 0 {
			continue
		}
		rx := measure.KernelStamp(oob[:oobn])
		if rx == 0 {
			rx = time.Now().UnixNano()
		}
		rtts[s] = time.Duration(rx - sent[s])
	}
	out := rtts[:0]
	for _, r := range rtts {
		if r > 0 {
			out = append(out, r)
		}
	}
	return out, nil
}
