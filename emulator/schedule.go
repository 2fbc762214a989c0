package emulator

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ScheduleField is a set of parameters a schedule point changes.
type ScheduleField uint8

// The parameters a schedule may change.
const (
	SetDelay ScheduleField = 1 << iota
	SetJitter
	SetRate
	SetLoss
)

// ScheduleParams are the values of one schedule point; only the fields in
// Set change, the others keep whatever is in force.
type ScheduleParams struct {
	Set    ScheduleField
	Delay  time.Duration // mean delay
	Jitter time.Duration // standard deviation
	Rate   uint64        // bit/s, the spacer's rate (its limit is kept)
	Loss   float64       // independent loss probability, 0..1
}

// SchedulePoint is one timed parameter set. With Ramp, the parameters
// move linearly from their values at the previous point (or at the start)
// to Params, reaching them at At; otherwise they change at At.
type SchedulePoint struct {
	At     time.Duration // from the schedule's time zero
	Params ScheduleParams
	Ramp   bool
	Line   int // where it was written, for messages (0: unknown)
}

// Schedule is a plan of parameter changes for one direction of a link.
// Times count from the schedule's time zero (network start, or when it is
// installed). With Repeat > 0 the points recur every Repeat.
type Schedule struct {
	Source string // file name or "inline", for messages
	Points []SchedulePoint
	Repeat time.Duration
}

// Bounds on what a schedule may ask.
const (
	MaxSchedulePoints = 1 << 20
	MaxScheduleBytes  = 16 << 20
	MaxScheduleTime   = 365 * 24 * time.Hour
	MaxScheduleDelay  = time.Hour
	MaxScheduleRate   = 1e15 // bit/s
	// rampStep is how often a ramp recomputes the parameters while
	// packets flow; between packets nothing needs to change.
	rampStep = 100 * time.Microsecond
)

func (s *Schedule) errAt(line int, format string, args ...any) error {
	return &TraceError{File: s.Source, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks the schedule on its own: sorted, non-negative, bounded.
func (s *Schedule) Validate() error {
	if s.Source == "" {
		s.Source = "schedule"
	}
	if len(s.Points) == 0 {
		return s.errAt(0, "empty schedule: no points")
	}
	if len(s.Points) > MaxSchedulePoints {
		return s.errAt(0, "more than %d points", MaxSchedulePoints)
	}
	for i := range s.Points {
		p := &s.Points[i]
		if p.At < 0 {
			return s.errAt(p.Line, "negative time %v", p.At)
		}
		if p.At > MaxScheduleTime {
			return s.errAt(p.Line, "time %v is beyond %v", p.At, MaxScheduleTime)
		}
		if i > 0 && p.At <= s.Points[i-1].At {
			return s.errAt(p.Line, "time %v is not after the previous point's %v (times must increase)", p.At, s.Points[i-1].At)
		}
		if err := p.Params.validate(); err != nil {
			return s.errAt(p.Line, "%v", err)
		}
		if p.Params.Set == 0 {
			return s.errAt(p.Line, "point at %v changes nothing", p.At)
		}
	}
	if s.Repeat < 0 {
		return s.errAt(0, "negative repeat %v", s.Repeat)
	}
	if s.Repeat > 0 && s.Repeat <= s.Points[len(s.Points)-1].At {
		return s.errAt(0, "repeat %v must be longer than the last point's time %v", s.Repeat, s.Points[len(s.Points)-1].At)
	}
	if s.Repeat > MaxScheduleTime {
		return s.errAt(0, "repeat %v is beyond %v", s.Repeat, MaxScheduleTime)
	}
	return nil
}

func (p *ScheduleParams) validate() error {
	if p.Set&^(SetDelay|SetJitter|SetRate|SetLoss) != 0 {
		return fmt.Errorf("unknown parameter set %#x", p.Set)
	}
	if p.Set&SetDelay != 0 && (p.Delay < 0 || p.Delay > MaxScheduleDelay) {
		return fmt.Errorf("delay %v is outside 0..%v", p.Delay, MaxScheduleDelay)
	}
	if p.Set&SetJitter != 0 && (p.Jitter < 0 || p.Jitter > MaxScheduleDelay) {
		return fmt.Errorf("jitter %v is outside 0..%v", p.Jitter, MaxScheduleDelay)
	}
	if p.Set&SetRate != 0 && (p.Rate == 0 || p.Rate > MaxScheduleRate) {
		return fmt.Errorf("rate %d bit/s is outside 1 bit/s..1 Pbit/s", p.Rate)
	}
	if p.Set&SetLoss != 0 && badProb(p.Loss) {
		return fmt.Errorf("loss %v%% is outside 0..100%%", p.Loss*100)
	}
	return nil
}

// overlay applies the set fields of p to c.
func (p *ScheduleParams) overlay(c *Config) {
	if p.Set&SetDelay != 0 {
		c.Delay = p.Delay
	}
	if p.Set&SetJitter != 0 {
		c.Jitter = p.Jitter
	}
	if p.Set&SetRate != 0 {
		limit := uint64(0)
		if c.Space.Enabled {
			limit = c.Space.Limit
		}
		c.Space = SpacerConfig{Enabled: true, Rate: p.Rate, Limit: limit}
	}
	if p.Set&SetLoss != 0 {
		c.Loss = LossConfig{Model: RandomLoss, Prob: p.Loss}
	}
}

// CheckAgainst reports the first point that would make cfg invalid (a
// jitter on a deterministic link, a rate on a traced one), so a schedule
// is refused before it runs rather than skipped point by point.
func (s *Schedule) CheckAgainst(cfg Config) error {
	if err := s.Validate(); err != nil {
		return err
	}
	c := cfg
	for i := range s.Points {
		p := &s.Points[i]
		p.Params.overlay(&c)
		if err := c.Validate(); err != nil {
			return s.errAt(p.Line, "at %v: %v", p.At, err)
		}
	}
	return nil
}

// Duration is the time of the last point, or the repeat period.
func (s *Schedule) Duration() time.Duration {
	if s.Repeat > 0 {
		return s.Repeat
	}
	return s.Points[len(s.Points)-1].At
}

// ---- text format ----

// scheduleColumns are the CSV columns a schedule file may have.
var scheduleColumns = []string{"time", "delay", "jitter", "rate", "loss", "ramp"}

// ScheduleParamColumns are the columns of a schedule that set a link
// parameter (all but time and ramp).
func ScheduleParamColumns() []string { return append([]string(nil), scheduleColumns[1:5]...) }

// ParseSchedule reads a schedule in CSV form:
//
//	# comments and blank lines are ignored
//	time,delay,jitter,rate,loss,ramp    (time first, any subset of the rest)
//	0s,10ms,,,
//	2s,30ms,1ms,10mbit,0.5%
//	repeat,30s                          (optional, last)
//
// Empty cells leave a parameter as it is. Values take units; bare numbers
// are milliseconds for time, delay and jitter, Mbit/s for rate and percent
// for loss. ramp is true or false (linear change from the previous row).
// A file without a header line is a delay trace: "time delay" pairs in
// milliseconds, separated by a comma or blanks. Errors name file:line.
func ParseSchedule(name string, data []byte) (*Schedule, error) {
	s := &Schedule{Source: name}
	if len(data) > MaxScheduleBytes {
		return nil, s.errAt(0, "file is larger than %d bytes", MaxScheduleBytes)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 4096)
	var cols []string
	line := 0
	repeatLine := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		if repeatLine != 0 {
			return nil, s.errAt(line, "nothing may follow the repeat line (line %d)", repeatLine)
		}
		if cols == nil {
			c0 := text[0]
			if (c0 >= '0' && c0 <= '9') || c0 == '-' || c0 == '+' || c0 == '.' {
				cols = []string{"time", "delay"}
			} else {
				h, err := scheduleHeader(text)
				if err != nil {
					return nil, s.errAt(line, "%v", err)
				}
				cols = h
				continue
			}
		}
		cells := splitCells(text)
		if strings.EqualFold(cells[0], "repeat") {
			if len(cells) != 2 {
				return nil, s.errAt(line, "want repeat,PERIOD")
			}
			d, err := scheduleTime(cells[1])
			if err != nil {
				return nil, s.errAt(line, "repeat: %v", err)
			}
			if d <= 0 {
				return nil, s.errAt(line, "repeat must be > 0 (got %s)", cells[1])
			}
			s.Repeat, repeatLine = d, line
			continue
		}
		if len(cells) != len(cols) {
			return nil, s.errAt(line, "%d values for %d columns (%s)", len(cells), len(cols), strings.Join(cols, ","))
		}
		if len(s.Points) >= MaxSchedulePoints {
			return nil, s.errAt(line, "more than %d points", MaxSchedulePoints)
		}
		p := SchedulePoint{Line: line}
		for i, col := range cols {
			if err := setCell(&p, col, cells[i]); err != nil {
				return nil, s.errAt(line, "%s: %v", col, err)
			}
		}
		if n := len(s.Points); n > 0 && p.At <= s.Points[n-1].At {
			return nil, s.errAt(line, "time %v is not after the previous row's %v (times must increase)", p.At, s.Points[n-1].At)
		}
		s.Points = append(s.Points, p)
	}
	if err := sc.Err(); err != nil {
		return nil, s.errAt(line+1, "line too long")
	}
	if len(s.Points) == 0 {
		return nil, s.errAt(0, "empty schedule: no rows")
	}
	if s.Repeat > 0 && s.Repeat <= s.Points[len(s.Points)-1].At {
		return nil, s.errAt(repeatLine, "repeat %v must be longer than the last row's time %v", s.Repeat, s.Points[len(s.Points)-1].At)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// LoadSchedule reads a schedule file (see ParseSchedule).
func LoadSchedule(path string) (*Schedule, error) {
	data, err := readBounded(path, MaxScheduleBytes)
	if err != nil {
		return nil, err
	}
	return ParseSchedule(path, data)
}

func splitCells(text string) []string {
	var cells []string
	if strings.Contains(text, ",") {
		cells = strings.Split(text, ",")
	} else {
		cells = strings.Fields(text)
	}
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

func scheduleHeader(text string) ([]string, error) {
	cells := splitCells(text)
	seen := map[string]bool{}
	for i, c := range cells {
		c = strings.ToLower(c)
		cells[i] = c
		known := false
		for _, k := range scheduleColumns {
			known = known || c == k
		}
		// A column is named only once it is known to be one of ours:
		// the header may be a line of a file the reader cannot read.
		switch {
		case !known:
			return nil, fmt.Errorf("column %d is not a schedule column (use %s)", i+1, strings.Join(scheduleColumns, ", "))
		case seen[c]:
			return nil, fmt.Errorf("column %q appears twice", c)
		case i == 0 && c != "time":
			return nil, fmt.Errorf("the first column must be time, not %s", c)
		}
		seen[c] = true
	}
	if len(cells) < 2 {
		return nil, fmt.Errorf("a header needs time and at least one of delay, jitter, rate, loss")
	}
	return cells, nil
}

// scheduleTime parses a duration; a bare number is milliseconds.
func scheduleTime(s string) (time.Duration, error) {
	v, unit, ok := splitUnit(s)
	if !ok {
		return 0, errors.New("not a time (e.g. 2s, 30ms, 1500)")
	}
	if unit == "" {
		if v < 0 {
			return 0, errors.New("negative value")
		}
		if v*1e6 > float64(MaxScheduleTime) {
			return 0, fmt.Errorf("out of range (at most %v)", MaxScheduleTime)
		}
		return time.Duration(math.Round(v * 1e6)), nil
	}
	if unit == "m" || unit == "min" || unit == "h" {
		mult := map[string]float64{"m": 60e9, "min": 60e9, "h": 3600e9}[unit]
		if v < 0 {
			return 0, errors.New("negative value")
		}
		if v*mult > float64(MaxScheduleTime) {
			return 0, fmt.Errorf("out of range (at most %v)", MaxScheduleTime)
		}
		return time.Duration(math.Round(v * mult)), nil
	}
	d, err := parseTime("time", s)
	if err != nil {
		return 0, errors.New("not a time (e.g. 2s, 30ms, 1500)")
	}
	if d < 0 {
		return 0, errors.New("negative value")
	}
	return d, nil
}

func setCell(p *SchedulePoint, col, v string) error {
	if v == "" {
		if col == "time" {
			return fmt.Errorf("missing")
		}
		return nil
	}
	switch col {
	case "time":
		d, err := scheduleTime(v)
		if err != nil {
			return err
		}
		p.At = d
	case "delay", "jitter":
		d, err := scheduleTime(v)
		if err != nil {
			return err
		}
		if d > MaxScheduleDelay {
			return fmt.Errorf("%v is above %v", d, MaxScheduleDelay)
		}
		if col == "delay" {
			p.Params.Delay, p.Params.Set = d, p.Params.Set|SetDelay
		} else {
			p.Params.Jitter, p.Params.Set = d, p.Params.Set|SetJitter
		}
	case "rate":
		r, err := ScheduleRate(v)
		if err != nil {
			return err
		}
		p.Params.Rate, p.Params.Set = r, p.Params.Set|SetRate
	case "loss":
		f, err := parsePercent("loss", v)
		if err != nil {
			return errors.New("not a percentage (e.g. 0.5%)")
		}
		if badProb(f) {
			return fmt.Errorf("%v%% is outside 0..100%%", f*100)
		}
		p.Params.Loss, p.Params.Set = f, p.Params.Set|SetLoss
	case "ramp":
		switch strings.ToLower(v) {
		case "1", "true", "yes", "linear":
			p.Ramp = true
		case "0", "false", "no", "step":
			p.Ramp = false
		default:
			return errors.New("use true (linear) or false (step)")
		}
	}
	return nil
}

// ScheduleRate parses a rate for a schedule: tc units, a bare number is
// Mbit/s (Mininet's bw).
func ScheduleRate(v string) (uint64, error) {
	f, unit, ok := splitUnit(v)
	if ok && unit == "" {
		if f <= 0 || f*1e6 > MaxScheduleRate {
			return 0, fmt.Errorf("%v Mbit/s is outside 0..1e9 (exclusive 0)", f)
		}
		return uint64(math.Round(f * 1e6)), nil
	}
	r, err := parseRate("rate", v)
	if err != nil {
		return 0, errors.New("not a rate (e.g. 10mbit, or 10 for Mbit/s)")
	}
	if r == 0 || r > MaxScheduleRate {
		return 0, fmt.Errorf("%d bit/s is outside 1 bit/s..1 Pbit/s", r)
	}
	return r, nil
}

// Encode renders the schedule in the CSV form ParseSchedule reads, with
// ';' between lines, so it fits in one link parameter.
func (s *Schedule) Encode() string {
	var b strings.Builder
	b.WriteString("time,delay,jitter,rate,loss,ramp")
	for _, p := range s.Points {
		b.WriteString(";" + strconv.FormatInt(int64(p.At), 10) + "ns,")
		if p.Params.Set&SetDelay != 0 {
			b.WriteString(strconv.FormatInt(int64(p.Params.Delay), 10) + "ns")
		}
		b.WriteByte(',')
		if p.Params.Set&SetJitter != 0 {
			b.WriteString(strconv.FormatInt(int64(p.Params.Jitter), 10) + "ns")
		}
		b.WriteByte(',')
		if p.Params.Set&SetRate != 0 {
			b.WriteString(strconv.FormatUint(p.Params.Rate, 10) + "bit")
		}
		b.WriteByte(',')
		if p.Params.Set&SetLoss != 0 {
			b.WriteString(strconv.FormatFloat(p.Params.Loss*100, 'g', -1, 64) + "%")
		}
		b.WriteString("," + strconv.FormatBool(p.Ramp))
	}
	if s.Repeat > 0 {
		b.WriteString(";repeat," + strconv.FormatInt(int64(s.Repeat), 10) + "ns")
	}
	return b.String()
}

// IsEncodedSchedule reports whether a schedule parameter holds a schedule
// in Encode's form rather than a file name.
func IsEncodedSchedule(v string) bool {
	v = strings.TrimSpace(v)
	return strings.HasPrefix(v, "time,") && strings.Contains(v, ";")
}

// DecodeSchedule parses what Encode produced (';' for newlines).
func DecodeSchedule(name, text string) (*Schedule, error) {
	return ParseSchedule(name, []byte(strings.ReplaceAll(text, ";", "\n")))
}
