package emulator

import (
	"runtime"
	"sync"
)

// The threads that forward frames (one per emulated link, or one per
// direction: see Forwarder; one per cable of the simulated SR-IOV NIC)
// wait in system calls under SCHED_FIFO. Two things keep them punctual,
// and both go with how many such threads run, so both are kept here,
// under one lock:
//
//   - a P of its own for each. A forwarder's long sleep in ppoll (a short
//     one is a raw system call: afpacket.Port.Wait) hands its P back to
//     the Go scheduler; on wake-up it needs one again, and if every P is
//     held by a goroutine whose thread the kernel has preempted (a busy
//     machine), the forwarder would wait for that thread however high its
//     own priority. Extra Ps cost nothing while idle.
//   - while any runs, the CPU wake-up latency bound of 0 (wakelatency.go),
//     so that the CPU a frame wakes one on is polling, not halted.
var procs struct {
	mu          sync.Mutex
	threads     int
	releaseWake func()
}

// AddProcs counts n more (or, negative, n fewer) forwarding threads.
// Other packages that run such threads (the simulated SR-IOV NIC) call it
// so that every change of GOMAXPROCS goes through one lock and none is
// lost.
func AddProcs(n int) { addProcs(n) }

func addProcs(n int) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	runtime.GOMAXPROCS(max(1, runtime.GOMAXPROCS(0)+n))
	procs.threads += n
	switch {
	case procs.threads > 0 && procs.releaseWake == nil:
		procs.releaseWake = holdCPUWakeLatency()
	case procs.threads <= 0 && procs.releaseWake != nil:
		procs.releaseWake()
		procs.releaseWake = nil
	}
}
