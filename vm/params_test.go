package vm

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
)

func TestParseParamsBounds(t *testing.T) {
	cases := []struct {
		name   string
		params map[string]string
		want   string // "" for accepted
	}{
		{"cpupin huge range", map[string]string{"cpupin": "0-9223372036854775807"}, "above 8191"},
		{"cpupin huge core", map[string]string{"cpupin": "99999999999999999999"}, "not a core number"},
		{"cpupin negative", map[string]string{"cpupin": "-1"}, "not a core number"},
		{"cpupin too many", map[string]string{"cpupin": "0-300"}, "more than 255 cores"},
		{"cpupin many ranges", map[string]string{"cpupin": strings.Repeat("0-200,", 3)}, "more than 255 cores"},
		{"cpupin reversed", map[string]string{"cpupin": "5-2"}, "not a core range"},
		{"cpupin empty", map[string]string{"cpupin": "[]"}, "no cores"},
		{"cpupin python", map[string]string{"cpupin": "[0, 1]"}, ""},
		{"cpus huge", map[string]string{"cpus": "1000000"}, "at most 255 vCPUs"},
		{"cpus zero", map[string]string{"cpus": "0"}, "at least 1 vCPU"},
		{"cpus ok", map[string]string{"cpus": "2"}, ""},
		{"offload", map[string]string{"offload": "maybe"}, "use on or off"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// At most 100 ms a parse: too short for the test's clock to
			// judge one, so ten parses are timed together.
			start := time.Now()
			err := ParseParams(&Config{Name: "h1"}, c.params)
			for range 9 {
				_ = ParseParams(&Config{Name: "h1"}, c.params)
			}
			testenv.Elapsed(t, "ten parses", time.Since(start), 10*100*time.Millisecond)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrBadParam) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "vm h1: ") {
				t.Fatalf("error %v; want ErrBadParam naming vm h1 with %q", err, c.want)
			}
		})
	}
}

func TestParseMemoryBounds(t *testing.T) {
	cases := []struct {
		in   string
		mib  int64
		want string
	}{
		{"512M", 512, ""}, {"2G", 2048, ""}, {"2GB", 2048, ""}, {"1048576K", 1024, ""},
		{"NaN", 0, "not a size"}, {"NaNG", 0, "not a size"}, {"InfM", 0, "not a size"}, {"+Inf", 0, "not a size"},
		{"-1G", 0, "not a size"}, {"1e300G", 0, "at most 16T"}, {"17T", 0, "at most 16T"}, {"1M", 0, "at least 64M"},
		{"B", 0, "not a size"}, {"b", 0, "not a size"}, {"5X", 0, "unknown unit"}, {"G", 0, "not a size"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := parseMemory(c.in)
			if c.want == "" {
				if err != nil || got != c.mib {
					t.Fatalf("%d, %v; want %d", got, err, c.mib)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want %q", err, c.want)
			}
		})
	}
}

func FuzzParseParams(f *testing.F) {
	for _, s := range [][2]string{{"0-9223372036854775807", "256M"}, {"[24, 25]", "4G"}, {"1,2,3", "NaN"}, {"", "2GB"}, {"0-8191", "1e300T"}} {
		f.Add(s[0], s[1], "2")
	}
	f.Fuzz(func(t *testing.T, cpupin, memory, cpus string) {
		cfg := &Config{Name: "h1"}
		if err := ParseParams(cfg, map[string]string{"cpupin": cpupin, "memory": memory, "cpus": cpus}); err != nil {
			return
		}
		if len(cfg.CPUPin) > MaxCPUs || cfg.CPUs > MaxCPUs {
			t.Fatalf("accepted %d pins, %d cpus", len(cfg.CPUPin), cfg.CPUs)
		}
		for _, c := range cfg.CPUPin {
			if c < 0 || c > MaxCore {
				t.Fatalf("accepted core %d", c)
			}
		}
		if mib, err := parseMemory(cfg.Memory); err == nil && (mib < 64 || mib > MaxMemoryMiB) {
			t.Fatalf("memory %q -> %d MiB", cfg.Memory, mib)
		}
	})
}
