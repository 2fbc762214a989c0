// Package stallwatch tells a timing test whether the machine stopped it.
//
// The shared VMs that run CI sometimes stop every thread for 20-50 ms.
// Such a stall is the machine's, not the code's, but it makes frames
// late, moves a mean and delays a timer past any bound that a punctual
// emulator meets. A Watcher is a thread that sleeps 1 ms at a time under
// SCHED_FIFO, the forwarders' class, so that what stops it stops them
// too (and not merely polling threads keeping a normal one waiting); each
// time it wakes more than Threshold late, it records the interval.
//
// A test then repeats a measurement during which the machine stalled, or
// excuses only the samples a recorded stall overlaps; a sample late with
// no stall beside it still fails. Nothing here ever excuses an early
// sample: a stall can only make things late.
package stallwatch
