package dpdk

import "time"

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
	// ExtraArgs are appended to the EAL arguments.
	ExtraArgs []string
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

func (o *Options) defaults() {
	if o.MaxFrame <= 0 {
		o.MaxFrame = 1522
	}
	if o.RxDesc <= 0 {
		o.RxDesc = 1024
	}
	if o.TxDesc <= 0 {
		o.TxDesc = 1024
	}
	if o.Burst <= 0 {
		o.Burst = 32
	}
	if o.IdleSleep > 0 {
		if o.DeepIdleSleep <= 0 {
			o.DeepIdleSleep = max(time.Millisecond, o.IdleSleep)
		}
		if o.DeepIdleAfter <= 0 {
			o.DeepIdleAfter = 10 * time.Millisecond
		}
	}
}
