package measure

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hymn-net/hymn/emulator"
	"golang.org/x/sys/unix"
)

// packetSender is sendmmsg of whole frames on an AF_PACKET socket with
// PACKET_QDISC_BYPASS: each frame goes from the socket straight to the
// driver's transmit (dev_direct_xmit), skipping UDP, IP, routing, the
// neighbour table and the qdisc.
type packetSender struct {
	fd    int
	b     *batch
	tmpl  [][]byte
	addr  unix.RawSockaddrLinklayer
	frame int
	flow  int
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// newPacketSender opens the socket in the calling thread's namespace.
func newPacketSender(t *frameTarget, frame, batchSize int) (_ *packetSender, err error) {
	// Protocol 0: the socket receives nothing, so it costs nothing on
	// the receive path of the interface.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("AF_PACKET socket: %w", err)
	}
	defer func() {
		if err != nil {
			_ = unix.Close(fd) // the setup error is the one to report
		}
	}()
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
		return nil, fmt.Errorf("PACKET_QDISC_BYPASS: %w", err)
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 4<<20) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20) // capped by wmem_max at worst: the default still works
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: t.ifindex}); err != nil {
		return nil, fmt.Errorf("AF_PACKET bind to %s: %w", t.ifname, err)
	}
	p := &packetSender{fd: fd, b: newBatch(batchSize, frame-fcsLen, 0), tmpl: t.templates(frame), frame: frame}
	p.addr = unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Protocol: htons(unix.ETH_P_IP), Ifindex: int32(t.ifindex), Halen: 6}
	copy(p.addr.Addr[:], t.dstMAC)
	for i := range p.b.msgs {
		p.b.msgs[i].hdr.Name = (*byte)(unsafe.Pointer(&p.addr))
		p.b.msgs[i].hdr.Namelen = unix.SizeofSockaddrLinklayer
	}
	return p, nil
}

func (p *packetSender) kind() Generator { return GenPacket }
func (p *packetSender) close()          { _ = unix.Close(p.fd) } // send-only: nothing to flush

func (p *packetSender) prepare(n, flow int) int {
	p.flow = flow
	return min(n, len(p.b.bufs))
}

func (p *packetSender) payload(j int) []byte {
	copy(p.b.bufs[j], p.tmpl[p.flow%len(p.tmpl)])
	return p.b.bufs[j][rawHeaders:]
}

func (p *packetSender) commit(k int, ok func([]byte)) error {
	done := 0
	waited := false
	for done < k {
		n, err := sendmmsg(p.fd, p.b, done, k-done)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.ENETDOWN) {
				// The driver refused this frame (its queue is full or
				// the link lost carrier): skip it, and once per batch
				// give the softirq that drains the queue a moment (see
				// xdpSender.kick).
				if !waited {
					waited = true
					emulator.ThreadSleep(busyWait)
					continue
				}
				done++
				continue
			}
			return fmt.Errorf("sending on AF_PACKET: %w", err)
		}
		for j := done; j < done+n; j++ {
			ok(p.b.bufs[j][rawHeaders:])
		}
		done += n
	}
	return nil
}

// xdpSender writes frames into the UMEM of a TX-only AF_XDP socket in
// copy mode (veth has no zero-copy AF_XDP) and kicks the kernel with
// sendto, which builds an skb for each descriptor and hands it to the
// driver directly, at most 32 per call (the kernel's TX budget). No XDP
// program is needed for transmitting. Completions come back in order,
// so the ring position alone says which UMEM frames are free.
type xdpSender struct {
	fd        int
	umem      []byte
	txMem     []byte
	cqMem     []byte
	txProd    *uint32
	txCons    *uint32
	txDesc    []unix.XDPDesc
	cqProd    *uint32
	cqCons    *uint32
	prod      uint32 // descriptors written
	completed uint32 // completions reaped
	tmpl      [][]byte
	frameLen  int
	payloads  [][]byte
	pending   int // prepared, not committed
	flow      int
}

const (
	xdpFrames    = 2048 // UMEM frames = TX and completion ring size (power of 2)
	xdpFrameSize = 2048
	xdpTxBudget  = 32 // descriptors the kernel sends per sendto in copy mode by default
	// xdpMaxTxSkbBudget is XDP_MAX_TX_SKB_BUDGET (linux/if_xdp.h, 6.17):
	// not in x/sys yet.
	xdpMaxTxSkbBudget = 9
)

func setsockopt(fd, level, name int, p unsafe.Pointer, l uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(name), uintptr(p), l, 0)
	if e != 0 {
		return e
	}
	return nil
}

// newXDPSender opens the socket in the calling thread's namespace and
// binds it to queue 0 of the target interface.
func newXDPSender(t *frameTarget, frame, batchSize int) (_ *xdpSender, err error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("AF_XDP socket: %w", err)
	}
	x := &xdpSender{fd: fd, tmpl: t.templates(frame), frameLen: frame - fcsLen, payloads: make([][]byte, batchSize)}
	defer func() {
		if err != nil {
			x.close()
		}
	}()
	if x.umem, err = unix.Mmap(-1, 0, xdpFrames*xdpFrameSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE); err != nil {
		return nil, fmt.Errorf("AF_XDP UMEM: %w", err)
	}
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&x.umem[0]))), Len: uint64(len(x.umem)), Size: xdpFrameSize}
	if err := setsockopt(fd, unix.SOL_XDP, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return nil, fmt.Errorf("XDP_UMEM_REG: %w", err)
	}
	// The kernel wants a fill ring with every UMEM, even one that never
	// receives; the smallest does.
	for _, r := range []struct {
		opt, n int
	}{{unix.XDP_UMEM_FILL_RING, 64}, {unix.XDP_UMEM_COMPLETION_RING, xdpFrames}, {unix.XDP_TX_RING, xdpFrames}} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, r.opt, r.n); err != nil {
			return nil, fmt.Errorf("AF_XDP ring %d: %w", r.opt, err)
		}
	}
	var off unix.XDPMmapOffsets
	ol := uint32(unsafe.Sizeof(off))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS, uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&ol)), 0); e != 0 {
		return nil, fmt.Errorf("XDP_MMAP_OFFSETS: %w", e)
	}
	if x.txMem, err = unix.Mmap(fd, unix.XDP_PGOFF_TX_RING, int(off.Tx.Desc)+xdpFrames*int(unsafe.Sizeof(unix.XDPDesc{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return nil, fmt.Errorf("AF_XDP TX ring: %w", err)
	}
	if x.cqMem, err = unix.Mmap(fd, unix.XDP_UMEM_PGOFF_COMPLETION_RING, int(off.Cr.Desc)+xdpFrames*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return nil, fmt.Errorf("AF_XDP completion ring: %w", err)
	}
	x.txProd = (*uint32)(unsafe.Pointer(&x.txMem[off.Tx.Producer]))
	x.txCons = (*uint32)(unsafe.Pointer(&x.txMem[off.Tx.Consumer]))
	x.txDesc = unsafe.Slice((*unix.XDPDesc)(unsafe.Pointer(&x.txMem[off.Tx.Desc])), xdpFrames)
	x.cqProd = (*uint32)(unsafe.Pointer(&x.cqMem[off.Cr.Producer]))
	x.cqCons = (*uint32)(unsafe.Pointer(&x.cqMem[off.Cr.Consumer]))
	// Since Linux 6.17 one sendto may send more than 32 descriptors:
	// one call per batch then. Older kernels refuse the option and keep
	// their 32.
	_ = unix.SetsockoptInt(fd, unix.SOL_XDP, xdpMaxTxSkbBudget, max(batchSize, xdpTxBudget))
	if err := unix.Bind(fd, &unix.SockaddrXDP{Flags: unix.XDP_COPY, Ifindex: uint32(t.ifindex), QueueID: 0}); err != nil {
		return nil, fmt.Errorf("AF_XDP bind to %s queue 0: %w", t.ifname, err)
	}
	return x, nil
}

func (x *xdpSender) kind() Generator { return GenXDP }

func (x *xdpSender) close() {
	if x.fd >= 0 {
		_ = unix.Close(x.fd) // send-only: nothing to flush
		x.fd = -1
	}
	for _, m := range [][]byte{x.txMem, x.cqMem, x.umem} {
		if m != nil {
			_ = unix.Munmap(m) // our own mappings: EINVAL only for a bad slice
		}
	}
	x.txMem, x.cqMem, x.umem = nil, nil, nil
}

// reap takes the completions the kernel has posted.
func (x *xdpSender) reap() {
	p := atomic.LoadUint32(x.cqProd)
	if p != x.completed {
		x.completed = p
		atomic.StoreUint32(x.cqCons, p)
	}
}

// kick has the kernel transmit what is in the TX ring, up to its TX
// budget per call. When a call makes no progress the driver is busy: a
// veth whose peer's ring is full stops its queue until the peer's NAPI
// has drained it, in a softirq that may have been handed to ksoftirqd,
// which a SCHED_FIFO sender spinning here would starve for good (seen:
// eight trials in a row that sent nothing). So it sleeps a little before
// trying again, and gives up after about a millisecond: what is left
// goes with the next kick.
func (x *xdpSender) kick() error {
	for stuck := 0; atomic.LoadUint32(x.txCons) != x.prod; {
		before := atomic.LoadUint32(x.txCons)
		// Raw: the call runs the veth peer's receive path inline and may
		// take long; the Go scheduler need not hand the P away for it.
		_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(x.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0, unix.EAGAIN, unix.EBUSY, unix.ENOBUFS, unix.EINTR:
		default:
			return fmt.Errorf("AF_XDP sendto: %w", e)
		}
		if atomic.LoadUint32(x.txCons) != before {
			stuck = 0
			continue
		}
		if stuck++; stuck > busyTries {
			return nil
		}
		emulator.ThreadSleep(busyWait)
	}
	return nil
}

// busyWait and busyTries: how long a sender whose driver is busy sleeps
// (long enough for a softirq to run, short against a 200 ms trial) and
// how many times before it leaves the frames for later.
const (
	busyWait  = 20 * time.Microsecond
	busyTries = 50
)

func (x *xdpSender) prepare(n, flow int) int {
	x.reap()
	if free := xdpFrames - int(x.prod-x.completed); free < n {
		// A failed kick shows in the next commit's kick; here it only
		// means fewer free slots.
		_ = x.kick()
		x.reap()
	}
	x.flow = flow
	x.pending = min(n, xdpFrames-int(x.prod-x.completed), len(x.payloads))
	return x.pending
}

func (x *xdpSender) payload(j int) []byte {
	off := int((x.prod+uint32(j))%xdpFrames) * xdpFrameSize
	f := x.umem[off : off+x.frameLen]
	copy(f, x.tmpl[x.flow%len(x.tmpl)])
	x.payloads[j] = f[rawHeaders:]
	return x.payloads[j]
}

func (x *xdpSender) commit(k int, ok func([]byte)) error {
	k = min(k, x.pending)
	for i := range k {
		slot := (x.prod + uint32(i)) % xdpFrames
		x.txDesc[slot] = unix.XDPDesc{Addr: uint64(slot) * xdpFrameSize, Len: uint32(x.frameLen)}
	}
	x.prod += uint32(k)
	atomic.StoreUint32(x.txProd, x.prod)
	err := x.kick()
	runtime.KeepAlive(x)
	for i := range k {
		ok(x.payloads[i])
	}
	x.pending = 0
	return err
}
