package emulator

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestParameterLimits: non-finite, negative and absurd values are refused
// with one error naming the parameter and the limit; allow-large lifts the
// soft limits and only those.
func TestParameterLimits(t *testing.T) {
	old := memoryBudget
	memoryBudget = func() uint64 { return 1 << 30 } // as on a 4 GiB machine
	defer func() { memoryBudget = old }()
	for _, tc := range []struct{ text, field, contains string }{
		// The two inputs.
		{"delay 1s jitter 1000000000s", "jitter", "1000000000s exceeds the hard limit of 1000000s"},
		{"max-frame 1048576", "max-frame", "65536"},
		// Times beyond an hour, or beyond the hard limit even when allowed.
		{"delay 2h", "delay", "unit"}, // tc has no hours: 7200s is the way
		{"delay 7200s", "delay", "allow-large"},
		{"delay 10ms 2h", "jitter", "unit"},
		{"delay 10ms 3601s", "jitter", "allow-large"},
		{"half-life 3601s", "half-life", "limit of 3600s"},
		{"rate-interval 3601s", "rate-interval", "limit of 3600s"},
		{"delay 1000001s allow-large", "delay", "hard limit"},
		{"jitter 1e18ns allow-large", "jitter", "hard limit"},
		{"delay 1e19s", "delay", "out of range"},
		// Frame sizes.
		{"max-frame 65537", "max-frame", "65536"},
		{"max-frame 65537 allow-large", "max-frame", "65536"},
		{"max-frame 0", "max-frame", "between 1"},
		{"max-frame -1500", "max-frame", "between 1"},
		{"max-frame 1e4", "max-frame", "integer"},
		// Buffers: the hard cap, and memory beyond a quarter of the machine.
		{"limit 268435457", "limit", "268435456"},
		{"limit 268435457 allow-large", "limit", "268435456"},
		{"limit 30000000", "limit", "quarter of this machine's memory (1.0 GiB)"},
		{"limit -1", "limit", "between 1"},
		// Non-finite numbers.
		{"delay NaNms", "delay", "not a time"},
		{"delay infs", "delay", "not a time"},
		{"delay 1e400s", "delay", "not a time"},
		{"jitter nan", "jitter", "not a time"},
		{"loss NaN%", "loss", "percentage"},
		{"loss inf", "loss", "percentage"},
		{"loss gemodel 1% NaN", "loss gemodel", "percentage"},
		{"loss state Inf", "loss state", "percentage"},
		{"rate NaNmbit", "rate", "not a rate"},
		{"rate 1e400bit", "rate", "not a rate"},
		{"police infkbit", "police rate", "not a rate"},
		{"space 1gbit NaNpkt", "space limit", "size"},
		// Negative values.
		{"delay -1ms", "delay", "negative"},
		{"delay 10ms -1ms", "jitter", "negative"},
		{"jitter -1us", "jitter", "negative"},
		{"half-life -1ms", "half-life", "negative"},
		{"rate-interval -1ms", "rate-interval", "> 0"},
		{"rate -1mbit", "rate", "negative"},
		{"police -1mbit", "police rate", "negative"},
		{"police 1gbit -1", "police burst", "out of range"},
		{"space 1gbit -1", "space limit", "out of range"},
		{"space 1gbit -1pkt", "space limit", "out of range"},
		{"space 1gbit -1ms", "space limit", "negative"},
		{"overhead -1", "overhead", "between 0"},
		{"loss -1%", "loss", "outside"},
		{"seed -1", "seed", "unsigned"},
		// Rates and overheads beyond what the arithmetic is for.
		{"rate 2pbit", "rate", "not a rate"},
		{"rate 2000tbit", "rate", "out of range"},
		{"overhead 5000", "overhead", "4096"},
	} {
		t.Run(tc.text, func(t *testing.T) {
			_, err := Parse(tc.text)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want a ConfigError", err)
			}
			if ce.Field != tc.field || !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("%v; want field %q mentioning %q", err, tc.field, tc.contains)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
	// allow-large lifts the soft limits.
	for _, text := range []string{
		"delay 7200s 100s allow-large",
		"half-life 7200s rate-interval 7200s allow-large",
		"limit 30000000 allow-large",
		"delay 1000000s allow-large",
	} {
		t.Run(text, func(t *testing.T) {
			c, err := Parse(text)
			if err != nil {
				t.Fatal(err)
			}
			if !c.AllowLarge || !strings.Contains(c.String(), "allow-large") {
				t.Errorf("allow-large not kept: %q", c.String())
			}
		})
	}
	// At the limits exactly: accepted without allow-large.
	for _, text := range []string{"delay 3600s 3600s", "max-frame 65536", "limit 262144", "half-life 3600s"} {
		t.Run(text, func(t *testing.T) {
			if _, err := Parse(text); err != nil {
				t.Error(err)
			}
		})
	}
	// The Go API validates the same way.
	if _, err := Build(Jitter(2 * time.Hour)); err == nil || !strings.Contains(err.Error(), "jitter") {
		t.Errorf("Build(jitter 2h) = %v", err)
	}
	if _, err := Build(Jitter(2*time.Hour), AllowLarge(true)); err != nil {
		t.Errorf("Build(jitter 2h, allow large) = %v", err)
	}
	if _, err := Build(Space(MaxRate+1, 0)); err == nil || !strings.Contains(err.Error(), "rate") {
		t.Errorf("Build(space beyond MaxRate) = %v", err)
	}
	if _, err := Build(Police(MaxRate+1, 1<<20)); err == nil || !strings.Contains(err.Error(), "police rate") {
		t.Errorf("Build(police beyond MaxRate) = %v", err)
	}
	if _, err := Build(MaxFrame(1 << 20)); err == nil || !strings.Contains(err.Error(), "max-frame") {
		t.Errorf("Build(max-frame 1 MiB) = %v", err)
	}
}

// TestMemoryEstimate: the default configuration needs about 138 MiB per
// direction at most; a jumbo frame link's frame buffers stay within the
// same 128 MiB because the slot count shrinks with the slot size.
func TestMemoryEstimate(t *testing.T) {
	d := DefaultConfig()
	if got, want := d.MemoryEstimate(), uint64(DefaultBuffer*PacketRecordBytes+65536*2048); got != want {
		t.Errorf("default: %d, want %d", got, want)
	}
	j := DefaultConfig()
	j.MaxFrame = 9018
	if got, want := j.MemoryEstimate(), uint64(DefaultBuffer*PacketRecordBytes+8192*16384); got != want {
		t.Errorf("jumbo: %d, want %d", got, want)
	}
	s := DefaultConfig()
	s.Buffer = 100
	if got, want := s.MemoryEstimate(), uint64(100*PacketRecordBytes+132*2048); got != want {
		t.Errorf("small: %d, want %d", got, want)
	}
}

// TestForwarderFramesFromMTU: with the link's MTU known, frame buffers
// hold MTU + 18 bytes and max-frame follows it; a larger max-frame is an
// error naming the MTU.
func TestForwarderFramesFromMTU(t *testing.T) {
	a, b := newMemPort("a"), newMemPort("b")
	if _, err := NewForwarder(a, b, ForwarderConfig{MTU: 1500, AtoB: mustParse(t, "max-frame 9018"), BtoA: DefaultConfig()}); err == nil ||
		!strings.Contains(err.Error(), "max-frame") || !strings.Contains(err.Error(), "MTU 1500") {
		t.Errorf("max-frame above the MTU: %v", err)
	}
	if _, err := NewForwarder(a, b, ForwarderConfig{MTU: 9000, AtoB: mustParse(t, "police 1gbit 5000"), BtoA: DefaultConfig()}); err == nil ||
		!strings.Contains(err.Error(), "police burst") {
		t.Errorf("police burst below a jumbo frame: %v", err)
	}
	f, err := NewForwarder(a, b, ForwarderConfig{MTU: 9000, AtoB: DefaultConfig(), BtoA: mustParse(t, "delay 1ms")})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []Direction{AtoB, BtoA} {
		if got := f.Config(dir).MaxFrame; got != 9018 {
			t.Errorf("%s: max-frame %d, want 9018", dir, got)
		}
	}
	if err := f.Reconfigure(AtoB, mustParse(t, "max-frame 9019")); err == nil {
		t.Error("reconfigure to max-frame 9019 on MTU 9000 accepted")
	}
	if err := f.Reconfigure(AtoB, mustParse(t, "delay 2ms")); err != nil || f.Config(AtoB).MaxFrame != 9018 {
		t.Errorf("reconfigure: %v, max-frame %d", err, f.Config(AtoB).MaxFrame)
	}
	f.Start()
	jumbo := frame(1, 9018)
	a.push(jumbo)
	b.push(frame(2, 9018))
	deadline := time.Now().Add(5 * time.Second)
	for {
		sa, _ := a.sentFrames()
		sb, _ := b.sentFrames()
		if len(sa) == 1 && len(sb) == 1 {
			if !bytes.Equal(sb[0], jumbo) {
				t.Errorf("jumbo frame changed on the way")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jumbo frames not forwarded: a sent %d, b sent %d; stats %+v %+v", len(sa), len(sb), f.Stats(AtoB), f.Stats(BtoA))
		}
		time.Sleep(time.Millisecond)
	}
	f.Stop()
	if s := a.Stats(); s.RxTruncated != 0 {
		t.Errorf("truncated %d", s.RxTruncated)
	}
	// Without the MTU (and with max-frame left at its default) the same
	// frame does not fit: the port drops it as truncated, and says so.
	a2, b2 := newMemPort("a"), newMemPort("b")
	g, err := NewForwarder(a2, b2, ForwarderConfig{AtoB: DefaultConfig(), BtoA: DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	a2.push(jumbo)
	for a2.Stats().RxTruncated == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	g.Stop()
	if a2.Stats().RxTruncated != 1 {
		t.Errorf("a jumbo frame into 2 KiB buffers: %+v", a2.Stats())
	}
}
