package emulator

import (
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Port is one side of an emulated link as the forwarder sees it: a network
// interface that receives and sends Ethernet frames in batches. The
// AF_PACKET implementation (package emulator/afpacket) moves whole batches
// through shared memory rings; the DPDK port (package emulator/dpdk, build tag
// dpdk) wraps rte_eth_rx_burst and rte_eth_tx_burst behind the same calls.
//
// A Port is used by at most two goroutines at a time: one receiving
// (RecvBatch, Wait) and one sending (SendBatch). Interrupt, Stats and Close
// may be called from anywhere.
type Port interface {
	// Name is the interface name, for messages and statistics.
	Name() string
	// RecvBatch copies up to len(bufs) waiting frames into bufs (in arrival
	// order), stores their lengths in lens and their arrival times in
	// stamps, and returns how many it copied. Stamps are the kernel's (or
	// NIC's) receive times in ns on CLOCK_REALTIME, or 0 when the port has
	// none; with them a forwarder that reads a frame late still delays it
	// from when it really arrived. RecvBatch never blocks; 0 means nothing
	// is waiting. A frame longer than its buffer is dropped and counted in
	// PortStats.RxTruncated, because a cut frame would be corrupt on the
	// other side.
	RecvBatch(bufs [][]byte, lens []int, stamps []int64) (int, error)
	// SendBatch transmits the frames with as few system calls as the
	// port allows (one for AF_PACKET) and returns how many it accepted;
	// the rest are counted in PortStats.TxDropped.
	SendBatch(frames [][]byte) (int, error)
	// Wait blocks until a frame may be waiting, the timeout passes or
	// Interrupt is called. A negative timeout waits without limit. A port
	// that cannot block (a polled DPDK queue) returns at once, and the
	// forwarder then sleeps by itself.
	Wait(timeout time.Duration) error
	// Interrupt ends a Wait in progress (or the next one) early.
	Interrupt()
	// Stats returns the port's own counters.
	Stats() PortStats
	// Close releases the port; pending frames are discarded.
	Close() error
}

// PairPort is a Port that can also wait for either of two ports in one
// call, so that one thread serves both directions of a link (see
// ForwarderConfig.ThreadPerDirection).
type PairPort interface {
	Port
	// PairsWith reports whether WaitWith can wait with other.
	PairsWith(other Port) bool
	// WaitWith is Wait on this port and other at once: it returns when
	// either may have a frame waiting, the timeout passes, or either is
	// interrupted.
	WaitWith(other Port, timeout time.Duration) error
}

// PortStats are the counters a port keeps below the emulator: frames that
// never reached the pipeline or never left the machine.
type PortStats struct {
	RxFrames, RxBytes uint64
	RxTruncated       uint64 // longer than the forwarder's buffers
	RxRingDrops       uint64 // dropped by the kernel because the RX ring was full
	TxFrames, TxBytes uint64
	TxDropped         uint64 // not sent: TX ring full or the kernel refused
	// TxFailed counts frames counted in TxFrames (handed to the kernel or
	// NIC) that were then lost there: the TX ring's malformed-frame
	// status, the interface's own tx_dropped (a veth whose peer's backlog
	// is full), a NIC's transmit errors.
	TxFailed uint64
	Wakeups  uint64 // Wait calls that slept
}

// ThreadSleep sleeps d in a raw nanosleep, for a forwarding thread (or a
// polled port's Wait) between two polls. Raw, the thread keeps its P (each
// forwarding thread has one of its own): through the runtime, every sleep
// longer than 20 µs has the scheduler hand the P away and back, which for
// an idle DPDK link cost ten times the sleeping itself. Keep d well below
// the runtime's 10 ms preemption period.
func ThreadSleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	_, _, _ = unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// RealTimeThread puts the calling goroutine's thread, which it locks and
// which must be discarded afterwards (the goroutine ends without
// UnlockOSThread, so the priority never reaches other goroutines), under
// SCHED_FIFO at priority 1, the forwarders' class: a thread carrying
// traffic that waits behind the traffic's own senders adds their time
// slices to every frame. Without the privilege it falls back to nice
// (0: leave it); it reports whether SCHED_FIFO took.
func RealTimeThread(nice int) bool {
	runtime.LockOSThread()
	param := struct{ prio int32 }{1}
	if _, _, e := unix.RawSyscall(unix.SYS_SCHED_SETSCHEDULER, 0, uintptr(unix.SCHED_FIFO), uintptr(unsafe.Pointer(&param))); e == 0 {
		return true
	}
	if nice != 0 {
		_ = unix.Setpriority(unix.PRIO_PROCESS, 0, nice) // without the privilege: only less punctual
	}
	return false
}
