package topo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDuplicateAddresses(t *testing.T) {
	for _, c := range []struct {
		name string
		topo func() *Topo
		want []string // substrings of the error; none: no error
	}{
		{"two hosts on one switch", func() *Topo {
			tp := New()
			s1 := tp.AddSwitch("s1")
			tp.AddLink(tp.AddHost("h1", Params{"ip": "10.0.0.5/8"}), s1)
			tp.AddLink(tp.AddHost("h2", Params{"ip": "10.0.0.5/8"}), s1)
			return tp
		}, []string{"duplicate address 10.0.0.5 in one subnet", "h1-eth0 (host h1)", "h2-eth0 (host h2)"}},
		{"an own address on an automatic one", func() *Topo {
			tp := New()
			tp.AddLink(tp.AddHost("h1"), tp.AddHost("h2", Params{"ip": "10.0.0.1"}))
			return tp
		}, []string{"10.0.0.1 in one subnet", "h1-eth0 (host h1, automatic address)", "h2-eth0 (host h2)"}},
		{"a link end's address", func() *Topo {
			tp := New()
			tp.AddLink(tp.AddHost("h1"), tp.AddRouter("r1"), Params{"ip2": "10.0.0.1/8"})
			return tp
		}, []string{"h1-eth0 (host h1, automatic address)", "r1-eth0 (router r1, ip2 of link h1-eth0<->r1-eth0)"}},
		{"two switches apart, one LAN", func() *Topo {
			tp := New()
			s1, s2 := tp.AddSwitch("s1"), tp.AddSwitch("s2")
			tp.AddLink(s1, s2)
			tp.AddLink(tp.AddHost("h1", Params{"ip": "10.0.0.9/8"}), s1)
			tp.AddLink(tp.AddHost("h2", Params{"ip": "10.0.0.9/8"}), s2)
			return tp
		}, []string{"10.0.0.9 in one subnet"}},
		{"one node, two interfaces", func() *Topo {
			tp := New()
			r := tp.AddRouter("r1")
			tp.AddLink(r, tp.AddHost("h1"), Params{"ip1": "10.1.0.1/24", "ip2": "10.1.0.2/24"})
			tp.AddLink(r, tp.AddHost("h2"), Params{"ip1": "10.1.0.1/24", "ip2": "10.2.0.2/24"})
			return tp
		}, []string{"10.1.0.1 on node r1"}},
		{"the same address behind a router is another LAN", func() *Topo {
			tp := New()
			r := tp.AddRouter("r1")
			tp.AddLink(tp.AddHost("h1", Params{"ip": "192.168.0.2/24"}), r, Params{"ip2": "192.168.0.1/24"})
			tp.AddLink(tp.AddHost("h2", Params{"ip": "192.168.0.2/24"}), r, Params{"ip2": "192.168.1.1/24"})
			return tp
		}, nil},
		{"a switch without links", func() *Topo {
			tp := New()
			tp.AddSwitch("s9")
			tp.AddLink(tp.AddHost("h1"), tp.AddSwitch("s1"))
			return tp
		}, nil},
		{"linear,4 has none", func() *Topo {
			tp, err := FromSpec(Spec{Name: "linear", Args: []string{"4"}})
			if err != nil {
				t.Fatal(err)
			}
			return tp
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Resolve(c.topo(), AddressOptions{})
			if c.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrDuplicateAddress) {
				t.Fatalf("error %v, want ErrDuplicateAddress", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// A file's duplicate addresses are reported with the lines that gave them.
func TestDuplicateAddressNamesFileLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dup.yaml")
	src := "nodes:\n  - {name: h1, ip: 10.0.0.1/24}\n  - {name: h2, ip: 10.0.0.1/24}\n  - {name: s1, kind: switch}\nlinks:\n  - endpoints: [h1, s1]\n  - endpoints: [h2, s1]\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	tp, _, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Resolve(tp, AddressOptions{})
	for _, w := range []string{path + ":2", path + ":3"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not name %s", err, w)
		}
	}
}
