package measure

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Offsets in a raw frame (no FCS: the driver adds it, or on a veth
// nobody does): Ethernet 14, IPv4 20, UDP 8, then the payload.
const (
	ethLen      = 14
	rawHeaders  = ethLen + 20 + 8
	fcsLen      = 4
	ipv4DontFrg = 0x4000
)

// frameTarget is what a raw sender needs to write the frames the UDP
// stack would have written: the egress interface, both MAC addresses
// (the next hop's from the neighbour table), both IPv4 addresses and the
// ports of each flow.
type frameTarget struct {
	ifindex  int
	ifname   string
	srcMAC   net.HardwareAddr
	dstMAC   net.HardwareAddr
	src, dst netip.Addr
	srcPorts []uint16 // one per flow
	dstPort  uint16
}

// neighbourWait bounds how long resolveTarget waits for ARP.
const neighbourWait = time.Second

// resolveTarget finds, in the calling thread's network namespace, the
// route to dst and the next hop's MAC address. warm sends one packet
// towards dst through the UDP stack, so that the kernel resolves the
// neighbour; it is called while the neighbour is unknown.
func resolveTarget(dst netip.AddrPort, srcPorts []uint16, warm func()) (*frameTarget, error) {
	routes, err := netlink.RouteGet(dst.Addr().AsSlice())
	if err != nil {
		return nil, fmt.Errorf("route to %s: %w", dst.Addr(), err)
	}
	if len(routes) == 0 {
		return nil, fmt.Errorf("no route to %s", dst.Addr())
	}
	r := routes[0]
	if r.Type == unix.RTN_LOCAL {
		return nil, fmt.Errorf("%s is a local address: no link to write frames on", dst.Addr())
	}
	link, err := netlink.LinkByIndex(r.LinkIndex)
	if err != nil {
		return nil, fmt.Errorf("interface %d: %w", r.LinkIndex, err)
	}
	a := link.Attrs()
	if a.EncapType != "ether" || len(a.HardwareAddr) != 6 {
		return nil, fmt.Errorf("%s is not an Ethernet interface (%s)", a.Name, a.EncapType)
	}
	t := &frameTarget{ifindex: a.Index, ifname: a.Name, srcMAC: a.HardwareAddr, dstPort: dst.Port(), srcPorts: srcPorts}
	t.dst = dst.Addr()
	if src, ok := netip.AddrFromSlice(r.Src); ok && src.Unmap().Is4() {
		t.src = src.Unmap()
	} else {
		addrs, err := netlink.AddrList(link, netlink.FAMILY_V4)
		if err != nil || len(addrs) == 0 {
			return nil, fmt.Errorf("%s has no IPv4 address", a.Name)
		}
		t.src, _ = netip.AddrFromSlice(addrs[0].IP.To4())
	}
	hop := dst.Addr()
	if gw, ok := netip.AddrFromSlice(r.Gw); ok && gw.Unmap().Is4() && !gw.Unmap().IsUnspecified() {
		hop = gw.Unmap()
	}
	deadline := time.Now().Add(neighbourWait)
	for {
		if mac := neighbour(a.Index, hop); mac != nil {
			t.dstMAC = mac
			return t, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no neighbour entry for %s on %s after %v", hop, a.Name, neighbourWait)
		}
		warm()
		time.Sleep(5 * time.Millisecond)
	}
}

// neighbour returns hop's MAC address on ifindex if the kernel has one
// it would use.
func neighbour(ifindex int, hop netip.Addr) net.HardwareAddr {
	neighs, err := netlink.NeighList(ifindex, netlink.FAMILY_V4)
	if err != nil {
		return nil
	}
	const usable = netlink.NUD_REACHABLE | netlink.NUD_STALE | netlink.NUD_DELAY | netlink.NUD_PROBE | netlink.NUD_PERMANENT | netlink.NUD_NOARP
	for _, n := range neighs {
		ip, ok := netip.AddrFromSlice(n.IP)
		if ok && ip.Unmap() == hop && n.State&usable != 0 && len(n.HardwareAddr) == 6 {
			return n.HardwareAddr
		}
	}
	return nil
}

// header writes flow's Ethernet, IPv4 and UDP headers for a frame of
// frame bytes (FCS included) into b[:rawHeaders]. The UDP checksum is 0
// (none, allowed for IPv4), so the headers do not depend on the payload
// and one copy per packet suffices.
func (t *frameTarget) header(b []byte, frame, flow int) {
	copy(b[0:6], t.dstMAC)
	copy(b[6:12], t.srcMAC)
	binary.BigEndian.PutUint16(b[12:], unix.ETH_P_IP)
	ip := b[ethLen : ethLen+20]
	ip[0], ip[1] = 0x45, 0
	binary.BigEndian.PutUint16(ip[2:], uint16(frame-fcsLen-ethLen))
	binary.BigEndian.PutUint16(ip[4:], 0)
	binary.BigEndian.PutUint16(ip[6:], ipv4DontFrg)
	ip[8], ip[9] = 64, unix.IPPROTO_UDP
	binary.BigEndian.PutUint16(ip[10:], 0)
	s, d := t.src.As4(), t.dst.As4()
	copy(ip[12:16], s[:])
	copy(ip[16:20], d[:])
	binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip))
	udp := b[ethLen+20 : rawHeaders]
	binary.BigEndian.PutUint16(udp[0:], t.srcPorts[flow%len(t.srcPorts)])
	binary.BigEndian.PutUint16(udp[2:], t.dstPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(frame-fcsLen-ethLen-20))
	binary.BigEndian.PutUint16(udp[6:], 0)
}

func ipChecksum(h []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		s += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// templates returns every flow's headers, ready to copy.
func (t *frameTarget) templates(frame int) [][]byte {
	out := make([][]byte, len(t.srcPorts))
	for i := range out {
		out[i] = make([]byte, rawHeaders)
		t.header(out[i], frame, i)
	}
	return out
}

// localPorts returns the source port each connected UDP socket was given.
func localPorts(fds []int) ([]uint16, error) {
	out := make([]uint16, 0, len(fds))
	for _, fd := range fds {
		sa, err := unix.Getsockname(fd)
		if err != nil {
			return nil, fmt.Errorf("getsockname: %w", err)
		}
		in, ok := sa.(*unix.SockaddrInet4)
		if !ok {
			return nil, errors.New("getsockname: not an IPv4 socket")
		}
		out = append(out, uint16(in.Port))
	}
	return out, nil
}
