package sriov

import (
	"bytes"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/emulator/afpacket"
	"golang.org/x/sys/unix"
)

// The simulated NIC's data path: one thread per cable serves both PFs'
// embedded switches and the cable between them.
//
// Every port (the two cable ends and each VF's representor) is an
// afpacket.Port: frames are read out of a TPACKET ring in shared memory
// and sent in batches, one sendto per batch and destination. The thread
// sleeps in one epoll_wait on all of its cable's ports, so an idle NIC
// holds one thread per cable, not one per VF.
//
// A frame sent onto a veth is delivered by the kernel during the sendto,
// up to the next packet socket: when the send onto the cable returns, the
// far PF's ring already holds the frame. So after each wake-up the thread
// sweeps all its rings (in user space, no system call) until none holds a
// frame, and a VF-to-VF frame crosses both switches and the cable without
// another wake-up or epoll_wait, and so does a line of nodes that route
// through VF pairs of the same cable (each hop's routing runs inside the
// send that delivers to it). Returning to epoll_wait after every hop
// instead cost 12 calls per frame on the 7-node line.
//
// The thread runs like the emulator's forwarding threads: locked to its
// OS thread, under SCHED_FIFO, with a P of its own (emulator.AddProcs).
// It waits in epoll_wait as a raw system call, keeping its P, never
// through the runtime. When the runtime takes the P of a goroutine in a
// system call (sysmon does after 10 ms, or at once when no P is idle), it
// holds the goroutine's status for a moment, and a thread that returns
// from the call meanwhile spins in exitsyscall until it is released; a
// real-time thread spinning there keeps an ordinary thread that would
// release it off its CPU. (perf on the 7-node line: the measure package's
// real-time receiver, which calls recvmmsg through the runtime, spent a
// quarter of its samples in that spin. With waits through the runtime
// the switch once stopped reading for 550 ms at 20 kpps while it used 80 %
// of a CPU.) A goroutine that keeps its P is instead preempted by a
// signal every 10 ms and then sleeps, never spins, until another thread
// hands the P back.
//
// The first design parked one goroutine per socket on Go's network poller
// and paid a system call and a scheduler wake-up per frame and hop: 2–3
// kpps without loss on the CIMininet line, 1.6–2.1 ms of request/response
// p99 − p50 over links with 5 ms of delay (docs/measure.md).
//
// Nothing ever blocks on a full queue. A full RX ring drops in the kernel
// (the switch fell behind), a full TX ring drops in SendBatch (the
// receiver did); both are counted (SimStats.RxOverrun, TxOverrun), as a
// NIC counts its overruns, and the next frame goes through as soon as
// there is room again, so the NIC recovers by itself from any overload.

const (
	// simBatch is how many frames are read from a ring at a time.
	simBatch = 16
	// simDrainBatches bounds the batches taken from one port before the
	// other readable ports get their turn.
	simDrainBatches = 4
)

// Ring sizes in frames. A representor's rings serve one VF; the cable's
// carry every VF of a PF. An RX ring is what absorbs the time the switch
// does not run: on a machine shared with other real-time threads (the
// emulator's, a traffic generator's) that was up to 10–45 ms at a time,
// against which 256 slots hold 13 ms of a VF at 20 kpps. So the VFs share
// a budget of simRxBudget bytes of RX ring, at least 256 and at most 2048
// slots each (16 VFs: 2048 slots, 4 MiB, as an emulator port has). A TX ring's slots come back during the
// sendto that sends them (the veth delivers at once), so a few batches'
// worth is enough.
const (
	simRxBudget                  = 64 << 20
	repRxMin, repRxMax           = 256, 2048
	repTxFrames                  = 64
	cableRxFrames, cableTxFrames = 2048, 256
)

// repRxFrames is the RX ring length of each of nVFs representors.
func repRxFrames(nVFs, mtu int) int {
	return min(max(simRxBudget/afpacket.FrameSizeFor(mtu)/max(nVFs, 1), repRxMin), repRxMax)
}

// simPort is one port of the NIC's switches.
type simPort struct {
	port *afpacket.Port
	pf   *simPF
	vf   int      // the VF whose representor this is; -1: the PF's cable end
	far  *simPort // of a cable end: the other end
	out  [][]byte // frames for this port in the batch being forwarded
}

// simSwitch is the thread that forwards the frames of one cable.
type simSwitch struct {
	nic   *SimNIC
	ports []*simPort
	epfd  int
	evfd  int // written by stop: ends a wait
	stop  atomic.Bool
	done  chan struct{}
	err   error // why the loop ended, if not stopped

	bufs   [][]byte
	lens   []int
	stamps []int64
	tagged [][]byte // VF frames with the port VLAN's tag added
	dirty  []*simPort
	events []unix.EpollEvent
}

// newSimSwitch prepares the thread of the cable between PFs a and b; start
// runs it.
func newSimSwitch(nic *SimNIC, a, b *simPF) (_ *simSwitch, err error) {
	w := &simSwitch{nic: nic, epfd: -1, evfd: -1, done: make(chan struct{})}
	defer func() {
		if err != nil {
			w.closeFDs()
		}
	}()
	a.cable.far, b.cable.far = b.cable, a.cable
	for _, pf := range []*simPF{a, b} {
		w.ports = append(w.ports, pf.cable)
		w.ports = append(w.ports, pf.vfs...)
	}
	if w.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	if w.evfd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	add := func(fd int) error {
		return unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)})
	}
	if err := add(w.evfd); err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	for _, p := range w.ports {
		if err := add(p.port.PollFD()); err != nil {
			return nil, fmt.Errorf("epoll %s: %w", p.port.Name(), err)
		}
	}
	// One event is enough: it only ends the wait, and then every ring is
	// swept.
	w.events = make([]unix.EpollEvent, 1)
	size := nic.frameBuf()
	for range simBatch {
		w.bufs = append(w.bufs, make([]byte, size))
		w.tagged = append(w.tagged, make([]byte, size+4))
	}
	w.lens, w.stamps = make([]int, simBatch), make([]int64, simBatch)
	return w, nil
}

func (w *simSwitch) start() {
	emulator.AddProcs(1) // a P of its own, and idle CPUs polling: each hop is a wake-up of this thread
	go w.run()
}

// close stops the thread, waits for it and releases its descriptors (not
// the ports, which the NIC closes). It returns why the thread had ended
// on its own, if it had.
func (w *simSwitch) close() error {
	w.stop.Store(true)
	one := [8]byte{1}
	// An eventfd write fails only when its counter would overflow, which
	// one wake-up cannot do.
	_, _ = unix.Write(w.evfd, one[:])
	<-w.done
	emulator.AddProcs(-1)
	w.closeFDs()
	return w.err
}

func (w *simSwitch) closeFDs() {
	for _, fd := range []*int{&w.epfd, &w.evfd} {
		if *fd >= 0 {
			_ = unix.Close(*fd) // an epoll or eventfd: nothing to flush
			*fd = -1
		}
	}
}

func (w *simSwitch) run() {
	defer close(w.done)
	// Locked and never unlocked: the thread's priority dies with it.
	runtime.LockOSThread()
	// Under SCHED_FIFO like the forwarders: a switch that waits for a
	// CPU behind the traffic's own senders adds their time slices to
	// every frame.
	emulator.RealTimeThread(-10)
	for !w.stop.Load() {
		_, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(w.epfd), uintptr(unsafe.Pointer(&w.events[0])),
			uintptr(len(w.events)), ^uintptr(0), 0, 0) // timeout -1: until a frame or stop
		if e != 0 && e != unix.EINTR {
			if !w.stop.Load() {
				w.err = fmt.Errorf("simulated SR-IOV NIC: epoll_wait: %w", e)
			}
			return
		}
		// EINTR is a signal, usually the runtime asking this goroutine to
		// stop (a garbage collection's stop-the-world waits for it). A raw
		// system call is no preemption point: going straight back into the
		// wait held up the whole process until a frame came (measured: a
		// network with an idle NIC hung in its first GC). The sweep below
		// calls functions, whose prologues are.
		//
		// Which ports are ready does not matter: the rings are swept until
		// none holds a frame, without asking epoll again:
		// what a sweep sends lands in rings of the same switch during the
		// send, and a ring is read in user space, so between two waits a
		// frame costs no system call but the sends that carry it on.
		//
		// The stop flag is checked between sweeps: a broadcast storm never
		// lets the rings run dry. One happens at every teardown: the VFs'
		// settings are restored (VLAN 0) while they are still bridge ports
		// of switch nodes, which then loop through the cable, and Close
		// waited for it to end (TestSRIOVLinearPingAll hung 2 in 14 runs).
		for !w.stop.Load() && w.sweep() > 0 {
		}
	}
}

// sweep forwards what every port's ring holds (up to simDrainBatches
// batches each, so no port starves the others) and returns how many
// frames it read.
func (w *simSwitch) sweep() int {
	total := 0
	for _, p := range w.ports {
		total += w.drain(p)
	}
	return total
}

// drain forwards up to simDrainBatches batches from one port's ring and
// returns how many frames it read.
//
// What a VF's batch put on the cable is in the far end's ring when the
// send returns, and it is carried on to the far VFs at once, before any
// more is taken from a VF. The cable carries the frames of every VF of a
// PF, and on a line of routers every frame crosses it once per hop: left
// to its turn in the sweep, the far end's ring was the one that
// overflowed under overload, dropping frames that had already crossed
// several hops, and the line carried 7 kpps when offered 100 kpps and
// nearly nothing at 200 kpps, against 19 kpps at the highest rate without
// loss. This way frames are dropped only where they enter, in a VF's
// ring, and an overloaded NIC still carries what it can.
func (w *simSwitch) drain(p *simPort) int {
	total := 0
	for range simDrainBatches {
		n, err := p.port.RecvBatch(w.bufs, w.lens, w.stamps)
		if err != nil || n == 0 {
			break
		}
		if p.vf >= 0 {
			w.fromVF(p, n)
			w.flush()
			w.drainCable(p.pf.cable.far)
		} else {
			w.fromCable(p, n)
			w.flush()
		}
		total += n
		if n < len(w.bufs) {
			break
		}
	}
	return total
}

// drainCable forwards everything a cable end's ring holds.
func (w *simSwitch) drainCable(c *simPort) {
	for {
		n, err := c.port.RecvBatch(w.bufs, w.lens, w.stamps)
		if err != nil || n == 0 {
			return
		}
		w.fromCable(c, n)
		w.flush()
	}
}

// queue adds frame f to what port d sends at the end of the batch.
func (w *simSwitch) queue(d *simPort, f []byte) {
	if len(d.out) == 0 {
		w.dirty = append(w.dirty, d)
	}
	d.out = append(d.out, f)
}

// flush sends every queued frame, one SendBatch per destination. A frame
// the destination's TX ring has no room for is dropped and counted by the
// port: a full queue never stops the switch. A failed send is a frame lost
// on the wire (a VF going away), not an error of the NIC.
func (w *simSwitch) flush() {
	for _, d := range w.dirty {
		_, _ = d.port.SendBatch(d.out) // see above: a lost frame, counted by the port
		clear(d.out)
		d.out = d.out[:0]
	}
	w.dirty = w.dirty[:0]
}

// fromVF is the VF's transmit path: the PF's embedded switch applies the
// VF's settings and puts the frames on the cable tagged with the port
// VLAN.
func (w *simSwitch) fromVF(p *simPort, n int) {
	st := w.nic.table.Load().state[p.pf.name][p.vf]
	if st.LinkState == LinkDisable {
		w.nic.dropDisabled.Add(uint64(n))
		return
	}
	var tagged, dropTagged, dropSpoof uint64
	for i := range n {
		f := w.bufs[i][:w.lens[i]]
		switch {
		case st.SpoofChk && hasMAC(st.MAC) && !bytes.Equal(f[6:12], st.MAC):
			dropSpoof++
			continue
		case st.VLAN == 0:
		case isTagged(f):
			// A VF behind a port VLAN may not choose its own.
			dropTagged++
			continue
		default:
			f = tag(w.tagged[i], f, st.VLAN, st.QoS)
			tagged++
		}
		w.queue(p.pf.cable, f)
	}
	addNonZero(&w.nic.tagged, tagged)
	addNonZero(&w.nic.dropTagged, dropTagged)
	addNonZero(&w.nic.dropSpoof, dropSpoof)
}

// fromCable is the PF's receive path: a tagged frame goes, untagged, to
// the VFs whose port VLAN is its VLAN; an untagged one to the VFs without
// a port VLAN; anything else is dropped.
func (w *simSwitch) fromCable(p *simPort, n int) {
	byVLAN := w.nic.table.Load().byVLAN[p.pf.name]
	var untagged, dropVLAN uint64
	for i := range n {
		f := w.bufs[i][:w.lens[i]]
		vlan := 0
		if isTagged(f) {
			vlan = int(f[14]&0x0f)<<8 | int(f[15])
			f = untag(f)
		}
		targets := byVLAN[vlan]
		if len(targets) == 0 {
			dropVLAN++
			continue
		}
		for _, v := range targets {
			w.queue(p.pf.vfs[v], f)
		}
		untagged += uint64(len(targets))
	}
	addNonZero(&w.nic.untagged, untagged)
	addNonZero(&w.nic.dropVLAN, dropVLAN)
}

// addNonZero adds a batch's count, sparing the shared cache line when
// there is nothing to add.
func addNonZero(c *atomic.Uint64, n uint64) {
	if n > 0 {
		c.Add(n)
	}
}
