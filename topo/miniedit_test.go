package topo

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestLoadMiniEdit(t *testing.T) {
	top, opts, err := LoadMiniEdit("testdata/miniedit.mn")
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeNames(top.Hosts()); !slices.Equal(got, []string{"h1", "h2", "h5", "r3"}) {
		t.Errorf("hosts = %v", got)
	}
	if got := nodeNames(top.Switches()); !slices.Equal(got, []string{"s1", "s2"}) {
		t.Errorf("switches = %v", got)
	}
	if top.Node("r3").Kind != KindRouter {
		t.Errorf("r3 (a legacyRouter) is a %s", top.Node("r3").Kind)
	}
	// An empty ip means "from nodeNum", as MiniEdit's ipAdd does: h5 is
	// 10.0.0.5 although it is the third host.
	for name, want := range map[string]string{"h1": "10.0.0.1/8", "h2": "10.0.0.22/8", "h5": "10.0.0.5/8"} {
		if got := top.Node(name).Params["ip"]; got != want {
			t.Errorf("%s ip = %q, want %q", name, got, want)
		}
	}
	if p := top.Node("h2").Params; p["defaultRoute"] != "via 10.0.0.254" || p["cpu"] != "0.5" || p["sched"] != "cfs" {
		t.Errorf("h2 params = %v", p)
	}
	if _, ok := top.Node("h1").Params["sched"]; ok {
		t.Errorf("h1 without cpu should not carry sched: %v", top.Node("h1").Params)
	}
	if top.Node("s2").Params["dpid"] != "0000000000000002" {
		t.Errorf("s2 params = %v", top.Node("s2").Params)
	}
	if got := linkStrings(top.Links()); !slices.Equal(got, []string{"h1:0-s1:1", "h2:0-s1:2", "s1:3-s2:1", "s2:2-r3:0", "r3:1-h5:0"}) {
		t.Errorf("links = %v", got)
	}
	if p := top.Links()[1].Params; !mapsEqual(p, Params{"bw": "10", "delay": "5ms", "loss": "1"}) {
		t.Errorf("h2-s1 params = %v", p)
	}
	if opts.IPBase.String() != "10.0.0.0/8" {
		t.Errorf("ipbase = %v", opts.IPBase)
	}
	joined := strings.Join(opts.Warnings, "\n")
	for _, want := range []string{"controller c0 is ignored", "host h2: startCommand"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings %q lack %q", opts.Warnings, want)
		}
	}
	if _, err := Resolve(top, opts.Address()); err != nil {
		t.Errorf("Resolve: %v", err)
	}
}

func TestLoadMiniEditVersion1(t *testing.T) {
	top, opts, err := LoadMiniEdit("testdata/miniedit-v1.mn")
	if err != nil {
		t.Fatal(err)
	}
	if got := linkStrings(top.Links()); !slices.Equal(got, []string{"h1:0-s1:1", "h2:0-s1:2"}) {
		t.Errorf("links = %v", got)
	}
	if len(opts.Warnings) != 1 || !strings.Contains(opts.Warnings[0], "controller c0") {
		t.Errorf("warnings = %q", opts.Warnings)
	}
}

func TestLoadMiniEditOtherIPBase(t *testing.T) {
	top, _, err := LoadMiniEditData("t.mn", []byte(`{"application": {"ipBase": "192.168.7.0/24"},
"hosts": [{"number": "3", "opts": {"hostname": "h3", "nodeNum": 3}}], "switches": [], "links": []}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := top.Node("h3").Params["ip"]; got != "192.168.7.3/24" {
		t.Errorf("h3 ip = %q", got)
	}
}

func TestLoadMiniEditBadInput(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"undefined node", `{"hosts": [{"number": "1", "opts": {"hostname": "h1"}}], "switches": [],
"links": [{"src": "h1", "dest": "s7", "opts": {}}]}`, `bad.mn:2:33: links[0].dest: link to undefined node "s7"`},
		{"duplicate", `{"hosts": [{"number": "1", "opts": {"hostname": "h1"}},
 {"number": "2", "opts": {"hostname": "h1"}}], "switches": [], "links": []}`, `bad.mn:2:2: hosts[1].opts.hostname: duplicate node name`},
		{"bad ip", `{"hosts": [{"number": "1", "opts": {"hostname": "h1", "ip": "10.0.0.256"}}], "switches": [], "links": []}`, `hosts[0].opts.ip: "10.0.0.256" is not an IPv4 address`},
		{"no hosts", `{"switches": [], "links": []}`, `hosts: a MiniEdit file has a hosts list`},
		{"wrong type", `{"hosts": {"h1": 1}, "switches": [], "links": []}`, `bad.mn:1:11: hosts: must be a list, got a mapping`},
		{"not json", `{"hosts": [`, `bad.mn:`},
		{"bad ipBase", `{"application": {"ipBase": "x"}, "hosts": [], "switches": [], "links": []}`, `application.ipBase: "x" is not an IPv4 network`},
		{"host number too big", `{"application": {"ipBase": "10.0.0.0/30"}, "hosts": [{"number": "9"}], "switches": [], "links": []}`, `host number 9 does not fit in 10.0.0.0/30`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			top, _, err := LoadMiniEditData("bad.mn", []byte(c.src))
			if err == nil || top != nil {
				t.Fatalf("top=%v err=%v; want error %q", top != nil, err, c.want)
			}
			if !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrBadFile) {
				t.Errorf("error:\n  %v\nwant it to contain:\n  %s", err, c.want)
			}
		})
	}
}

func FuzzLoadMiniEdit(f *testing.F) {
	for _, name := range []string{"testdata/miniedit.mn", "testdata/miniedit-v1.mn"} {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		"",
		"{}",
		`{"hosts": [], "switches": [], "links": []}`,
		`{"hosts": [{"number": "1"}], "switches": [{"number": "1"}], "links": [{"src": "h1", "dest": "s1"}]}`,
		`{"controllers": {"c0": {}}, "hosts": [{"number": "x"}], "switches": [], "links": [], "version": "1"}`,
		`{"application": {"ipBase": "10.0.0.0/31"}, "hosts": [{"opts": {"nodeNum": 99999999999}}], "switches": [], "links": []}`,
		`{"hosts": null, "switches": [{"opts": {"switchType": "legacyRouter", "hostname": "r\/1"}}], "links": 5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		top, _, err := LoadMiniEditData("fuzz.mn", data)
		if (top == nil) == (err == nil) {
			t.Fatalf("returned topology %v and error %v", top != nil, err)
		}
	})
}
