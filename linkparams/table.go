package linkparams

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/topo"
)

// Spec declares one link parameter, once: every list of keys (Keys,
// TCKeys, Schedulable, the Python package's, the custom-topology
// recorder's) and Apply come from Table. Adding a parameter the emulator
// already has a field and a grammar for is one entry here.
type Spec struct {
	// Name is the key in topology files, --link, live changes and the
	// Python API; Aliases are other spellings of it.
	Name    string
	Aliases []string
	// TC marks one of Mininet's TCLink options (--link tc, TCIntf.config);
	// the others are hymn's (--link emu, key=value changes).
	TC bool
	// Intf marks hymn's options that a Mininet script may give a TCIntf
	// as it gives TC ones (NetEm's per-interface options): the Python
	// package learns them from IntfKeys.
	Intf bool
	// Column is the schedule column that changes this parameter ("":
	// not schedulable).
	Column string
	// Help says what the value is, for usage texts.
	Help string
	// first: applied before the other keys (allow_large, emu), in this
	// order; the rest are applied in name order.
	first int
	// apply sets the parameter on c from its text value v; m holds every
	// parameter of the direction (bw reads max_queue_size), files
	// resolves a file name (trace).
	apply func(c *emulator.Config, k, v string, m map[string]string, files topo.Files) error
}

// grammar applies a key through the emulator's text grammar: word and
// the value's fields.
func grammar(word string) func(*emulator.Config, string, string, map[string]string, topo.Files) error {
	return func(c *emulator.Config, _, v string, _ map[string]string, _ topo.Files) error {
		return c.Apply(append([]string{word}, fields(v)...))
	}
}

// boolean applies a true/false key (empty: true).
func boolean(set func(c *emulator.Config, on bool) error) func(*emulator.Config, string, string, map[string]string, topo.Files) error {
	return func(c *emulator.Config, _, v string, _ map[string]string, _ topo.Files) error {
		on, err := strconv.ParseBool(v)
		if v == "" {
			on, err = true, nil
		}
		if err != nil {
			return errBad("must be true or false")
		}
		return set(c, on)
	}
}

// errBad is a message about the value of the key being applied.
type errBad string

func (e errBad) Error() string { return string(e) }

// Table is every link parameter, in the order usage texts list them.
var Table = []Spec{
	{Name: "bw", TC: true, Column: "rate", Help: "rate of each direction in Mbit/s (Mininet's bw)", apply: applyBW},
	{Name: "delay", TC: true, Column: "delay", Help: "mean one-way delay (10ms), or delay and jitter (10ms 1ms)", apply: applyDelay},
	{Name: "jitter", TC: true, Column: "jitter", Help: "standard deviation of the delay", apply: applyDelay},
	{Name: "loss", TC: true, Column: "loss", Help: "independent loss in percent", apply: applyLoss},
	{Name: "max_queue_size", TC: true, Help: "queue bound in packets", apply: applyQueue},
	{Name: "emu", first: 2, Help: "a whole emulator configuration in its text form (delay 10ms jitter 1ms ...)",
		apply: func(c *emulator.Config, _, v string, _ map[string]string, _ topo.Files) error {
			if f := fields(v); len(f) > 0 {
				return c.Apply(f)
			}
			return nil
		}},
	{Name: "half_life", Help: "half-life of the delay correlation (0: uncorrelated)", apply: grammar("half-life")},
	{Name: "dist", Help: "delay distribution (same as distribution)", apply: applyDist},
	{Name: "distribution", Help: "delay distribution: normal, uniform, deterministic, lognormal, gamma", apply: applyDist},
	{Name: "rate_interval", Help: "interval of the packet-rate estimator", apply: grammar("rate-interval")},
	{Name: "time_based", Help: "weight the delay correlation by arrival gaps (true/false)", apply: boolean(func(c *emulator.Config, on bool) error {
		c.TimeBasedWeight = on
		return c.Validate()
	})},
	{Name: "reorder", Help: "let shorter delays overtake (true/false)", apply: boolean(func(c *emulator.Config, on bool) error {
		c.Reorder = on
		return c.Validate()
	})},
	{Name: "police", Help: "token-bucket policer: RATE [BURST]", apply: grammar("police")},
	{Name: "space", Help: "spacer (shaper): RATE [LIMIT]", apply: grammar("space")},
	{Name: "ge", Help: "Gilbert–Elliott loss: p r [1-h [1-k]] in percent", apply: func(c *emulator.Config, _, v string, _ map[string]string, _ topo.Files) error {
		return c.Apply(append([]string{"loss", "gemodel"}, fields(v)...))
	}},
	{Name: "seed", Help: "random seed, for repeatable runs", apply: grammar("seed")},
	{Name: "overhead", Help: "bytes added to each frame for rate accounting", apply: grammar("overhead")},
	{Name: "max_frame", Help: "largest frame in bytes", apply: grammar("max-frame")},
	{Name: "limit", Help: "emulator buffer in packets", apply: grammar("limit")},
	{Name: "allow_large", first: 1, Help: "lift the limits against typing mistakes (true/false)", apply: boolean(func(c *emulator.Config, on bool) error {
		c.AllowLarge = on
		return nil
	})},
	{Name: "schedule", Help: "a schedule file, or one inline (docs/schedules.md)",
		apply: func(*emulator.Config, string, string, map[string]string, topo.Files) error { return nil }}, // schedule.go at the root
	{Name: "trace", Help: "a Mahimahi delivery trace file: the direction's rate", apply: applyTrace},
	{Name: "duplicate", Intf: true, Help: "NetEm's duplicate: percent of packets sent twice", apply: grammar("duplicate")},
	{Name: "corrupt", Intf: true, Help: "NetEm's corrupt: percent of packets with one bit flipped", apply: grammar("corrupt")},
	{Name: "slot", Intf: true, Help: "NetEm's slot: MIN [MAX] [packets N] [bytes N], packets released in slots", apply: grammar("slot")},
	{Name: "ecn", Intf: true, Help: "mark ECN-capable packets CE instead of dropping them (true/false)", apply: boolean(func(c *emulator.Config, on bool) error {
		c.ECN = on
		return c.Validate()
	})},
}

func init() { topo.RegisterLinkParams(Keys) }

// byName finds a table entry by name or alias.
var byName = func() map[string]*Spec {
	m := map[string]*Spec{}
	for i := range Table {
		s := &Table[i]
		for _, n := range append([]string{s.Name}, s.Aliases...) {
			if m[n] != nil {
				panic("linkparams: key " + n + " declared twice")
			}
			m[n] = s
		}
	}
	return m
}()

// Lookup returns the parameter named k (without a direction prefix).
func Lookup(k string) (*Spec, bool) {
	s, ok := byName[k]
	return s, ok
}

// names lists the table's keys (aliases too) that keep says.
func names(keep func(*Spec) bool) []string {
	var out []string
	for i := range Table {
		if keep(&Table[i]) {
			out = append(out, Table[i].Name)
			out = append(out, Table[i].Aliases...)
		}
	}
	return out
}

// IntfKeys are the options a TCIntf's config hands to the emulator:
// Mininet's TCKeys and hymn's Intf ones.
func IntfKeys() []string { return names(func(s *Spec) bool { return s.TC || s.Intf }) }

// Schedulable maps each schedule column to its parameter.
func Schedulable() map[string]string {
	m := map[string]string{}
	for _, s := range Table {
		if s.Column != "" {
			m[s.Column] = s.Name
		}
	}
	return m
}

func applyBW(c *emulator.Config, _, v string, m map[string]string, _ topo.Files) error {
	if _, err := strconv.ParseFloat(v, 64); err != nil {
		return errBad("not a number of Mbit/s")
	}
	bps := scaled(v, 1e6, 1) // the value as written, in bits/s
	if math.IsNaN(bps) || math.IsInf(bps, 0) {
		return errBad("not a number of Mbit/s")
	}
	if bps <= 0 {
		return errBad("bw must be greater than 0 Mbit/s")
	}
	if bps > emulator.MaxRate {
		return errBad(fmt.Sprintf("above %g Mbit/s", emulator.MaxRate/1e6))
	}
	// Mininet's HTB counts the Ethernet frame without FCS, preamble and
	// gap, so bw carries no per-packet overhead: with bw=10 iperf's TCP
	// goodput is 10·1448/1514 = 9.56 Mbit/s, as with Mininet. An
	// explicit overhead= key (applied later) wins.
	c.Space = emulator.SpacerConfig{Enabled: true, Rate: uint64(math.Round(bps)), Limit: 1 << 20}
	c.Overhead = 0
	// With bw the queue is the spacer's backlog, limited to N full-size
	// frames in bytes, as Mininet's HTB queue of N packets holds about N
	// frames of bulk traffic. A bad N is reported by its own key.
	if q, err := strconv.Atoi(strings.TrimSpace(m["max_queue_size"])); err == nil && q > 0 {
		if q > 1<<30 {
			return &keyErr{"max_queue_size", fmt.Sprintf("at most %d packets", 1<<30)}
		}
		c.Space.Limit = emulator.WireBytes(q)
	}
	return nil
}

func applyQueue(c *emulator.Config, _, v string, m map[string]string, _ topo.Files) error {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return errBad("must be a whole number of packets greater than 0")
	}
	if _, shaped := m["bw"]; !shaped {
		c.Buffer = n
	}
	return nil
}

func applyLoss(c *emulator.Config, _, v string, _ map[string]string, _ topo.Files) error {
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 100 {
		return errBad("must be a percentage between 0 and 100")
	}
	c.Loss = emulator.LossConfig{Model: emulator.RandomLoss, Prob: scaled(strings.TrimSuffix(v, "%"), 1, 100)}
	return nil
}

func applyDelay(c *emulator.Config, k, v string, _ map[string]string, _ topo.Files) error {
	if f := fields(v); len(f) == 1 {
		d, err := emulator.ParseTime(k, f[0])
		if err != nil {
			return err
		}
		if k == "delay" {
			c.Delay = d
		} else {
			c.Jitter = d
		}
		return nil
	}
	// "delay=10ms 1ms" (delay and jitter): the emulator's grammar.
	return c.Apply(append([]string{k}, fields(v)...))
}

func applyDist(c *emulator.Config, _, v string, _ map[string]string, _ topo.Files) error {
	return c.Apply([]string{"distribution", v})
}

func applyTrace(c *emulator.Config, k, v string, _ map[string]string, files topo.Files) error {
	// A Mahimahi delivery trace is the direction's rate (schedule.go).
	tr, err := LoadTrace(files, k, v)
	if err != nil {
		return &fileErr{err}
	}
	c.Trace.Trace = tr
	return nil
}

// keyErr is a mistake in another key's value than the one being applied.
type keyErr struct{ key, msg string }

func (e *keyErr) Error() string { return e.msg }

// fileErr is a trace's error, which names its key and file itself.
type fileErr struct{ err error }

func (e *fileErr) Error() string { return e.err.Error() }
func (e *fileErr) Unwrap() error { return e.err }
