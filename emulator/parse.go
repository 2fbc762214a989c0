package emulator

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Parse reads the text form (NetEm's grammar where it maps, plus hymn's own
// keys) on top of DefaultConfig and validates the result.
func Parse(text string) (Config, error) {
	return ParseArgs(strings.Fields(text))
}

// ParseArgs is Parse for a pre-split command line.
func ParseArgs(args []string) (Config, error) {
	c := DefaultConfig()
	if err := c.Apply(args); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Apply changes c by the keys in args, like `tc qdisc change`: keys not
// mentioned keep their value. The result is validated; on error c may be
// partly changed, so callers that need atomicity apply to a copy.
func (c *Config) Apply(args []string) error {
	p := parser{args: args}
	for p.i < len(p.args) {
		if err := p.key(c); err != nil {
			return err
		}
	}
	return c.Validate()
}

type parser struct {
	args []string
	i    int
}

func (p *parser) next() (string, bool) {
	if p.i >= len(p.args) {
		return "", false
	}
	s := p.args[p.i]
	p.i++
	return s, true
}

// numeric reports whether the next token looks like a value rather than a
// keyword; NetEm's optional positional arguments are recognised this way.
func (p *parser) numeric() bool {
	if p.i >= len(p.args) || p.args[p.i] == "" {
		return false
	}
	switch ch := p.args[p.i][0]; {
	case ch >= '0' && ch <= '9', ch == '.', ch == '-', ch == '+':
		return true
	}
	// NaN and Inf are values too (and refused as such), not keywords.
	t := strings.ToLower(p.args[p.i])
	return strings.HasPrefix(t, "nan") || strings.HasPrefix(t, "inf")
}

func (p *parser) need(field string) (string, error) {
	s, ok := p.next()
	if !ok {
		return "", fieldErr(field, "missing value")
	}
	return s, nil
}

const delayCorrelationMsg = "NetEm's delay correlation percentage is not supported: hymn correlates delays adaptively " +
	"(D_i = a·D_(i-1) + (1-a)·C_i with a = 2^(-1/(t_h·R)) for the measured packet rate R), which keeps the configured mean " +
	"and jitter exactly and makes delays τ apart correlate as 2^(-τ/t_h) at any rate; set the time scale with " +
	"`half-life TIME` (default 21ms, 0 = uncorrelated) instead of a percentage"

func (p *parser) key(c *Config) error {
	k, _ := p.next()
	switch strings.ToLower(k) {
	case "delay", "latency":
		s, err := p.need("delay")
		if err != nil {
			return err
		}
		if c.Delay, err = parseTime("delay", s); err != nil {
			return err
		}
		if p.numeric() {
			s, _ = p.next()
			if c.Jitter, err = parseTime("jitter", s); err != nil {
				return err
			}
			if p.numeric() {
				return fieldErr("delay correlation", delayCorrelationMsg)
			}
		}
	case "jitter":
		s, err := p.need("jitter")
		if err != nil {
			return err
		}
		if c.Jitter, err = parseTime("jitter", s); err != nil {
			return err
		}
	case "distribution":
		s, err := p.need("distribution")
		if err != nil {
			return err
		}
		if s == "pareto" || s == "paretonormal" {
			return fieldErr("distribution", "%s is a NetEm table without a defined mean and standard deviation; hymn offers deterministic, uniform, normal, lognormal and gamma", s)
		}
		if c.Distribution, err = ParseDistribution(strings.ToLower(s)); err != nil {
			return err
		}
	case "half-life", "halflife":
		s, err := p.need("half-life")
		if err != nil {
			return err
		}
		if c.HalfLife, err = parseTime("half-life", s); err != nil {
			return err
		}
	case "rate-interval":
		s, err := p.need("rate-interval")
		if err != nil {
			return err
		}
		if c.RateInterval, err = parseTime("rate-interval", s); err != nil {
			return err
		}
	case "time-based":
		c.TimeBasedWeight = true
	case "interval-based":
		c.TimeBasedWeight = false
	case "reorder":
		if p.numeric() {
			return fieldErr("reorder", "NetEm's `reorder PERCENT [gap N]` is not supported; `reorder` alone lets jitter reorder packets (a heap keyed by departure time), without it packets stay in FIFO order")
		}
		c.Reorder = true
	case "fifo":
		c.Reorder = false
	case "gap":
		return fieldErr("gap", "NetEm's reorder gap is not supported")
	case "loss", "drop":
		return p.loss(c)
	case "rate":
		s, err := p.need("rate")
		if err != nil {
			return err
		}
		if strings.HasSuffix(s, "%") {
			return fieldErr("rate", "a percentage of the link speed is not supported; give bit/s (e.g. 100mbit)")
		}
		r, err := parseRate("rate", s)
		if err != nil {
			return err
		}
		c.Space = SpacerConfig{Enabled: true, Rate: r}
		if p.numeric() {
			s, _ = p.next()
			n, err := parseInt("overhead", s)
			if err != nil {
				return err
			}
			c.Overhead = n
			if p.numeric() {
				return fieldErr("rate cellsize", "cell-based rate accounting is not supported")
			}
		}
	case "space":
		s, err := p.need("space")
		if err != nil {
			return err
		}
		r, err := parseRate("space rate", s)
		if err != nil {
			return err
		}
		c.Space = SpacerConfig{Enabled: true, Rate: r, Limit: 1 << 20}
		if p.numeric() {
			s, _ = p.next()
			if c.Space.Limit, err = parseLimit("space limit", s, r); err != nil {
				return err
			}
		}
	case "nospace", "norate":
		c.Space = SpacerConfig{}
	case "police":
		s, err := p.need("police")
		if err != nil {
			return err
		}
		r, err := parseRate("police rate", s)
		if err != nil {
			return err
		}
		c.Police = PolicerConfig{Enabled: true, Rate: r, Burst: DefaultPoliceBurst}
		if p.numeric() {
			s, _ = p.next()
			if c.Police.Burst, err = parseSize("police burst", s); err != nil {
				return err
			}
		}
	case "nopolice":
		c.Police = PolicerConfig{Burst: DefaultPoliceBurst}
	case "overhead":
		s, err := p.need("overhead")
		if err != nil {
			return err
		}
		if c.Overhead, err = parseInt("overhead", s); err != nil {
			return err
		}
	case "max-frame":
		s, err := p.need("max-frame")
		if err != nil {
			return err
		}
		if c.MaxFrame, err = parseInt("max-frame", s); err != nil {
			return err
		}
	case "limit", "buffer":
		s, err := p.need("limit")
		if err != nil {
			return err
		}
		if c.Buffer, err = parseInt("limit", s); err != nil {
			return err
		}
	case "seed":
		s, err := p.need("seed")
		if err != nil {
			return err
		}
		v, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			return fieldErr("seed", "%q is not an unsigned 64-bit integer", s)
		}
		c.Seed, c.SeedSet = v, true
	case "allow-large", "allow_large":
		c.AllowLarge = true
	case "duplicate", "corrupt":
		field := strings.ToLower(k)
		s, err := p.need(field)
		if err != nil {
			return err
		}
		f, err := parsePercent(field, s)
		if err != nil {
			return err
		}
		if field == "duplicate" {
			c.Duplicate = f
		} else {
			c.Corrupt = f
		}
		if p.numeric() {
			return fieldErr(field+" correlation", "NetEm's correlation percentage is not supported (tc-netem(8) deprecates it: it distorts the probability)")
		}
	case "ecn":
		c.ECN = true
	case "noecn":
		c.ECN = false
	case "slot":
		return p.slot(c)
	case "noslot":
		c.Slot = SlotConfig{}
	default:
		return fieldErr(k, "unknown parameter")
	}
	return nil
}

func (p *parser) loss(c *Config) error {
	s, err := p.need("loss")
	if err != nil {
		return err
	}
	probs := func(field string, max int) ([]float64, error) {
		var v []float64
		for len(v) < max && p.numeric() {
			t, _ := p.next()
			f, err := parsePercent(field, t)
			if err != nil {
				return nil, err
			}
			v = append(v, f)
		}
		return v, nil
	}
	switch strings.ToLower(s) {
	case "gemodel":
		v, err := probs("loss gemodel", 4)
		if err != nil {
			return err
		}
		if len(v) == 0 {
			return fieldErr("loss gemodel", "needs at least p")
		}
		// iproute2's defaults (since 2019) reduce the model to Bernoulli(p).
		l := LossConfig{Model: GilbertElliott, P: v[0], R: 1 - v[0], OneMinusH: 1}
		if len(v) > 1 {
			l.R = v[1]
		}
		if len(v) > 2 {
			l.OneMinusH = v[2]
		}
		if len(v) > 3 {
			l.OneMinusK = v[3]
		}
		c.Loss = l
	case "state":
		v, err := probs("loss state", 5)
		if err != nil {
			return err
		}
		if len(v) == 0 {
			return fieldErr("loss state", "needs at least p13")
		}
		l := LossConfig{Model: FourState, P13: v[0], P31: 1 - v[0], P23: 1}
		if len(v) > 1 {
			l.P31 = v[1]
		}
		if len(v) > 2 {
			l.P32 = v[2]
		}
		if len(v) > 3 {
			l.P23 = v[3]
		}
		if len(v) > 4 {
			l.P14 = v[4]
		}
		c.Loss = l
	case "none", "off":
		c.Loss = LossConfig{}
	default:
		if strings.ToLower(s) == "random" {
			if s, err = p.need("loss"); err != nil {
				return err
			}
		}
		f, err := parsePercent("loss", s)
		if err != nil {
			return err
		}
		c.Loss = LossConfig{Model: RandomLoss, Prob: f}
		if p.numeric() {
			return fieldErr("loss correlation", "NetEm's loss correlation is not supported (tc-netem(8) deprecates it because it distorts the loss rate); use `loss gemodel p r 1-h 1-k` for bursty loss")
		}
	}
	if p.i < len(p.args) && strings.ToLower(p.args[p.i]) == "ecn" {
		p.i++
		c.ECN = true
	}
	return nil
}

// slot reads NetEm's `slot MIN [MAX] [packets N] [bytes N]`.
func (p *parser) slot(c *Config) error {
	if p.i < len(p.args) && strings.EqualFold(p.args[p.i], "distribution") {
		return fieldErr("slot distribution", "NetEm's slot distribution tables are not supported; give `slot MIN MAX` for gaps uniform in [MIN, MAX]")
	}
	s, err := p.need("slot")
	if err != nil {
		return err
	}
	sc := SlotConfig{Enabled: true}
	if sc.Min, err = parseTime("slot", s); err != nil {
		return err
	}
	sc.Max = sc.Min
	if p.numeric() {
		s, _ = p.next()
		if sc.Max, err = parseTime("slot", s); err != nil {
			return err
		}
	}
	for p.i < len(p.args) {
		switch strings.ToLower(p.args[p.i]) {
		case "packets":
			p.i++
			s, err := p.need("slot packets")
			if err != nil {
				return err
			}
			if sc.Packets, err = parseInt("slot packets", s); err != nil {
				return err
			}
		case "bytes":
			p.i++
			s, err := p.need("slot bytes")
			if err != nil {
				return err
			}
			b, err := parseSize("slot bytes", s)
			if err != nil {
				return err
			}
			if b > 1<<31-1 {
				return fieldErr("slot bytes", "%s is out of range", s)
			}
			sc.Bytes = int(b)
		default:
			c.Slot = sc
			return nil
		}
	}
	c.Slot = sc
	return nil
}

// splitUnit separates the numeric prefix from its unit suffix.
func splitUnit(s string) (float64, string, bool) {
	i := 0
	for i < len(s) {
		ch := s[i]
		if (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '+' || ((ch == 'e' || ch == 'E') && i > 0 && i+1 < len(s) && (s[i+1] == '-' || s[i+1] == '+' || (s[i+1] >= '0' && s[i+1] <= '9'))) {
			i++
			continue
		}
		break
	}
	v, err := strconv.ParseFloat(s[:i], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, "", false
	}
	return v, strings.ToLower(s[i:]), true
}

// parseTime follows tc: s, ms, us (a bare number is µs), plus ns.
func parseTime(field, s string) (time.Duration, error) {
	v, unit, ok := splitUnit(s)
	if !ok {
		return 0, fieldErr(field, "%q is not a time (e.g. 10ms, 500us, 1s)", s)
	}
	var mult float64
	switch unit {
	case "", "us", "usec", "usecs", "µs":
		mult = 1e3
	case "ns", "nsec", "nsecs":
		mult = 1
	case "ms", "msec", "msecs":
		mult = 1e6
	case "s", "sec", "secs":
		mult = 1e9
	default:
		return 0, fieldErr(field, "unknown time unit %q in %q (use s, ms, us or ns)", unit, s)
	}
	ns := math.Round(v * mult)
	if math.Abs(ns) > 1e18 {
		return 0, fieldErr(field, "%q is out of range", s)
	}
	return time.Duration(ns), nil
}

var rateUnits = map[string]float64{
	"": 1, "bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
	"kibit": 1 << 10, "mibit": 1 << 20, "gibit": 1 << 30, "tibit": 1 << 40,
	// tc's "bps" family means bytes per second.
	"bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9, "tbps": 8e12,
	"kibps": 8 << 10, "mibps": 8 << 20, "gibps": 8 << 30, "tibps": 8 << 40,
}

// ParseRate parses a tc-style rate into bit/s.
func ParseRate(s string) (uint64, error) { return parseRate("rate", s) }

func parseRate(field, s string) (uint64, error) {
	v, unit, ok := splitUnit(s)
	mult, known := rateUnits[unit]
	if !ok || !known {
		return 0, fieldErr(field, "%q is not a rate (e.g. 100mbit, 10gbit)", s)
	}
	r := math.Round(v * mult)
	if r < 0 {
		return 0, fieldErr(field, "must not be negative (got %s)", s)
	}
	if r > 1e15 {
		return 0, fieldErr(field, "%q is out of range", s)
	}
	return uint64(r), nil
}

var sizeUnits = map[string]float64{
	"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
}

func parseSize(field, s string) (uint64, error) {
	v, unit, ok := splitUnit(s)
	mult, known := sizeUnits[unit]
	if !ok || !known {
		return 0, fieldErr(field, "%q is not a size in bytes (e.g. 32768, 64kb, 1mb)", s)
	}
	b := math.Round(v * mult)
	if b < 0 || b > 1<<40 {
		return 0, fieldErr(field, "%q is out of range", s)
	}
	return uint64(b), nil
}

// wirePacket is the size used when a spacer limit is given in packets: one
// full-size Ethernet frame (1518 B) plus preamble and inter-frame gap.
const wirePacket = 1538

// parseLimit accepts bytes, packets ("100pkt") or a queueing time ("5ms")
// converted at the given rate, as docs/emulator-spec.md §5.2 allows.
func parseLimit(field, s string, rate uint64) (uint64, error) {
	v, unit, ok := splitUnit(s)
	if ok {
		switch unit {
		case "pkt", "pkts", "p":
			if v < 0 || v > 1<<30 {
				return 0, fieldErr(field, "%q is out of range", s)
			}
			return uint64(math.Round(v * wirePacket)), nil
		case "s", "ms", "us", "ns":
			d, err := parseTime(field, s)
			if err != nil {
				return 0, err
			}
			if d < 0 {
				return 0, fieldErr(field, "must not be negative (got %s)", s)
			}
			return uint64(math.Round(d.Seconds() * float64(rate) / 8)), nil
		}
	}
	return parseSize(field, s)
}

func parsePercent(field, s string) (float64, error) {
	t := strings.TrimSuffix(s, "%")
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fieldErr(field, "%q is not a percentage (e.g. 0.1%%)", s)
	}
	return v / 100, nil
}

func parseInt(field, s string) (int, error) {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fieldErr(field, "%q is not an integer", s)
	}
	return int(v), nil
}

// String renders the configuration in the text form Parse reads; settings
// equal to their defaults are left out so the shell shows what matters.
func (c Config) String() string {
	var b strings.Builder
	add := func(parts ...string) {
		for _, p := range parts {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(p)
		}
	}
	d := DefaultConfig()
	if c.Jitter != 0 {
		add("delay", fmtDur(c.Delay), fmtDur(c.Jitter))
	} else {
		add("delay", fmtDur(c.Delay))
	}
	if c.Distribution != Normal {
		add("distribution", c.Distribution.String())
	}
	if c.HalfLife != d.HalfLife {
		add("half-life", fmtDur(c.HalfLife))
	}
	if c.RateInterval != d.RateInterval {
		add("rate-interval", fmtDur(c.RateInterval))
	}
	if c.TimeBasedWeight {
		add("time-based")
	}
	if c.Reorder {
		add("reorder")
	}
	if c.Police.Enabled {
		add("police", fmtRate(c.Police.Rate), strconv.FormatUint(c.Police.Burst, 10))
	}
	if c.Space.Enabled {
		if c.Space.Limit == 0 {
			add("rate", fmtRate(c.Space.Rate))
		} else {
			add("space", fmtRate(c.Space.Rate), strconv.FormatUint(c.Space.Limit, 10))
		}
	}
	switch l := c.Loss; l.Model {
	case RandomLoss:
		add("loss", fmtPct(l.Prob))
	case GilbertElliott:
		add("loss gemodel", fmtPct(l.P), fmtPct(l.R), fmtPct(l.OneMinusH), fmtPct(l.OneMinusK))
	case FourState:
		add("loss state", fmtPct(l.P13), fmtPct(l.P31), fmtPct(l.P32), fmtPct(l.P23), fmtPct(l.P14))
	}
	if c.ECN {
		add("ecn")
	}
	if c.Duplicate != 0 {
		add("duplicate", fmtPct(c.Duplicate))
	}
	if c.Corrupt != 0 {
		add("corrupt", fmtPct(c.Corrupt))
	}
	if s := c.Slot; s.Enabled {
		add("slot", fmtDur(s.Min), fmtDur(s.Max))
		if s.Packets > 0 {
			add("packets", strconv.Itoa(s.Packets))
		}
		if s.Bytes > 0 {
			add("bytes", strconv.Itoa(s.Bytes))
		}
	}
	if c.Overhead != d.Overhead {
		add("overhead", strconv.Itoa(c.Overhead))
	}
	if c.MaxFrame != d.MaxFrame {
		add("max-frame", strconv.Itoa(c.MaxFrame))
	}
	if c.Buffer != d.Buffer {
		add("limit", strconv.Itoa(c.Buffer))
	}
	if c.SeedSet {
		add("seed", strconv.FormatUint(c.Seed, 10))
	}
	if c.AllowLarge {
		add("allow-large")
	}
	return b.String()
}

func fmtDur(d time.Duration) string {
	n := int64(d)
	switch {
	case n == 0:
		return "0ms"
	case n%1e9 == 0:
		return strconv.FormatInt(n/1e9, 10) + "s"
	case n%1e6 == 0:
		return strconv.FormatInt(n/1e6, 10) + "ms"
	case n%1e3 == 0:
		return strconv.FormatInt(n/1e3, 10) + "us"
	}
	return strconv.FormatInt(n, 10) + "ns"
}

func fmtRate(r uint64) string {
	switch {
	case r == 0:
		return "0bit"
	case r%1e12 == 0:
		return strconv.FormatUint(r/1e12, 10) + "tbit"
	case r%1e9 == 0:
		return strconv.FormatUint(r/1e9, 10) + "gbit"
	case r%1e6 == 0:
		return strconv.FormatUint(r/1e6, 10) + "mbit"
	case r%1e3 == 0:
		return strconv.FormatUint(r/1e3, 10) + "kbit"
	}
	return strconv.FormatUint(r, 10) + "bit"
}

// fmtPct prints p as a percentage that parses back to exactly p: the
// shortest decimal of p·100 does not always survive the division by 100,
// so neighbouring floats are tried.
func fmtPct(p float64) string {
	y := p * 100
	for i := 0; i < 8; i++ {
		s := strconv.FormatFloat(y, 'g', -1, 64)
		if v, err := strconv.ParseFloat(s, 64); err == nil && v/100 == p {
			return s + "%"
		}
		if i%2 == 0 {
			y = math.Nextafter(p*100, math.Inf(1))
			for j := 0; j < i/2; j++ {
				y = math.Nextafter(y, math.Inf(1))
			}
		} else {
			y = math.Nextafter(p*100, math.Inf(-1))
			for j := 0; j < i/2; j++ {
				y = math.Nextafter(y, math.Inf(-1))
			}
		}
	}
	return strconv.FormatFloat(p*100, 'g', -1, 64) + "%"
}
