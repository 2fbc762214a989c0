package topo

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
)

func needPython(t *testing.T) {
	t.Helper()
	testenv.Tools(t, "python3")
}

func loadCustom(t *testing.T, file, spec string) (*Topo, []string) {
	t.Helper()
	s, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	top, warnings, err := LoadCustom(context.Background(), file, s)
	if err != nil {
		t.Fatalf("LoadCustom(%s, %s): %v", file, spec, err)
	}
	return top, warnings
}

func TestLoadCustomTwoSwitches(t *testing.T) {
	needPython(t)
	top, warnings := loadCustom(t, "testdata/custom-2sw2host.py", "twosw")
	if got := linkStrings(top.Links()); !slices.Equal(got, []string{"h1:0-s3:1", "s3:2-s4:1", "s4:2-h2:0"}) {
		t.Errorf("links = %v", got)
	}
	if got := nodeNames(top.Switches()); !slices.Equal(got, []string{"s3", "s4"}) {
		t.Errorf("switches = %v", got)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings = %q", warnings)
	}
}

// Mininet's own example, unchanged, where the machine has it (Debian's
// mininet package does not ship custom/); otherwise hymn's file of the same
// shape, so the test always runs.
func TestLoadCustomMininetExample(t *testing.T) {
	needPython(t)
	var file string
	for _, f := range []string{
		"/usr/share/doc/mininet/examples/custom/topo-2sw-2host.py",
		"/usr/share/doc/mininet/custom/topo-2sw-2host.py",
		"/usr/share/mininet/custom/topo-2sw-2host.py",
		"/usr/lib/python3/dist-packages/mininet/custom/topo-2sw-2host.py",
	} {
		if _, err := os.Stat(f); err == nil {
			file = f
			break
		}
	}
	if file == "" {
		file = "../examples/topo-2sw-2host.py"
	}
	top, _ := loadCustom(t, file, "mytopo")
	if got := linkStrings(top.Links()); !slices.Equal(got, []string{"h1:0-s3:1", "s3:2-s4:1", "s4:2-h2:0"}) {
		t.Errorf("links = %v", got)
	}
}

func TestLoadCustomParameters(t *testing.T) {
	needPython(t)
	top, warnings := loadCustom(t, "testdata/custom-router.py", "router,2,delay=5ms")
	kinds := map[string]Kind{}
	for _, n := range top.Nodes() {
		kinds[n.Name] = n.Kind
	}
	want := map[string]Kind{"r0": KindRouter, "g0": KindRouter, "s1": KindSwitch, "s2": KindSwitch,
		"h1": KindHost, "h2": KindHost, "x1": KindHost}
	if !mapsEqualKinds(kinds, want) {
		t.Errorf("kinds = %v, want %v", kinds, want)
	}
	h1 := top.Node("h1").Params
	wantH1 := Params{"ip": "192.168.1.101/24", "defaultRoute": "via 192.168.1.1", "cls": "CPULimitedHost",
		"cpu": "0.5", "memory": "512M", "colour": "blue", "inNamespace": "True"}
	if !mapsEqual(h1, wantH1) {
		t.Errorf("h1 params = %v, want %v", h1, wantH1)
	}
	if p := top.Node("x1").Params; p["ip"] != "none" || p["cls"] != "MyHost" {
		t.Errorf("x1 params = %v", p)
	}
	if got := linkStrings(top.Links()); !slices.Equal(got, []string{"s1:1-r0:0", "s2:1-r0:1", "h1:0-s1:2", "h2:0-s1:3", "x1:0-s2:9"}) {
		t.Errorf("links = %v", got)
	}
	l := top.Links()
	if p := l[0].Params; !mapsEqual(p, Params{"intfName2": "r0-eth1", "ip2": "192.168.1.1/24"}) {
		t.Errorf("s1-r0 params = %v", p)
	}
	if p := l[2].Params; !mapsEqual(p, Params{"cls": "TCLink", "delay": "5ms", "bw": "10", "use_htb": "True", "mac1": "00:00:00:00:01:01"}) {
		t.Errorf("h1-s1 params = %v", p)
	}
	all := strings.Join(warnings, "\n")
	for _, w := range []string{
		"node h1: option colour=blue is not used by hymn",
		"node h1: option inNamespace=True",
		"r0: cls=LinuxRouter is built as a hymn router",
		"x1: cls=MyHost is built as a plain host",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("warnings lack %q:\n%s", w, all)
		}
	}
	for _, w := range []string{"memory", "use_htb", "s1: cls"} {
		if strings.Contains(all, w) {
			t.Errorf("warnings mention %q, which hymn knows:\n%s", w, all)
		}
	}
	if _, err := Resolve(top, AddressOptions{}); err != nil {
		t.Errorf("Resolve: %v", err)
	}
}

func mapsEqualKinds(a, b map[string]Kind) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestLoadCustomErrors(t *testing.T) {
	needPython(t)
	cases := []struct{ file, spec, want string }{
		{"testdata/custom-raise.py", "broken", "testdata/custom-raise.py:8: ValueError: no room for h2"},
		{"testdata/custom-syntax.py", "oops", "testdata/custom-syntax.py:3: SyntaxError:"},
		{"testdata/custom-import.py", "x", "testdata/custom-import.py:1: ModuleNotFoundError: No module named 'no_such_module_anywhere'"},
		{"testdata/custom-raise.py", "nosuch", `topology "nosuch" is not defined in testdata/custom-raise.py (its topos dictionary has: broken, fine); valid topologies are: broken, fine, linear,`},
		{"testdata/custom-2sw2host.py", "twosw,3", "TypeError:"},
		{"testdata/missing.py", "x", "no such file"},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			s, _ := ParseSpec(c.spec)
			top, _, err := LoadCustom(context.Background(), c.file, s)
			if err == nil || top != nil {
				t.Fatalf("top=%v err=%v; want error %q", top != nil, err, c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error:\n  %v\nwant it to contain:\n  %s", err, c.want)
			}
		})
	}
	// A raising file is bad input, with the traceback kept for debugging.
	s, _ := ParseSpec("broken")
	_, _, err := LoadCustom(context.Background(), "testdata/custom-raise.py", s)
	ce, ok := errors.AsType[*CustomError](err)
	if !ok || !errors.Is(err, ErrBadFile) || !strings.Contains(ce.Traceback, "Traceback (most recent call last)") {
		t.Errorf("err = %#v", err)
	}
}

// A built-in name works with --custom too: mn merges the file's topos into
// its own.
func TestLoadCustomBuiltinFallback(t *testing.T) {
	needPython(t)
	top, _ := loadCustom(t, "testdata/custom-2sw2host.py", "linear,3")
	if top.NodeCount() != 6 {
		t.Errorf("linear,3 has %d nodes", top.NodeCount())
	}
}

// The mininet package's topolib gives the same wiring as hymn's built-ins.
func TestLoadCustomTopolib(t *testing.T) {
	needPython(t)
	dir := t.TempDir()
	file := dir + "/lib.py"
	src := "from mininet.topolib import TreeTopo, TorusTopo\nfrom mininet.topo import LinearTopo, SingleSwitchReversedTopo\n" +
		"topos = {'t': TreeTopo, 'l': LinearTopo, 'r': SingleSwitchReversedTopo, 'x': TorusTopo}\n"
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{{"t,depth=2,fanout=3", "tree,depth=2,fanout=3"}, {"l,3,2", "linear,3,2"}, {"r,4", "reversed,4"}, {"x,3,3", "torus,3,3"}} {
		t.Run(c[0], func(t *testing.T) {
			got, _ := loadCustom(t, file, c[0])
			want := mustSpec(t, c[1])
			if g, w := linkStrings(got.Links()), linkStrings(want.Links()); !slices.Equal(g, w) {
				t.Errorf("links\n  %v\nwant (%s)\n  %v", g, c[1], w)
			}
		})
	}
}

func writeCustom(t *testing.T, src string) string {
	t.Helper()
	file := t.TempDir() + "/custom.py"
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// The custom file runs against hymn's own mininet package, but nothing in
// it may build or reach a network while hymn reads the file: each of these
// fails at its line, naming what to use instead.
func TestLoadCustomRefusesNetwork(t *testing.T) {
	needPython(t)
	head := "from mininet.topo import Topo\nfrom mininet.net import Mininet\nfrom mininet.cli import CLI\n" +
		"class T(Topo):\n    def build(self):\n        self.addHost('h1')\n"
	cases := []struct{ name, src, want string }{
		{"mininet at import", head + "net = Mininet(T())\ntopos = {'t': T}\n",
			`:7: CustomFileError: Creating a Mininet object is not possible while hymn reads a custom topology file (--custom)`},
		{"mininet in build", head + "class U(Topo):\n    def build(self):\n        Mininet()\ntopos = {'t': U}\n",
			`:9: CustomFileError: Creating a Mininet object is not possible`},
		{"subclass", head + "class N(Mininet):\n    pass\nN()\ntopos = {'t': T}\n",
			`:9: CustomFileError: Creating a Mininet object is not possible`},
		{"treenet", "from mininet.topolib import TreeNet\nTreeNet(depth=1)\ntopos = {}\n",
			`CustomFileError: Creating a Mininet object is not possible`},
		{"cli", head + "CLI(None)\ntopos = {'t': T}\n",
			`:7: CustomFileError: Starting the Mininet CLI is not possible`},
		{"connection", "from mininet import _hymn\n_hymn.shared()\ntopos = {}\n",
			`:2: CustomFileError: Reaching a hymn network is not possible`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// HYMN_BIN names a program that must never run.
			marker := t.TempDir() + "/ran"
			bin := t.TempDir() + "/hymn"
			if err := os.WriteFile(bin, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o700); err != nil {
				t.Fatal(err)
			}
			t.Setenv("HYMN_BIN", bin)
			s, _ := ParseSpec("t")
			top, _, err := LoadCustom(context.Background(), writeCustom(t, c.src), s)
			if err == nil || top != nil {
				t.Fatalf("loaded: top=%v err=%v", top != nil, err)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `use "hymn python SCRIPT"`) {
				t.Errorf("error:\n  %v\nwant it to contain:\n  %s\nand name hymn python SCRIPT", err, c.want)
			}
			if !errors.Is(err, ErrBadFile) {
				t.Errorf("error %v is not ErrBadFile", err)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the custom file ran hymn")
			}
		})
	}
}

// What custom files import at load time comes from the real package, with
// Mininet's behaviour: helpers work, cleanup() is skipped with a warning,
// and a name Mininet lacks is an ImportError as under mn.
func TestLoadCustomImports(t *testing.T) {
	needPython(t)
	src := `from mininet.topo import Topo
from mininet.node import Host, CPULimitedHost, OVSSwitch, OVSBridge, UserSwitch, LinuxBridge, RemoteController, Controller
from mininet.nodelib import NAT
from mininet.link import Link, TCLink, Intf, TCIntf
from mininet.util import irange, custom, quietRun, which, retry, waitListening, dumpNodeConnections, makeNumeric
from mininet.log import setLogLevel, info, lg, OUTPUT
from mininet.clean import cleanup
from mininet.moduledeps import moduleDeps
from mininet.term import makeTerm
import mininet
setLogLevel('warning')
cleanup()
assert makeNumeric('3') == 3 and OUTPUT == 25
class T(Topo):
    def build(self, n=2):
        s = self.addSwitch('s1', cls=OVSBridge)
        for i in irange(1, n):
            self.addLink(self.addHost('h%d' % i, cls=custom(CPULimitedHost, cpu=.1)), s, cls=TCLink, bw=5)
topos = {'t': T}
`
	top, warnings := loadCustom(t, writeCustom(t, src), "t,3")
	if got := linkStrings(top.Links()); !slices.Equal(got, []string{"h1:0-s1:1", "h2:0-s1:2", "h3:0-s1:3"}) {
		t.Errorf("links = %v", got)
	}
	if p := top.Node("h2").Params; p["cls"] != "CPULimitedHost" || p["cpu"] != "0.1" {
		t.Errorf("h2 params = %v", p)
	}
	if p := top.Links()[0].Params; p["cls"] != "TCLink" || p["bw"] != "5" {
		t.Errorf("h1-s1 params = %v", p)
	}
	if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "cleanup()") }) {
		t.Errorf("no warning about cleanup(): %q", warnings)
	}
	s, _ := ParseSpec("t")
	_, _, err := LoadCustom(context.Background(), writeCustom(t, "from mininet.node import NoSuchSwitch\n"), s)
	if err == nil || !strings.Contains(err.Error(), ":1: ImportError: cannot import name 'NoSuchSwitch'") {
		t.Errorf("err = %v", err)
	}
}
