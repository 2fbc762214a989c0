package emulator

// AddProcs gives n more (or, negative, n fewer) threads that wait in raw
// system calls and forward frames a P of their own, as each forwarding
// thread has (see addProcs). Other packages that run such threads (the
// simulated SR-IOV NIC) call it so that every change of GOMAXPROCS goes
// through one lock and none is lost.
func AddProcs(n int) { addProcs(n) }
