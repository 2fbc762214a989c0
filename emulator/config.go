package emulator

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Distribution selects the law of the delay innovations C (docs/emulator-spec.md §3.4).
type Distribution uint8

// The zero value is Normal because the spec's default distribution is
// normal, and a zero Config should not silently become something else.
const (
	Normal Distribution = iota
	Deterministic
	Uniform
	LogNormal
	Gamma
	numDistributions
)

var distributionNames = [numDistributions]string{"normal", "deterministic", "uniform", "lognormal", "gamma"}

func (d Distribution) String() string {
	if d < numDistributions {
		return distributionNames[d]
	}
	return fmt.Sprintf("Distribution(%d)", uint8(d))
}

// ParseDistribution accepts the canonical names and a few common aliases.
func ParseDistribution(s string) (Distribution, error) {
	switch s {
	case "normal", "gaussian":
		return Normal, nil
	case "deterministic", "det", "constant":
		return Deterministic, nil
	case "uniform":
		return Uniform, nil
	case "lognormal", "log-normal":
		return LogNormal, nil
	case "gamma":
		return Gamma, nil
	}
	return 0, &ConfigError{Field: "distribution", Msg: fmt.Sprintf("unknown distribution %q (want deterministic, uniform, normal, lognormal or gamma)", s)}
}

// LossModel selects the dropper (docs/emulator-spec.md §6).
type LossModel uint8

const (
	NoLoss LossModel = iota
	RandomLoss
	GilbertElliott
	FourState
)

// LossConfig holds the parameters of the loss model. Probabilities are in
// [0, 1]. Field names follow NetEm so that tc users recognise them.
type LossConfig struct {
	Model LossModel
	// RandomLoss: the independent drop probability.
	Prob float64
	// GilbertElliott: P = P(Good→Bad), R = P(Bad→Good), OneMinusH = loss
	// probability in Bad, OneMinusK = loss probability in Good.
	P, R, OneMinusH, OneMinusK float64
	// FourState: NetEm's GI model transition probabilities.
	P13, P31, P32, P23, P14 float64
}

// PolicerConfig is a token bucket at arrival time (docs/emulator-spec.md §5.1).
type PolicerConfig struct {
	Enabled bool
	Rate    uint64 // bit/s
	Burst   uint64 // bucket depth in bytes
}

// SpacerConfig is a leaky bucket on the delayed times (docs/emulator-spec.md §5.2).
type SpacerConfig struct {
	Enabled bool
	Rate    uint64 // bit/s
	// Limit is the most data (bytes) that may be scheduled but not yet
	// serialised; 0 means no byte limit (NetEm's `rate` has none), so only
	// the buffer capacity bounds the backlog.
	Limit uint64
}

// Config is the full, validated description of one direction of a link.
// Start from DefaultConfig: the zero value means "uncorrelated, 1-packet
// buffer, no overhead", which is valid Go but rarely what anyone wants.
type Config struct {
	Delay        time.Duration // mean delay μ
	Jitter       time.Duration // standard deviation σ (never a half-width, unlike NetEm)
	Distribution Distribution
	HalfLife     time.Duration // t_h; 0 = uncorrelated delays
	RateInterval time.Duration // T_min of the rate estimator
	// TimeBasedWeight computes a from the inter-arrival gap of every packet
	// instead of the per-interval rate. It removes the on/off artefact of
	// docs/emulator-spec.md §3.3 at the cost of one exp per burst; it is a deviation from DPDS.
	TimeBasedWeight bool
	Reorder         bool // heap (reordering allowed) instead of FIFO
	Police          PolicerConfig
	Space           SpacerConfig
	Trace           TraceConfig // a delivery trace as the rate (trace.go)
	Loss            LossConfig
	// ECN marks an ECN-capable packet Congestion Experienced instead of
	// dropping it when the loss model says drop (NetEm's `loss ... ecn`).
	ECN bool
	// Duplicate is the probability that a packet is sent twice; the
	// twin is impaired on its own (NetEm's duplicate).
	Duplicate float64
	// Corrupt is the probability that one random bit of a packet is
	// flipped (NetEm's corrupt).
	Corrupt float64
	// Slot releases packets in slots (NetEm's slot).
	Slot     SlotConfig
	Overhead int // bytes added to each frame for rate calculations
	MaxFrame int // largest frame (bytes, without overhead) the link carries
	Buffer   int // buffer capacity in wire packets (a GSO super-frame counts as its segments)
	Seed     uint64
	SeedSet  bool // false: New picks a random seed and reports it in Stats
	// AllowLarge lifts the limits that protect against typing mistakes
	// (times above MaxTime, a buffer whose memory exceeds a quarter of the
	// machine's): text key `allow-large`, link parameter allow_large=1.
	// The hard limits (HardMaxTime, MaxFrameLimit, MaxBufferPackets) stay.
	AllowLarge bool
}

// Defaults from docs/emulator-spec.md §2, §5.1 and §7.
const (
	DefaultHalfLife     = 21 * time.Millisecond
	DefaultRateInterval = 10 * time.Millisecond
	DefaultOverhead     = 24
	DefaultMaxFrame     = 1518
	DefaultBuffer       = 262144
	DefaultPoliceBurst  = 32768
	// MaxBatch is the DPDS batch size; callers may pass more, but ports
	// should use it to size their arrays.
	MaxBatch = 16
)

// Limits of the parameters (see Validate). The soft ones catch typing
// mistakes (`jitter 1000000000s`, a buffer that would take the machine's
// memory) and are lifted by Config.AllowLarge; the hard ones keep the
// arithmetic in range (int64 ns, frame buffers a port can hold).
const (
	// MaxTime bounds delay, jitter, half-life and rate-interval unless
	// AllowLarge is set.
	MaxTime = time.Hour
	// HardMaxTime bounds them always: 10⁶ s (11.6 days) keeps every
	// departure time, even 9000 σ out, inside int64 nanoseconds.
	HardMaxTime = 1e6 * time.Second
	// MaxFrameLimit is the largest max-frame: 64 KiB, the largest IP
	// packet plus its Ethernet header, and the largest slot of an
	// AF_PACKET ring block. A link's MTU may bound it lower (forwarder).
	MaxFrameLimit = 1 << 16
	// MaxBufferPackets bounds the buffer capacity always.
	MaxBufferPackets = 1 << 28
	// MaxRate bounds the policer and spacer rates (1 Pbit/s).
	MaxRate = 1e15
	// MaxOverhead bounds the per-packet overhead.
	MaxOverhead = 4096
	// PacketRecordBytes is the memory one queued packet takes in the
	// emulator (its Packet record plus a lost packet's slot time), for the
	// memory estimate of a buffer.
	PacketRecordBytes = 56
	// FrameBufferBytes bounds the frame buffers (slots) a forwarder keeps
	// per direction by default (ForwarderConfig.MaxBuffered).
	FrameBufferBytes = 128 << 20
)

// SlotSize is the frame buffer size a forwarder uses for frames of up to
// maxFrame bytes: a power of two ≥ 2 KiB holding the frame, a VLAN tag and
// room for the port's header.
func SlotSize(maxFrame int) int {
	slot := 2048
	for slot < maxFrame+4+64 {
		slot <<= 1
	}
	return slot
}

// MemoryEstimate is the most memory (bytes) one direction of a link with
// this configuration can take in a forwarder with default settings: a
// record per buffered packet plus the frame buffers, which are bounded
// by FrameBufferBytes.
func (c *Config) MemoryEstimate() uint64 {
	slot := uint64(SlotSize(c.MaxFrame))
	frames := min(uint64(max(c.Buffer, 0))+2*MaxBatch, max(FrameBufferBytes/slot, 2*MaxBatch))
	return uint64(max(c.Buffer, 0))*PacketRecordBytes + frames*slot
}

// memoryBudget is the most a direction may take without AllowLarge: a
// quarter of the machine's physical memory. Tests replace it.
var memoryBudget = sync.OnceValue(func() uint64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil || si.Totalram == 0 {
		return 1 << 30 // unknown: assume a 4 GiB machine
	}
	return uint64(si.Totalram) * uint64(max(si.Unit, 1)) / 4
})

func fmtBytes(b uint64) string {
	switch {
	case b >= 1<<30:
		return strconv.FormatFloat(float64(b)/(1<<30), 'f', 1, 64) + " GiB"
	case b >= 1<<20:
		return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatUint(b, 10) + " B"
}

// DefaultConfig returns a link with no impairment and the spec's defaults.
func DefaultConfig() Config {
	return Config{
		HalfLife:     DefaultHalfLife,
		RateInterval: DefaultRateInterval,
		Overhead:     DefaultOverhead,
		MaxFrame:     DefaultMaxFrame,
		Buffer:       DefaultBuffer,
		Police:       PolicerConfig{Burst: DefaultPoliceBurst},
	}
}

// ConfigError names the offending field so that a user can fix the
// command line without guessing.
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return "emulator: " + e.Field + ": " + e.Msg }

// Is lets callers test errors.Is(err, ErrInvalidConfig).
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

func fieldErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

func badProb(p float64) bool { return math.IsNaN(p) || p < 0 || p > 1 }

// checkTime enforces the time limits: never negative, at most MaxTime
// unless AllowLarge, and never beyond HardMaxTime.
func (c *Config) checkTime(field string, d time.Duration) error {
	switch {
	case d < 0:
		return fieldErr(field, "must not be negative (got %v)", d)
	case d > HardMaxTime:
		return fieldErr(field, "%s exceeds the hard limit of %s (11.6 days)", fmtDur(d), fmtDur(HardMaxTime))
	case d > MaxTime && !c.AllowLarge:
		return fieldErr(field, "%s exceeds the limit of %s (1 hour); add allow-large (allow_large=1 on a link) to go up to %s", fmtDur(d), fmtDur(MaxTime), fmtDur(HardMaxTime))
	}
	return nil
}

// Validate checks every field and returns the first problem found.
func (c *Config) Validate() error {
	if err := c.checkTime("delay", c.Delay); err != nil {
		return err
	}
	if err := c.checkTime("jitter", c.Jitter); err != nil {
		return err
	}
	if c.Distribution >= numDistributions {
		return fieldErr("distribution", "unknown distribution %d", uint8(c.Distribution))
	}
	if c.Distribution == Deterministic && c.Jitter != 0 {
		return fieldErr("jitter", "must be 0 with distribution deterministic (got %v); choose uniform, normal, lognormal or gamma", c.Jitter)
	}
	if (c.Distribution == LogNormal || c.Distribution == Gamma) && c.Delay <= 0 {
		return fieldErr("delay", "distribution %s needs a mean delay > 0", c.Distribution)
	}
	if err := c.checkTime("half-life", c.HalfLife); err != nil {
		return err
	}
	if c.RateInterval <= 0 {
		return fieldErr("rate-interval", "must be > 0 (got %v)", c.RateInterval)
	}
	if err := c.checkTime("rate-interval", c.RateInterval); err != nil {
		return err
	}
	if c.Overhead < 0 || c.Overhead > MaxOverhead {
		return fieldErr("overhead", "must be between 0 and %d bytes (got %d)", MaxOverhead, c.Overhead)
	}
	if c.MaxFrame < 1 || c.MaxFrame > MaxFrameLimit {
		return fieldErr("max-frame", "must be between 1 and %d bytes (got %d)", MaxFrameLimit, c.MaxFrame)
	}
	if c.Buffer < 1 || c.Buffer > MaxBufferPackets {
		return fieldErr("limit", "buffer capacity must be between 1 and %d packets (got %d)", MaxBufferPackets, c.Buffer)
	}
	if m, budget := c.MemoryEstimate(), memoryBudget(); m > budget && !c.AllowLarge {
		return fieldErr("limit", "%d packets of up to %d bytes need up to %s per direction (%d B per queued packet plus frame buffers), more than a quarter of this machine's memory (%s); lower the limit or add allow-large",
			c.Buffer, c.MaxFrame, fmtBytes(m), PacketRecordBytes, fmtBytes(budget))
	}
	if c.Police.Enabled && c.Police.Rate > MaxRate {
		return fieldErr("police rate", "%d bit/s exceeds the limit of %g bit/s", c.Police.Rate, float64(MaxRate))
	}
	if c.Space.Enabled && c.Space.Rate > MaxRate {
		return fieldErr("rate", "%d bit/s exceeds the limit of %g bit/s", c.Space.Rate, float64(MaxRate))
	}
	wire := uint64(c.MaxFrame + c.Overhead)
	if c.Police.Enabled {
		if c.Police.Rate == 0 {
			return fieldErr("police rate", "must be > 0")
		}
		if c.Police.Burst < wire {
			return fieldErr("police burst", "%d bytes is smaller than one frame on the wire (%d bytes = max-frame %d + overhead %d)", c.Police.Burst, wire, c.MaxFrame, c.Overhead)
		}
	}
	if c.Space.Enabled {
		if c.Space.Rate == 0 {
			return fieldErr("rate", "spacer rate must be > 0")
		}
		if c.Space.Limit != 0 && c.Space.Limit < wire {
			return fieldErr("space limit", "%d bytes is smaller than one frame on the wire (%d bytes)", c.Space.Limit, wire)
		}
	}
	if err := c.Trace.validate(c); err != nil {
		return err
	}
	if badProb(c.Duplicate) {
		return fieldErr("duplicate", "probability %v%% is outside 0..100%%", c.Duplicate*100)
	}
	if badProb(c.Corrupt) {
		return fieldErr("corrupt", "probability %v%% is outside 0..100%%", c.Corrupt*100)
	}
	if s := c.Slot; s.Enabled {
		if err := c.checkTime("slot", s.Min); err != nil {
			return err
		}
		if err := c.checkTime("slot", s.Max); err != nil {
			return err
		}
		if s.Max < s.Min {
			return fieldErr("slot", "the largest gap %s is below the smallest %s", fmtDur(s.Max), fmtDur(s.Min))
		}
		if s.Packets < 0 || s.Bytes < 0 {
			return fieldErr("slot", "packets and bytes must not be negative (0: no limit)")
		}
	} else if s != (SlotConfig{}) {
		return fieldErr("slot", "gaps and limits need Enabled")
	}
	l := &c.Loss
	switch l.Model {
	case NoLoss:
	case RandomLoss:
		if badProb(l.Prob) {
			return fieldErr("loss", "probability %v%% is outside 0..100%%", l.Prob*100)
		}
	case GilbertElliott:
		for _, f := range []struct {
			name string
			v    float64
		}{{"loss gemodel p", l.P}, {"loss gemodel r", l.R}, {"loss gemodel 1-h", l.OneMinusH}, {"loss gemodel 1-k", l.OneMinusK}} {
			if badProb(f.v) {
				return fieldErr(f.name, "probability %v%% is outside 0..100%%", f.v*100)
			}
		}
	case FourState:
		for _, f := range []struct {
			name string
			v    float64
		}{{"loss state p13", l.P13}, {"loss state p31", l.P31}, {"loss state p32", l.P32}, {"loss state p23", l.P23}, {"loss state p14", l.P14}} {
			if badProb(f.v) {
				return fieldErr(f.name, "probability %v%% is outside 0..100%%", f.v*100)
			}
		}
		if l.P13+l.P14 > 1 {
			return fieldErr("loss state p13", "p13 + p14 exceed 100%%")
		}
		if l.P31+l.P32 > 1 {
			return fieldErr("loss state p31", "p31 + p32 exceed 100%%")
		}
	default:
		return fieldErr("loss", "unknown loss model %d", uint8(l.Model))
	}
	return nil
}

// Warnings lists valid but probably surprising settings (docs/emulator-spec.md §3.4).
func (c *Config) Warnings() []string {
	var w []string
	if (c.Distribution == Normal || c.Distribution == Uniform) && c.Jitter > 0 && c.Delay < 3*c.Jitter {
		w = append(w, fmt.Sprintf("delay %v is below 3 × jitter %v: many delays will be clamped at 0, which raises the mean", c.Delay, c.Jitter))
	}
	if c.Distribution == LogNormal && c.Jitter > 0 && c.HalfLife > 0 {
		w = append(w, "lognormal innovations with correlation reach the configured jitter only over very long times at high packet rates (docs/emulator-spec.md §3.4)")
	}
	return w
}
