package cli

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/topo"
)

func TestParseHostBounds(t *testing.T) {
	cases := []struct {
		spec string
		ok   bool
	}{
		{"proc", true}, {"cfs", true}, {"cfs,cpu=0.5", true}, {"rt,cpu=1", true},
		{"cfs,cpu=NaN", false}, {"cfs,cpu=nan", false}, {"cfs,cpu=+Inf", false}, {"cfs,cpu=-Inf", false},
		{"cfs,cpu=0", false}, {"cfs,cpu=-0.5", false}, {"cfs,cpu=1.0000001", false}, {"cfs,cpu=1e-400", false},
		{"cfs,cpu=", false}, {"cfs,cpus=1", false}, {"proc,cpu=1", false}, {"docker", false}, {"", false},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			opts, err := parseHost(c.spec, false)
			if (err == nil) != c.ok {
				t.Fatalf("parseHost: %v, want ok=%v", err, c.ok)
			}
			if err != nil && (!errors.Is(err, ErrUsage) || strings.Contains(err.Error(), "\n")) {
				t.Fatalf("want a one-line usage error, got %v", err)
			}
			if opts != nil && (math.IsNaN(opts.Fraction) || opts.Fraction < 0 || opts.Fraction > 1) {
				t.Fatalf("fraction %v accepted", opts.Fraction)
			}
		})
	}
}

func TestParseByteSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64 // 0 for refused
	}{
		{"16M", 16 << 20}, {"16MiB", 16 << 20}, {"16mb", 16 << 20}, {"1024", 1024}, {"2K", 2048}, {"1G", 1 << 30},
		{"0", 0}, {"-1", 0}, {"", 0}, {"M", 0}, {"1.5M", 0}, {"9223372036854775807G", 0}, {"NaN", 0},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := parseByteSize(c.in)
			if c.want == 0 {
				if err == nil {
					t.Fatalf("accepted as %d", got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("%d, %v; want %d", got, err, c.want)
			}
		})
	}
}

func TestLimitFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--max-nodes", "-2"}, "--max-nodes -2"},
		{[]string{"--max-file-size", "lots"}, "--max-file-size"},
		{[]string{"--custom-timeout", "-1s"}, "--custom-timeout"},
		{[]string{"--max-nodes", "99999999999999999999999"}, "invalid argument"},
		{[]string{"--twait", "NaN", "--test", "build"}, "--twait NaN"},
		{[]string{"--twait", "-1", "--test", "build"}, "--twait -1"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, stderr := run(t, c.args...)
			if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Fatalf("exit %d, stderr %q; want exit 2 and one line with %q", code, stderr, c.want)
			}
		})
	}
}

func FuzzLinkSpec(f *testing.F) {
	for _, s := range []string{"default", "tc,bw=10,delay=5ms,jitter=1ms,loss=1,max_queue_size=100", "emu,delay=10ms,a>b.loss=1%",
		"tc,delay=abc", "tc,bw=NaN", "emu,max_frame=1048576", "emu,emu=delay 1ms", "tc,", "emu,a>b.x=1", "tc,loss=1e309"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		top, err := topo.Linear(2, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := ApplyLinkSpec(top, spec); err != nil {
			if !errors.Is(err, ErrUsage) {
				t.Fatalf("%q: not a usage error: %v", spec, err)
			}
			return
		}
		if _, err := topo.Resolve(top, topo.AddressOptions{}); err != nil {
			t.Fatalf("%q accepted by --link but refused by Resolve: %v", spec, err)
		}
	})
}

func FuzzHostSpec(f *testing.F) {
	for _, s := range []string{"proc", "cfs", "cfs,cpu=0.5", "rt,cpu=NaN", "cfs,cpu=1e-320", "cfs,,", "cfs,0.5"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, spec string, pin bool) {
		opts, err := parseHost(spec, pin)
		if err != nil {
			if !errors.Is(err, ErrUsage) {
				t.Fatalf("%q: not a usage error: %v", spec, err)
			}
			return
		}
		if opts != nil && opts.Fraction != 0 && !topo.ValidCPUFraction(opts.Fraction) {
			t.Fatalf("%q: fraction %v accepted", spec, opts.Fraction)
		}
	})
}

func FuzzSwitchSpec(f *testing.F) {
	for _, s := range []string{"lxbr", "lxbr,stp=1", "default", "ovsk", "lxbr,foo=1", "lxbr,1", ",", "user"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		c, err := parseSwitchSpec(spec, false, mnlog.New(io.Discard, mnlog.Info))
		if err != nil {
			if !errors.Is(err, ErrUsage) {
				t.Fatalf("%q: not a usage error: %v", spec, err)
			}
			return
		}
		if c.kind == "" {
			t.Fatalf("%q: accepted without a kind", spec)
		}
	})
}
