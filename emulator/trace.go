package emulator

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hymn-net/hymn/internal/fileio"
)

// DeliveryTrace is a recorded link capacity in Mahimahi's format: each
// line is the time (integer milliseconds from the start) of one delivery
// opportunity for one MTU-sized packet, and the file repeats after its
// last time. A trace with the single line "1" is therefore one packet per
// millisecond: 1500 B of IP packet per ms, Mahimahi's 12 Mbit/s.
// A DeliveryTrace is immutable and may be shared by many links.
type DeliveryTrace struct {
	Source string   // file name, for messages
	ms     []uint32 // opportunity times, ms, non-decreasing
	period int64    // ns: the last time; the trace repeats after it
}

// Limits that keep a hostile or mistaken file from taking the machine.
const (
	MaxTraceLines = 1 << 22       // 4 Mi opportunities (16 MiB in memory)
	MaxTraceBytes = 64 << 20      // file size
	MaxTraceMs    = 1_000_000_000 // 11.6 days
	// DefaultOpportunity is what one delivery opportunity carries, in
	// bytes of Ethernet frame as the ports report it (without FCS): one
	// 1500-byte IP packet plus its 14-byte Ethernet header, so that a
	// trace delivers Mahimahi's rate in IP bytes.
	DefaultOpportunity = 1514
)

// TraceConfig makes a delivery trace the direction's rate (instead of the
// spacer): a packet leaves, after its delay, at the delivery opportunity
// that completes it, and waits in the buffer (FIFO) until then.
type TraceConfig struct {
	Trace *DeliveryTrace // nil: no trace
	// Opportunity is the bytes of frame one opportunity carries; 0 means
	// DefaultOpportunity. Frames count their Len (no overhead), and an
	// opportunity's unused bytes serve the next frame only if it is
	// already waiting, as in Mahimahi.
	Opportunity int
	// Limit is the most data (bytes) that may wait for opportunities; a
	// frame that would exceed it is dropped (counted as SpacerDropped,
	// the rate stage's drop). 0 means no byte limit: Buffer still holds.
	Limit uint64
}

// Lines is the number of opportunities in one period.
func (t *DeliveryTrace) Lines() int { return len(t.ms) }

// Period is how long the trace lasts before it repeats.
func (t *DeliveryTrace) Period() time.Duration { return time.Duration(t.period) }

// MeanRate is the trace's average rate in bit/s when every opportunity
// carries bytes bytes.
func (t *DeliveryTrace) MeanRate(bytes int) float64 {
	return float64(len(t.ms)) * float64(bytes) * 8 / (float64(t.period) / 1e9)
}

// Opportunities returns a copy of the opportunity times in ms.
func (t *DeliveryTrace) Opportunities() []uint32 { return append([]uint32(nil), t.ms...) }

func (c *TraceConfig) validate(cfg *Config) error {
	if c.Trace == nil {
		if c.Opportunity != 0 || c.Limit != 0 {
			return fieldErr("trace", "opportunity and limit need a trace")
		}
		return nil
	}
	if len(c.Trace.ms) == 0 || c.Trace.period <= 0 {
		return fieldErr("trace", "%s: empty trace", c.Trace.Source)
	}
	if c.Opportunity < 0 || c.Opportunity > 1<<20 {
		return fieldErr("trace", "opportunity must be between 1 and 1048576 bytes (got %d)", c.Opportunity)
	}
	if cfg.Space.Enabled {
		return fieldErr("trace", "a delivery trace is the link's rate: remove the spacer rate (space/bw) or the trace")
	}
	if c.Limit != 0 && c.Limit < uint64(cfg.MaxFrame) {
		return fieldErr("trace limit", "%d bytes is smaller than one frame (%d bytes)", c.Limit, cfg.MaxFrame)
	}
	return nil
}

// TraceError locates a problem in a trace or schedule file. Its message
// never quotes the file's content (only numbers hymn computed from it), so
// an error that reaches someone who could not read the file reveals
// nothing of it.
type TraceError struct {
	File string
	Line int // 1-based; 0 for the whole file
	Msg  string
}

func (e *TraceError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Is lets callers test errors.Is(err, ErrInvalidConfig).
func (e *TraceError) Is(target error) bool { return target == ErrInvalidConfig }

// LoadDeliveryTrace reads a Mahimahi delivery trace file.
func LoadDeliveryTrace(path string) (*DeliveryTrace, error) {
	data, err := readBounded(path, MaxTraceBytes)
	if err != nil {
		return nil, err
	}
	return ParseDeliveryTrace(path, data)
}

// readBounded reads at most limit bytes and refuses larger files, so a
// mistaken path (a disk image, /dev/zero) fails fast instead of filling
// memory.
func readBounded(path string, limit int64) ([]byte, error) {
	data, err := fileio.ReadLimited(path, limit)
	if errors.Is(err, fileio.ErrTooLarge) {
		return nil, &TraceError{File: path, Msg: fmt.Sprintf("file is larger than %d bytes", limit)}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// ParseDeliveryTrace parses the contents of a delivery trace: one
// non-negative integer (ms) per line, non-decreasing, the last one > 0.
// Blank lines and lines starting with '#' are ignored.
func ParseDeliveryTrace(name string, data []byte) (*DeliveryTrace, error) {
	if len(data) > MaxTraceBytes {
		return nil, &TraceError{File: name, Msg: fmt.Sprintf("file is larger than %d bytes", MaxTraceBytes)}
	}
	t := &DeliveryTrace{Source: name}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 4096)
	line := 0
	var last uint64
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' {
			continue
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			// The line itself is not quoted: the file may be one the
			// reader of the message could not read.
			if strings.HasPrefix(s, "-") {
				return nil, &TraceError{name, line, "negative time"}
			}
			return nil, &TraceError{name, line, "not a time in whole milliseconds"}
		}
		if v > MaxTraceMs {
			return nil, &TraceError{name, line, fmt.Sprintf("time beyond the limit of %d ms", MaxTraceMs)}
		}
		if v < last {
			return nil, &TraceError{name, line, "time before the previous line's (times must not decrease)"}
		}
		if len(t.ms) >= MaxTraceLines {
			return nil, &TraceError{name, line, fmt.Sprintf("more than %d opportunities", MaxTraceLines)}
		}
		last = v
		t.ms = append(t.ms, uint32(v))
	}
	if err := sc.Err(); err != nil {
		return nil, &TraceError{name, line + 1, "line too long"}
	}
	if len(t.ms) == 0 {
		return nil, &TraceError{File: name, Msg: "empty trace: no delivery opportunities"}
	}
	if last == 0 {
		return nil, &TraceError{name, line, "the last time must be > 0 ms: it is the trace's period"}
	}
	t.period = int64(last) * 1e6
	return t, nil
}

// NewDeliveryTrace builds a trace from opportunity times in ms (for
// programs that generate traces).
func NewDeliveryTrace(name string, ms []uint32) (*DeliveryTrace, error) {
	var b strings.Builder
	for _, v := range ms {
		b.WriteString(strconv.FormatUint(uint64(v), 10))
		b.WriteByte('\n')
	}
	return ParseDeliveryTrace(name, []byte(b.String()))
}

// traceStage is the trace-driven rate (a spacer whose service times come
// from a trace). It books bytes into opportunities in FIFO order at
// arrival time, so a packet's departure is known when it is queued, like
// the spacer's.
type traceStage struct {
	on      bool
	tr      *DeliveryTrace
	opp     int64
	limit   int64
	started bool
	t0      int64 // emulator time of the trace's time zero
	next    int64 // absolute index of the next opportunity with room
	left    int64 // bytes left in it
}

func (s *traceStage) configure(c TraceConfig) {
	s.on = c.Trace != nil
	opp := int64(c.Opportunity)
	if opp == 0 {
		opp = DefaultOpportunity
	}
	if c.Trace != s.tr || opp != s.opp {
		// A new trace starts from its beginning at the next packet; the
		// same trace (a schedule changing the delay) keeps its place.
		s.tr, s.opp, s.started = c.Trace, opp, false
	}
	s.limit = int64(c.Limit)
}

// at is the emulator time of absolute opportunity k.
func (s *traceStage) at(k int64) int64 {
	n := int64(len(s.tr.ms))
	return s.t0 + (k/n)*s.tr.period + int64(s.tr.ms[k%n])*1e6
}

// firstAt returns the absolute index of the first opportunity at or after t.
func (s *traceStage) firstAt(t int64) int64 {
	rel := t - s.t0
	if rel <= 0 {
		return 0
	}
	n := int64(len(s.tr.ms))
	c, r := rel/s.tr.period, rel%s.tr.period
	i := int64(sort.Search(len(s.tr.ms), func(i int) bool { return int64(s.tr.ms[i])*1e6 >= r }))
	k := c*n + i
	// The previous period's last opportunities lie at its end, which
	// may be exactly t.
	for k > 0 && s.at(k-1) >= t {
		k--
	}
	return k
}

// schedule books a frame of size bytes ready at e and returns when its
// last byte is delivered, or false if the byte limit would be exceeded.
func (s *traceStage) schedule(e int64, size int) (int64, bool) {
	b := max(int64(size), 1)
	if !s.started {
		s.started, s.t0, s.next, s.left = true, e, 0, s.opp
	}
	if s.at(s.next) < e {
		s.next, s.left = s.firstAt(e), s.opp
	}
	if s.limit > 0 {
		backlog := (s.next-s.firstAt(e))*s.opp + s.opp - s.left
		if backlog+b > s.limit {
			return 0, false
		}
	}
	for b > s.left {
		b -= s.left
		s.next++
		s.left = s.opp
	}
	s.left -= b
	due := s.at(s.next)
	if s.left == 0 {
		s.next++
		s.left = s.opp
	}
	return due, true
}

// TraceStart reports the emulator time at which the delivery trace's time
// zero lies (the first packet that reached it), if a trace has started.
func (e *Emulator) TraceStart() (int64, bool) {
	if !e.trace.on || !e.trace.started {
		return 0, false
	}
	return e.trace.t0, true
}
