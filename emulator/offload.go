package emulator

import "encoding/binary"

// Offloads through the emulator. A port that carries offload state puts a
// struct virtio_net_hdr (the kernel's PACKET_VNET_HDR format, host byte
// order) before every frame it receives and expects one before every
// frame it sends. The header says whether the frame is a GSO super-frame
// (a TCP or UDP stream cut into gso_size segments by whoever finally puts
// it on a wire) and where a checksum left for the NIC starts. The
// forwarder passes header and frame through untouched and accounts the
// frame as the segments it stands for (SuperFrame): rate, spacer,
// policer and byte counters see the bytes those segments take on the
// wire. Delay and loss apply per frame: a lost super-frame loses all its
// segments at once. That is what NetEm does with the GSO packets of a
// host whose interfaces keep their offloads (Mininet's tc links), and the
// long-run share of lost segments stays the configured probability (a
// frame is lost with probability p whatever it carries); what changes is
// that losses come in bursts of up to a super-frame, which TCP counts as
// one congestion event. Super-frames are large only when a flow is fast:
// TCP sizes them to about a millisecond of its sending rate, so on a link
// slowed by rate or loss they shrink to a few segments. Splitting them
// (software GSO in the forwarder) would cost the per-segment work the
// offloads exist to save; a link that needs per-segment loss at high rate
// can be built with offloads off (links.NoOffloads,
// HYMN_EMU_OFFLOADS=off). The buffer counts frames, a super-frame
// taking one place, as NetEm's limit counts its packets.

// VnetHdrLen is the size of struct virtio_net_hdr.
const VnetHdrLen = 10

// Fields of struct virtio_net_hdr.
const (
	VnetFlagNeedsCsum = 1
	VnetFlagDataValid = 2

	VnetGSONone  = 0
	VnetGSOTCPv4 = 1
	VnetGSOUDP   = 3
	VnetGSOTCPv6 = 4
	VnetGSOUDPL4 = 5
	VnetGSOECN   = 0x80
)

// VnetHdr is a decoded struct virtio_net_hdr.
type VnetHdr struct {
	Flags, GSOType                         uint8
	HdrLen, GSOSize, CsumStart, CsumOffset uint16
}

// ParseVnetHdr decodes the header at the start of b (len(b) ≥ VnetHdrLen).
func ParseVnetHdr(b []byte) VnetHdr {
	e := binary.NativeEndian
	return VnetHdr{Flags: b[0], GSOType: b[1], HdrLen: e.Uint16(b[2:]), GSOSize: e.Uint16(b[4:]),
		CsumStart: e.Uint16(b[6:]), CsumOffset: e.Uint16(b[8:])}
}

// Put encodes h into the first VnetHdrLen bytes of b.
func (h VnetHdr) Put(b []byte) {
	e := binary.NativeEndian
	b[0], b[1] = h.Flags, h.GSOType
	e.PutUint16(b[2:], h.HdrLen)
	e.PutUint16(b[4:], h.GSOSize)
	e.PutUint16(b[6:], h.CsumStart)
	e.PutUint16(b[8:], h.CsumOffset)
}

// OffloadPort is a Port that carries offload state: with Offloads true,
// every buffer RecvBatch fills and every frame SendBatch takes starts with
// a VnetHdrLen-byte header (lens include it), and frames up to 64 KiB
// (GSO super-frames) pass. Such a port never cuts a frame that would fit
// a larger buffer: RecvBatch stops before a frame longer than the buffer
// offered for it, and NextLen tells how long a buffer it needs.
type OffloadPort interface {
	Port
	Offloads() bool
	// NextLen is the buffer length (header included) the next waiting
	// frame needs, 0 if none is waiting.
	NextLen() int
}

// OffloadSlotSize is the frame buffer for a super-frame: the header, the
// largest IP packet, an Ethernet header and a VLAN tag, in whole pages.
const OffloadSlotSize = (VnetHdrLen + 65535 + l2Header + 4095) &^ 4095

// SuperFrame returns how many frames on the wire a frame (without its
// header) with offload header h stands for, and their total length
// (without per-frame overhead). A frame that is not GSO is one frame of
// its own length. For a GSO frame of L bytes with H bytes of headers
// (Ethernet, IP, TCP or UDP) every segment repeats the headers and carries
// at most gso_size bytes of payload: n = ⌈(L−H)/gso_size⌉ segments of
// L + (n−1)·H bytes in all.
func SuperFrame(h VnetHdr, frame []byte) (segs, wire int) {
	l := len(frame)
	if h.GSOType&^VnetGSOECN == VnetGSONone || h.GSOSize == 0 {
		return 1, l
	}
	hl := gsoHeaderLen(h, frame)
	if hl <= 0 || hl >= l {
		return 1, l
	}
	payload := l - hl
	n := (payload + int(h.GSOSize) - 1) / int(h.GSOSize)
	return n, l + (n-1)*hl
}

// gsoHeaderLen finds where a GSO frame's payload starts: the L4 header
// begins at csum_start (GSO frames always carry NEEDS_CSUM); a TCP header
// says its own length, a UDP header is 8 bytes. hdr_len is a fallback:
// the kernel fills it with the linear part of the buffer, which may hold
// payload too.
func gsoHeaderLen(h VnetHdr, frame []byte) int {
	cs := int(h.CsumStart)
	if h.Flags&VnetFlagNeedsCsum != 0 && cs > 0 {
		switch h.GSOType &^ VnetGSOECN {
		case VnetGSOTCPv4, VnetGSOTCPv6:
			if cs+13 <= len(frame) {
				return cs + int(frame[cs+12]>>4)*4
			}
		case VnetGSOUDPL4, VnetGSOUDP:
			return cs + 8
		}
	}
	return int(h.HdrLen)
}
