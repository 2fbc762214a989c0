package topo_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/topo"
)

// fuzzLimits keeps generated topologies small enough to fuzz quickly.
var fuzzLimits = topo.Limits{MaxNodes: 3000}

// checkPlan asserts what every resolved plan must satisfy, whatever the
// input: names a namespace and the kernel accept.
func checkPlan(t *testing.T, top *topo.Topo) {
	t.Helper()
	plan, err := topo.Resolve(top, topo.AddressOptions{})
	if err != nil {
		checkOneLineEach(t, err)
		return
	}
	for _, n := range plan.Nodes {
		if err := topo.CheckNodeName(n.Name); err != nil {
			t.Fatalf("resolved a bad node name: %v", err)
		}
		for _, i := range n.Intfs {
			if err := topo.CheckIntfName(i.Name); err != nil {
				t.Fatalf("resolved a bad interface name: %v", err)
			}
		}
	}
	for _, l := range plan.Links {
		if err := topo.CheckLinkParams(l.Params); err != nil {
			t.Fatalf("resolved bad link params: %v", err)
		}
	}
}

// checkOneLineEach asserts each joined error is one line of bounded size.
func checkOneLineEach(t *testing.T, err error) {
	t.Helper()
	for _, line := range strings.Split(err.Error(), "\n") {
		if line == "" {
			t.Fatalf("empty error line in %q", err)
		}
		if len(line) > 4096 {
			t.Fatalf("error line of %d bytes", len(line))
		}
	}
}

func FuzzSpecString(f *testing.F) {
	for _, s := range []string{"minimal", "single,3", "reversed,4", "linear,4", "linear,3,2", "tree,2,3",
		"tree,depth=2,fanout=3", "torus,3,3", "torus,3,4,2", "linear,100000000", "tree,depth=30,fanout=2",
		"tree,depth=2147483647,fanout=1", "torus,2147483647,2147483647,2147483647", "linear,k=2,n=3", "single,-1",
		"linear,1,n=1", "tree,fanout=0", "", ",", "linear,,", "linear,=3", "x=1", "linear,k=1,k=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		top, err := topo.FromSpecStringWith(s, fuzzLimits)
		if err != nil {
			checkOneLineEach(t, err)
			return
		}
		if top.NodeCount() > 3000 {
			t.Fatalf("%q: %d nodes beyond the limit", s, top.NodeCount())
		}
		checkPlan(t, top)
	})
}

func addFileSeeds(f *testing.F, pattern string) {
	files, _ := filepath.Glob(pattern)
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil && len(data) < 1<<16 {
			f.Add(data)
		}
	}
}

func FuzzLoadFile(f *testing.F) {
	addFileSeeds(f, "../examples/*.yaml")
	addFileSeeds(f, "../examples/*.json")
	for _, s := range []string{
		"nodes: [h1, h2]\nlinks:\n  - endpoints: [h1, h2]\n    params: {delay: abc}\n",
		"nodes: [h1, h2]\nlinks:\n  - {a: {node: h1, intf: '../x'}, b: h2}\n",
		"nodes: ['..', '-h']\n",
		"nodes:\n  - {name: h1, backend: vm, params: {cpupin: '0-9223372036854775807'}}\n",
		"nodes:\n  - {name: h1, params: {cpu: NaN}}\n",
		"nodes: [h1, s1]\nlinks: [{endpoints: [h1, s1], params: {mtu: 1e9, bw: -1}}]\n",
		"a: &a [*a]\n",
		"defaults: {link: &l {<<: *l}}\nnodes: [h1]\n",
		`{"nodes": ["h1", "h2"], "links": [{"endpoints": ["h1", "h2"], "a>b": {"delay": "10ms"}}]}`,
		"nodes: {h1: {kind: router, routes: [default via 10.0.0.1]}, s1: {kind: switch}}\nlinks: [{a: {node: h1, port: 2147483647}, b: s1}]\n",
		strings.Repeat("[", 300) + strings.Repeat("]", 300),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		top, _, err := topo.Load("f.yaml", data)
		if err != nil {
			checkOneLineEach(t, err)
			return
		}
		checkPlan(t, top)
	})
}

func FuzzMiniEditResolve(f *testing.F) {
	addFileSeeds(f, "testdata/*.mn")
	for _, s := range []string{
		`{"hosts": [{"number": "1", "opts": {"hostname": ".."}}], "switches": [], "links": []}`,
		`{"hosts": [{"number": "1", "opts": {"hostname": "h1"}}, {"number": "2", "opts": {"hostname": "h2"}}], "switches": [], "links": [{"src": "h1", "dest": "h2", "opts": {"delay": "abc"}}]}`,
		`{"application": {"ipBase": "10.0.0.0/30"}, "hosts": [{"number": "99999999999", "opts": {"nodeNum": 4294967297}}], "switches": [], "links": []}`,
		`{"hosts": [], "switches": [{"number": "1", "opts": {"switchType": "legacyRouter"}}], "links": [], "controllers": {}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		top, _, err := topo.LoadMiniEditData("f.mn", data)
		if err != nil {
			checkOneLineEach(t, err)
			return
		}
		checkPlan(t, top)
	})
}

func FuzzCustomResult(f *testing.F) {
	for _, s := range []string{
		`{"nodes": [{"name": "h1", "kind": "host", "params": {}}, {"name": "s1", "kind": "switch", "params": {}}], "links": [{"node1": "h1", "node2": "s1", "port1": 0, "port2": 1, "params": {}}]}`,
		`{"nodes": [{"name": "..", "kind": "host"}]}`,
		`{"nodes": [{"name": "h1", "kind": "vm"}]}`,
		`{"nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"}], "links": [{"node1": "h1", "node2": "h2", "port1": 1e300, "port2": -1}]}`,
		`{"nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"}], "links": [{"node1": "h1", "node2": "h2", "port1": null, "port2": "x", "params": {"intfName1": "a b", "delay": "abc"}}]}`,
		`{"nodes": [{"name": "h1", "kind": "host", "params": {"cpu": "NaN", "defaultRoute": "via -batch"}}]}`,
		`{"error": "NameError", "line": 3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		top, err := topo.DecodeCustomResultForTest(data)
		if err != nil {
			checkOneLineEach(t, err)
			return
		}
		if top != nil {
			checkPlan(t, top)
		}
	})
}
