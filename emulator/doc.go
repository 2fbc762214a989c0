// Package emulator is hymn's DPDS-style link emulator engine: the pure,
// clock-injected pipeline that decides, for each packet of one link
// direction, when it leaves or why it is dropped. It does no packet I/O;
// ports (AF_PACKET, DPDK) feed it references to buffers they own, in
// batches of up to MaxBatch, with timestamps from their clock, and send
// what Release returns. The same pipeline, driven by a virtual clock,
// is the simulation mode (Simulate) that reproduces the DPDS paper.
//
// Per packet the stages are, as in the paper: delayer (adaptive delay
// correlation D_i = a·D_(i−1) + (1−a)·C_i with a = 2^(−1/(t_h·R)) and the
// packet rate R measured over intervals of T_min = 10 ms) → limiter
// (token-bucket policer at arrival; leaky-bucket spacer with a fill limit
// on the delayed times) → dropper (Bernoulli, Gilbert–Elliott, NetEm's
// 4-state model) → transmission time → buffer (FIFO ring, or, when
// reordering is allowed, a priority queue ordered by departure time then
// arrival order). The priority queue is a calendar queue (timing wheel of
// 1 µs buckets, sorted as they come due, with a 4-ary min-heap for packets
// beyond its 67 ms horizon): it releases exactly the order of the spec's
// min-heap keyed by (t_tx, seq), but with 100 000 packets queued it costs
// a fraction of a heap's cache misses.
//
// Choices where the paper is silent (see docs/emulator-spec.md, marked [C]):
//   - Time is int64 ns; D and R are float64. Jitter is always a standard
//     deviation, also for uniform (NetEm uses a half-width).
//   - Before the first rate interval closes, and always with
//     TimeBasedWeight, a comes from the real inter-arrival gap (an exact
//     Ornstein–Uhlenbeck step); the first packet starts at D = μ.
//   - D is never clamped; the applied delay is max(D, 0).
//   - The spacer schedules on delayed times and returns the start of
//     serialisation; a lost packet still uses its slot. Its limit of 0
//     means "no byte limit" (NetEm's `rate`); `space RATE` defaults to 1 MiB.
//   - A packet the buffer cannot take is dropped before the spacer, so it
//     books no time (otherwise a flood into a small buffer would keep the
//     link blocked long after it ends). A packet lost on the wire holds its
//     buffer place until its slot starts, so the time booked for lost
//     packets is bounded by the buffer too: after any overload the link
//     drains within Buffer frame times.
//   - The policer bucket starts full; default depth 32 768 B.
//   - With the spacer on, the FIFO ring is used even if Reorder is set,
//     because spacing already yields FIFO order.
//   - Loss decisions use the Gilbert–Elliott state at the start of the step
//     (NetEm's order); omitted parameters take iproute2's defaults.
//
// The text form (Parse, Config.String) accepts NetEm's grammar where it
// maps and hymn's keys; NetEm's correlation percentages are rejected with
// an explanation. Validate refuses non-finite and negative values and
// magnitudes that are almost surely mistakes: delay, jitter, half-life and
// rate-interval above MaxTime (1 h), a buffer whose worst-case memory
// (MemoryEstimate) exceeds a quarter of the machine's RAM; the key
// allow-large (link parameter allow_large=1, Config.AllowLarge) lifts
// those, while the hard limits (HardMaxTime, MaxFrameLimit = 64 KiB,
// MaxBufferPackets, MaxRate) stay.
//
// A Forwarder that knows its link's MTU (ForwarderConfig.MTU; links sets
// it) sizes its frame buffers for MTU + 18 bytes and makes that max-frame,
// so jumbo frames pass whole. DirectionStats.Accounting follows each frame
// from the receiving port to the sending one: offered = delivered + the
// drops of every stage, the ports' included + queued. An Emulator is owned by one goroutine; see Emulator.
package emulator

import "time"

// Clock is the time source a port injects; values are ns on a monotonic
// scale. The engine itself only ever receives times as arguments.
type Clock interface {
	Now() int64
}

// MonotonicClock reads Go's monotonic clock.
type MonotonicClock struct{ start time.Time }

// NewMonotonicClock starts a clock at 0 now.
func NewMonotonicClock() *MonotonicClock { return &MonotonicClock{start: time.Now()} }

// Now returns ns since the clock was created.
func (c *MonotonicClock) Now() int64 { return int64(time.Since(c.start)) }

// VirtualClock is advanced by hand; the simulator and tests use it.
type VirtualClock struct{ T int64 }

// Now returns the current virtual time.
func (c *VirtualClock) Now() int64 { return c.T }

// Advance moves the clock forward by d ns.
func (c *VirtualClock) Advance(d int64) { c.T += d }
