package emulator

import (
	"fmt"
	"os"
)

// A thread that sleeps until a frame arrives is only as punctual as the
// CPU that wakes it. An idle CPU halts, and on a VM the halt is a VM exit
// that the host must undo before the thread runs: measured here, a
// zero-delay emulated link added 45-48 us (p50) to every sparse frame, of
// which the forwarding itself is a few microseconds. The kernel's PM QoS
// interface (/dev/cpu_dma_latency, what cyclictest and tuned's
// latency-performance profile use) lets a process ask that no CPU enter
// an idle state slower to leave than a bound; with a bound of 0 idle CPUs
// poll instead of halting, and the same link adds 7 us (p50). The request
// lasts as long as the file stays open, so it ends with the process
// whatever way the process ends: nothing to restore, nothing to leak.
//
// The cost is power: idle CPUs spin while a forwarder runs (on a VM, the
// host sees them busy). Setting HYMN_CPU_IDLE=deep leaves the CPUs' idle
// states alone. addProcs (procs.go) holds the request while any
// forwarding thread runs.

// CPUIdleEnv is the environment variable that chooses, for every
// emulated link of the process, whether idle CPUs poll while a forwarder
// runs ("poll", the default) or may sleep deeply ("deep").
const CPUIdleEnv = "HYMN_CPU_IDLE"

// CheckCPUIdleEnv reports a value of HYMN_CPU_IDLE that is neither
// "poll", "deep" nor empty, or of HYMN_FORWARDER_POLL that is not a
// PollMode; commands call it at start so a typo is a usage error rather
// than a silent default.
func CheckCPUIdleEnv() error {
	if _, err := deepIdleFromEnv(); err != nil {
		return err
	}
	_, err := ParsePollMode(os.Getenv(ForwarderPollEnv))
	return err
}

func deepIdleFromEnv() (bool, error) {
	switch v := os.Getenv(CPUIdleEnv); v {
	case "", "poll":
		return false, nil
	case "deep":
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q: use poll (idle CPUs poll while emulated links run, the default) or deep (let them sleep: less power, 40-50 us more latency on zero-delay links)", CPUIdleEnv, v)
	}
}

// wakeLatencyPath is the PM QoS device; tests point it elsewhere.
var wakeLatencyPath = "/dev/cpu_dma_latency"

// holdCPUWakeLatency asks the kernel to keep every CPU able to wake at
// once (a CPU wake-up latency bound of 0 µs) until the returned function
// is called. Where the device is missing or refused (no root, a container
// without it), or HYMN_CPU_IDLE says deep (or is malformed:
// CheckCPUIdleEnv reports that), it does nothing: the links still work,
// only less punctually.
func holdCPUWakeLatency() (release func()) {
	if deep, err := deepIdleFromEnv(); deep || err != nil {
		return func() {}
	}
	f := openWakeLatency(wakeLatencyPath)
	if f == nil {
		return func() {}
	}
	return func() { _ = f.Close() } // closing drops the bound; nothing to do if it fails
}

// openWakeLatency opens the PM QoS device and writes the bound, 0 µs as
// the binary s32 the device takes; nil if either fails.
func openWakeLatency(path string) *os.File {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil
	}
	if _, err := f.Write(make([]byte, 4)); err != nil {
		_ = f.Close()
		return nil
	}
	return f
}
