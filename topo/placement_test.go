package topo

import (
	"fmt"
	"strings"
	"testing"
)

func TestPlacementInFile(t *testing.T) {
	tp, _, err := Load("p.yaml", []byte(`
nodes:
  - {name: h1, placement: 1}
  - h2
  - {name: s1, kind: switch}
  - {name: s2, kind: switch, params: {placement: 0}}
links:
  - endpoints: [h1, s1]
  - endpoints: [h2, s2]
  - endpoints: [s1, s2]
placement:
  - nodes: [h2, s2]
  - nodes: [s1]
    worker: 1
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ node, key, want string }{
		{"h1", ParamPlacement, "1"},
		{"s2", ParamPlacement, "0"},
		{"h2", ParamPlacementGroup, "placement[0]"},
		{"s2", ParamPlacementGroup, "placement[0]"},
		{"s1", ParamPlacementGroup, "placement[1]"},
		{"s1", ParamPlacement, "1"},
	} {
		if got := tp.Node(c.node).Params[c.key]; got != c.want {
			t.Errorf("%s %s = %q, want %q", c.node, c.key, got, c.want)
		}
	}
	if _, ok := tp.Node("h2").Params[ParamPlacement]; ok {
		t.Errorf("h2 got a worker from a group without one")
	}
}

func TestPlacementBadInFile(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"node placement not a number", "nodes:\n  - {name: h1, placement: east}\n",
			"p.yaml:2:27: nodes[0].placement: must be an integer"},
		{"node placement negative", "nodes:\n  - {name: h1, placement: -2}\n",
			`p.yaml:2:27: nodes[0].placement: placement "-2" is not a worker number`},
		{"node placement huge", "nodes:\n  - {name: h1, placement: 99999999}\n",
			`nodes[0].placement: placement "99999999" is not a worker number (0 to 4095)`},
		{"placement in params not a number", "nodes:\n  - {name: h1, params: {placement: x}}\n",
			`p.yaml:2:12: nodes[0]: node h1: placement="x": must be a worker number`},
		{"placement in defaults", "defaults:\n  host: {placement: 1.5}\nnodes: [h1]\n",
			`node h1: placement="1.5": must be a worker number`},
		{"field and params", "nodes:\n  - {name: h1, placement: 1, params: {placement: 1}}\n",
			"placement is given both as a field and in params"},
		{"top level not a list", "nodes: [h1]\nplacement: {h1: 0}\n",
			"p.yaml:2:12: placement: must be a list of groups"},
		{"group without nodes", "nodes: [h1]\nplacement:\n  - worker: 0\n",
			"p.yaml:3:5: placement[0]: a placement group needs nodes"},
		{"group empty", "nodes: [h1]\nplacement:\n  - nodes: []\n",
			"p.yaml:3:12: placement[0].nodes: must be a non-empty list"},
		{"unknown key", "nodes: [h1]\nplacement:\n  - {nodes: [h1], wrker: 1}\n",
			`placement[0].wrker: unknown key "wrker"`},
		{"unknown node", "nodes: [h1]\nplacement:\n  - nodes: [h1, h9]\n",
			`p.yaml:3:17: placement[0].nodes[1]: unknown node: placement of undefined node "h9"`},
		{"two groups", "nodes: [h1, h2]\nplacement:\n  - nodes: [h1]\n  - nodes: [h2, h1]\n",
			"p.yaml:4:17: placement[1].nodes[1]: node h1 is already in placement[0]"},
		{"group contradicts node", "nodes:\n  - {name: h1, placement: 0}\nplacement:\n  - {nodes: [h1], worker: 1}\n",
			"placement[0].nodes[0]: node h1 has placement 0 of its own, but its group says worker 1"},
		{"group worker bad", "nodes: [h1]\nplacement:\n  - {nodes: [h1], worker: -1}\n",
			`placement[0].worker: placement "-1" is not a worker number`},
		{"group worker not int", "nodes: [h1]\nplacement:\n  - {nodes: [h1], worker: one}\n",
			"placement[0].worker: must be an integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Load("p.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\ndoes not say %q", err, tc.want)
			}
		})
	}
}

// Go callers set the parameter directly; Resolve checks it like the file.
func TestPlacementParamChecked(t *testing.T) {
	tp := New()
	tp.AddHost("h1", Params{ParamPlacement: "x"})
	if _, err := Resolve(tp, AddressOptions{}); err == nil || !strings.Contains(err.Error(), "placement") {
		t.Fatalf("bad placement accepted: %v", err)
	}
	for _, v := range []string{"0", "7", " 3 "} {
		t.Run(fmt.Sprintf("%q", v), func(t *testing.T) {
			t.Parallel()
			if _, err := ParsePlacement(v); err != nil {
				t.Error(err)
			}
		})
	}
	for _, v := range []string{"", "-1", "4096", "1e3", "0x1", "one"} {
		t.Run(fmt.Sprintf("invalid %q", v), func(t *testing.T) {
			t.Parallel()
			if _, err := ParsePlacement(v); err == nil {
				t.Error("accepted")
			}
		})
	}
}
