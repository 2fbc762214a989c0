// Package measure runs the CIMininet/DPDS style experiment on a link or a
// path: numbered, timestamped UDP packets at a constant rate (CBR), as a
// Poisson process or in bursts, from one network namespace to another, with
// the one-way latency of every packet recorded in an HDR histogram
// (github.com/HdrHistogram/hdrhistogram-go, 3 significant digits, so every
// percentile up to 99.9999 is kept to 0.1 %), plus loss, reordering and
// duplicates. It also searches the highest rate with loss at most a
// tolerance (the RFC 2544 "zero-loss" throughput) and draws the paper's
// HDR diagram and a delay time series as SVG.
//
// One clock: sender and receiver run in one process on one machine. The
// sender writes CLOCK_REALTIME into each packet just before the batch that
// carries it is handed to the kernel (sendmmsg); the receiver takes the
// kernel's own receive timestamp (SO_TIMESTAMPNS, also CLOCK_REALTIME), so
// a receiver scheduled late measures nothing of its own lateness.
//
// The generator paces from a single OS thread (SCHED_FIFO when allowed):
// it sleeps with nanosleep while the next packet is more than a few
// microseconds away and otherwise sends every packet that is due in one
// sendmmsg call (up to Batch packets). At rates above what one wake-up per
// packet allows, packets therefore leave in short batches at their due
// times; each carries its real send time, so latency is never flattered.
//
// Frames: Frame is the Ethernet frame size with FCS, as in RFC 2544 and
// the CIMininet paper (64 B frame = 84 B on the wire with preamble and
// inter-frame gap). The UDP payload is Frame − 46 B (≥ 18 B: sequence
// number, send time, trial tag).
package measure
