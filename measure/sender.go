package measure

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/sys/unix"
)

// Generator is the kernel interface the sender hands packets to. The
// packets are the same on the wire whichever is used (Ethernet, IPv4,
// UDP from the flow's own source port); what differs is how much of the
// kernel each one passes through on the sender's core, which sets the
// highest rate one core can offer.
type Generator int

const (
	// GenAuto picks the fastest that works on the sending interface:
	// AF_XDP, else AF_PACKET, else UDP.
	GenAuto Generator = iota
	// GenXDP writes whole frames into an AF_XDP socket's TX ring (copy
	// mode, TX only: no XDP program is attached); the kernel turns each
	// descriptor into an skb and gives it to the driver directly.
	GenXDP
	// GenPacket sends whole frames with sendmmsg on an AF_PACKET socket
	// with PACKET_QDISC_BYPASS: no UDP, IP, routing or qdisc layer.
	GenPacket
	// GenUDP sends UDP datagrams with sendmmsg on connected sockets: the
	// whole stack, one route and neighbour lookup per packet.
	GenUDP
)

// Generators lists the concrete generators, fastest first (measured on
// a veth sink on the 2-core VM this was written on; see docs/measure.md).
var Generators = []Generator{GenXDP, GenPacket, GenUDP}

func (g Generator) String() string {
	switch g {
	case GenXDP:
		return "afxdp"
	case GenPacket:
		return "afpacket"
	case GenUDP:
		return "udp"
	}
	return "auto"
}

// ParseGenerator reads auto, afxdp, afpacket or udp.
func ParseGenerator(s string) (Generator, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return GenAuto, nil
	case "afxdp", "xdp":
		return GenXDP, nil
	case "afpacket", "packet":
		return GenPacket, nil
	case "udp", "sendmmsg":
		return GenUDP, nil
	}
	return GenAuto, fmt.Errorf("unknown generator %q (use auto, afxdp, afpacket or udp)", s)
}

// sender hands packets to the kernel in batches. prepare makes room for
// up to n next packets of flow and returns how many it has; payload(j)
// returns the j-th one's payload (UDP data, frame − 46 bytes) to be
// filled in, its headers written then (only for the packets that are
// due: at low rates a batch holds one); commit hands the first k over
// and calls ok with the payload of each one the kernel took. A packet
// not taken is counted by the caller as a send error.
type sender interface {
	prepare(n, flow int) int
	payload(j int) []byte
	commit(k int, ok func(payload []byte)) error
	kind() Generator
	close()
}

// udpSender is sendmmsg on one connected UDP socket per flow.
type udpSender struct {
	fds  []int
	b    *batch
	flow int
}

func newUDPSender(fds []int, batchSize, payload int) *udpSender {
	return &udpSender{fds: fds, b: newBatch(batchSize, payload, 0)}
}

func (u *udpSender) kind() Generator { return GenUDP }
func (u *udpSender) close()          {}

func (u *udpSender) prepare(n, flow int) int {
	u.flow = flow
	return min(n, len(u.b.bufs))
}

func (u *udpSender) payload(j int) []byte { return u.b.bufs[j] }

func (u *udpSender) commit(k int, ok func([]byte)) error {
	fd := u.fds[u.flow%len(u.fds)]
	done := 0
	for done < k {
		n, err := sendmmsg(fd, u.b, done, k-done)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.ECONNREFUSED) {
				// This packet was not sent: skip it.
				done++
				continue
			}
			return fmt.Errorf("sending: %w", err)
		}
		for j := done; j < done+n; j++ {
			ok(u.b.bufs[j])
		}
		done += n
	}
	return nil
}

// openSender opens the sender for g in the calling thread's network
// namespace, on the connected UDP sockets fds (one per flow, towards
// dst). For GenAuto it tries the generators fastest first and returns,
// with the one that worked, why the faster ones did not.
func openSender(g Generator, fds []int, dst netip.AddrPort, frame, batchSize int) (sender, string, error) {
	if g == GenUDP {
		return newUDPSender(fds, batchSize, frame-frameHeaders), "", nil
	}
	target, err := rawTarget(fds, dst)
	if err == nil {
		switch g {
		case GenXDP:
			x, err := newXDPSender(target, frame, batchSize)
			return x, "", err
		case GenPacket:
			p, err := newPacketSender(target, frame, batchSize)
			return p, "", err
		}
		x, xerr := newXDPSender(target, frame, batchSize)
		if xerr == nil {
			return x, "", nil
		}
		p, perr := newPacketSender(target, frame, batchSize)
		if perr == nil {
			return p, xerr.Error(), nil
		}
		err = fmt.Errorf("%v; %v", xerr, perr)
	}
	if g != GenAuto {
		return nil, "", fmt.Errorf("%s generator: %w", g, err)
	}
	return newUDPSender(fds, batchSize, frame-frameHeaders), err.Error(), nil
}

// rawTarget resolves what raw frames towards dst need, warming the
// neighbour entry with a datagram too short to count as a measured
// packet (the receiver ignores anything under headerLen bytes).
func rawTarget(fds []int, dst netip.AddrPort) (*frameTarget, error) {
	ports, err := localPorts(fds)
	if err != nil {
		return nil, err
	}
	// A datagram refused (ECONNREFUSED from an earlier one) still asked
	// for the neighbour: the error says nothing here.
	return resolveTarget(dst, ports, func() { _, _ = unix.Write(fds[0], []byte{0}) })
}
