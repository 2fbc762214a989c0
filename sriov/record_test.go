package sriov

import (
	"fmt"
	"path/filepath"
	"testing"
)

// recordingConf checks, at every VF change, that the state file already
// records the VF's original settings: a crash between the change and the
// record would otherwise leave a VF that nothing can restore.
type recordingConf struct {
	*MemConfigurator
	t         *testing.T
	statePath string
	changes   int
}

func (c *recordingConf) SetVF(pf string, vf int, st VFState) error {
	rec, err := ReadState(c.statePath)
	if err != nil {
		c.t.Errorf("%s vf %d changed before any state was recorded: %v", pf, vf, err)
		return c.MemConfigurator.SetVF(pf, vf, st)
	}
	found := false
	for _, p := range rec.Pairs {
		found = found || (p.Cable.A == pf && p.A.Index == vf) || (p.Cable.B == pf && p.B.Index == vf)
	}
	if !found {
		c.t.Errorf("%s vf %d changed before its pair was recorded (state: %d pairs)", pf, vf, len(rec.Pairs))
	}
	c.changes++
	return c.MemConfigurator.SetVF(pf, vf, st)
}

func TestVFsRecordedBeforeTheyChange(t *testing.T) {
	sys := fakeSys(t, 4)
	statePath := filepath.Join(t.TempDir(), "state.json")
	conf := &recordingConf{MemConfigurator: NewMemConfigurator(), t: t, statePath: statePath}
	a, err := NewAllocator(AllocatorConfig{Inventory: loopInventory(""), SysFS: sys, Conf: conf, StatePath: statePath, Run: "0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := a.Allocate(fmt.Sprint("l", i)); err != nil {
			t.Fatal(err)
		}
	}
	if conf.changes != 6 {
		t.Fatalf("%d VF changes, want 6", conf.changes)
	}
	// A crash now: the state file restores every VF.
	if err := RestoreState(statePath, conf); err != nil {
		t.Fatal(err)
	}
	for _, pf := range []string{"enp33s0f0", "enp100s0f0"} {
		for vf := 0; vf < 3; vf++ {
			if st, _ := conf.GetVF(pf, vf); st.VLAN != 0 {
				t.Errorf("%s vf %d still on VLAN %d after RestoreState", pf, vf, st.VLAN)
			}
		}
	}
}

// A failed VF change leaves neither the VF changed nor the pair recorded.
func TestFailedVFChangeIsForgotten(t *testing.T) {
	sys := fakeSys(t, 2)
	statePath := filepath.Join(t.TempDir(), "state.json")
	conf := &failingConf{MemConfigurator: NewMemConfigurator(), failPF: "enp100s0f0"}
	a, err := NewAllocator(AllocatorConfig{Inventory: loopInventory(""), SysFS: sys, Conf: conf, StatePath: statePath, Run: "0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Allocate("l"); err == nil {
		t.Fatal("allocation succeeded although a VF could not be configured")
	}
	st, err := ReadState(statePath)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Pairs) != 0 || len(a.Pairs()) != 0 {
		t.Errorf("failed pair still recorded: %d in the file, %d in the allocator", len(st.Pairs), len(a.Pairs()))
	}
}

type failingConf struct {
	*MemConfigurator
	failPF  string
	unknown bool // fail every change as if the PF were gone
}

func (c *failingConf) SetVF(pf string, vf int, st VFState) error {
	if pf == c.failPF && c.unknown {
		return fmt.Errorf("%w: %s", ErrUnknownPF, pf)
	}
	if pf == c.failPF && st.VLAN != 0 {
		return fmt.Errorf("injected failure")
	}
	return c.MemConfigurator.SetVF(pf, vf, st)
}

// A crashed run's state whose PF is gone restores what is left and is
// removed, instead of failing every hymn clean from then on.
func TestRestoreStateSkipsVanishedPFs(t *testing.T) {
	sys := fakeSys(t, 2)
	statePath := filepath.Join(t.TempDir(), "state.json")
	conf := NewMemConfigurator()
	a, err := NewAllocator(AllocatorConfig{Inventory: loopInventory(""), SysFS: sys, Conf: conf, StatePath: statePath, Run: "0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Allocate("l"); err != nil {
		t.Fatal(err)
	}
	gone := &failingConf{MemConfigurator: conf, failPF: "enp100s0f0", unknown: true}
	if err := RestoreState(statePath, gone); err != nil {
		t.Fatalf("RestoreState with a vanished PF: %v", err)
	}
	if st, _ := conf.GetVF("enp33s0f0", 0); st.VLAN != 0 {
		t.Errorf("the remaining PF's VF still on VLAN %d", st.VLAN)
	}
	if _, err := ReadState(statePath); err == nil {
		t.Error("state file kept")
	}
}
