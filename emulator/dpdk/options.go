package dpdk

import (
	"fmt"
	"strconv"
	"time"
)

// Config configures the EAL. The zero value runs without hugepages with
// 256 MB of memory, which is enough for tests and a few links.
type Config struct {
	// Hugepages uses hugepages mounted at HugeDir instead of --no-huge
	// (about twice the packet rate; see docs/platform.md).
	Hugepages bool
	HugeDir   string
	// MemoryMB is EAL's -m (default 256).
	MemoryMB int
	// Vdevs are created at start (--vdev NAME,ARGS); more can be added
	// later with CreateVdev.
	Vdevs []string
	// PCI are the PCI devices (VFs bound to vfio-pci, "0000:21:02.0",
	// optionally with PMD arguments after a comma) the EAL may probe: an
	// allow list (-a), so the machine's own NIC is never touched. Empty
	// means --no-pci: virtual devices only, and no PCI device can be
	// attached later in this process. Devices not listed can be attached
	// later with AttachPCI.
	PCI []string
	// ExtraArgs are appended to the EAL arguments.
	ExtraArgs []string
}

// logLevelErr is RTE_LOG_ERR: EAL prints errors only.
const logLevelErr = 4

// Args returns the EAL arguments (without the program name) Init passes
// for cfg on a machine with cpus CPUs. They are a pure function of cfg,
// so the hardware case (PCI allow list) is tested without hardware.
func (cfg Config) Args(cpus int) []string {
	mem := cfg.MemoryMB
	if mem <= 0 {
		mem = 256
	}
	args := []string{"-m", strconv.Itoa(mem), "--no-telemetry", "--file-prefix=" + FilePrefix(),
		// Every lcore may run on every CPU: EAL would otherwise pin the
		// calling thread, and with it part of the Go runtime, to CPU 0.
		fmt.Sprintf("--lcores=0@(0-%d)", max(cpus, 1)-1),
		"--log-level=" + strconv.Itoa(logLevelErr)}
	if len(cfg.PCI) == 0 {
		// The machine's own NIC must stay with the kernel.
		args = append(args, "--no-pci")
	}
	for _, d := range cfg.PCI {
		args = append(args, "-a", d)
	}
	if cfg.Hugepages {
		if cfg.HugeDir != "" {
			args = append(args, "--huge-dir="+cfg.HugeDir)
		}
	} else {
		args = append(args, "--no-huge")
	}
	for _, v := range cfg.Vdevs {
		args = append(args, "--vdev="+v)
	}
	return append(args, cfg.ExtraArgs...)
}

// Options size a port.
type Options struct {
	// MaxFrame is the largest frame the port carries (default 1518+4).
	MaxFrame int
	// RxDesc and TxDesc are the queue lengths (default 1024).
	RxDesc, TxDesc int
	// Burst is the largest batch moved per call (default 32).
	Burst int
	// IdleSleep makes Wait sleep this long instead of returning at once
	// (0: pure polling, DPDK's way, which costs a core per direction).
	IdleSleep time.Duration
	// DeepIdleSleep replaces IdleSleep once no frame has arrived for
	// DeepIdleAfter (defaults when IdleSleep is set: 1 ms after 10 ms).
	// A polled queue has no receive stamps, so a frame is stamped when it
	// is read: polling every IdleSleep keeps that exact while traffic
	// flows, but on a quiet link it is 50 000 wake-ups a second per
	// direction, most of a core. Deep idle costs a wake-up per
	// millisecond; only the first frame after a pause is read (and
	// delayed from) up to DeepIdleSleep late.
	DeepIdleSleep, DeepIdleAfter time.Duration
}
