package topo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
)

func TestParseController(t *testing.T) {
	for spec, want := range map[string]Controller{
		"default":                       {Name: "c0", Kind: "default"},
		"remote":                        {Name: "c0", Kind: "remote"},
		"remote,ip=127.0.0.1,port=6633": {Name: "c0", Kind: "remote", IP: "127.0.0.1", Port: 6633},
		"remote,10.0.0.9:6653":          {Name: "c0", Kind: "remote", IP: "10.0.0.9", Port: 6653},
		"remote,192.168.1.1,6633":       {Name: "c0", Kind: "remote", IP: "192.168.1.1", Port: 6633},
		"ovsc,port=7000":                {Name: "c0", Kind: "ovsc", Port: 7000},
		"ref,name=ctl":                  {Name: "ctl", Kind: "ref"},
	} {
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			c, err := ParseController("c0", spec)
			if err != nil || c == nil || *c != want {
				t.Errorf("%+v %v, want %+v", c, err, want)
			}
		})
	}
	if c, err := ParseController("c0", "none"); c != nil || err != nil {
		t.Errorf("none: %+v %v", c, err)
	}
	for _, bad := range []string{"nox", "remote,port=abc", "remote,port=70000", "remote,ip=300.1.1.1", "ovsc,ip=10.0.0.1", "remote,bogus=1", "remote,a,1,x"} {
		t.Run("invalid "+bad, func(t *testing.T) {
			t.Parallel()
			if _, err := ParseController("c0", bad); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestAddController(t *testing.T) {
	tp := New()
	tp.AddHost("h1")
	tp.AddController("c0", Params{"kind": "remote", "port": "6633"})
	tp.AddController("c0", Params{"kind": "ovsc"})
	tp.AddController("h1", Params{"kind": "ovsc"})
	tp.AddController("c2", Params{"port": "x"})
	if err := tp.Err(); err == nil || !strings.Contains(err.Error(), "added twice") || !strings.Contains(err.Error(), "is a node and a controller") || !strings.Contains(err.Error(), `port "x"`) {
		t.Errorf("errors: %v", err)
	}
	cs := tp.Controllers()
	if len(cs) != 1 || cs[0].Kind != "remote" || cs[0].Port != 6633 {
		t.Errorf("controllers: %+v", cs)
	}
}

func TestFileControllers(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "t.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := "nodes: [h1, {name: s1, kind: switch}]\nlinks: [{endpoints: [h1, s1]}]\n"
	tp, _, err := LoadFile(write(base + "controllers:\n  - {name: c0, kind: ovsc}\n  - {name: c1, kind: remote, ip: 127.0.0.1, port: 6633}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cs := tp.Controllers(); len(cs) != 2 || cs[0].Kind != "ovsc" || cs[1].Port != 6633 {
		t.Errorf("list: %+v", cs)
	}
	tp, _, err = LoadFile(write(base + "controllers:\n  c5: {kind: remote, port: 6653}\n  c6:\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cs := tp.Controllers(); len(cs) != 2 || cs[0].Name != "c5" || cs[1].Kind != "default" {
		t.Errorf("mapping: %+v", cs)
	}
	for _, c := range []struct{ name, body, want string }{
		{"unknown kind", "controllers:\n  - {name: c0, kind: nox}\n", `unknown kind "nox"`},
		{"unknown key", "controllers:\n  - {name: c0, colour: red}\n", "colour"},
		{"node name", "controllers:\n  - {name: h1}\n", "is a node and a controller"},
		{"not a list", "controllers: 5\n", "must be a list or a mapping"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, _, err := LoadFile(write(base + c.body)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%q: %v, want %q", c.body, err, c.want)
			}
		})
	}
}

func TestMiniEditControllers(t *testing.T) {
	tp, opts, err := LoadMiniEdit("testdata/miniedit.mn")
	if err != nil {
		t.Fatal(err)
	}
	cs := tp.Controllers()
	if len(cs) != 1 || cs[0].Name != "c0" || cs[0].Kind != "ref" || cs[0].Port != 6633 {
		t.Errorf("controllers: %+v", cs)
	}
	if !strings.Contains(strings.Join(opts.Warnings, "\n"), "controller c0 is ignored unless the switches are OpenFlow switches") {
		t.Errorf("warnings: %v", opts.Warnings)
	}
}

func TestCustomFileControllers(t *testing.T) {
	testenv.Tools(t, "python3")
	spec, _ := ParseSpec("twoswitch")
	tp, warnings, err := LoadCustom(context.Background(), "../examples/sdn-custom.py", spec)
	if err != nil {
		t.Fatalf("%v (warnings %v)", err, warnings)
	}
	c, err := tp.ParseControllerFor("c0", "learning")
	if err != nil || c.Kind != "ovsc" {
		t.Errorf("learning: %+v %v", c, err)
	}
	c, err = tp.ParseControllerFor("c1", "mine,port=6699")
	if err != nil || c.Kind != "remote" || c.IP != "127.0.0.1" || c.Port != 6699 || c.Name != "c1" {
		t.Errorf("mine,port=6699: %+v %v", c, err)
	}
	if _, err := tp.ParseControllerFor("c0", "theirs"); err == nil {
		t.Error("an unknown controller name accepted")
	}
	for _, w := range warnings {
		if strings.Contains(w, "controllers") {
			t.Errorf("warning about controllers: %s", w)
		}
	}
}
