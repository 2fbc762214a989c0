package emulator

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseNetEmGrammar(t *testing.T) {
	c, err := Parse("delay 10ms 1ms distribution normal loss 0.1% rate 100mbit limit 1000 seed 7")
	if err != nil {
		t.Fatal(err)
	}
	if c.Delay != 10*time.Millisecond || c.Jitter != time.Millisecond || c.Distribution != Normal ||
		c.Loss.Model != RandomLoss || c.Loss.Prob != 0.001 || !c.Space.Enabled || c.Space.Rate != 100e6 ||
		c.Space.Limit != 0 || c.Buffer != 1000 || c.Seed != 7 || !c.SeedSet || c.HalfLife != DefaultHalfLife {
		t.Fatalf("parsed %+v", c)
	}
	c, err = Parse("delay 20 loss gemodel 1% 30% 80% 0.1% half-life 7ms reorder police 1gbit 64kb space 10gbit 5ms overhead 20")
	if err != nil {
		t.Fatal(err)
	}
	if c.Delay != 20*time.Microsecond || c.Loss != (LossConfig{Model: GilbertElliott, P: 0.01, R: 0.3, OneMinusH: 0.8, OneMinusK: 0.001}) ||
		c.HalfLife != 7*time.Millisecond || !c.Reorder || c.Police != (PolicerConfig{true, 1e9, 65536}) ||
		c.Space != (SpacerConfig{true, 10e9, 6_250_000}) || c.Overhead != 20 {
		t.Fatalf("parsed %+v", c)
	}
	// NetEm's gemodel defaults: r = 1−p, 1−h = 100 %, 1−k = 0.
	c, _ = Parse("loss gemodel 2")
	if c.Loss.R != 0.98 || c.Loss.OneMinusH != 1 || c.Loss.OneMinusK != 0 {
		t.Fatalf("gemodel defaults %+v", c.Loss)
	}
	c, _ = Parse("loss state 1% 50%")
	if c.Loss.Model != FourState || c.Loss.P13 != 0.01 || c.Loss.P31 != 0.5 || c.Loss.P23 != 1 {
		t.Fatalf("state %+v", c.Loss)
	}
	c, _ = Parse("loss random 5%")
	if c.Loss.Prob != 0.05 {
		t.Fatal(c.Loss)
	}
}

func TestRejectsNamingField(t *testing.T) {
	cases := []struct{ text, field, contains string }{
		{"delay -1ms", "delay", "negative"},
		{"delay 10ms 1ms distribution deterministic", "jitter", "deterministic"},
		{"delay 0 1ms distribution lognormal", "delay", "lognormal"},
		{"delay 0 1ms distribution gamma", "delay", "gamma"},
		{"loss 150%", "loss", "100%"},
		{"loss gemodel 1% 200%", "loss gemodel r", ""},
		{"rate 0", "rate", "> 0"},
		{"police 0 32768", "police rate", ""},
		{"police 1gbit 1000", "police burst", "frame"},
		{"distribution weibull", "distribution", "unknown"},
		{"distribution pareto", "distribution", "pareto"},
		{"delay 10ms 1ms 25%", "delay correlation", "half-life"},
		{"loss 1% 25%", "loss correlation", ""},
		{"reorder 25% gap 5", "reorder", ""},
		{"duplicate 101%", "duplicate", "outside"},
		{"frobnicate 3", "frobnicate", "unknown"},
		{"delay", "delay", "missing"},
		{"delay 10parsecs", "delay", "unit"},
		{"rate 10%", "rate", "percentage"},
		{"half-life -1ms", "half-life", "negative"},
		{"limit 0", "limit", ""},
		{"space 1gbit 100", "space limit", "frame"},
	}
	for _, tc := range cases {
		t.Run(tc.text, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tc.text)
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v, want a ConfigError", err)
			}
			if ce.Field != tc.field || !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("%v; want field %q mentioning %q", err, tc.field, tc.contains)
			}
		})
	}
	// Typed options validate the same way.
	if _, err := Build(Delay(-time.Millisecond)); err == nil || !strings.Contains(err.Error(), "delay") {
		t.Errorf("Build(negative delay) = %v", err)
	}
	if _, err := Build(WithDistribution(Distribution(99))); err == nil || !strings.Contains(err.Error(), "distribution") {
		t.Errorf("Build(unknown distribution) = %v", err)
	}
	if _, err := Build(Police(1e9, 100)); err == nil || !strings.Contains(err.Error(), "police burst") {
		t.Errorf("Build(small burst) = %v", err)
	}
}

func TestStringRoundTrip(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"zero delay", "delay 0ms"},
		{"jitter", "delay 10ms 1ms"},
		{"gamma gemodel", "delay 10ms 3ms distribution gamma half-life 7ms reorder loss gemodel 1% 30% 80% 0.1% seed 7"},
		{"police space", "delay 1s police 100mbit 32768 space 1gbit 100000 overhead 0 max-frame 9000 limit 10"},
		{"rate loss state", "delay 5ms distribution deterministic rate 10gbit loss state 1% 50% 0% 100% 0%"},
		{"time-based", "delay 10ms 1ms half-life 0ms rate-interval 5ms time-based loss 0.07%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse(tc.text)
			if err != nil {
				t.Fatalf("%q: %v", tc.text, err)
			}
			if got := c.String(); got != tc.text {
				t.Errorf("String() = %q, want %q", got, tc.text)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"delay 10ms 1ms distribution normal loss 0.1% loss gemodel 1% 10% 70% 0.1% rate 100mbit limit 1000 seed 7",
		"half-life 21ms reorder police 1gbit 32768 space 10gbit 1mb overhead 24",
		"delay 100us 10us distribution lognormal time-based",
		"delay 10ms 1ms 25%",
		"loss state 1% 2% 3% 4% 5% ecn",
		"latency 1.5ms 0.25ms distribution uniform rate 1.5gbit 4",
		"space 1gbit 10pkt",
		"delay 1e3us jitter 3e2us",
		"delay 1s jitter 1000000000s",
		"delay 7200s 60s allow-large max-frame 65536 limit 1000000",
		"loss gemodel 1% NaN rate infbit police -1mbit",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, err := Parse(text)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("%q: error %v is not a ConfigError", text, err)
			}
			return
		}
		s := c.String()
		c2, err := Parse(s)
		if err != nil {
			t.Fatalf("%q rendered as %q, which does not parse: %v", text, s, err)
		}
		if s2 := c2.String(); s2 != s {
			t.Fatalf("%q: String not stable: %q then %q", text, s, s2)
		}
		if _, err := New(c); err != nil {
			t.Fatalf("%q parsed but New failed: %v", text, err)
		}
	})
}
