package sriov

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSys writes a fake sysfs with the CIMininet loop ports (n VFs each,
// 64 possible) and one ordinary interface.
func fakeSys(t *testing.T, n int) SysFS {
	t.Helper()
	root := t.TempDir()
	pfs := []FakePF{{Name: "enp33s0f0", TotalVFs: 64, NumVFs: n}, {Name: "enp100s0f0", TotalVFs: 64, NumVFs: n}}
	if err := WriteFakeTree(filepath.Join(root, "sys"), pfs); err != nil {
		t.Fatal(err)
	}
	// An interface without SR-IOV, as every machine has.
	if err := os.MkdirAll(filepath.Join(root, "sys", "class", "net", "eth0"), 0o755); err != nil {
		t.Fatal(err)
	}
	return SysFS{Root: filepath.Join(root, "sys"), DevRoot: filepath.Join(root, "dev")}
}

func loopInventory(vlans string) *Inventory {
	return &Inventory{VLANs: vlans, Cables: []Cable{{A: "enp33s0f0", B: "enp100s0f0"}}}
}

func TestDiscover(t *testing.T) {
	sys := fakeSys(t, 4)
	pfs, err := sys.PFs()
	if err != nil {
		t.Fatal(err)
	}
	if len(pfs) != 2 || pfs[0].Name != "enp100s0f0" || pfs[1].Name != "enp33s0f0" {
		t.Fatalf("PFs = %+v", pfs)
	}
	p := pfs[1]
	if p.TotalVFs != 64 || p.NumVFs != 4 || len(p.VFs) != 4 || p.Driver != "i40e" || p.PCI != "0000:21:00.0" {
		t.Fatalf("PF = %+v", p)
	}
	vf := p.VFs[3]
	if vf.Index != 3 || vf.PCI != "0000:21:02.3" || vf.Netdev != "enp33s0f0v3" || vf.Driver != "iavf" {
		t.Fatalf("VF = %+v", vf)
	}
	if _, err := sys.PF("eth0"); !errors.Is(err, ErrNotSRIOV) {
		t.Fatalf("eth0: %v, want ErrNotSRIOV", err)
	}
	if _, err := sys.PF("enp9s0"); !errors.Is(err, ErrUnknownPF) {
		t.Fatalf("unknown PF: %v", err)
	}
	if _, err := sys.PF("../etc"); !errors.Is(err, ErrUnknownPF) {
		t.Fatalf("path in PF name: %v", err)
	}
	if !sys.HasHardware() {
		t.Fatal("HasHardware is false on a tree with PFs")
	}
	empty := SysFS{Root: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(empty.Root, "class", "net", "lo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if empty.HasHardware() {
		t.Fatal("HasHardware on a tree without PFs")
	}
}

func TestEnableVFs(t *testing.T) {
	sys := fakeSys(t, 2)
	err := sys.EnableVFs("enp33s0f0", 65)
	if !errors.Is(err, ErrTooManyVFs) || !strings.Contains(err.Error(), "sriov_totalvfs is 64") {
		t.Fatalf("too many VFs: %v", err)
	}
	if p, _ := sys.PF("enp33s0f0"); p.NumVFs != 2 {
		t.Fatalf("a refused request changed sriov_numvfs to %d", p.NumVFs)
	}
	if err := sys.EnableVFs("enp1s0", 1); !errors.Is(err, ErrUnknownPF) {
		t.Fatalf("unknown PF: %v", err)
	}
	if err := sys.EnableVFs("enp33s0f0", 14); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(sys.Root, "class/net/enp33s0f0/device/sriov_numvfs"))
	if string(b) != "14" {
		t.Fatalf("sriov_numvfs = %q", b)
	}
}

func TestAllocateAndExhaust(t *testing.T) {
	sys := fakeSys(t, 8)
	conf := NewMemConfigurator()
	a, err := NewAllocator(AllocatorConfig{Inventory: loopInventory(""), SysFS: sys, Conf: conf})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		p, err := a.Allocate("l" + string(rune('0'+i)))
		if err != nil {
			t.Fatal(err)
		}
		if p.VLAN != 400+i || p.Index != i || p.A.Netdev != "enp33s0f0v"+string(rune('0'+i)) {
			t.Fatalf("pair %d = %+v", i, p)
		}
		for _, side := range []struct {
			pf string
			vf int
		}{{"enp33s0f0", p.A.Index}, {"enp100s0f0", p.B.Index}} {
			st, _ := conf.GetVF(side.pf, side.vf)
			if st.VLAN != p.VLAN || st.SpoofChk || !st.Trust || st.LinkState != LinkEnable {
				t.Fatalf("%s vf %d = %+v", side.pf, side.vf, st)
			}
		}
	}
	_, err = a.Allocate("l8")
	want := "no free VF pair on cable enp33s0f0<->enp100s0f0: 8 of 8 in use"
	if !errors.Is(err, ErrNoFreePair) || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("exhaustion: %v, want ...%q", err, want)
	}
	// Releasing one makes exactly that pair and VLAN free again.
	if err := a.Release(a.Pairs()[3]); err != nil {
		t.Fatal(err)
	}
	p, err := a.Allocate("l9")
	if err != nil || p.Index != 3 || p.VLAN != 403 {
		t.Fatalf("after release: %+v, %v", p, err)
	}
}

func TestVLANRangeFull(t *testing.T) {
	sys := fakeSys(t, 8)
	a, err := NewAllocator(AllocatorConfig{Inventory: loopInventory("400-401"), SysFS: sys, Conf: NewMemConfigurator()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Allocate("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Allocate("b"); err != nil {
		t.Fatal(err)
	}
	_, err = a.Allocate("c")
	if !errors.Is(err, ErrNoFreeVLAN) || !strings.Contains(err.Error(), "no free VLAN on cable enp33s0f0<->enp100s0f0: range 400-401 has 2 of 2 in use") {
		t.Fatalf("VLAN range full: %v", err)
	}
}

func TestRestoreOnRelease(t *testing.T) {
	sys := fakeSys(t, 2)
	conf := NewMemConfigurator()
	orig := VFState{SpoofChk: true, Trust: false, LinkState: LinkAuto, QoS: 0}
	if err := conf.SetVF("enp33s0f0", 0, orig); err != nil {
		t.Fatal(err)
	}
	if err := conf.SetVF("enp100s0f0", 0, VFState{SpoofChk: false, Trust: true, LinkState: LinkDisable}); err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(t.TempDir(), "sriov.json")
	a, err := NewAllocator(AllocatorConfig{Inventory: loopInventory(""), SysFS: sys, Conf: conf, StatePath: statePath, Run: "abc123"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Allocate("h1-eth0<->h2-eth0")
	if err != nil {
		t.Fatal(err)
	}
	st, err := ReadState(statePath)
	if err != nil || len(st.Pairs) != 1 || st.Pairs[0].VLAN != 400 || st.Pairs[0].Link != "h1-eth0<->h2-eth0" {
		t.Fatalf("state file: %+v, %v", st, err)
	}
	if err := a.ReleaseAll(); err != nil {
		t.Fatal(err)
	}
	if got, _ := conf.GetVF("enp33s0f0", p.A.Index); !equalState(got, orig) {
		t.Fatalf("A restored to %+v, want %+v", got, orig)
	}
	if got, _ := conf.GetVF("enp100s0f0", 0); got.LinkState != LinkDisable || got.VLAN != 0 || !got.Trust {
		t.Fatalf("B restored to %+v", got)
	}
	if _, err := os.Stat(statePath); !os.IsNotExist(err) {
		t.Fatalf("state file left behind: %v", err)
	}
}

func equalState(a, b VFState) bool {
	return a.VLAN == b.VLAN && a.QoS == b.QoS && a.MACString() == b.MACString() && a.SpoofChk == b.SpoofChk && a.Trust == b.Trust && a.LinkState == b.LinkState
}

func TestForeignVFsUntouched(t *testing.T) {
	sys := fakeSys(t, 4)
	conf := NewMemConfigurator()
	mac, _ := net.ParseMAC("3e:e5:a8:40:0d:00")
	foreign := map[[2]any]VFState{
		{"enp33s0f0", 0}:  {VLAN: 5, SpoofChk: true},          // someone's wire
		{"enp100s0f0", 1}: {MAC: mac, SpoofChk: true},         // a load generator's port
		{"enp100s0f0", 3}: {VLAN: 401, LinkState: LinkEnable}, // another run's link
	}
	for k, st := range foreign {
		if err := conf.SetVF(k[0].(string), k[1].(int), st); err != nil {
			t.Fatal(err)
		}
	}
	a, err := NewAllocator(AllocatorConfig{Inventory: loopInventory("4-6,400-401"), SysFS: sys, Conf: conf})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Allocate("x")
	if err != nil || p.Index != 2 || p.VLAN != 4 {
		t.Fatalf("first allocation = %+v, %v (want pair 2, VLAN 4)", p, err)
	}
	_, err = a.Allocate("y")
	want := "no free VF pair on cable enp33s0f0<->enp100s0f0: 4 of 4 in use (3 configured by someone else)"
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("got %v, want ...%q", err, want)
	}
	for k, st := range foreign {
		got, _ := conf.GetVF(k[0].(string), k[1].(int))
		if !equalState(got, st) {
			t.Fatalf("foreign VF %v changed: %+v", k, got)
		}
	}
	// VLANs of foreign VFs are never reused: 5 is skipped.
	if err := a.Release(p); err != nil {
		t.Fatal(err)
	}
	if err := conf.SetVF("enp33s0f0", 2, VFState{VLAN: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Allocate("z"); err == nil {
		t.Fatal("allocated although every pair is foreign")
	}
}

func TestForeignVLANSkipped(t *testing.T) {
	sys := fakeSys(t, 4)
	conf := NewMemConfigurator()
	if err := conf.SetVF("enp100s0f0", 3, VFState{VLAN: 400}); err != nil {
		t.Fatal(err)
	}
	a, _ := NewAllocator(AllocatorConfig{Inventory: loopInventory("400-402"), SysFS: sys, Conf: conf})
	var got []int
	for i := 0; i < 2; i++ {
		p, err := a.Allocate("l")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.VLAN)
	}
	if got[0] != 401 || got[1] != 402 {
		t.Fatalf("VLANs = %v, want [401 402] (400 is someone else's)", got)
	}
}

func TestBadInventory(t *testing.T) {
	sys := fakeSys(t, 2)
	pfs, _ := sys.PFs()
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown port", "cables:\n  - {a: enp33s0f0, b: enp99s0f0}\n", "enp99s0f0 (SR-IOV ports here: enp100s0f0, enp33s0f0)"},
		{"overlap", "vlans: 400-500,450-600\ncables:\n  - {a: enp33s0f0, b: enp100s0f0}\n", "VLAN ranges 400-500 and 450-600 overlap"},
		{"out of range", "vlans: 0-10\ncables:\n  - {a: enp33s0f0, b: enp100s0f0}\n", "1 <= LO <= HI <= 4094"},
		{"two cables on a port", "cables:\n  - {a: enp33s0f0, b: enp100s0f0}\n  - {a: enp33s0f0, b: eth0}\n", "port enp33s0f0 is already on cable enp33s0f0<->enp100s0f0"},
		{"self", "cables:\n  - {a: enp33s0f0, b: enp33s0f0}\n", "cabled to itself"},
		{"unknown key", "cables:\n  - {a: enp33s0f0, b: enp100s0f0, vlan: 3}\n", "field vlan not found"},
		{"no cables", "vlans: 400-401\n", "no cables"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inv, err := ParseInventory([]byte(c.yaml))
			if err == nil {
				err = inv.Validate(pfs)
			}
			if !errors.Is(err, ErrInventory) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrInventory containing %q", err, c.want)
			}
		})
	}
	if _, err := ParseCables("enp33s0f0"); !errors.Is(err, ErrInventory) {
		t.Fatalf("cable without B: %v", err)
	}
	cs, err := ParseCables("a:b+c:d", "e:f")
	if err != nil || len(cs) != 3 || cs[2] != (Cable{A: "e", B: "f"}) {
		t.Fatalf("ParseCables = %v, %v", cs, err)
	}
	// A PF without VFs enabled is reported before anything is touched.
	if err := os.WriteFile(filepath.Join(sys.Root, "class/net/enp100s0f0/device/sriov_numvfs"), []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewAllocator(AllocatorConfig{Inventory: loopInventory(""), SysFS: sys, Conf: NewMemConfigurator()}); err == nil || !strings.Contains(err.Error(), "enp100s0f0 has no VFs enabled") {
		t.Fatalf("PF without VFs: %v", err)
	}
}

func TestVFIO(t *testing.T) {
	sys := fakeSys(t, 2)
	_, err := sys.BindVFIO("0000:21:02.0")
	if !errors.Is(err, ErrVFIOUnavailable) || !strings.Contains(err.Error(), "vfio unavailable on this machine") {
		t.Fatalf("BindVFIO without /dev/vfio: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(sys.DevRoot, "vfio"), 0o755); err != nil {
		t.Fatal(err)
	}
	prev, err := sys.BindVFIO("0000:21:02.0")
	if err != nil || prev != "iavf" {
		t.Fatalf("BindVFIO = %q, %v", prev, err)
	}
	dev := filepath.Join(sys.Root, "bus/pci/devices/0000:21:02.0")
	if b, _ := os.ReadFile(filepath.Join(dev, "driver_override")); string(b) != "vfio-pci" {
		t.Fatalf("driver_override = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(sys.Root, "bus/pci/drivers_probe")); string(b) != "0000:21:02.0" {
		t.Fatalf("drivers_probe = %q", b)
	}
	if err := sys.UnbindVFIO("0000:21:02.0", ""); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dev, "driver_override")); string(b) != "\n" {
		t.Fatalf("driver_override after unbind = %q", b)
	}
	if _, err := sys.BindVFIO("0000:99:00.0"); err == nil {
		t.Fatal("bound a device that does not exist")
	}
}

func TestParseVFSettings(t *testing.T) {
	st, err := ParseVFSettings(DefaultVFState(), "spoofchk off trust on vlan 7 state enable mac 3e:e5:a8:40:0d:01")
	if err != nil || st.VLAN != 7 || st.SpoofChk || !st.Trust || st.LinkState != LinkEnable || st.MACString() != "3e:e5:a8:40:0d:01" {
		t.Fatalf("%+v, %v", st, err)
	}
	for _, bad := range []string{"vlan", "vlan 5000", "trust maybe", "state up", "color red"} {
		if _, err := ParseVFSettings(VFState{}, bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestRestoreState(t *testing.T) {
	conf := NewMemConfigurator()
	mac, _ := net.ParseMAC("02:00:00:00:00:07")
	if err := conf.SetVF("p", 0, VFState{VLAN: 400}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.json")
	st := &State{Run: "r", Pairs: []*Pair{{Cable: Cable{A: "p", B: "q"}, A: VF{Index: 0}, B: VF{Index: 0}, VLAN: 400,
		OrigA: VFState{MAC: mac, SpoofChk: true}, OrigB: VFState{Trust: true}}}}
	if err := WriteState(path, st); err != nil {
		t.Fatal(err)
	}
	if err := RestoreState(path, conf); err != nil {
		t.Fatal(err)
	}
	if got, _ := conf.GetVF("p", 0); got.VLAN != 0 || got.MACString() != "02:00:00:00:00:07" || !got.SpoofChk {
		t.Fatalf("restored %+v", got)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("state file not removed")
	}
	if err := RestoreState(path, conf); err != nil {
		t.Fatalf("second restore: %v", err)
	}
}

func TestVFIOPassthroughArgs(t *testing.T) {
	got := VFIODevice("0000:21:02.3", "vf-h1-eth0", "rp1")
	if got["driver"] != "vfio-pci" || got["host"] != "0000:21:02.3" || got["id"] != "vf-h1-eth0" || got["bus"] != "rp1" {
		t.Fatalf("device_add args %v", got)
	}
	if _, ok := VFIODevice("0000:21:02.3", "x", "")["bus"]; ok {
		t.Fatal("empty bus passed to QEMU")
	}
	if s := VFIODeviceArg("0000:21:02.3", "x", ""); s != "vfio-pci,host=0000:21:02.3,id=x" {
		t.Fatalf("-device %s", s)
	}
	sys := fakeSys(t, 2)
	vf, err := sys.VF("enp33s0f0", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sys.PassthroughVF(vf, "x", ""); !errors.Is(err, ErrVFIOUnavailable) || !strings.Contains(err.Error(), "enp33s0f0 vf 1") {
		t.Fatalf("passthrough without vfio: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(sys.Root, "bus/pci/devices", vf.PCI, "driver_override")); string(b) != "(null)\n" {
		t.Fatalf("a refused passthrough changed driver_override to %q", b)
	}
}

func TestRemoveRun(t *testing.T) {
	dir := t.TempDir()
	conf := NewMemConfigurator()
	if err := conf.SetVF("p", 2, VFState{VLAN: 401, Trust: true, LinkState: LinkEnable}); err != nil {
		t.Fatal(err)
	}
	st := &State{Run: "aa11bb", Pairs: []*Pair{{Cable: Cable{A: "p", B: "q"}, A: VF{Index: 2}, B: VF{Index: 2}, VLAN: 401,
		OrigA: DefaultVFState(), OrigB: DefaultVFState()}}}
	if err := WriteState(filepath.Join(RunDir(dir, "aa11bb"), "state.json"), st); err != nil {
		t.Fatal(err)
	}
	if r := Runs(dir); len(r) != 1 || r[0] != "aa11bb" {
		t.Fatalf("Runs = %v", r)
	}
	if err := RemoveRun(dir, "aa11bb", conf); err != nil {
		t.Fatal(err)
	}
	if got, _ := conf.GetVF("p", 2); !equalState(got, DefaultVFState()) {
		t.Fatalf("VF not restored: %+v", got)
	}
	if len(Runs(dir)) != 0 {
		t.Fatal("run directory left")
	}
	if err := RemoveRun(dir, "aa11bb", conf); err != nil {
		t.Fatalf("second RemoveRun: %v", err)
	}
}

func TestEnableVFsSafely(t *testing.T) {
	sys := fakeSys(t, 4)
	conf := NewMemConfigurator()
	if err := conf.SetVF("enp33s0f0", 2, VFState{VLAN: 9}); err != nil {
		t.Fatal(err)
	}
	err := sys.EnableVFsSafely(conf, "enp33s0f0", 8, false)
	if !errors.Is(err, ErrVFsInUse) || !strings.Contains(err.Error(), "would destroy VFs 2") {
		t.Fatalf("got %v", err)
	}
	if p, _ := sys.PF("enp33s0f0"); p.NumVFs != 4 {
		t.Fatalf("count changed to %d", p.NumVFs)
	}
	if err := sys.EnableVFsSafely(conf, "enp33s0f0", 4, false); err != nil {
		t.Fatalf("same count: %v", err)
	}
	if err := sys.EnableVFsSafely(conf, "enp100s0f0", 8, false); err != nil {
		t.Fatalf("PF without foreign VFs: %v", err)
	}
	if err := sys.EnableVFsSafely(conf, "enp33s0f0", 8, true); err != nil {
		t.Fatalf("forced: %v", err)
	}
}

func TestTagUntag(t *testing.T) {
	f := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x08, 0x00, 0x45, 0, 0, 0, 0xaa}
	out := make([]byte, 64)
	tagged := tag(out, f, 402, 5)
	if !isTagged(tagged) || len(tagged) != len(f)+4 {
		t.Fatalf("tag: % x", tagged)
	}
	if vid := int(tagged[14]&0x0f)<<8 | int(tagged[15]); vid != 402 || tagged[14]>>5 != 5 {
		t.Fatalf("TCI % x: want VLAN 402 priority 5", tagged[14:16])
	}
	back := untag(tagged)
	if string(back) != string(f) {
		t.Fatalf("untag: % x, want % x", back, f)
	}
	if isTagged(f) || isTagged(f[:10]) {
		t.Fatal("untagged or runt frame seen as tagged")
	}
}
