package topo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
)

func TestBuiltinNodeCounts(t *testing.T) {
	cases := []struct {
		name string
		got  uint64
		want uint64
	}{
		{"single,3", singleNodes(3), 4},
		{"linear,4", linearNodes(4, 1), 8},
		{"linear,3,2", linearNodes(3, 2), 9},
		{"tree,2,3", treeNodes(2, 3), 13},
		{"tree,0,5", treeNodes(0, 5), 1},
		{"tree,depth=30,fanout=2", treeNodes(30, 2), 1<<31 - 1},
		{"tree,depth=2147483647,fanout=1", treeNodes(math.MaxInt32, 1), math.MaxInt32 + 1},
		{"tree,depth=100,fanout=1000", treeNodes(100, 1000), math.MaxUint64},
		{"torus,3,3", torusNodes(3, 3, 1), 18},
		{"linear,max,max", linearNodes(math.MaxInt, math.MaxInt), math.MaxUint64},
		{"torus,max", torusNodes(math.MaxInt, math.MaxInt, math.MaxInt), math.MaxUint64},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("%d nodes, want %d", c.got, c.want)
			}
		})
	}
	// The counts match what the builders make.
	for _, spec := range []string{"minimal", "single,5", "reversed,3", "linear,4,3", "tree,3,2", "torus,3,4,2"} {
		t.Run("built "+spec, func(t *testing.T) {
			t.Parallel()
			top, err := FromSpecString(spec)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := ParseSpec(spec)
			b := builtins[s.Name]
			p, _ := s.bindInts(b.params, b.defaults)
			var want uint64
			switch s.Name {
			case "minimal":
				want = singleNodes(2)
			case "single", "reversed":
				want = singleNodes(p["k"])
			case "linear":
				want = linearNodes(p["k"], p["n"])
			case "tree":
				want = treeNodes(p["depth"], p["fanout"])
			case "torus":
				want = torusNodes(p["x"], p["y"], p["n"])
			}
			if uint64(top.NodeCount()) != want {
				t.Errorf("built %d nodes, counted %d", top.NodeCount(), want)
			}
		})
	}
}

func TestBuiltinSizeLimit(t *testing.T) {
	cases := []struct {
		spec string
		max  int
		want string // "" for accepted
	}{
		{"linear,100000000", 0, "--topo linear,100000000: 200000000 nodes exceeds the limit of"},
		{"tree,depth=30,fanout=2", 0, "--topo tree,depth=30,fanout=2: 2147483647 nodes exceeds the limit of"},
		{"tree,depth=2147483647,fanout=1", 0, "2147483648 nodes exceeds"},
		{"torus,100000,100000,100000", 0, "nodes exceeds the limit"},
		{"tree,64,64", 0, "more than 18446744073709551614 nodes"},
		{"single,10", 10, "11 nodes exceeds the limit of 10 (estimated 1 MiB per node against MemAvailable; set --max-nodes to raise it)"},
		{"single,10", 11, ""},
		{"linear,3000", -1, ""},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/max=%d", c.spec, c.max), func(t *testing.T) {
			start := time.Now()
			top, err := FromSpecStringWith(c.spec, Limits{MaxNodes: c.max})
			testenv.Elapsed(t, "building "+c.spec, time.Since(start), time.Second)
			if c.want == "" {
				if err != nil || top == nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v; want ErrTooLarge with %q on one line", err, c.want)
			}
		})
	}
	if DefaultMaxNodes() < minMaxNodes {
		t.Errorf("DefaultMaxNodes() = %d", DefaultMaxNodes())
	}
}

func TestNodeNames(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"h1", true}, {"s1.a", true}, {"_x", true}, {"r-1", true}, {"9", true},
		{"", false}, {".", false}, {"..", false}, {"-h", false}, {"--help", false}, {".hidden", false},
		{"a/b", false}, {"../etc", false}, {"h 1", false}, {"h1;rm", false}, {"hé", false}, {"h\x00", false},
		{strings.Repeat("a", MaxNodeName), true}, {strings.Repeat("a", MaxNodeName+1), false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q", c.name), func(t *testing.T) {
			err := checkNodeName(c.name)
			if (err == nil) != c.ok {
				t.Fatalf("checkNodeName: %v, want ok=%v", err, c.ok)
			}
			top := New()
			top.AddHost(c.name)
			if (top.Err() == nil) != c.ok {
				t.Fatalf("AddHost: %v, want ok=%v", top.Err(), c.ok)
			}
		})
	}
}

func TestIntfNames(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"eth0", true}, {"h1-eth0", true}, {"a@b", true}, {"x123456789012345"[:15], true},
		{"", false}, {".", false}, {"..", false}, {"-x", false}, {"a/b", false}, {"a:b", false}, {"a b", false},
		{"0123456789abcdef", false}, {"é", false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q", c.name), func(t *testing.T) {
			if err := CheckIntfName(c.name); (err == nil) != c.ok {
				t.Fatalf("CheckIntfName: %v, want ok=%v", err, c.ok)
			}
			top := New()
			top.AddLink(top.AddHost("h1"), top.AddHost("h2"), Params{"intfName1": c.name})
			_, err := Resolve(top, AddressOptions{})
			if c.name != "" && (err == nil) != c.ok {
				t.Fatalf("Resolve: %v, want ok=%v", err, c.ok)
			}
		})
	}
}

func TestResolveChecksParams(t *testing.T) {
	cases := []struct {
		name  string
		node  Params
		link  Params
		field string // in the error; "" for accepted
	}{
		{"cpu NaN", Params{"cpu": "NaN"}, nil, "cpu"},
		{"cpu Inf", Params{"cpu": "+Inf"}, nil, "cpu"},
		{"cpu 2", Params{"cpu": "2"}, nil, "cpu"},
		{"cpu 0", Params{"cpu": "0"}, nil, "cpu"},
		{"cpu .5", Params{"cpu": ".5"}, nil, ""},
		{"cpu -1", Params{"cpu": "-1"}, nil, ""},
		{"defaultRoute option", Params{"defaultRoute": "via -batch"}, nil, "defaultRoute"},
		{"defaultRoute ok", Params{"defaultRoute": "via 10.0.0.1"}, nil, ""},
		{"routes bad", Params{"routes": "10.0.0.0/8 via x"}, nil, "routes"},
		{"backend bad", Params{"backend": "docker"}, nil, "backend"},
		{"mtu huge", nil, Params{"mtu": "1000000000"}, "mtu"},
		{"mtu text", nil, Params{"mtu": "big"}, "mtu"},
		{"mtu ok", nil, Params{"mtu": "9000"}, ""},
		{"kind bad", nil, Params{"kind": "wifi"}, "kind"},
		{"intfName path", nil, Params{"intfName1": "../x"}, "intfName1"},
		{"intfName long", nil, Params{"intfName2": "abcdefghijklmnop"}, "intfName2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			top := New()
			top.AddLink(top.AddHost("h1", c.node), top.AddHost("h2"), c.link)
			_, err := Resolve(top, AddressOptions{})
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.field) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v; want one line naming %s", err, c.field)
			}
		})
	}
}

// notATime stands in for hymn's emulator check, which topo cannot run.
func notATime(p Params) error {
	for _, k := range []string{"delay", "a>b.delay", "b>a.delay"} {
		if v, ok := p[k]; ok && v != "10ms" {
			return fmt.Errorf("%s=%s: not a time", k, v)
		}
	}
	return nil
}

// TestLinkParamsCheckedAtLoad: topo's own parameters are checked at load,
// with their positions; the emulator's are recorded so that hymn.New's
// check (stood in for by notATime, applied as hymn.New applies it) names
// the same file, line and field.
func TestLinkParamsCheckedAtLoad(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"yaml params", "nodes: [h1, h2]\nlinks:\n  - endpoints: [h1, h2]\n    params: {delay: abc}\n", "f.yaml:4:21: links[0].params.delay: delay=abc: not a time"},
		{"yaml direction", "nodes: [h1, h2]\nlinks:\n  - endpoints: [h1, h2]\n    a>b: {delay: abc}\n", "f.yaml:4:18: links[0].a>b.delay"},
		{"yaml defaults", "defaults: {link: {delay: abc}}\nnodes: [h1, h2]\nlinks:\n  - endpoints: [h1, h2]\n", "f.yaml:4:5: links[0].params: delay=abc"},
		{"yaml mtu", "nodes: [h1, h2]\nlinks:\n  - endpoints: [h1, h2]\n    params: {mtu: 0}\n", "f.yaml:4:19: links[0].params.mtu"},
		{"yaml good", "nodes: [h1, h2]\nlinks:\n  - endpoints: [h1, h2]\n    params: {delay: 10ms}\n", ""},
		{"node cpu", "nodes:\n  - {name: h1, params: {cpu: .nan}}\n", "f.yaml:2:12: nodes[0]: node h1: cpu"},
		{"node name ..", "nodes: ['..']\n", "f.yaml:1:9: nodes[0].name"},
		{"node name -h", "nodes: ['-h']\n", "f.yaml:1:9: nodes[0].name"},
		{"intf", "nodes: [h1, h2]\nlinks:\n  - {a: {node: h1, intf: '-x'}, b: h2}\n", "f.yaml:3:26: links[0].a.intf"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			top, _, err := Load("f.yaml", []byte(c.src))
			if err == nil {
				err = checkLikeHymn(t, top)
			}
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), c.want) || !errors.Is(err, ErrBadFile) {
				t.Fatalf("error %v; want it to start with %q", err, c.want)
			}
		})
	}
	// MiniEdit link options are recorded the same way.
	mn := `{"hosts": [{"number": "1", "opts": {"hostname": "h1"}}, {"number": "2", "opts": {"hostname": "h2"}}],
"switches": [], "links": [{"src": "h1", "dest": "h2", "opts": {"delay": "abc"}}]}`
	top, _, err := LoadMiniEditData("f.mn", []byte(mn))
	if err == nil {
		err = checkLikeHymn(t, top)
	}
	if err == nil || !strings.Contains(err.Error(), "links[0].opts.delay") {
		t.Errorf("MiniEdit delay=abc: %v", err)
	}
	// A topology built in Go has no positions: the error names the link.
	top = New()
	top.AddLink(top.AddHost("h1"), top.AddHost("h2"), Params{"delay": "abc"})
	if err := checkLikeHymn(t, top); err == nil || !strings.Contains(err.Error(), "link h1-eth0<->h2-eth0: delay=abc") {
		t.Errorf("Go topology delay=abc: %v", err)
	}
}

// checkLikeHymn resolves top and checks each link's parameters with
// notATime the way hymn.New checks them with the emulator's parser: the
// first key the file wrote that is wrong on its own, else the whole set.
func checkLikeHymn(t *testing.T, top *Topo) error {
	t.Helper()
	plan, err := Resolve(top, AddressOptions{})
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range plan.Links {
		err := notATime(l.Params)
		if err == nil {
			continue
		}
		key := ""
		for _, k := range l.FileKeys() {
			if one := notATime(Params{k: l.Params[k]}); one != nil {
				key, err = k, one
				break
			}
		}
		errs = append(errs, l.ParamsError(key, err))
	}
	return errors.Join(errs...)
}

func TestFileSizeLimit(t *testing.T) {
	sparse := filepath.Join(t.TempDir(), "sparse.yaml")
	if err := os.WriteFile(sparse, nil, 0o600); err != nil || os.Truncate(sparse, DefaultMaxFileSize+1) != nil {
		t.Fatal("cannot make a sparse file")
	}
	fifo := filepath.Join(t.TempDir(), "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, []byte("nodes: [h1]\n"+strings.Repeat("# padding\n", 200)), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		lim        Limits
		load       func(string, Limits) (*Topo, FileOptions, error)
		want       string
	}{
		{"dev zero", "/dev/zero", Limits{MaxFileSize: 1 << 20}, LoadFileWith, "/dev/zero: not a regular file: it is a character device"},
		{"sparse", sparse, Limits{}, LoadFileWith, "sparse.yaml is larger than the limit of 16 MiB (set --max-file-size to raise it)"},
		{"dev zero miniedit", "/dev/zero", Limits{MaxFileSize: 1 << 10}, LoadMiniEditWith, "/dev/zero: not a regular file: it is a character device"},
		{"fifo", fifo, Limits{}, LoadFileWith, "fifo.yaml: not a regular file: it is a named pipe (FIFO)"},
		{"fifo miniedit", fifo, Limits{}, LoadMiniEditWith, "not a regular file: it is a named pipe (FIFO)"},
		{"small limit", big, Limits{MaxFileSize: 100}, LoadFileWith, "larger than the limit of 100 bytes"},
		{"raised", big, Limits{MaxFileSize: 1 << 20}, LoadFileWith, ""},
		{"directory", t.TempDir(), Limits{}, LoadFileWith, "is a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, _, err := c.load(c.path, c.lim)
			testenv.Elapsed(t, "loading "+c.name, time.Since(start), time.Second)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want %q", err, c.want)
			}
		})
	}
}

func TestCustomLimits(t *testing.T) {
	testenv.Tools(t, "python3")
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	loop := write("loop.py", "while True:\n    pass\n")
	chatty := write("chatty.py", "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n")
	many := write("many.py", `from mininet.topo import Topo
class T(Topo):
    def build(self, n=50):
        s = self.addSwitch('s1')
        for i in range(n):
            self.addLink(self.addHost('h%d' % (i + 1)), s)
topos = {'t': T}
`)
	cases := []struct {
		name, file, spec string
		lim              Limits
		want             string
	}{
		{"endless", loop, "t", Limits{CustomTimeout: time.Second}, "ran longer than the limit of 1s (set --custom-timeout to raise it)"},
		{"endless output", chatty, "t", Limits{CustomTimeout: time.Second}, "ran longer than the limit of 1s"},
		{"large result", many, "t", Limits{MaxFileSize: 1 << 10}, "larger than the limit of 1 KiB (set --max-file-size to raise it)"},
		{"too many nodes", many, "t,n=200", Limits{MaxNodes: 100}, "201 nodes exceeds the limit of 100"},
		{"builtin fallback", many, "tree,30,2", Limits{}, "2147483647 nodes exceeds"},
		{"within limits", many, "t", Limits{}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec, err := ParseSpec(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, _, err = LoadCustomWith(context.Background(), c.file, spec, c.lim)
			testenv.Elapsed(t, "loading the custom file", time.Since(start), 10*time.Second)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want ErrTooLarge with %q", err, c.want)
			}
		})
	}
}

func TestCustomResultChecked(t *testing.T) {
	cases := []struct {
		name, json, want string
	}{
		{"dotdot", `{"nodes": [{"name": "..", "kind": "host"}]}`, `node name ".."`},
		{"option name", `{"nodes": [{"name": "-h", "kind": "host"}]}`, `node name "-h"`},
		{"kind", `{"nodes": [{"name": "h1", "kind": "vm"}]}`, `unexpected kind`},
		{"port", `{"nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"}], "links": [{"node1": "h1", "node2": "h2", "port1": 1e300, "port2": 0}]}`, "not a port number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := decodeCustomResult([]byte(c.json))
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = res.build()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want %q", err, c.want)
			}
		})
	}
}

func TestSizeCountsCheckedBeforeReading(t *testing.T) {
	many := func(n int, item string) string { return strings.Repeat(item, n) }
	cases := []struct {
		name string
		src  string
		mn   bool
		want string
	}{
		{"nodes", "nodes:\n" + many(11, "- h\n"), false, "f:2:1: nodes: 11 nodes exceeds the limit of 10"},
		{"links", "nodes: [h1, h2]\nlinks:\n" + many(41, "- endpoints: [h1, h2]\n"), false, "f:3:1: links: 41 links exceeds the limit of 40 (4 per allowed node; set --max-nodes to raise it)"},
		{"links within", "nodes: [h1, h2]\nlinks:\n" + many(9, "- endpoints: [h1, h2]\n"), false, ""},
		{"miniedit hosts", `{"hosts": [` + strings.TrimSuffix(many(11, `{"number": "1"},`), ",") + `], "switches": [], "links": []}`, true, "hosts: 11 nodes exceeds the limit of 10"},
		{"miniedit links", `{"hosts": [], "switches": [], "links": [` + strings.TrimSuffix(many(41, `{"src": "h1", "dest": "h2"},`), ",") + `]}`, true, "links: 41 links exceeds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.mn {
				_, _, err = loadMiniEdit("f", []byte(c.src), Limits{MaxNodes: 10})
			} else {
				_, _, err = loadWith("f", []byte(c.src), Limits{MaxNodes: 10}, LocalFiles(""))
			}
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v; want one line with %q", err, c.want)
			}
		})
	}
	if err := (Limits{MaxNodes: 5}).CheckSize("x", 5, 21); err == nil || !strings.Contains(err.Error(), "x: 21 links exceeds the limit of 20") {
		t.Errorf("CheckSize: %v", err)
	}
	if err := (Limits{MaxNodes: -1}).CheckSize("x", math.MaxUint64-1, math.MaxUint64-1); err != nil {
		t.Errorf("no limit: %v", err)
	}
}

func TestAddressesChecked(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"broadcast mac", "nodes:\n  - {name: h1, mac: 'ff:ff:ff:ff:ff:ff'}\n", "multicast or broadcast"},
		{"multicast mac", "nodes:\n  - {name: h1, mac: '01:00:5e:00:00:01'}\n", "multicast or broadcast"},
		{"zero mac", "nodes:\n  - {name: h1, mac: '00:00:00:00:00:00'}\n", "all-zero"},
		{"long mac", "nodes:\n  - {name: h1, mac: '00:00:00:00:00:00:00:01'}\n", "not a MAC address"},
		{"end mac", "nodes: [h1, h2]\nlinks:\n  - {a: {node: h1, mac: 'ff:ff:ff:ff:ff:ff'}, b: h2}\n", "links[0].a.mac"},
		{"route dev path", "nodes:\n  - {name: h1, routes: ['default dev ../x']}\n", "route \"default dev ../x\": dev"},
		{"route dev option", "nodes:\n  - {name: h1, routes: ['default dev -x']}\n", "must not start with '-'"},
		{"good", "nodes:\n  - {name: h1, mac: '02:00:00:00:00:01', routes: ['default dev h1-eth0']}\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Load("f.yaml", []byte(c.src))
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want %q", err, c.want)
			}
		})
	}
	top := New()
	top.AddHost("h1", Params{"mac": "ff:ff:ff:ff:ff:ff"})
	if _, err := Resolve(top, AddressOptions{}); err == nil || !strings.Contains(err.Error(), "broadcast") {
		t.Errorf("Resolve broadcast MAC: %v", err)
	}
}

func TestCheckMemory(t *testing.T) {
	if _, err := memAvailable(); err != nil {
		testenv.Skip(t, "no /proc/meminfo")
	}
	cases := []struct {
		name  string
		lim   Limits
		bytes uint64
		want  string
	}{
		{"fits", Limits{}, 1 << 20, ""},
		{"too much", Limits{}, math.MaxUint64, "topology: 3 VMs: 17592186044415 MiB of memory is more than the"},
		{"check skipped", Limits{MaxNodes: -1}, math.MaxUint64, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.lim.CheckMemory("topology: 3 VMs", c.bytes)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "memory=") {
				t.Fatalf("error %v; want %q", err, c.want)
			}
		})
	}
}

func TestParamsMTU(t *testing.T) {
	for _, tc := range []struct {
		p    Params
		want int
	}{
		{nil, 0}, {Params{}, 0}, {Params{"mtu": "9000"}, 9000}, {Params{"mtu": " 1400 "}, 1400},
		{Params{"mtu": "big"}, 0}, {Params{"mtu": ""}, 0}, {Params{"mtu": "99999999999999999999"}, 0},
	} {
		if got := tc.p.MTU(); got != tc.want {
			t.Errorf("%v.MTU() = %d, want %d", tc.p, got, tc.want)
		}
	}
}
