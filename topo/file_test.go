package topo

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
)

func mustLoad(t *testing.T, src string) (*Topo, FileOptions) {
	t.Helper()
	top, opts, err := Load("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return top, opts
}

func TestLoadFullFormat(t *testing.T) {
	top, opts := mustLoad(t, `
name: demo
options: {ipbase: 192.168.0.0/16, mac: true}
defaults:
  node: {backend: netns}
  router: {cpus: 2}
  link: {mtu: 9000}
nodes:
  - name: s1
    kind: switch
    params: {stp: true}
  - name: h1
    backend: vm
    ip: 192.168.1.1/24
    mac: 00:00:00:00:00:11
    routes: ["default via 192.168.1.254"]
    params: {memory: 512M, cpus: 1}
  - h2
  - name: r1
    kind: router
links:
  - endpoints: [h1, s1]
    params: {bw: 10, delay: 5ms}
  - a: {node: r1, port: 3, intf: r1-wan, ip: 10.9.0.1/30, mac: "02:00:00:00:00:01"}
    b: {node: h2, ip: 10.9.0.2/30}
    a>b: {delay: 10ms, jitter: 1ms}
    b>a: {delay: 20ms}
  - endpoints: [r1, {node: s1, port: 7}]
`)
	if opts.IPBase != netip.MustParsePrefix("192.168.0.0/16") || !opts.AutoMAC {
		t.Errorf("options = %+v", opts)
	}
	h1 := top.Node("h1")
	want := Params{"backend": "vm", "ip": "192.168.1.1/24", "mac": "00:00:00:00:00:11",
		"routes": "default via 192.168.1.254", "memory": "512M", "cpus": "1"}
	if !mapsEqual(h1.Params, want) || h1.Kind != KindHost {
		t.Errorf("h1 = %v %v, want host %v", h1.Kind, h1.Params, want)
	}
	if r1 := top.Node("r1"); r1.Kind != KindRouter || r1.Params["cpus"] != "2" || r1.Params["backend"] != "netns" {
		t.Errorf("r1 = %v %v", r1.Kind, r1.Params)
	}
	if s1 := top.Node("s1"); s1.Kind != KindSwitch || s1.Params["stp"] != "true" {
		t.Errorf("s1 = %v %v", s1.Kind, s1.Params)
	}
	links := top.Links()
	if got := linkStrings(links); !slices.Equal(got, []string{"h1:0-s1:1", "r1:3-h2:0", "r1:4-s1:7"}) {
		t.Errorf("links = %v", got)
	}
	if want := (Params{"mtu": "9000", "bw": "10", "delay": "5ms"}); !mapsEqual(links[0].Params, want) {
		t.Errorf("link 0 params = %v, want %v", links[0].Params, want)
	}
	want = Params{"mtu": "9000", "intfName1": "r1-wan", "ip1": "10.9.0.1/30", "mac1": "02:00:00:00:00:01",
		"ip2": "10.9.0.2/30", "a>b.delay": "10ms", "a>b.jitter": "1ms", "b>a.delay": "20ms"}
	if !mapsEqual(links[1].Params, want) {
		t.Errorf("link 1 params = %v, want %v", links[1].Params, want)
	}
	plan, err := Resolve(top, opts.Address())
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if i := plan.Node("r1").Intfs[0]; i.Name != "r1-wan" || i.IP.String() != "10.9.0.1/30" {
		t.Errorf("r1's first interface = %s %s", i.Name, i.IP)
	}
}

func mapsEqual(a, b Params) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestLoadNodeMapFormAndJSON(t *testing.T) {
	yamlTop, _ := mustLoad(t, "nodes:\n  s1: {kind: switch}\n  h1:\n  h2: {ip: 10.0.0.7}\nlinks:\n  - endpoints: [h1, s1]\n  - endpoints: [h2, s1]\n")
	// JSON with an escape YAML does not know ("\/") takes the JSON path.
	jsonTop, _ := mustLoad(t, `{"nodes": {"s1": {"kind": "switch"}, "h1": null, "h2": {"ip": "10.0.0.7"}},
	"links": [{"endpoints": ["h1", "s1"]}, {"endpoints": ["h2", "s1"], "params": {"note": "a\/b"}}]}`)
	for _, c := range []struct {
		name string
		top  *Topo
	}{{"yaml", yamlTop}, {"json", jsonTop}} {
		t.Run(c.name, func(t *testing.T) {
			if got := linkStrings(c.top.Links()); !slices.Equal(got, []string{"h1:0-s1:1", "h2:0-s1:2"}) {
				t.Errorf("links = %v", got)
			}
			if c.top.Node("h2").Params["ip"] != "10.0.0.7" {
				t.Errorf("h2 params = %v", c.top.Node("h2").Params)
			}
		})
	}
	// Line numbers survive the JSON path.
	_, _, err := Load("t.json", []byte("{\"nodes\": [\"h1\"],\n \"links\": [{\"endpoints\": [\"h1\", \"x\\/y\"]}]}"))
	if err == nil || !strings.Contains(err.Error(), "t.json:2:") {
		t.Errorf("JSON error = %v, want a position on line 2", err)
	}
}

func TestLoadMergeKeys(t *testing.T) {
	top, _ := mustLoad(t, `
defaults:
  link: &wan {delay: 10ms, bw: 5}
nodes: [h1, h2]
links:
  - endpoints: [h1, h2]
    params: {<<: *wan, bw: 7}
`)
	if p := top.Links()[0].Params; p["delay"] != "10ms" || p["bw"] != "7" {
		t.Errorf("params = %v", p)
	}
	// Each level merges the previous one twice: expanding merges naively
	// would take 2^60 steps.
	var b strings.Builder
	b.WriteString("nodes:\n  - name: h0\n    params: &p0 {k0: v}\n")
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&b, "  - name: h%d\n    params: &p%d {<<: [*p%d, *p%d], k%d: v}\n", i, i, i-1, i-1, i)
	}
	top, _ = mustLoad(t, b.String())
	if n := len(top.Node("h60").Params); n != 61 {
		t.Errorf("h60 has %d params, want 61", n)
	}
}

// Every bad input gives an error naming the file, the line and the field,
// and no topology.
func TestLoadBadInput(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"wrong type", "nodes:\n  - name: h1\n    params: 5\n", "bad.yaml:3:13: nodes[0].params: must be a mapping"},
		{"wrong type port", "nodes: [h1, h2]\nlinks:\n  - a: {node: h1, port: x}\n    b: h2\n", "bad.yaml:3:25: links[0].a.port: must be an integer, got a string"},
		{"unknown key", "nodes:\n  - name: h1\n    colour: red\n", `bad.yaml:3:5: nodes[0].colour: unknown key "colour"`},
		{"unknown top key", "nodes: [h1]\nlinkz: []\n", `bad.yaml:2:1: linkz: unknown key "linkz"`},
		{"unknown endpoint key", "nodes: [h1, h2]\nlinks:\n  - a: {node: h1, prot: 1}\n    b: h2\n", `bad.yaml:3:19: links[0].a.prot: unknown key "prot"`},
		{"undefined node", "nodes: [h1]\nlinks:\n  - endpoints: [h1, s9]\n", `bad.yaml:3:21: links[0].endpoints[1]: link to undefined node "s9"`},
		{"duplicate name", "nodes:\n  - h1\n  - name: h1\n", `bad.yaml:3:11: nodes[1].name: duplicate node name: "h1" is already defined at line 2`},
		{"duplicate key", "nodes:\n  h1: {}\n  h1: {}\n", `bad.yaml:3:3: nodes.h1: key "h1" is given twice`},
		{"invalid address", "nodes:\n  - name: h1\n    ip: 10.0.0.300/8\n", `bad.yaml:3:9: nodes[0].ip: "10.0.0.300/8" is not an IPv4 address`},
		{"invalid link address", "nodes: [h1, h2]\nlinks:\n  - a: {node: h1, ip: 1.2.3}\n    b: h2\n", `bad.yaml:3:23: links[0].a.ip: "1.2.3" is not an IPv4 address`},
		{"invalid mac", "nodes:\n  - name: h1\n    mac: 00:11\n", `bad.yaml:3:10: nodes[0].mac: "00:11" is not a MAC address`},
		{"invalid ipbase", "options: {ipbase: fe80::/64}\nnodes: [h1]\n", `bad.yaml:1:19: options.ipbase: "fe80::/64" is not an IPv4 network`},
		{"bad kind", "nodes:\n  - name: h1\n    kind: hots\n", `bad.yaml:3:11: nodes[0].kind: "hots" is not a node kind`},
		{"bad backend", "nodes:\n  - name: h1\n    backend: xen\n", `nodes[0].backend: "xen" is not a backend`},
		{"bad route", "nodes:\n  - name: h1\n    routes: [\"10.0.0.0/24 by 10.0.0.1\"]\n", `bad.yaml:3:14: nodes[0].routes[0]: route "10.0.0.0/24 by 10.0.0.1": unknown word "by"`},
		{"route without next hop", "nodes:\n  - name: h1\n    routes: [default]\n", `says neither via nor dev`},
		{"port twice", "nodes: [h1, h2, s1]\nlinks:\n  - a: {node: s1, port: 1}\n    b: h1\n  - a: {node: s1, port: 1}\n    b: h2\n", `bad.yaml:5:5: links[1]: node s1: port 1 is used twice`},
		{"self link", "nodes: [h1]\nlinks:\n  - endpoints: [h1, h1]\n", `links[0]: a node cannot be linked to itself`},
		{"three ends", "nodes: [h1, h2, h3]\nlinks:\n  - endpoints: [h1, h2, h3]\n", `bad.yaml:3:16: links[0].endpoints: a link has exactly two ends, got 3`},
		{"both forms", "nodes: [h1, h2]\nlinks:\n  - endpoints: [h1, h2]\n    a: h1\n", `links[0]: give either endpoints: or a: and b:`},
		{"bad name", "nodes:\n  - name: h 1\n", `bad.yaml:2:11: nodes[0].name: node name "h 1"`},
		{"long name", "nodes: [averyverylongname1, h2]\nlinks:\n  - endpoints: [averyverylongname1, h2]\n", `bad.yaml:3:17: links[0].endpoints[0]: interface name averyverylongname1-eth0 is 23 bytes`},
		{"switch with ip", "nodes:\n  - name: s1\n    kind: switch\n    ip: 10.0.0.1\n", `nodes[0].ip: a switch has no address`},
		{"field and params", "nodes:\n  - name: h1\n    ip: 10.0.0.1\n    params: {ip: 10.0.0.2}\n", `nodes[0].params.ip: ip is given both as a field and in params`},
		{"no nodes", "links: []\n", `bad.yaml:1:1: nodes: the file defines no nodes`},
		{"empty", "", `bad.yaml: the file is empty`},
		{"not a mapping", "- h1\n", `must be a mapping`},
		{"syntax", "nodes: [h1\n", `bad.yaml:`},
		{"list params value", "nodes:\n  - name: h1\n    params: {cpus: [1, 2]}\n", `bad.yaml:3:20: nodes[0].params.cpus: must be a string, number or boolean, got a list`},
		{"two documents", "nodes: [h1]\n---\nnodes: [h2]\n", `one document`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			top, _, err := Load("bad.yaml", []byte(c.src))
			if err == nil {
				t.Fatalf("no error; want %q", c.want)
			}
			if top != nil {
				t.Errorf("a topology came back with the error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error:\n  %v\nwant it to contain:\n  %s", err, c.want)
			}
			if !errors.Is(err, ErrBadFile) {
				t.Errorf("error does not match ErrBadFile: %v", err)
			}
		})
	}
}

func TestLoadFileReadError(t *testing.T) {
	_, _, err := LoadFile(filepath.Join(t.TempDir(), "missing.yaml"))
	if err == nil || errors.Is(err, ErrBadFile) {
		t.Errorf("err = %v; want an I/O error that is not ErrBadFile", err)
	}
}

// The YAML examples load, resolve, and are wired as their comments say.
func TestLoadExamples(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			top, opts, err := LoadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Resolve(top, opts.Address()); err != nil {
				t.Errorf("Resolve: %v", err)
			}
		})
	}
	top, _, err := LoadFile("../examples/line7.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Resolve(top, AddressOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 7; k++ {
		n := plan.Node(fmt.Sprintf("h%d", k))
		wantKind := KindRouter
		if k == 1 || k == 7 {
			wantKind = KindHost
		}
		if n.Kind != wantKind {
			t.Errorf("h%d is a %s, want %s", k, n.Kind, wantKind)
		}
		// The node's address is its first interface's, on the link to its left.
		if d := n.DefaultIntf(); d.IP != n.IP {
			t.Errorf("h%d: default interface %s has %s, node ip %s", k, d.Name, d.IP, n.IP)
		}
		if k > 1 && k < 7 {
			if len(n.Intfs) != 2 || n.Intfs[1].IP.String() != fmt.Sprintf("10.0.%d.1/24", k) {
				t.Errorf("h%d interfaces = %v", k, n.Intfs)
			}
			if strings.Count(n.Params["routes"], ";") != 3 {
				t.Errorf("h%d routes = %q; want 4 routes (every subnet not directly connected)", k, n.Params["routes"])
			}
		}
	}
}

// The JSON Schema is valid JSON and describes the keys the loader accepts.
func TestSchemaMatchesLoader(t *testing.T) {
	data, err := os.ReadFile("../schema/topology.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Defs       map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
		AdditionalProperties *bool `json:"additionalProperties"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatalf("schema is not valid JSON: %v", err)
	}
	if schema.AdditionalProperties == nil || *schema.AdditionalProperties {
		t.Errorf("schema must reject unknown top-level keys (additionalProperties: false)")
	}
	check := func(what string, props map[string]json.RawMessage, keys []string) {
		var got []string
		for k := range props {
			got = append(got, k)
		}
		slices.Sort(got)
		want := slices.Clone(keys)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: schema has %v, loader accepts %v", what, got, want)
		}
	}
	check("top level", schema.Properties, topLevelKeys)
	check("options", schema.Defs["options"].Properties, optionKeys)
	check("defaults", schema.Defs["defaults"].Properties, defaultKeys)
	check("node", schema.Defs["node"].Properties, nodeKeys)
	check("link", schema.Defs["link"].Properties, linkKeys)
	check("endpoint", schema.Defs["endpointObject"].Properties, endpointKeys)
}

func FuzzLoad(f *testing.F) {
	for _, name := range []string{"../examples/line7.yaml", "../examples/star.yaml", "../examples/wan.yaml"} {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		"",
		"nodes: [h1, h2]\nlinks: [{endpoints: [h1, h2]}]\n",
		"nodes: {h1: null, s1: {kind: switch}}\nlinks: [{a: {node: h1, port: 3}, b: s1}]\n",
		`{"nodes": ["h1", "h2"], "links": [{"endpoints": ["h1", "h2"], "params": {"x": "a\/b"}}]}`,
		"a: &a [*a]\n",
		"nodes: &n [h1, *n]\n",
		"defaults: {link: &l {delay: 1ms}}\nnodes: [h1, h2]\nlinks: [{endpoints: [h1, h2], params: {<<: [*l, *l]}}]\n",
		"nodes:\n  - name: h1\n    routes: [\"default via 10.0.0.1\", 5]\n",
		"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
		"nodes:\n  - name: h0\n    params: &a {k: v}\n  - name: h1\n    params: &b {<<: [*a, *a]}\n  - name: h2\n    params: {<<: [*b, *b]}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		top, _, err := Load("fuzz.yaml", data)
		if (top == nil) == (err == nil) {
			t.Fatalf("Load returned topology %v and error %v", top != nil, err)
		}
		if err == nil {
			if terr := top.Err(); terr != nil {
				t.Fatalf("returned a topology with errors: %v", terr)
			}
		}
	})
}

// With python3's jsonschema and yaml modules at hand (CI may lack them),
// the examples are validated against the schema itself, and a file the
// loader refuses is refused by the schema too.
func TestSchemaValidatesExamples(t *testing.T) {
	const script = `
import glob, json, sys, jsonschema, yaml
schema = json.load(open("../schema/topology.schema.json"))
jsonschema.Draft202012Validator.check_schema(schema)
v = jsonschema.Draft202012Validator(schema)
failed = False
for f in sorted(glob.glob("../examples/*.yaml")):
    for e in v.iter_errors(yaml.safe_load(open(f))):
        print(f, e.message); failed = True
bad = yaml.safe_load("nodes:\n  - name: h1\n    colour: red\n")
if v.is_valid(bad):
    print("the schema accepts an unknown node key"); failed = True
sys.exit(1 if failed else 0)
`
	testenv.Tools(t, "python3")
	python, _ := exec.LookPath("python3")
	if exec.Command(python, "-c", "import jsonschema, yaml").Run() != nil {
		testenv.Skip(t, "python3's jsonschema and yaml modules are not installed (apt-get install python3-jsonschema python3-yaml)")
	}
	if out, err := exec.Command(python, "-c", script).CombinedOutput(); err != nil {
		t.Errorf("schema validation: %v\n%s", err, out)
	}
}
