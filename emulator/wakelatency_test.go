package emulator

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
)

// fakeWakeLatency points the hold at a regular file, which takes the
// write as the device does; the file's size says whether a request was
// written, and the hold's state whether it is still open.
func fakeWakeLatency(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cpu_dma_latency")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	old := wakeLatency.path
	wakeLatency.path = p
	t.Cleanup(func() { wakeLatency.path = old })
	return p
}

func wakeHeld() bool {
	wakeLatency.mu.Lock()
	defer wakeLatency.mu.Unlock()
	return wakeLatency.file != nil
}

func TestHoldCPUWakeLatencyNests(t *testing.T) {
	p := fakeWakeLatency(t)
	t.Setenv(CPUIdleEnv, "")
	r1 := HoldCPUWakeLatency()
	r2 := HoldCPUWakeLatency()
	if !wakeHeld() {
		t.Fatal("no request held after two holds")
	}
	if b, _ := os.ReadFile(p); len(b) != 4 || binary.NativeEndian.Uint32(b) != 0 {
		t.Fatalf("request written = %v, want a 4-byte 0", b)
	}
	r1()
	r1() // a second call of the same release must not end the other hold
	if !wakeHeld() {
		t.Fatal("request ended while a hold remains")
	}
	r2()
	if wakeHeld() {
		t.Fatal("request still held after the last release")
	}
}

func TestHoldCPUWakeLatencyDeepOrMissing(t *testing.T) {
	p := fakeWakeLatency(t)
	t.Setenv(CPUIdleEnv, "deep")
	HoldCPUWakeLatency()()
	if b, _ := os.ReadFile(p); len(b) != 0 {
		t.Fatalf("HYMN_CPU_IDLE=deep wrote a request: %v", b)
	}
	// A missing device (a container without it) is no error.
	t.Setenv(CPUIdleEnv, "poll")
	wakeLatency.path = filepath.Join(t.TempDir(), "absent")
	release := HoldCPUWakeLatency()
	if wakeHeld() {
		t.Fatal("a hold on a missing device claims to be open")
	}
	release()
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
	deep, err := NewForwarder(a, b, ForwarderConfig{AtoB: DefaultConfig(), BtoA: DefaultConfig(), DeepIdle: true})
	if err != nil {
		t.Fatal(err)
	}
	deep.Start()
	got := readCPULatency(t)
	deep.Stop()
	if before != 0 && got != before {
		t.Fatalf("bound with DeepIdle = %d µs, want %d (untouched)", got, before)
	}
}
