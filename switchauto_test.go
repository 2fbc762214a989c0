package hymn

import (
	"strings"
	"testing"

	"github.com/hymn-net/hymn/topo"
)

// TestSwitchAuto: SwitchAuto resolves in New, without root, to BPF
// switches for loop-free topologies without STP and to Linux bridges for a
// torus, a switch asking for STP, a loop, a VLAN or more ports than a BPF
// switch takes; the reason names the switch or link that decided it. A
// kind the caller names is kept, with no note.
func TestSwitchAuto(t *testing.T) {
	spec := func(s string) *topo.Topo {
		tp, err := topo.FromSpecString(s)
		if err != nil {
			t.Fatal(err)
		}
		return tp
	}
	triangle := topo.New()
	for _, s := range []string{"s1", "s2", "s3"} {
		triangle.AddSwitch(s)
		triangle.AddLink(triangle.AddHost("h"+s[1:]), s)
	}
	triangle.AddLink("s1", "s2")
	triangle.AddLink("s2", "s3")
	triangle.AddLink("s3", "s1")
	double := topo.New() // two links between one pair of switches loop too
	double.AddSwitch("s1")
	double.AddSwitch("s2")
	double.AddLink("s1", "s2")
	double.AddLink("s1", "s2")
	stpFile := topo.New()
	stpFile.AddSwitch("s1", topo.Params{"stp": "1"})
	stpFile.AddLink(stpFile.AddHost("h1"), "s1")
	vlan := topo.New()
	vlan.AddSwitch("s1")
	vlan.AddLink(vlan.AddHost("h1", topo.Params{"vlan": "10"}), "s1")
	routers := topo.New() // a router between two switches is no layer-2 loop
	routers.AddSwitch("s1")
	routers.AddSwitch("s2")
	routers.AddRouter("r1")
	routers.AddLink("r1", "s1")
	routers.AddLink("r1", "s2")
	routers.AddLink("s1", "s2")
	for _, c := range []struct {
		name string
		t    *topo.Topo
		opts Options
		want SwitchKind
		why  string // in the note
	}{
		{"linear", spec("linear,4"), Options{}, SwitchBPF, "loop-free topology without STP"},
		{"tree", spec("tree,depth=2,fanout=3"), Options{}, SwitchBPF, "loop-free"},
		{"minimal", spec("minimal"), Options{}, SwitchBPF, "loop-free"},
		{"routers", routers, Options{}, SwitchBPF, "loop-free"},
		{"torus", spec("torus,3,3"), Options{}, SwitchLinuxBridge, "runs STP"},
		{"stp option", spec("linear,2"), Options{STP: true}, SwitchLinuxBridge, "switch s1 runs STP"},
		{"stp param", stpFile, Options{}, SwitchLinuxBridge, "switch s1 runs STP"},
		{"triangle", triangle, Options{}, SwitchLinuxBridge, "loop (link s3-s1 closes it)"},
		{"double link", double, Options{}, SwitchLinuxBridge, "loop (link s1-s2 closes it)"},
		{"vlan", vlan, Options{}, SwitchLinuxBridge, "node h1 asks for a VLAN"},
		{"ports", spec("single,1100"), Options{MaxNodes: -1}, SwitchLinuxBridge, "1100 ports"},
	} {
		c.opts.Switch = SwitchAuto
		n, err := New(c.t, c.opts)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if n.opts.Switch != c.want || !strings.HasPrefix(n.switchNote, string(c.want)+" (hymn's default") || !strings.Contains(n.switchNote, c.why) {
			t.Errorf("%s: switch %s, note %q; want %s and %q", c.name, n.opts.Switch, n.switchNote, c.want, c.why)
		}
	}
	for _, k := range []SwitchKind{"", SwitchLinuxBridge, SwitchBPF} {
		n, err := New(spec("linear,2"), Options{Switch: k})
		if err != nil || n.opts.Switch != k || n.switchNote != "" {
			t.Errorf("Switch %q: %v, kept %q, note %q", k, err, n.opts.Switch, n.switchNote)
		}
	}
	if k, err := ParseSwitchKind("auto"); err != nil || k != SwitchAuto {
		t.Errorf("ParseSwitchKind(auto) = %q, %v", k, err)
	}
}
