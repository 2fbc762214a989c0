package hymn

import (
	"errors"
	"testing"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/topo"
)

func TestTypedOptionsParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want SwitchKind
	}{{"", SwitchLinuxBridge}, {"lxbr", SwitchLinuxBridge}, {"ovsbr", SwitchOVSBridge}, {"ovsk", SwitchOVS}, {"default", SwitchOVS}, {"user", SwitchOVS}} {
		t.Run("switch="+c.in, func(t *testing.T) {
			got, err := ParseSwitchKind(c.in)
			if err != nil || got != c.want {
				t.Fatalf("ParseSwitchKind(%q) = %v, %v; want %v", c.in, got, err, c.want)
			}
			if again, err := ParseSwitchKind(got.String()); err != nil || again != got {
				t.Fatalf("round trip of %v: %v, %v", got, again, err)
			}
		})
	}
	for _, s := range []string{"netns", "vm"} {
		t.Run("nodes="+s, func(t *testing.T) {
			b, err := ParseNodeBackend(s)
			if err != nil || b.String() != s {
				t.Fatalf("ParseNodeBackend(%q) = %v, %v", s, b, err)
			}
		})
	}
	t.Run("links=sriov,sim=on,vfs=4", func(t *testing.T) {
		b, cfg, err := ParseLinkBackend("sriov,sim=on,vfs=4")
		if err != nil || b != LinksSRIOV || cfg.SimVFs != 4 {
			t.Fatalf("ParseLinkBackend = %v, %+v, %v", b, cfg, err)
		}
	})
	for _, bad := range []string{"ivs", "bridge"} {
		if _, err := ParseSwitchKind(bad); err == nil {
			t.Errorf("ParseSwitchKind(%q) accepted", bad)
		}
	}
	if _, err := ParseNodeBackend("docker"); err == nil {
		t.Error("ParseNodeBackend(docker) accepted")
	}
	if _, _, err := ParseLinkBackend("wifi"); !errors.Is(err, ErrSRIOV) {
		t.Errorf("ParseLinkBackend(wifi) = %v", err)
	}
	var zero Options
	if zero.Switch.String() != "lxbr" || zero.Nodes.String() != "netns" || zero.Links.String() != "veth" {
		t.Errorf("zero options print as %v %v %v", zero.Switch, zero.Nodes, zero.Links)
	}
	if _, err := New(mustTopo(t, "minimal"), Options{Switch: "bridge"}); err == nil {
		t.Error("New with an unknown switch kind succeeded")
	}
}

// TestOneErrUnknownNode: an unknown node found by topo (a link to it) and
// by the network (a lookup) is the same error for errors.Is.
func TestOneErrUnknownNode(t *testing.T) {
	top := topo.New()
	top.AddHost("h1")
	top.AddLink("h1", "h9")
	_, err := New(top, Options{})
	if !errors.Is(err, ErrUnknownNode) || !errors.Is(err, topo.ErrUnknownNode) {
		t.Fatalf("New with a link to a missing node = %v, want ErrUnknownNode", err)
	}
	net, err := New(mustTopo(t, "minimal"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := net.IP("h9"); !errors.Is(err, topo.ErrUnknownNode) {
		t.Fatalf("IP(h9) = %v, want topo.ErrUnknownNode", err)
	}
	if err := net.ConfigLinkStatus("h1", "h9", "up"); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("ConfigLinkStatus(h1, h9) = %v, want ErrUnknownNode", err)
	}
}

// TestOneDirection: the root package's directions are the emulator's.
func TestOneDirection(t *testing.T) {
	var d Direction = emulator.AtoB
	if d != Forward || Reverse != emulator.BtoA || BothDirections != emulator.Both {
		t.Fatal("hymn and emulator directions differ")
	}
	for _, s := range []string{"a>b", "b>a", "both"} {
		d, err := ParseDirection(s)
		if err != nil || d.String() != s {
			t.Errorf("ParseDirection(%q) = %v, %v", s, d, err)
		}
	}
	c, err := ParseCaptureSpec("h1-h2")
	if err != nil || c.Dir != BothDirections {
		t.Errorf("ParseCaptureSpec without dir = %+v, %v; want both directions", c, err)
	}
}
