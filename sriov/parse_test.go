package sriov

import (
	"strings"
	"testing"
)

func TestParseOptionsBounds(t *testing.T) {
	cases := []struct {
		spec, want string // want "" for accepted
	}{
		{"vfs=1000000", "at most 256 VFs per PF"},
		{"vfs=256", ""},
		{"vfs=0", "not a positive number"},
		{"vfs=-5", "not a positive number"},
		{"vfs=99999999999999999999", "not a positive number"},
		{"sysfs=relative/dir", "absolute path"},
		{"pairs=a:b", ""},
		{"pairs=../x:b", "not an interface name"},
		{"pairs=-a:b", "not an interface name"},
		{"pairs=abcdefghijklmnop:b", "1 to 15 bytes"},
		{"vlans=0-5000", "1 <= LO <= HI <= 4094"},
		{"vlans=abc", "is not a number or LO-HI"},
		{"nope=1", "unknown SR-IOV option"},
		{"vfs", "is not key=value"},
		{"emulator=dpdk", ""},
		{"emulator=afpacket", ""},
		{"emulator=xdp", "emulator=xdp: use afpacket or dpdk"},
		{"emulator=", "is not key=value"},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			_, err := ParseOptions(c.spec)
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
}

func TestInventoryPortNames(t *testing.T) {
	cases := []struct {
		yaml, want string
	}{
		{"cables: [{a: enp1s0, b: enp2s0}]", ""},
		{"cables: [{a: ../../etc, b: enp2s0}]", "not an interface name"},
		{"cables: [{a: '', b: enp2s0}]", "both a and b"},
		{"cables: [{a: ., b: enp2s0}]", "not an interface name"},
		{"vlans: 1-99999\ncables: []", "1 <= LO <= HI <= 4094"},
		{"cables: [{a: x, b: y, c: z}]", "field c not found"},
	}
	for _, c := range cases {
		t.Run(c.yaml, func(t *testing.T) {
			_, err := ParseInventory([]byte(c.yaml))
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

func FuzzParseOptions(f *testing.F) {
	for _, s := range []string{"", "vfs=1000000", "pairs=a:b+c:d,vlans=400-4094,sim=on", "vlans=1,2,3", "sysfs=/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		cfg, err := ParseOptions(spec)
		if err != nil {
			return
		}
		if cfg.SimVFs > MaxVFs || cfg.SimVFs < 0 {
			t.Fatalf("vfs %d accepted", cfg.SimVFs)
		}
		for _, c := range cfg.Cables {
			if checkPortName(c.A) != nil || checkPortName(c.B) != nil {
				t.Fatalf("cable %v accepted", c)
			}
		}
		if cfg.VLANs != "" {
			if _, err := ParseVLANRanges(cfg.VLANs); err != nil {
				t.Fatalf("VLANs %q accepted: %v", cfg.VLANs, err)
			}
		}
	})
}

func FuzzParseVLANRanges(f *testing.F) {
	for _, s := range []string{"400-4094", "100-199,300,400-499", "0", "1-4094", "5-1", "9223372036854775807", ",", "1,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := ParseVLANRanges(s)
		if err != nil {
			return
		}
		if n := rs.Size(); n < 1 || n > 4094 {
			t.Fatalf("%q: size %d", s, n)
		}
		for i, r := range rs {
			if r.Lo < 1 || r.Hi > 4094 || r.Lo > r.Hi || (i > 0 && r.Lo <= rs[i-1].Hi) {
				t.Fatalf("%q: bad range %v in %v", s, r, rs)
			}
		}
	})
}

func FuzzParseInventory(f *testing.F) {
	for _, s := range []string{"vlans: 400-4094\ncables:\n  - {a: enp33s0f0, b: enp100s0f0}\n  - {a: enp33s0f1, b: enp100s0f1, vlans: 100-199}\n",
		"cables: [{a: x, b: x}]", "cables: *a", "a: &a [*a, *a]", "cables: [{a: ../x, b: y}]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		inv, err := ParseInventory(data)
		if err != nil {
			return
		}
		for _, c := range inv.Cables {
			if checkPortName(c.A) != nil || checkPortName(c.B) != nil || c.A == c.B {
				t.Fatalf("cable %v accepted", c)
			}
			_ = inv.CableVLANs(c)
		}
	})
}

func FuzzParseCables(f *testing.F) {
	for _, s := range []string{"enp33s0f0:enp100s0f0", "a:b+c:d", "a:", ":b", "a:b:c", "+"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cs, err := ParseCables(s)
		if err != nil {
			return
		}
		for _, c := range cs {
			if checkPortName(c.A) != nil || checkPortName(c.B) != nil {
				t.Fatalf("cable %v accepted", c)
			}
		}
	})
}

func FuzzParseVFSettings(f *testing.F) {
	for _, s := range []string{"vlan 5 mac 3e:e5:a8:40:0d:00 spoofchk off trust on state enable", "vlan 99999", "qos -1", "state x", "vlan"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseVFSettings(VFState{}, s)
		if err != nil {
			return
		}
		if st.VLAN < 0 || st.VLAN > 4094 {
			t.Fatalf("%q: VLAN %d accepted", s, st.VLAN)
		}
	})
}
