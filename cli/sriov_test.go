package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/sriov"
	"github.com/hymn-net/hymn/topo"
)

func runSRIOV(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewSRIOVCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func fakeSysfs(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "sys")
	err := sriov.WriteFakeTree(root, []sriov.FakePF{{Name: "enp33s0f0", TotalVFs: 64, NumVFs: 2}, {Name: "enp100s0f0", TotalVFs: 64, NumVFs: 2}})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestSRIOVListFakeSysfs(t *testing.T) {
	root := fakeSysfs(t)
	out, err := runSRIOV(t, "list", "--sysfs", root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PF enp33s0f0  0000:21:00.0  i40e  2 of 64 VFs", "vf 1  0000:22:02.1  enp100s0f0v1   iavf"} {
		if !strings.Contains(out, want) {
			t.Errorf("list output lacks %q:\n%s", want, out)
		}
	}
	out, err = runSRIOV(t, "list", "--json", "--sysfs", root)
	var rep sriovReport
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || len(rep.PFs) != 2 || len(rep.PFs[1].VFs) != 2 {
		t.Fatalf("list --json: %v\n%s", err, out)
	}
	out, err = runSRIOV(t, "pairs", "--sysfs", root, "--pairs", "enp33s0f0:enp100s0f0", "--vlans", "400-401")
	if err != nil || !strings.Contains(out, "cable enp33s0f0<->enp100s0f0 (hardware): VLANs 400-401, 0 of 2 VF pairs in use") {
		t.Fatalf("pairs: %v\n%s", err, out)
	}
	if _, err := runSRIOV(t, "pairs", "--sysfs", root, "--pairs", "enp33s0f0:enp9s0"); err == nil || !strings.Contains(err.Error(), "enp9s0") {
		t.Fatalf("pairs with an unknown port: %v", err)
	}
	if _, err := runSRIOV(t, "setup", "--sysfs", root, "--pairs", "enp33s0f0:enp100s0f0", "--vfs", "65"); err == nil {
		t.Fatal("setup accepted more VFs than sriov_totalvfs")
	}
}

// TestSRIOVListRunningNetwork lists a network running on the simulated
// NIC: its PFs, VFs, VLANs and the links using them.
func TestSRIOVListRunningNetwork(t *testing.T) {
	testenv.Root(t)
	net, err := hymn.New(mustSpec(t, "single,2"), hymn.Options{Links: hymn.LinksSRIOV, SRIOV: &sriov.Config{Simulate: sriov.SimAlways, SimVFs: 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := net.Stop(); err != nil {
			t.Error(err)
		}
	}()
	if err := net.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	out, err := runSRIOV(t, "list")
	if err != nil {
		t.Fatal(err)
	}
	want := "vlan 400  mac -                 spoofchk off trust on  state enable  link h1-eth0<->s1-eth1 (run " + net.RunID() + ")"
	if !strings.Contains(out, "Simulated NIC of run "+net.RunID()) || !strings.Contains(out, want) {
		t.Fatalf("list lacks the run or %q:\n%s", want, out)
	}
	out, err = runSRIOV(t, "pairs", "--json")
	var cables []cableReport
	if err != nil || json.Unmarshal([]byte(out), &cables) != nil {
		t.Fatalf("pairs --json: %v\n%s", err, out)
	}
	found := false
	for _, c := range cables {
		if c.Run == net.RunID() {
			found = true
			if c.Pairs != 4 || c.InUse != 2 || c.Used[1].VLAN != 401 || c.Used[1].Link != "h2-eth0<->s1-eth2" {
				t.Fatalf("cable %+v", c)
			}
		}
	}
	if !found {
		t.Fatalf("pairs --json lacks run %s:\n%s", net.RunID(), out)
	}
}

func mustSpec(t *testing.T, s string) *topo.Topo {
	t.Helper()
	top, err := topo.FromSpecString(s)
	if err != nil {
		t.Fatal(err)
	}
	return top
}

func TestSRIOVCleanStaleRun(t *testing.T) {
	testenv.Root(t)
	run := "ffee01" // never claimed, so its owner counts as gone
	dir := sriov.RunDir(owner.StateDir, run)
	if err := sriov.WriteState(filepath.Join(dir, "state.json"), &sriov.State{Run: run, Simulated: true}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	}()
	out, err := runSRIOV(t, "clean")
	if err != nil || !strings.Contains(out, "run ffee01: SR-IOV state removed") {
		t.Fatalf("clean: %v\n%s", err, out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s still there", dir)
	}
}
