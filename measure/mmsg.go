package measure

import (
	"encoding/binary"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsghdr is struct mmsghdr (linux/socket.h).
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

// batch is a set of messages for one sendmmsg or recvmmsg call, with
// their buffers allocated once.
type batch struct {
	msgs []mmsghdr
	iovs []unix.Iovec
	bufs [][]byte
	oobs [][]byte
}

func newBatch(n, size, oob int) *batch {
	b := &batch{msgs: make([]mmsghdr, n), iovs: make([]unix.Iovec, n), bufs: make([][]byte, n), oobs: make([][]byte, n)}
	for i := range n {
		b.bufs[i] = make([]byte, size)
		b.iovs[i].Base = &b.bufs[i][0]
		b.iovs[i].SetLen(size)
		b.msgs[i].hdr.Iov = &b.iovs[i]
		b.msgs[i].hdr.Iovlen = 1
		if oob > 0 {
			b.oobs[i] = make([]byte, oob)
		}
	}
	return b
}

// reset prepares the receive batch: buffer lengths and control space.
func (b *batch) resetRecv() {
	for i := range b.msgs {
		b.iovs[i].SetLen(len(b.bufs[i]))
		if b.oobs[i] != nil {
			b.msgs[i].hdr.Control = &b.oobs[i][0]
			b.msgs[i].hdr.SetControllen(len(b.oobs[i]))
		}
		b.msgs[i].hdr.Flags = 0
		b.msgs[i].len = 0
	}
}

// sendmmsg sends messages [from, from+n) of b.
func sendmmsg(fd int, b *batch, from, n int) (int, error) {
	r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.msgs[from])), uintptr(n), 0, 0, 0)
	runtime.KeepAlive(b)
	if e != 0 {
		return int(r), e
	}
	return int(r), nil
}

func recvmmsg(fd int, b *batch) (int, error) {
	r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.msgs[0])), uintptr(len(b.msgs)), unix.MSG_WAITFORONE, 0, 0)
	runtime.KeepAlive(b)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// controlInfo extracts, without allocating, the SO_TIMESTAMPNS receive
// time (ns, CLOCK_REALTIME; 0 when absent) and the SO_RXQ_OVFL count of
// packets the socket dropped so far (-1 when absent).
func controlInfo(oob []byte) (stamp int64, drops int64) {
	drops = -1
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(oob) {
			return
		}
		d := oob[unix.SizeofCmsghdr:l]
		if h.Level == unix.SOL_SOCKET {
			switch {
			case h.Type == unix.SO_TIMESTAMPNS && len(d) >= 16:
				stamp = int64(binary.NativeEndian.Uint64(d))*1e9 + int64(binary.NativeEndian.Uint64(d[8:]))
			case h.Type == unix.SO_RXQ_OVFL && len(d) >= 4:
				drops = int64(binary.NativeEndian.Uint32(d))
			}
		}
		adv := (l + 7) &^ 7
		if adv > len(oob) {
			return
		}
		oob = oob[adv:]
	}
	return
}

func clockNs(id int32) int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(id, &ts) // CLOCK_REALTIME and CLOCK_MONOTONIC always exist
	return ts.Nano()
}

func realtime() int64  { return clockNs(unix.CLOCK_REALTIME) }
func monotonic() int64 { return clockNs(unix.CLOCK_MONOTONIC) }

func lockThread() { runtime.LockOSThread() }

// receiverPriority is the receiver thread's SCHED_FIFO priority: one
// above the sender's and the forwarders' (emulator.RealTimeThread, 1).
// The receiver only runs when packets wait, and it must get them before
// its socket buffer fills: at equal priority, a sender that never sleeps
// (above some 300 kpps it has no gap to sleep in) on the receiver's core
// starves it for a whole trial, and the socket drops what the link
// delivered (UdpRcvbufErrors, lost under the link's name).
const receiverPriority = 2

// receiverThread locks the calling goroutine to its thread (discarded
// afterwards) and raises it to receiverPriority; without the privilege
// it stays as it was.
func receiverThread() {
	runtime.LockOSThread()
	param := struct{ prio int32 }{receiverPriority}
	// Without the privilege the receiver keeps its class: it still runs,
	// only without the guarantee.
	_, _, _ = unix.RawSyscall(unix.SYS_SCHED_SETSCHEDULER, 0, uintptr(unix.SCHED_FIFO), uintptr(unsafe.Pointer(&param)))
}
