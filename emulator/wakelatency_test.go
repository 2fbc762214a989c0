package emulator

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
)

// fakeWakeLatency points the request at a regular file, which takes the
// write as the device does: its size says whether a request was written,
// and whether this process holds it open whether it is still held.
func fakeWakeLatency(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cpu_dma_latency")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	old := wakeLatencyPath
	wakeLatencyPath = p
	t.Cleanup(func() { wakeLatencyPath = old })
	return p
}

// wakeHeld reports whether this process has path open.
func wakeHeld(t *testing.T, path string) bool {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if target, _ := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); target == path {
			return true
		}
	}
	return false
}

// The request is held while any forwarding thread runs, from the first
// to the last.
func TestWakeLatencyFollowsForwardingThreads(t *testing.T) {
	p := fakeWakeLatency(t)
	t.Setenv(CPUIdleEnv, "")
	addProcs(2) // a forwarder
	addProcs(1) // a simulated NIC's cable
	if !wakeHeld(t, p) {
		t.Fatal("no request held with three forwarding threads")
	}
	if b, _ := os.ReadFile(p); len(b) != 4 || binary.NativeEndian.Uint32(b) != 0 {
		t.Fatalf("request written = %v, want a 4-byte 0", b)
	}
	addProcs(-2)
	if !wakeHeld(t, p) {
		t.Fatal("request ended while a forwarding thread remains")
	}
	addProcs(-1)
	if wakeHeld(t, p) {
		t.Fatal("request still held after the last thread")
	}
}

func TestWakeLatencyDeepOrMissing(t *testing.T) {
	p := fakeWakeLatency(t)
	t.Setenv(CPUIdleEnv, "deep")
	addProcs(1)
	addProcs(-1)
	if b, _ := os.ReadFile(p); len(b) != 0 {
		t.Fatalf("HYMN_CPU_IDLE=deep wrote a request: %v", b)
	}
	// A missing device (a container without it) is no error.
	t.Setenv(CPUIdleEnv, "poll")
	wakeLatencyPath = filepath.Join(t.TempDir(), "absent")
	addProcs(1)
	if wakeHeld(t, wakeLatencyPath) {
		t.Fatal("a hold on a missing device claims to be open")
	}
	addProcs(-1)
}

func TestCheckCPUIdleEnv(t *testing.T) {
	for _, v := range []string{"", "poll", "deep"} {
		t.Setenv(CPUIdleEnv, v)
		if err := CheckCPUIdleEnv(); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	for _, v := range []string{"Deep", "0", "poll ", "deep\n", strings.Repeat("x", 5000)} {
		t.Setenv(CPUIdleEnv, v)
		err := CheckCPUIdleEnv()
		if err == nil || !strings.Contains(err.Error(), CPUIdleEnv) {
			t.Errorf("%q: error %v, want one naming %s", v, err, CPUIdleEnv)
		}
	}
}

// readCPULatency reads the kernel's current bound (µs). Opening the
// device adds a request at the default, which does not lower it.
func readCPULatency(t *testing.T) int32 {
	t.Helper()
	b, err := os.ReadFile("/dev/cpu_dma_latency")
	if err != nil || len(b) != 4 {
		t.Fatalf("reading /dev/cpu_dma_latency: %v (%d bytes)", err, len(b))
	}
	return int32(binary.NativeEndian.Uint32(b))
}

// A running forwarder holds the machine's CPU wake-up latency at 0 and
// gives it back when it stops.
func TestForwarderHoldsCPUWakeLatency(t *testing.T) {
	testenv.Root(t)
	if _, err := os.Stat("/dev/cpu_dma_latency"); err != nil {
		testenv.Skip(t, "no /dev/cpu_dma_latency (the kernel's PM QoS device)")
	}
	t.Setenv(CPUIdleEnv, "")
	before := readCPULatency(t)
	a, b := newMemPort("a"), newMemPort("b")
	f, err := NewForwarder(a, b, ForwarderConfig{AtoB: DefaultConfig(), BtoA: DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	if got := readCPULatency(t); got != 0 {
		f.Stop()
		t.Fatalf("CPU wake-up latency bound while a forwarder runs = %d µs, want 0", got)
	}
	f.Stop()
	if after := readCPULatency(t); before != 0 && after != before {
		t.Fatalf("bound after the forwarder stopped = %d µs, want %d as before", after, before)
	}
	t.Setenv(CPUIdleEnv, "deep")
	deep, err := NewForwarder(a, b, ForwarderConfig{AtoB: DefaultConfig(), BtoA: DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	deep.Start()
	got := readCPULatency(t)
	deep.Stop()
	if before != 0 && got != before {
		t.Fatalf("bound with HYMN_CPU_IDLE=deep = %d µs, want %d (untouched)", got, before)
	}
}
