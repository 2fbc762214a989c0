package topo

import (
	"strings"
	"testing"
)

func TestFileRoutingAndIPv6Options(t *testing.T) {
	tp, fo, err := Load("r.yaml", []byte(`options: {routing: static, ipv6: true, ipbase6: "fd00:1::/48"}
nodes:
  - {name: r1, kind: router, routing: none}
  - h1
links:
  - endpoints: [r1, h1]
`))
	if err != nil {
		t.Fatal(err)
	}
	if fo.Routing != "static" || !fo.IPv6 || fo.IPBase6.String() != "fd00:1::/48" {
		t.Fatalf("options %+v", fo)
	}
	if tp.Node("r1").Params["routing"] != "none" {
		t.Fatalf("r1 params %v", tp.Node("r1").Params)
	}
	for _, c := range []struct{ data, want string }{
		{"options: {routing: rip}\nnodes: [h1]\n", `r.yaml:1:20: options.routing: "rip" is not a routing mode (use none, static)`},
		{"options: {ipbase6: 10.0.0.0/8}\nnodes: [h1]\n", `r.yaml:1:20: options.ipbase6: "10.0.0.0/8" is not an IPv6 network`},
		{"options: {ipv6: maybe}\nnodes: [h1]\n", "r.yaml:1:17: options.ipv6:"},
		{"nodes:\n  - {name: h1, routing: static}\n", "r.yaml:2:12: nodes[0].routing: routing applies to routers (kind: router)"},
		{"nodes:\n  - {name: r1, kind: router, routing: ospf6}\n", `nodes[0].routing: "ospf6" is not a routing mode`},
	} {
		_, _, err := Load("r.yaml", []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.data, err, c.want)
		}
	}
}
