package topo

import (
	"strings"
	"testing"
)

func TestDOT(t *testing.T) {
	top, _ := mustLoad(t, `
nodes:
  - {name: s1, kind: switch}
  - {name: h1, backend: vm}
  - {name: r1, kind: router, ip: 10.1.0.1/24}
links:
  - endpoints: [h1, s1]
    params: {delay: 5ms, bw: 10}
  - a: {node: r1, intf: r1-lan, ip: 10.1.0.1/24}
    b: {node: s1}
    a>b: {loss: 1%}
    b>a: {delay: 2ms, note: 'say "hi"'}
  - a: {node: r1, ip: 10.9.0.1/30}
    b: {node: h1, ip: 10.9.0.2/30}
`)
	got, err := TopoDOT(top, AddressOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `graph "hymn" {
	graph [fontname="Helvetica", overlap=false, splines=true];
	node [fontname="Helvetica", fontsize=11];
	edge [fontname="Helvetica", fontsize=9, labelfontsize=8, labelfontcolor="#555555"];
	"h1" [shape=box, style="rounded", label="h1\n10.0.0.1/8\n(vm)"];
	"r1" [shape=hexagon, style=filled, fillcolor="#fde4c8", label="r1\n10.1.0.1/24"];
	"s1" [shape=ellipse, style=filled, fillcolor="#dbe9f6", label="s1"];
	"h1" -- "s1" [taillabel="h1-eth0", headlabel="s1-eth1", label="bw=10 delay=5ms"];
	"r1" -- "h1" [taillabel="r1-eth1\n10.9.0.1/30", headlabel="h1-eth1\n10.9.0.2/30"];
	"r1" -- "s1" [taillabel="r1-lan", headlabel="s1-eth2", label="r1→s1: loss=1%\ns1→r1: delay=2ms note=say \"hi\""];
}
`
	if got != want {
		t.Errorf("DOT:\n%s\nwant:\n%s", got, want)
	}
}

func TestDOTQuoting(t *testing.T) {
	if got := dotQuote("a\"b\\c\nd"); got != `"a\"b\\c\nd"` {
		t.Errorf("dotQuote = %s", got)
	}
	top := New()
	top.AddLink(top.AddHost("h1"), top.AddSwitch("s1"), Params{"x": `"; evil -- "y`})
	got, err := TopoDOT(top, AddressOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, `label="x=\"; evil -- \"y"`) {
		t.Errorf("DOT:\n%s", got)
	}
}
