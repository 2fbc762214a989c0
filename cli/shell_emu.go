package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hymn-net/hymn"
)

func init() {
	shellCommands["emu"] = shellCommand{
		"Show or change a link's emulator, live.\n" +
			"Usage: emu node1 node2                      show both directions\n" +
			"       emu node1 node2 [a>b|b>a] params...  change them (a is node1)\n" +
			"params: the emulator's text form (delay 10ms 1ms distribution normal loss 1% rate 100mbit ...)\n" +
			"or Mininet's key=value (delay=10ms bw=10 loss=1). A link without an emulator gets one.",
		(*shell).doEmu,
	}
	shellCommands["stats"] = shellCommand{
		"Per-link, per-direction counters of the emulated links.\nUsage: stats [node1 node2]",
		(*shell).doStats,
	}
}

func (s *shell) doEmu(_ context.Context, args string) bool {
	f := strings.Fields(args)
	if len(f) < 2 {
		s.out("usage: emu node1 node2 [a>b|b>a] [params...]\n")
		return false
	}
	for _, n := range f[:2] {
		if _, err := s.net.Node(n); err != nil {
			s.outf("node '%s' not in network\n", n)
			return false
		}
	}
	if len(f) == 2 {
		st, err := s.net.LinkStats(f[0], f[1])
		if errors.Is(err, hymn.ErrNoEmulator) {
			s.outf("link %s-%s has no emulator; \"emu %s %s delay 10ms\" (any parameters) inserts one live\n", f[0], f[1], f[0], f[1])
			return false
		}
		if err != nil {
			s.outf("%v\n", err)
			return false
		}
		s.outf("%s->%s: %s\n%s->%s: %s\n", f[0], f[1], configText(st.ForwardConfig.String()), f[1], f[0], configText(st.ReverseConfig.String()))
		return false
	}
	rest := f[2:]
	dir := hymn.BothDirections
	if d, err := hymn.ParseDirection(rest[0]); err == nil && rest[0] != "" && strings.Contains(rest[0], ">") {
		dir, rest = d, rest[1:]
	}
	if len(rest) == 0 {
		s.out("emu: no parameters given\n")
		return false
	}
	if err := s.net.SetLinkParams(f[0], f[1], dir, strings.Join(rest, " ")); err != nil {
		s.outf("%v\n", err)
	}
	return false
}

func configText(c string) string {
	if c == "" {
		return "(no impairment)"
	}
	return c
}

func (s *shell) doStats(_ context.Context, args string) bool {
	f := strings.Fields(args)
	var pairs [][2]string
	switch len(f) {
	case 0:
		pairs = s.net.EmulatedLinks()
		if len(pairs) == 0 {
			s.out("no emulated links: add link parameters (--link tc,delay=10ms or emu n1 n2 delay 10ms)\n")
			return false
		}
	case 2:
		pairs = [][2]string{{f[0], f[1]}}
	default:
		s.out("usage: stats [node1 node2]\n")
		return false
	}
	var b strings.Builder
	for _, p := range pairs {
		st, err := s.net.LinkStats(p[0], p[1])
		if err != nil {
			s.outf("%v\n", err)
			continue
		}
		WriteDirectionStats(&b, fmt.Sprintf("%s->%s", p[0], p[1]), st.Forward)
		WriteDirectionStats(&b, fmt.Sprintf("%s->%s", p[1], p[0]), st.Reverse)
	}
	s.out(b.String())
	return false
}
