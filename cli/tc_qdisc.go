package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hymn-net/hymn/emulator"
)

// The qdiscs hymn tc serves on a link interface, kept as the user gave
// them (kind, handle, parent, options), and what they mean for hymn's
// emulator on the interface's egress: netem's options, a tbf's or an htb
// class's rate, combined into one emulator configuration.

// tcError is an error in tc's style: its text as tc prints it and tc's
// exit status (1 for a command line tc cannot parse, 2 for one the kernel
// refuses).
type tcError struct {
	msg   string
	code  int
	usage string // printed after msg (netem's usage on an unknown option)
}

func (e *tcError) Error() string { return e.msg }

func parseErr(format string, a ...any) *tcError {
	return &tcError{msg: fmt.Sprintf(format, a...), code: 1}
}

func kernelErr(format string, a ...any) *tcError {
	return &tcError{msg: "Error: " + fmt.Sprintf(format, a...), code: 2}
}

const netemUsage = `Usage: ... netem [ limit PACKETS ]
                 [ delay TIME [ JITTER [CORRELATION]]]
                 [ distribution {uniform|normal|pareto|paretonormal} ]
                 [ corrupt PERCENT [CORRELATION]]
                 [ duplicate PERCENT [CORRELATION]]
                 [ loss random PERCENT [CORRELATION]]
                 [ loss state P13 [P31 [P32 [P23 P14]]]
                 [ loss gemodel PERCENT [R [1-H [1-K]]]
                 [ ecn ]
                 [ reorder PERCENT [CORRELATION] [ gap DISTANCE ]]
                 [ rate RATE [PACKETOVERHEAD] [CELLSIZE] [CELLOVERHEAD]]
                 [ slot MIN_DELAY [MAX_DELAY] [packets MAX_PACKETS] [bytes MAX_BYTES]]
                 [ slot distribution {uniform|normal|pareto|paretonormal|custom}
                   DELAY JITTER [packets MAX_PACKETS] [bytes MAX_BYTES]]`

// netemDefaultLimit is netem's queue limit when none is given (packets).
const netemDefaultLimit = 1000

// netem is one netem qdisc's options as tc-netem(8) gives them.
type netem struct {
	limit        int
	delay        time.Duration
	jitter       time.Duration
	delayCorr    string
	distribution string // "" (netem's uniform jitter), uniform, normal, pareto, paretonormal
	lossModel    string // "", random, state, gemodel
	loss         []string
	lossCorr     string
	ecn          bool
	duplicate    string
	dupCorr      string
	corrupt      string
	corruptCorr  string
	reorder      string
	reorderCorr  string
	gap          string
	rate         uint64
	rateExtra    []string // packet overhead, cell size, cell overhead
	slot         []string
	notes        []string // what hymn approximates (printed on stderr)
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	c := s[0]
	return c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+'
}

// tcTime reads a time as tc does: a bare number is microseconds.
func tcTime(field, s string) (time.Duration, error) {
	v, err := strconv.ParseFloat(strings.TrimRight(s, "abcdefghijklmnopqrstuvwxyzµ"), 64)
	unit := strings.TrimLeft(s, "0123456789.+-eE")
	if err != nil || math.IsNaN(v) || v < 0 {
		return 0, parseErr("Illegal %q", field)
	}
	mult := map[string]float64{"": 1e3, "us": 1e3, "usec": 1e3, "usecs": 1e3, "µs": 1e3, "ns": 1, "nsec": 1,
		"ms": 1e6, "msec": 1e6, "msecs": 1e6, "s": 1e9, "sec": 1e9, "secs": 1e9}[strings.ToLower(unit)]
	if mult == 0 {
		return 0, parseErr("Illegal %q", field)
	}
	return time.Duration(math.Round(v * mult)), nil
}

func tcPercent(field, s string) (string, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || v < 0 || v > 100 || math.IsNaN(v) {
		return "", parseErr("Illegal %q", field)
	}
	return strings.TrimSuffix(s, "%") + "%", nil
}

func tcRate(field, s string) (uint64, error) {
	r, err := emulator.ParseRate(s)
	if err != nil {
		return 0, parseErr("Illegal %q", field)
	}
	return r, nil
}

// parseNetem reads netem's options (tc-netem(8)).
func parseNetem(args []string) (*netem, error) {
	n := &netem{limit: netemDefaultLimit}
	i := 0
	next := func() (string, bool) {
		if i < len(args) {
			i++
			return args[i-1], true
		}
		return "", false
	}
	optNumber := func() (string, bool) {
		if i < len(args) && isNumber(args[i]) {
			i++
			return args[i-1], true
		}
		return "", false
	}
	for i < len(args) {
		k, _ := next()
		switch k {
		case "limit":
			s, _ := next()
			v, err := strconv.Atoi(s)
			if err != nil || v < 0 {
				return nil, parseErr("Illegal %q", "limit")
			}
			n.limit = v
		case "latency", "delay":
			s, _ := next()
			d, err := tcTime("latency", s)
			if err != nil {
				return nil, err
			}
			n.delay = d
			if s, ok := optNumber(); ok {
				if n.jitter, err = tcTime("jitter", s); err != nil {
					return nil, err
				}
				if s, ok := optNumber(); ok {
					if n.delayCorr, err = tcPercent("latency", s); err != nil {
						return nil, err
					}
				}
			}
		case "distribution":
			s, _ := next()
			switch s {
			case "uniform", "normal", "pareto", "paretonormal":
				n.distribution = s
			default:
				return nil, parseErr("No distribution data for %s (/usr/lib/tc/%s.dist: No such file or directory)", s, s)
			}
		case "loss", "drop":
			s, ok := next()
			if !ok {
				return nil, parseErr("Illegal %q", "loss")
			}
			switch s {
			case "state", "gemodel":
				n.lossModel = s
				var vals []string
				for {
					v, ok := optNumber()
					if !ok {
						break
					}
					p, err := tcPercent("loss "+s, v)
					if err != nil {
						return nil, err
					}
					vals = append(vals, p)
				}
				if len(vals) == 0 {
					return nil, parseErr("Illegal %q", "loss "+s+" p")
				}
				n.loss = vals
			default:
				if s == "random" {
					s, _ = next()
				}
				p, err := tcPercent("loss percent", s)
				if err != nil {
					return nil, err
				}
				n.lossModel, n.loss = "random", []string{p}
				if s, ok := optNumber(); ok {
					if n.lossCorr, err = tcPercent("loss correllation", s); err != nil {
						return nil, err
					}
				}
			}
		case "ecn":
			n.ecn = true
		case "duplicate", "corrupt", "reorder":
			s, _ := next()
			p, err := tcPercent(k, s)
			if err != nil {
				return nil, err
			}
			var corr string
			if s, ok := optNumber(); ok {
				if corr, err = tcPercent(k, s); err != nil {
					return nil, err
				}
			}
			switch k {
			case "duplicate":
				n.duplicate, n.dupCorr = p, corr
			case "corrupt":
				n.corrupt, n.corruptCorr = p, corr
			default:
				n.reorder, n.reorderCorr = p, corr
			}
		case "gap":
			s, _ := next()
			if _, err := strconv.ParseUint(s, 10, 32); err != nil {
				return nil, parseErr("Illegal %q", "gap")
			}
			n.gap = s
		case "rate":
			s, _ := next()
			r, err := tcRate("rate", s)
			if err != nil {
				return nil, err
			}
			n.rate = r
			for len(n.rateExtra) < 3 {
				s, ok := optNumber()
				if !ok {
					break
				}
				n.rateExtra = append(n.rateExtra, s)
			}
		case "slot":
			// Kept as given: the emulator's grammar reads it.
			for i < len(args) && (isNumber(args[i]) || strings.HasSuffix(args[i], "s") && isNumber(args[i][:1]) ||
				args[i] == "packets" || args[i] == "bytes" || args[i] == "distribution" || len(n.slot) > 0 && n.slot[len(n.slot)-1] == "distribution") {
				n.slot = append(n.slot, args[i])
				i++
			}
			if len(n.slot) == 0 {
				return nil, parseErr("Illegal %q", "slot")
			}
		case "help":
			return nil, &tcError{msg: netemUsage, code: 1}
		default:
			return nil, &tcError{msg: fmt.Sprintf("What is %q?", k), code: 1, usage: netemUsage}
		}
	}
	return n, nil
}

// emulatorArgs translates netem's options into hymn's emulator grammar.
// netem's jitter without a distribution is uniform over ±JITTER (a
// standard deviation of JITTER/√3, which the emulator takes); netem's
// time-ordered queue lets jitter reorder packets unless a rate is set.
// Correlations are approximated (noted); what the emulator does not do
// reaches its parser and is refused there with its reason.
func (n *netem) emulatorArgs() []string {
	out := []string{"limit", strconv.Itoa(max(n.limit, 1))}
	if n.delay > 0 || n.jitter > 0 {
		out = append(out, "delay", durArg(n.delay))
	}
	if n.jitter > 0 {
		sigma := n.jitter
		dist := n.distribution
		switch dist {
		case "", "uniform":
			sigma = time.Duration(math.Round(float64(n.jitter) / math.Sqrt(3)))
			dist = "uniform"
		}
		out = append(out, "jitter", durArg(sigma), "distribution", dist)
		if n.rate == 0 {
			out = append(out, "reorder")
		}
		if n.delayCorr != "" {
			n.notes = append(n.notes, "delay correlation "+n.delayCorr+": hymn correlates delays adaptively (half-life 21ms) instead")
		}
	}
	switch n.lossModel {
	case "random":
		out = append(out, "loss", n.loss[0])
		if n.lossCorr != "" {
			n.notes = append(n.notes, "loss correlation "+n.lossCorr+" is left out (tc-netem(8) deprecates it; loss gemodel makes bursts)")
		}
	case "state", "gemodel":
		out = append(append(out, "loss", n.lossModel), n.loss...)
	}
	if n.ecn {
		out = append(out, "ecn")
	}
	for _, kv := range [][3]string{{"duplicate", n.duplicate, n.dupCorr}, {"corrupt", n.corrupt, n.corruptCorr}} {
		if kv[1] != "" && kv[1] != "0%" {
			out = append(out, kv[0], kv[1])
			if kv[2] != "" {
				n.notes = append(n.notes, kv[0]+" correlation "+kv[2]+" is left out")
			}
		}
	}
	if n.reorder != "" && n.reorder != "0%" {
		out = append(out, "reorder", n.reorder)
		if n.gap != "" {
			out = append(out, "gap", n.gap)
		}
	}
	if n.rate > 0 {
		out = append(append(out, "rate", strconv.FormatUint(n.rate, 10)), n.rateExtra...)
	}
	if len(n.slot) > 0 {
		out = append(append(out, "slot"), n.slot...)
	}
	return out
}

func durArg(d time.Duration) string { return strconv.FormatInt(int64(d), 10) + "ns" }

// String prints the options as tc qdisc show does.
func (n *netem) String() string {
	b := []string{fmt.Sprintf("limit %d", n.limit)}
	if n.delay > 0 || n.jitter > 0 {
		s := "delay " + tcFmtTime(n.delay)
		if n.jitter > 0 {
			s += "  " + tcFmtTime(n.jitter)
			if n.delayCorr != "" {
				s += " " + tcFmtPercent(n.delayCorr)
			}
		}
		b = append(b, s)
	}
	switch n.lossModel {
	case "random":
		s := "loss " + tcFmtPercent(n.loss[0])
		if n.lossCorr != "" {
			s += " " + tcFmtPercent(n.lossCorr)
		}
		b = append(b, s)
	case "state", "gemodel":
		names := []string{"p13", "p31", "p32", "p23", "p14"}
		if n.lossModel == "gemodel" {
			names = []string{"p", "r", "1-h", "1-k"}
		}
		s := "loss " + n.lossModel
		for i, v := range n.loss {
			s += " " + names[i] + " " + tcFmtPercent(v)
		}
		b = append(b, s)
	}
	if n.ecn {
		b = append(b, "ecn ")
	}
	for _, kv := range [][3]string{{"duplicate", n.duplicate, n.dupCorr}, {"reorder", n.reorder, n.reorderCorr}, {"corrupt", n.corrupt, n.corruptCorr}} {
		if kv[1] != "" && kv[1] != "0%" {
			s := kv[0] + " " + tcFmtPercent(kv[1])
			if kv[2] != "" {
				s += " " + tcFmtPercent(kv[2])
			}
			b = append(b, s)
		}
	}
	if n.rate > 0 {
		s := "rate " + tcFmtRate(n.rate)
		if len(n.rateExtra) > 0 {
			s += " packetoverhead " + n.rateExtra[0]
		}
		b = append(b, s)
	}
	if len(n.slot) > 0 {
		b = append(b, "slot "+strings.Join(n.slot, " "))
	}
	if n.gap != "" {
		b = append(b, "gap "+n.gap)
	}
	return strings.Join(b, " ")
}

// tcFmtTime prints a time as iproute2's print_time64 does (%.3g and the
// largest unit that keeps it at 1 or more).
func tcFmtTime(d time.Duration) string {
	v := float64(d)
	switch {
	case d >= time.Second:
		return strconv.FormatFloat(v/1e9, 'g', 3, 64) + "s"
	case d >= time.Millisecond:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "ms"
	case d >= time.Microsecond:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "us"
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}

// tcFmtPercent prints "12.5%" as tc does (%g).
func tcFmtPercent(p string) string {
	v, _ := strconv.ParseFloat(strings.TrimSuffix(p, "%"), 64)
	return strconv.FormatFloat(v, 'g', 6, 64) + "%"
}

// tcFmtRate prints a rate in bit/s as iproute2 does (1000-based units).
func tcFmtRate(r uint64) string {
	units := []string{"bit", "Kbit", "Mbit", "Gbit", "Tbit"}
	v := float64(r)
	i := 0
	for i < len(units)-1 && v >= 1000 && (math.Mod(v, 1000) == 0 || v >= 1e6) {
		v /= 1000
		i++
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + units[i]
}

// tcFmtSize prints bytes as iproute2's print_size does.
func tcFmtSize(b uint64) string {
	switch {
	case b >= 1<<20 && b%(1<<20) == 0:
		return strconv.FormatUint(b>>20, 10) + "Mb"
	case b >= 1<<10 && b%(1<<10) == 0:
		return strconv.FormatUint(b>>10, 10) + "Kb"
	}
	return strconv.FormatUint(b, 10) + "b"
}

// tbf is a token bucket filter's options (tc-tbf(8)).
type tbf struct {
	rate    uint64
	burst   uint64
	limit   uint64
	latency time.Duration
}

func tcSize(field, s string) (uint64, error) {
	// tc's sizes: bytes, or kb/mb/gb (1024-based), kbit/mbit (bits).
	v, err := strconv.ParseFloat(strings.TrimRight(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"), 64)
	unit := strings.ToLower(strings.TrimLeft(s, "0123456789."))
	mult := map[string]float64{"": 1, "b": 1, "k": 1024, "kb": 1024, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30,
		"kbit": 1024 / 8.0, "mbit": (1 << 20) / 8.0, "gbit": (1 << 30) / 8.0}[unit]
	if err != nil || v < 0 || mult == 0 {
		return 0, parseErr("Illegal %q", field)
	}
	return uint64(math.Round(v * mult)), nil
}

func parseTBF(args []string) (*tbf, error) {
	t := &tbf{}
	for i := 0; i < len(args); i++ {
		k := args[i]
		val := ""
		if i+1 < len(args) {
			val = args[i+1]
		}
		var err error
		switch k {
		case "rate":
			t.rate, err = tcRate("rate", val)
		case "burst", "buffer", "maxburst":
			if s, _, ok := strings.Cut(val, "/"); ok {
				val = s
			}
			t.burst, err = tcSize("burst", val)
		case "limit":
			t.limit, err = tcSize("limit", val)
		case "latency", "lat":
			t.latency, err = tcTime("latency", val)
		case "peakrate", "mtu", "minburst", "overhead", "linklayer":
			return nil, kernelErr("hymn's emulator runs tbf's rate, burst and limit (or latency); %s is not supported", k)
		case "help":
			return nil, parseErr("Usage: ... tbf limit BYTES burst BYTES[/BYTES] rate KBPS [ mtu BYTES[/BYTES] ]\n\t[ peakrate KBPS ] [ latency TIME ] [ overhead BYTES ] [ linklayer TYPE ]")
		default:
			return nil, parseErr("What is %q?", k)
		}
		if err != nil {
			return nil, err
		}
		i++
	}
	if t.rate == 0 || t.burst == 0 {
		return nil, parseErr("\"rate\" and \"burst\" are required.")
	}
	if t.limit == 0 && t.latency == 0 {
		return nil, parseErr("Either \"limit\" or \"latency\" are required.")
	}
	if t.limit == 0 {
		t.limit = uint64(t.latency.Seconds()*float64(t.rate)/8) + t.burst
	}
	return t, nil
}

func (t *tbf) String() string {
	lat := t.latency
	if lat == 0 && t.limit > t.burst {
		lat = time.Duration(float64(t.limit-t.burst) * 8 / float64(t.rate) * 1e9)
	}
	return fmt.Sprintf("rate %s burst %s lat %s ", tcFmtRate(t.rate), tcFmtSize(t.burst), tcFmtTime(lat))
}

// htbClass is an htb class's rate and ceiling (tc-htb(8)).
type htbClass struct{ rate, ceil uint64 }

func parseHTBClass(args []string) (*htbClass, error) {
	c := &htbClass{}
	for i := 0; i < len(args); i++ {
		k := args[i]
		val := ""
		if i+1 < len(args) {
			val = args[i+1]
		}
		var err error
		switch k {
		case "rate":
			c.rate, err = tcRate("rate", val)
		case "ceil":
			c.ceil, err = tcRate("ceil", val)
		case "burst", "cburst", "prio", "quantum", "mtu", "mpu", "overhead", "linklayer":
			// Shaping details the emulator's spacer has no use for.
		default:
			return nil, parseErr("What is %q?", k)
		}
		if err != nil {
			return nil, err
		}
		i++
	}
	if c.rate == 0 {
		return nil, parseErr("\"rate\" is required.")
	}
	if c.ceil < c.rate {
		c.ceil = c.rate
	}
	return c, nil
}

func (c *htbClass) String() string {
	return fmt.Sprintf("prio 0 rate %s ceil %s burst 1600b cburst 1600b ", tcFmtRate(c.rate), tcFmtRate(c.ceil))
}

// htbQdisc reads an htb qdisc's options; only default matters here.
func parseHTBQdisc(args []string) (string, error) {
	def := "0"
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "default":
			if i+1 >= len(args) {
				return "", parseErr("Illegal \"default\"")
			}
			def = args[i+1]
			i++
		case "r2q", "direct_qlen":
			i++
		case "offload":
		default:
			return "", parseErr("What is %q?", args[i])
		}
	}
	return def, nil
}
