package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
)

// TestDefaultSwitchSaysWhich: hymn's default switch is an eBPF switch for
// a loop-free topology and a Linux bridge with STP for a torus, and the
// line after "*** Creating network" says which; a switch named with
// --switch gets no such line (Mininet's lines only).
func TestDefaultSwitchSaysWhich(t *testing.T) {
	testenv.Root(t)
	for _, c := range []struct {
		args []string
		want string // the second line; "" for none
	}{
		{[]string{"--topo", "linear,3", "--test", "pingall"}, `^\*\*\* Switches: bpf \(hymn's default for a loop-free topology without STP: .*--switch lxbr for Linux bridges\)$`},
		{[]string{"--topo", "torus,3,3", "--test", "build"}, `^\*\*\* Switches: lxbr \(hymn's default here: switch s1x1 runs STP, which eBPF switches lack; --switch to choose another\)$`},
		{[]string{"--switch", "auto,stp=1", "--topo", "linear,2", "--test", "build"}, `^\*\*\* Switches: lxbr \(hymn's default here: switch s1 runs STP`},
		{[]string{"--switch", "lxbr", "--topo", "linear,2", "--test", "build"}, ""},
		{[]string{"--switch", "bpf", "--topo", "linear,2", "--test", "build"}, ""},
	} {
		code, _, stderr := run(t, c.args...)
		lines := strings.Split(stderr, "\n")
		if code != 0 || len(lines) < 3 || lines[0] != "*** Creating network" {
			t.Errorf("hymn %v: exit %d\n%s", c.args, code, stderr)
			continue
		}
		if c.want == "" {
			if lines[1] != "*** Adding controller" {
				t.Errorf("hymn %v: second line %q, want Mininet's *** Adding controller", c.args, lines[1])
			}
			continue
		}
		if !regexp.MustCompile(c.want).MatchString(lines[1]) || lines[2] != "*** Adding controller" {
			t.Errorf("hymn %v: lines 2-3 %q %q, want %s then *** Adding controller", c.args, lines[1], lines[2], c.want)
		}
		if strings.Contains(strings.Join(c.args, " "), "pingall") && !strings.Contains(stderr, "*** Results: 0% dropped (6/6 received)") {
			t.Errorf("hymn %v: pingall on the default switch:\n%s", c.args, stderr)
		}
	}
}
