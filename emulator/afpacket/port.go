package afpacket

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Options size the rings. The zero value suits a 1500-byte MTU.
type Options struct {
	// FrameSize is the size of one ring slot (a power of two ≥ 2048); it
	// bounds the largest frame the port can carry. 0 picks one from MTU.
	FrameSize int
	// MTU of the interface, used when FrameSize is 0 (default 1500).
	MTU int
	// RxFrames and TxFrames are the ring lengths in frames (rounded up to
	// whole 64 KiB blocks). 0: 2048 RX, 512 TX.
	RxFrames, TxFrames int
	// Offloads carries GSO super-frames and checksum-offload state through
	// the port (PACKET_VNET_HDR): every frame is preceded by a
	// virtio_net_hdr (see emulator.OffloadPort), so the interfaces on
	// both sides can keep TSO, GSO and checksum offload on. Frames that
	// fit the ring slots go through the rings; super-frames up to 64 KiB
	// overflow from the RX ring to the socket's queue (PACKET_COPY_THRESH)
	// and are sent by a socket of their own, so the ring memory stays what
	// it is without offloads.
	Offloads bool
}

const (
	ethPAll = 0x0003
	// tpacket2HdrLen is TPACKET_ALIGN(sizeof(struct tpacket2_hdr)): where a
	// TX frame's data starts when PACKET_TX_HAS_OFF is not used.
	tpacket2HdrLen = 32
	blockSize      = 1 << 16
	vlanHdrLen     = 4
	// rawWaitMax is the longest Wait done as a raw system call; below the
	// runtime's 10 ms preemption period.
	rawWaitMax = 5 * time.Millisecond
	// preWake ends a long (runtime) wait this much early: the runtime's
	// wake-up waits for a free P, a millisecond or more on a loaded machine
	// or under -race, which made schedule points late. The forwarder then
	// finds nothing to do and waits the short rest raw, to microseconds.
	preWake = 2 * time.Millisecond
)

// Port is an AF_PACKET port with TPACKET_V2 RX and TX rings. See the
// package documentation.
type Port struct {
	name    string
	ifindex int

	rxFD, txFD, evFD int
	// With offloads: bigFD sends frames larger than a TX slot; txPending
	// counts ring frames not yet kicked (they must go before it).
	offloads       bool
	bigFD          int
	txPending      int
	rxMem, txMem   []byte
	frameSize      int
	rxFrames       int
	txFrames       int
	rxHead, txHead int
	maxFrame       int // largest frame RecvBatch can deliver (slot minus header)
	mtu            int // the interface's MTU when the port was opened
	// bypass sends past the qdisc layer (PACKET_QDISC_BYPASS); off for
	// an offloads port on an interface without TSO (see txBypass).
	bypass bool

	// pollFDs: the RX socket and the eventfd, then room for another
	// port's two (WaitWith).
	pollFDs [4]unix.PollFd
	ts      unix.Timespec

	closed atomic.Bool

	// Counters are added once per batch, atomically, so Stats may be
	// read from another goroutine without stopping the forwarder.
	rxFrames64, rxBytes, rxTrunc atomic.Uint64
	ringDrops                    atomic.Uint64
	txFrames64, txBytes, txDrop  atomic.Uint64
	txWrongFormat                atomic.Uint64
	// link reads the interface's counters (its tx_dropped are frames
	// the kernel took from the TX ring and then dropped) from the
	// namespace the port was opened in; txDropBase is their value at
	// open, lastTxDrop the last one read.
	link                   *netlink.Handle
	txDropBase, lastTxDrop uint64
	wakeups                atomic.Uint64
	statsMu                sync.Mutex
}

var (
	_ emulator.OffloadPort = (*Port)(nil)
	_ emulator.PairPort    = (*Port)(nil)
)

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func roundFrames(n, frameSize int) (frames, blocks int) {
	per := blockSize / frameSize
	blocks = (n + per - 1) / per
	if blocks < 1 {
		blocks = 1
	}
	return blocks * per, blocks
}

// FrameSizeFor returns the ring slot size that carries frames of an MTU
// (plus Ethernet and VLAN headers and the ring's own header).
func FrameSizeFor(mtu int) int {
	if mtu <= 0 {
		mtu = 1500
	}
	need := mtu + 14 + vlanHdrLen + 128
	fs := 2048
	for fs < need {
		fs <<= 1
	}
	return fs
}

// Open opens a port on the interface named ifname in the calling thread's
// network namespace. Sockets keep the namespace they were created in, so a
// caller that wants a port in another namespace creates it while inside
// (see OpenIn).
func Open(ifname string, o Options) (_ *Port, err error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("afpacket: %s: %w", ifname, err)
	}
	fs := o.FrameSize
	if fs == 0 {
		mtu := o.MTU
		if mtu == 0 {
			mtu = ifi.MTU
		}
		fs = FrameSizeFor(mtu)
	}
	if fs < 2048 || fs&(fs-1) != 0 || fs > blockSize {
		return nil, fmt.Errorf("afpacket: %s: frame size %d must be a power of two in [2048, %d]", ifname, fs, blockSize)
	}
	// Ring memory is allocated by the kernel up front, per port: 2048 RX
	// frames (4 MiB with 2 KiB slots) absorb a 10 ms stall of the
	// forwarder at 200 kpps, and since frames carry their kernel arrival
	// times such a stall costs no accuracy; the TX ring is emptied by
	// every sendto, so a few batches' worth is plenty.
	if o.RxFrames == 0 {
		o.RxFrames = 2048
	}
	if o.TxFrames == 0 {
		o.TxFrames = 512
	}
	p := &Port{name: ifname, ifindex: ifi.Index, rxFD: -1, txFD: -1, evFD: -1, bigFD: -1, frameSize: fs, mtu: ifi.MTU, offloads: o.Offloads}
	p.bypass = txBypass(ifname, o.Offloads)
	defer func() {
		if err != nil {
			_ = p.Close() // best effort: err is what the open reports
		}
	}()
	if p.evFD, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return nil, fmt.Errorf("afpacket: %s: eventfd: %w", ifname, err)
	}
	if err := p.openRx(o.RxFrames); err != nil {
		return nil, fmt.Errorf("afpacket: %s: RX ring: %w", ifname, err)
	}
	if err := p.openTx(o.TxFrames); err != nil {
		return nil, fmt.Errorf("afpacket: %s: TX ring: %w", ifname, err)
	}
	if p.offloads {
		if err := p.openBig(); err != nil {
			return nil, fmt.Errorf("afpacket: %s: offloads: %w", ifname, err)
		}
	}
	// A netlink socket made here stays in this namespace, so Stats can
	// read the interface's drop counter from any thread.
	if h, err := netlink.NewHandle(unix.NETLINK_ROUTE); err == nil {
		p.link = h
		p.txDropBase = p.ifTxDropped()
		p.lastTxDrop = p.txDropBase
	}
	p.pollFDs[0] = unix.PollFd{Fd: int32(p.rxFD), Events: unix.POLLIN}
	p.pollFDs[1] = unix.PollFd{Fd: int32(p.evFD), Events: unix.POLLIN}
	return p, nil
}

func (p *Port) ring(fd, which, n int) ([]byte, int, error) {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return nil, 0, fmt.Errorf("PACKET_VERSION: %w", err)
	}
	frames, blocks := roundFrames(n, p.frameSize)
	req := unix.TpacketReq{Block_size: blockSize, Block_nr: uint32(blocks), Frame_size: uint32(p.frameSize), Frame_nr: uint32(frames)}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, which, &req); err != nil {
		return nil, 0, fmt.Errorf("ring of %d frames: %w", frames, err)
	}
	mem, err := unix.Mmap(fd, 0, blocks*blockSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, 0, fmt.Errorf("mmap: %w", err)
	}
	return mem, frames, nil
}

func (p *Port) openRx(n int) error {
	// Protocol 0 first, so nothing is queued before the ring exists; the
	// bind below switches to ETH_P_ALL.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return err
	}
	p.rxFD = fd
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return fmt.Errorf("PACKET_IGNORE_OUTGOING: %w", err)
	}
	if p.offloads {
		// Before the ring: the kernel refuses the option once it exists.
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
			return fmt.Errorf("PACKET_VNET_HDR: %w", err)
		}
		// A frame longer than a slot is queued on the socket whole (and
		// its slot marked TP_STATUS_COPY) while the socket's receive
		// buffer has room: that is where super-frames arrive.
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_COPY_THRESH, 1); err != nil {
			return fmt.Errorf("PACKET_COPY_THRESH: %w", err)
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, bigQueueBytes); err != nil {
			return fmt.Errorf("SO_RCVBUFFORCE: %w", err)
		}
	}
	if p.rxMem, p.rxFrames, err = p.ring(fd, unix.PACKET_RX_RING, n); err != nil {
		return err
	}
	p.maxFrame = p.frameSize - 128
	if p.offloads {
		p.maxFrame = emulator.OffloadSlotSize - emulator.VnetHdrLen
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(ethPAll), Ifindex: p.ifindex}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	// A veth does not filter by MAC, but a real NIC does: the emulator must
	// see every frame, whoever it is for.
	mreq := unix.PacketMreq{Ifindex: int32(p.ifindex), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		return fmt.Errorf("promiscuous mode: %w", err)
	}
	return nil
}

func (p *Port) openTx(n int) error {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return err
	}
	p.txFD = fd
	if err := p.txOptions(fd); err != nil {
		return err
	}
	if p.txMem, p.txFrames, err = p.ring(fd, unix.PACKET_TX_RING, n); err != nil {
		return err
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: 0, Ifindex: p.ifindex}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	return nil
}

// txOptions sets what both sending sockets need before a ring exists.
func (p *Port) txOptions(fd int) error {
	// The emulator is the queue: a qdisc behind it would only add delay
	// and a second place to drop.
	if p.bypass {
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
			return fmt.Errorf("PACKET_QDISC_BYPASS: %w", err)
		}
	}
	if p.offloads {
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
			return fmt.Errorf("PACKET_VNET_HDR: %w", err)
		}
	}
	return nil
}

// txBypass reports whether a port's sockets may bypass the qdisc layer.
// A GSO super-frame sent to an interface without TSO must be cut into
// segments by the kernel (validate_xmit_skb, which also fills in a
// checksum left for the NIC), and the bypass path (dev_direct_xmit) drops
// every frame that validation replaced by its segments: no error the
// sender could act on, only the interface's tx_dropped. Such an interface
// is one whose frames must arrive complete (a port of Open vSwitch's
// userspace datapath behind it, links.End.Complete), so its port goes
// through dev_queue_xmit; on a veth (noqueue) that adds no queue. An
// interface whose TSO state cannot be read keeps the bypass.
func txBypass(ifname string, offloads bool) bool {
	if !offloads {
		return true
	}
	on, err := tsoEnabled(ifname)
	return err != nil || on
}

// tsoEnabled reads an interface's TSO flag (ethtool -k's
// tcp-segmentation-offload) in the calling thread's namespace.
func tsoEnabled(ifname string) (bool, error) {
	const ethtoolGTSO = 0x1e
	if len(ifname) >= unix.IFNAMSIZ {
		return false, fmt.Errorf("%s: interface name too long", ifname)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer func() { _ = unix.Close(fd) }() // a query socket: nothing was written
	v := struct{ cmd, data uint32 }{cmd: ethtoolGTSO}
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data unsafe.Pointer
		_    [16]byte
	}
	copy(ifr.name[:], ifname)
	ifr.data = unsafe.Pointer(&v)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return false, e
	}
	return v.data != 0, nil
}

// bigQueueBytes is the receive buffer for super-frames waiting outside
// the RX ring (about 60 of 64 KiB; each one's skb counts its truesize),
// and the send buffer of the socket that sends them.
const bigQueueBytes = 8 << 20

// openBig opens the socket that sends frames too long for a TX slot.
func (p *Port) openBig() error {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return err
	}
	p.bigFD = fd
	if err := p.txOptions(fd); err != nil {
		return err
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, bigQueueBytes); err != nil {
		return fmt.Errorf("SO_SNDBUFFORCE: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: 0, Ifindex: p.ifindex}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	return nil
}

// Offloads implements emulator.OffloadPort.
func (p *Port) Offloads() bool { return p.offloads }

// Name returns the interface name.
func (p *Port) Name() string { return p.name }

// MaxFrame is the longest frame (bytes) the port carries.
func (p *Port) MaxFrame() int { return p.maxFrame }

// MTU is the interface's MTU when the port was opened.
func (p *Port) MTU() int { return p.mtu }

func (p *Port) hdr(mem []byte, i int) *unix.Tpacket2Hdr {
	return (*unix.Tpacket2Hdr)(unsafe.Pointer(&mem[i*p.frameSize]))
}

// RecvBatch implements emulator.Port.
func (p *Port) RecvBatch(bufs [][]byte, lens []int, stamps []int64) (int, error) {
	if p.closed.Load() {
		return 0, emulator.ErrPortClosed
	}
	if p.offloads {
		return p.recvOffloads(bufs, lens, stamps)
	}
	n := 0
	var bytes, trunc uint64
	for n < len(bufs) {
		off := p.rxHead * p.frameSize
		h := p.hdr(p.rxMem, p.rxHead)
		status := atomic.LoadUint32(&h.Status)
		if status&unix.TP_STATUS_USER == 0 {
			break
		}
		snap, mac, full := int(h.Snaplen), int(h.Mac), int(h.Len)
		data := p.rxMem[off+mac : off+mac+snap]
		buf := bufs[n]
		tagged := status&unix.TP_STATUS_VLAN_VALID != 0
		need := snap
		if tagged {
			need += vlanHdrLen
		}
		switch {
		case status&unix.TP_STATUS_COPY != 0 || full != snap || need > len(buf) || snap < 14:
			trunc++
		case tagged:
			// Put back the 802.1Q tag the kernel moved into the header.
			tpid := uint16(0x8100)
			if status&unix.TP_STATUS_VLAN_TPID_VALID != 0 {
				tpid = h.Vlan_tpid
			}
			copy(buf[:12], data[:12])
			buf[12], buf[13] = byte(tpid>>8), byte(tpid)
			buf[14], buf[15] = byte(h.Vlan_tci>>8), byte(h.Vlan_tci)
			copy(buf[16:], data[12:])
			lens[n] = need
			stamps[n] = int64(h.Sec)*1e9 + int64(h.Nsec)
			bytes += uint64(need)
			n++
		default:
			copy(buf, data)
			lens[n] = snap
			stamps[n] = int64(h.Sec)*1e9 + int64(h.Nsec)
			bytes += uint64(snap)
			n++
		}
		p.releaseRx(h)
	}
	p.countRx(n, bytes, trunc)
	return n, nil
}

// releaseRx hands a ring slot back to the kernel and moves to the next.
func (p *Port) releaseRx(h *unix.Tpacket2Hdr) {
	atomic.StoreUint32(&h.Status, unix.TP_STATUS_KERNEL)
	p.rxHead++
	if p.rxHead == p.rxFrames {
		p.rxHead = 0
	}
}

// countRx adds one batch to the port's receive counters.
func (p *Port) countRx(n int, bytes, trunc uint64) {
	if n > 0 {
		p.rxFrames64.Add(uint64(n))
		p.rxBytes.Add(bytes)
	}
	if trunc > 0 {
		p.rxTrunc.Add(trunc)
	}
}

// recvOffloads is RecvBatch with a virtio_net_hdr before every frame.
// The kernel writes the header into the slot just before the frame; a
// frame longer than a slot is whole in the socket's queue (its slot says
// TP_STATUS_COPY and holds the kernel's stamp and VLAN tag).
func (p *Port) recvOffloads(bufs [][]byte, lens []int, stamps []int64) (int, error) {
	n := 0
	var bytes, trunc uint64
	for n < len(bufs) {
		off := p.rxHead * p.frameSize
		h := p.hdr(p.rxMem, p.rxHead)
		status := atomic.LoadUint32(&h.Status)
		if status&unix.TP_STATUS_USER == 0 {
			break
		}
		need := p.needOffloads(h, status)
		buf := bufs[n]
		if need > len(buf) && need <= emulator.OffloadSlotSize {
			break // the caller offers a larger buffer (NextLen)
		}
		snap, mac, full := int(h.Snaplen), int(h.Mac), int(h.Len)
		tagged := status&unix.TP_STATUS_VLAN_VALID != 0
		got := 0
		switch {
		case status&unix.TP_STATUS_COPY != 0:
			got = p.recvQueued(buf, need, tagged)
		case full != snap || need > len(buf) || snap < 14 || mac < emulator.VnetHdrLen:
		default:
			copy(buf, p.rxMem[off+mac-emulator.VnetHdrLen:off+mac+snap])
			got = emulator.VnetHdrLen + snap
		}
		if got > 0 && tagged {
			got = p.insertTag(buf, got, h, status)
		}
		if got > 0 {
			// A checksum the kernel verified is in the frame and valid;
			// sent on as is it is verified again, which is always right.
			buf[0] &^= emulator.VnetFlagDataValid
			lens[n] = got
			stamps[n] = int64(h.Sec)*1e9 + int64(h.Nsec)
			bytes += uint64(got - emulator.VnetHdrLen)
			n++
		} else {
			trunc++
		}
		p.releaseRx(h)
	}
	p.countRx(n, bytes, trunc)
	return n, nil
}

// needOffloads is the buffer a slot's frame takes with its header and
// its VLAN tag put back.
func (p *Port) needOffloads(h *unix.Tpacket2Hdr, status uint32) int {
	need := emulator.VnetHdrLen + int(h.Len)
	if status&unix.TP_STATUS_VLAN_VALID != 0 {
		need += vlanHdrLen
	}
	return need
}

// recvQueued reads the super-frame queued for a TP_STATUS_COPY slot into
// buf (header and frame), leaving room for a VLAN tag; 0 if it does not
// fit or is missing.
func (p *Port) recvQueued(buf []byte, need int, tagged bool) int {
	room := len(buf)
	if tagged {
		room -= vlanHdrLen
	}
	var r uintptr
	var e unix.Errno
	for {
		var ptr unsafe.Pointer
		if room > 0 {
			ptr = unsafe.Pointer(&buf[0])
		}
		r, _, e = unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(p.rxFD), uintptr(ptr), uintptr(max(room, 0)),
			unix.MSG_DONTWAIT|unix.MSG_TRUNC, 0, 0)
		if e != unix.EINTR {
			break
		}
	}
	if e != 0 || int(r) > room || int(r) < emulator.VnetHdrLen+14 || need > len(buf) {
		return 0
	}
	return int(r)
}

// insertTag puts back the 802.1Q tag the kernel moved into the slot
// header, after the header and MAC addresses of the frame in buf[:n];
// a checksum start moves with the bytes behind it.
func (p *Port) insertTag(buf []byte, n int, h *unix.Tpacket2Hdr, status uint32) int {
	if n+vlanHdrLen > len(buf) {
		return 0
	}
	const macs = emulator.VnetHdrLen + 12
	copy(buf[macs+vlanHdrLen:n+vlanHdrLen], buf[macs:n])
	tpid := uint16(0x8100)
	if status&unix.TP_STATUS_VLAN_TPID_VALID != 0 {
		tpid = h.Vlan_tpid
	}
	buf[macs], buf[macs+1] = byte(tpid>>8), byte(tpid)
	buf[macs+2], buf[macs+3] = byte(h.Vlan_tci>>8), byte(h.Vlan_tci)
	vh := emulator.ParseVnetHdr(buf)
	if vh.Flags&emulator.VnetFlagNeedsCsum != 0 {
		vh.CsumStart += vlanHdrLen
		vh.Put(buf)
	}
	return n + vlanHdrLen
}

// NextLen implements emulator.OffloadPort.
func (p *Port) NextLen() int {
	if p.closed.Load() || !p.offloads {
		return 0
	}
	h := p.hdr(p.rxMem, p.rxHead)
	status := atomic.LoadUint32(&h.Status)
	if status&unix.TP_STATUS_USER == 0 {
		return 0
	}
	return p.needOffloads(h, status)
}

// readable reports whether the frame at the RX head is ours.
func (p *Port) readable() bool {
	return atomic.LoadUint32(&p.hdr(p.rxMem, p.rxHead).Status)&unix.TP_STATUS_USER != 0
}

// SendBatch implements emulator.Port.
func (p *Port) SendBatch(frames [][]byte) (int, error) {
	if p.closed.Load() {
		return 0, emulator.ErrPortClosed
	}
	queued := 0
	var bytes, dropped uint64
	kicked := false
	var err error
	for _, f := range frames {
		if len(f) > p.frameSize-tpacket2HdrLen {
			if p.offloads && p.sendBig(f) {
				queued++
				bytes += uint64(len(f) - emulator.VnetHdrLen)
			} else {
				dropped++
			}
			continue
		}
		h := p.hdr(p.txMem, p.txHead)
		if atomic.LoadUint32(&h.Status) != unix.TP_STATUS_AVAILABLE && !kicked {
			// The ring is full of frames the kernel has not taken yet:
			// hand them over once, then give up on the rest rather than
			// stall the transmit clock.
			if kerr := p.kick(); kerr != nil {
				err = kerr
			}
			kicked = true
		}
		st := atomic.LoadUint32(&h.Status)
		if st&unix.TP_STATUS_WRONG_FORMAT != 0 {
			// The kernel refused a frame sent earlier (counted in
			// TxFrames then): count it as failed before reusing the slot.
			p.txWrongFormat.Add(1)
			atomic.StoreUint32(&h.Status, unix.TP_STATUS_AVAILABLE)
			st = unix.TP_STATUS_AVAILABLE
		}
		if st != unix.TP_STATUS_AVAILABLE {
			dropped++
			continue
		}
		off := p.txHead*p.frameSize + tpacket2HdrLen
		copy(p.txMem[off:], f)
		h.Len = uint32(len(f))
		h.Snaplen = uint32(len(f))
		atomic.StoreUint32(&h.Status, unix.TP_STATUS_SEND_REQUEST)
		p.txHead++
		if p.txHead == p.txFrames {
			p.txHead = 0
		}
		queued++
		p.txPending++
		bytes += uint64(len(f))
		if p.offloads {
			bytes -= emulator.VnetHdrLen
		}
	}
	if p.txPending > 0 {
		if kerr := p.kick(); kerr != nil {
			err = kerr
		}
	}
	p.txFrames64.Add(uint64(queued))
	p.txBytes.Add(bytes)
	if dropped > 0 {
		p.txDrop.Add(dropped)
	}
	return queued, err
}

// kick asks the kernel to send every frame marked SEND_REQUEST. MSG_DONTWAIT
// keeps sendto from waiting for the frames' destructors; on a veth they run
// during the call anyway, so the slots come back at once.
func (p *Port) kick() error {
	p.txPending = 0
	for {
		// Raw, like ppoll in Wait: on a veth, sendto runs the receiving
		// side's whole stack inline and can take long enough for the Go
		// runtime to hand the P away and spin up other threads looking for
		// work, which cost more CPU than the forwarding itself.
		_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(p.txFD), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0, unix.EAGAIN, unix.ENOBUFS:
			// EAGAIN/ENOBUFS: the device queue is full; frames stay in the
			// ring and go with the next kick.
			return nil
		case unix.EINTR:
			continue
		default:
			return fmt.Errorf("afpacket: %s: sendto: %w", p.name, e)
		}
	}
}

// sendBig sends one frame too long for a TX slot through its own socket,
// after the ring frames queued before it.
func (p *Port) sendBig(f []byte) bool {
	if len(f) < emulator.VnetHdrLen+14 {
		return false
	}
	if p.txPending > 0 {
		// An error here (the device gone) fails the sendto below as well,
		// and the next batch's kick returns it.
		_ = p.kick()
	}
	for {
		_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(p.bigFD), uintptr(unsafe.Pointer(&f[0])), uintptr(len(f)),
			unix.MSG_DONTWAIT, 0, 0)
		if e == unix.EINTR {
			continue
		}
		return e == 0
	}
}

// Wait implements emulator.Port with ppoll on the RX socket and an eventfd.
func (p *Port) Wait(timeout time.Duration) error {
	return p.wait(nil, timeout)
}

// PairsWith implements emulator.PairPort: two AF_PACKET ports wait
// together in one ppoll.
func (p *Port) PairsWith(other emulator.Port) bool {
	q, ok := other.(*Port)
	return ok && q != p
}

// WaitWith implements emulator.PairPort: Wait on p and other at once.
func (p *Port) WaitWith(other emulator.Port, timeout time.Duration) error {
	q, ok := other.(*Port)
	if !ok || q == p {
		return fmt.Errorf("afpacket: %s cannot wait with %s", p.name, other.Name())
	}
	return p.wait(q, timeout)
}

// wait blocks until p (or q, if not nil) may have a frame, the timeout
// passes or either is interrupted.
func (p *Port) wait(q *Port, timeout time.Duration) error {
	if p.closed.Load() || q != nil && q.closed.Load() {
		return emulator.ErrPortClosed
	}
	if p.readable() || q != nil && q.readable() {
		return nil
	}
	var ts *unix.Timespec
	if timeout > rawWaitMax {
		timeout -= preWake
	}
	if timeout >= 0 {
		p.ts = unix.NsecToTimespec(int64(timeout))
		ts = &p.ts
	}
	fds := p.pollFDs[:2]
	if q != nil {
		p.pollFDs[2], p.pollFDs[3] = q.pollFDs[0], q.pollFDs[1]
		fds = p.pollFDs[:4]
		q.wakeups.Add(1)
	}
	for i := range fds {
		fds[i].Revents = 0
	}
	p.wakeups.Add(1)
	// Short waits (a departure is due soon) use a raw system call: the
	// thread keeps its P, so waking up never waits for the Go scheduler to
	// find a P (on a loaded machine, or while idle GC workers hold every
	// spare P, that wait reached tens of ms). Long waits (an idle link)
	// go through the runtime, which releases the P; a raw wait that long
	// would be interrupted by the runtime's preemption signal every 10 ms,
	// which for a hundred idle links costs a good part of a core.
	var e unix.Errno
	if timeout >= 0 && timeout <= rawWaitMax {
		_, _, e = unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)),
			uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	} else {
		_, _, e = unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)),
			uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	}
	if e != 0 && e != unix.EINTR {
		return fmt.Errorf("afpacket: %s: ppoll: %w", p.name, e)
	}
	var b [8]byte
	if fds[1].Revents&unix.POLLIN != 0 {
		_, _ = unix.Read(p.evFD, b[:]) // draining the wake-up: EAGAIN only means another read took it
	}
	if q != nil && fds[3].Revents&unix.POLLIN != 0 {
		_, _ = unix.Read(q.evFD, b[:])
	}
	return nil
}

// Interrupt implements emulator.Port.
func (p *Port) Interrupt() {
	one := [8]byte{1}
	_, _ = unix.Write(p.evFD, one[:]) // EAGAIN (the counter full) means a wake-up is pending anyway
}

// ifTxDropped reads the interface's tx_dropped counter (0 if unknown).
func (p *Port) ifTxDropped() uint64 {
	l, err := p.link.LinkByIndex(p.ifindex)
	if err != nil || l.Attrs().Statistics == nil {
		return p.lastTxDrop
	}
	return l.Attrs().Statistics.TxDropped
}

// Stats implements emulator.Port. It also collects the kernel's RX ring
// drop count (PACKET_STATISTICS resets on read, so it is accumulated) and
// the interface's tx_dropped since the port was opened (TxFailed).
func (p *Port) Stats() emulator.PortStats {
	p.statsMu.Lock()
	if !p.closed.Load() && p.rxFD >= 0 {
		if st, err := unix.GetsockoptTpacketStats(p.rxFD, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			p.ringDrops.Add(uint64(st.Drops))
		}
		if p.link != nil {
			p.lastTxDrop = max(p.ifTxDropped(), p.lastTxDrop)
		}
	}
	txFailed := p.txWrongFormat.Load() + p.lastTxDrop - p.txDropBase
	p.statsMu.Unlock()
	return emulator.PortStats{
		RxFrames: p.rxFrames64.Load(), RxBytes: p.rxBytes.Load(), RxTruncated: p.rxTrunc.Load(),
		RxRingDrops: p.ringDrops.Load(),
		TxFrames:    p.txFrames64.Load(), TxBytes: p.txBytes.Load(), TxDropped: p.txDrop.Load(), TxFailed: txFailed,
		Wakeups: p.wakeups.Load(),
	}
}

// Close implements emulator.Port. The caller must have stopped using the
// port from other goroutines (the forwarder stops first).
func (p *Port) Close() error {
	p.Stats() // keep the last ring drop count
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	if p.closed.Swap(true) {
		return nil
	}
	var errs []error
	for _, m := range []*[]byte{&p.rxMem, &p.txMem} {
		if *m != nil {
			errs = append(errs, unix.Munmap(*m))
			*m = nil
		}
	}
	if p.link != nil {
		p.link.Close()
		p.link = nil
	}
	for _, fd := range []*int{&p.rxFD, &p.txFD, &p.bigFD, &p.evFD} {
		if *fd >= 0 {
			errs = append(errs, unix.Close(*fd))
			*fd = -1
		}
	}
	return errors.Join(errs...)
}

// OpenIn opens a port on an interface of another network namespace. The
// sockets are created on a thread inside ns and stay bound to it.
func OpenIn(ns netns.NsHandle, ifname string, o Options) (*Port, error) {
	var p *Port
	err := netnsx.Do(ns, func() error {
		var err error
		p, err = Open(ifname, o)
		return err
	})
	return p, err
}
