package cli

import (
	"context"
	"io"
	"strings"

	"github.com/hymn-net/hymn"
	"github.com/spf13/pflag"
)

func init() {
	shellCommands["measure"] = shellCommand{
		"One-way latency (HDR percentiles in µs), loss, reordering and the zero-loss rate between two hosts.\n" +
			"Usage: measure [src dst] [--rate 50k,300k,1M] [--frame 64] [--duration 3s] [--zero-loss] [--json] [--plot F.svg] ...\n" +
			"(the options of `hymn measure`; see hymn measure --help)",
		(*shell).doMeasure,
	}
	shellCommands["capture"] = shellCommand{
		"Capture a link to pcapng (two files on an emulated link: before and after the emulator).\n" +
			"Usage: capture node1 node2 [a>b|b>a|both] [FILE.pcapng] [limit=BYTES]\n" +
			"       capture stop [node1 node2]    capture    (list)",
		(*shell).doCapture,
	}
}

// lineWriter sends text to the shell's output.
type lineWriter struct{ s *shell }

func (w lineWriter) Write(p []byte) (int, error) { w.s.out(string(p)); return len(p), nil }

func (s *shell) doMeasure(ctx context.Context, args string) bool {
	fl := pflag.NewFlagSet("measure", pflag.ContinueOnError)
	fl.SetOutput(io.Discard)
	m := &measureFlags{}
	addMeasureFlags(fl, m)
	if err := fl.Parse(strings.Fields(args)); err != nil {
		s.outf("measure: %v\n", err)
		return false
	}
	pos := fl.Args()
	switch len(pos) {
	case 0:
	case 2:
		m.from, m.to = pos[0], pos[1]
	default:
		s.out("usage: measure [src dst] [options]\n")
		return false
	}
	for _, n := range pos {
		if _, err := s.net.Node(n); err != nil {
			s.outf("node '%s' not in network\n", n)
			return false
		}
	}
	cfg, err := m.config()
	if err != nil {
		s.outf("measure: %s\n", strings.TrimPrefix(err.Error(), ErrUsage.Error()+": "))
		return false
	}
	s.interruptible(ctx, func(ctx context.Context) error {
		return runMeasure(ctx, s.net, m, cfg, s.stdout, lineWriter{s})
	})
	return false
}

func (s *shell) doCapture(_ context.Context, args string) bool {
	f := strings.Fields(args)
	if len(f) == 0 {
		caps := s.net.Captures()
		if len(caps) == 0 {
			s.out("no captures running\n")
		}
		for _, c := range caps {
			s.outf("%s-%s -> %s\n", c.Spec.Node1, c.Spec.Node2, strings.Join(c.Files, ", "))
		}
		return false
	}
	if f[0] == "stop" {
		s.captureStop(f[1:])
		return false
	}
	if len(f) < 2 {
		s.out("usage: capture node1 node2 [a>b|b>a|both] [FILE.pcapng] [limit=BYTES]\n")
		return false
	}
	spec := hymn.CaptureSpec{Node1: f[0], Node2: f[1], Dir: hymn.BothDirections}
	for _, a := range f[2:] {
		switch {
		case a == "a>b" || a == "b>a" || a == "both":
			spec.Dir, _ = hymn.ParseDirection(a)
		case strings.HasPrefix(a, "limit="):
			p, err := hymn.ParseCaptureSpec("a-b," + a)
			if err != nil {
				s.outf("capture: %v\n", err)
				return false
			}
			spec.Limit = p.Limit
		case strings.HasSuffix(a, ".pcapng") || strings.HasSuffix(a, ".pcap"):
			spec.File = a
		default:
			s.outf("capture: unexpected %q (a>b, b>a, both, FILE.pcapng or limit=BYTES)\n", a)
			return false
		}
	}
	lc, err := s.net.StartCapture(spec)
	if err != nil {
		s.outf("capture: %v\n", err)
		return false
	}
	s.outf("*** Capturing %s-%s (%s) to %s\n", spec.Node1, spec.Node2, dirName(spec.Dir), strings.Join(lc.Files, " and "))
	return false
}

func dirName(d hymn.Direction) string { return d.String() }

func (s *shell) captureStop(which []string) {
	if len(which) != 0 && len(which) != 2 {
		s.out("usage: capture stop [node1 node2]\n")
		return
	}
	stopped := 0
	for _, c := range s.net.Captures() {
		if len(which) == 2 && !(c.Spec.Node1 == which[0] && c.Spec.Node2 == which[1]) && !(c.Spec.Node1 == which[1] && c.Spec.Node2 == which[0]) {
			continue
		}
		st, err := c.Stop()
		if err != nil {
			s.outf("capture %s-%s: %v\n", c.Spec.Node1, c.Spec.Node2, err)
		}
		for _, x := range st {
			s.outf("*** %s: %d packets written", x.Interface, x.Packets)
			if x.LimitDropped+x.KernelDropped > 0 {
				s.outf(", %d over the limit, %d dropped by the kernel", x.LimitDropped, x.KernelDropped)
			}
			s.out("\n")
		}
		s.outf("*** Wrote %s\n", strings.Join(c.Files, " and "))
		stopped++
	}
	s.net.ForgetStoppedCaptures()
	if stopped == 0 {
		s.out("no such capture running\n")
	}
}
