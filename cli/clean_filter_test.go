package cli

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/vishvananda/netlink"
)

// TestCleanRemovesKilledWorkersFilter: a split network's worker running
// in the machine's own namespace (as on a real machine) installs its
// run's tunnel filter there when it links; killed with -9 it cannot
// remove it, and hymn clean does, with the run's namespaces, while the
// filter of a run that is still alive stays.
func TestCleanRemovesKilledWorkersFilter(t *testing.T) {
	testenv.RootAndTools(t, "nft", "ip")
	bin := sharedBinary(t)
	rnd := make([]byte, 18)
	if _, err := rand.Read(rnd); err != nil {
		t.Fatal(err)
	}
	// The underlay: an interface of the root namespace with room for
	// VXLAN (MTU 1550), this worker at .1, its peer (never started) at
	// .2. A veth pair, both ends here: this kernel has no under devices.
	under := fmt.Sprintf("hymnkf%x", rnd[:3])
	local, peer := fmt.Sprintf("10.252.%d.1", rnd[3]), fmt.Sprintf("10.252.%d.2", rnd[3])
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: under, MTU: 1550}, PeerName: under + "p", PeerMTU: 1550}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(under); err == nil {
			if err := netlink.LinkDel(l); err != nil {
				t.Error(err)
			}
		}
	})
	l, err := netlink.LinkByName(under)
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(local), Mask: net.CIDRMask(24, 32)}}); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(l); err != nil {
		t.Fatal(err)
	}
	if p, err := netlink.LinkByName(under + "p"); err != nil || netlink.LinkSetUp(p) != nil {
		t.Fatalf("the veth's peer: %v", err)
	}
	spec := filepath.Join(t.TempDir(), "spec.json")
	port := 40000 + int(rnd[4])<<4 + int(rnd[5]&15) // away from other tests' 4789
	if err := os.WriteFile(spec, fmt.Appendf(nil, `{"topology":"linear,2","workers":2,"worker":0,"assign":{"h1":0,"s1":0,"h2":1,"s2":1},"port":%d,"vni_key":%q}`,
		port, hex.EncodeToString(rnd[2:18])), 0o600); err != nil {
		t.Fatal(err)
	}

	w := exec.Command(bin, "worker", "--spec", spec, "--address", local)
	w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w.Stderr = os.Stderr
	stdin, err := w.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := w.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { _ = w.Wait(); close(waited) }() // killed below: its status says so
	var run string
	t.Cleanup(func() {
		// Whatever failed, nothing of the worker outlives the test.
		_ = syscall.Kill(-w.Process.Pid, syscall.SIGKILL) // gone already when the test got that far
		<-waited
		if run != "" {
			if _, _, err := owner.RemoveRun(run); err != nil {
				t.Errorf("removing run %s: %v", run, err)
			}
			_ = exec.Command("nft", "delete", "table", "inet", "hymn-"+run+"-vxlan").Run() // gone unless the test failed
		}
	})
	events := make(chan map[string]any)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var e map[string]any
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				events <- e
			}
		}
		close(events)
	}()
	await := func(want string) map[string]any {
		t.Helper()
		timeout := time.After(2 * time.Minute)
		for {
			select {
			case e, ok := <-events:
				if !ok {
					t.Fatalf("the worker ended before %q", want)
				}
				if e["event"] == want {
					return e
				}
				if e["event"] == "error" {
					t.Fatalf("worker: %v", e["error"])
				}
			case <-timeout:
				t.Fatalf("no %q from the worker within 2 minutes", want)
			}
		}
	}
	run, _ = await("ready")["run"].(string)
	if !owner.ValidRunID(run) {
		t.Fatalf("the worker's ready event names run %q", run)
	}
	if _, err := fmt.Fprintf(stdin, `{"cmd":"link","id":1,"peers":[%q,%q]}`+"\n", local, peer); err != nil {
		t.Fatal(err)
	}
	await("linked")
	table := "hymn-" + run + "-vxlan"

	// A live run's filter, which hymn clean must leave: this test's own
	// run record, alive as long as the test.
	live := owner.NewRunID()
	if err := owner.Claim(live); err != nil {
		t.Fatal(err)
	}
	liveTable := "hymn-" + live + "-vxlan"
	if out, err := exec.Command("nft", "add", "table", "inet", liveTable).CombinedOutput(); err != nil {
		t.Fatalf("nft add table: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("nft", "delete", "table", "inet", liveTable).CombinedOutput(); err != nil {
			t.Errorf("nft delete table %s: %v: %s", liveTable, err, out)
		}
		if err := owner.Release(live); err != nil {
			t.Error(err)
		}
	})

	tables := func() string {
		out, err := exec.Command("nft", "list", "tables", "inet").CombinedOutput()
		if err != nil {
			t.Fatalf("nft list tables: %v: %s", err, out)
		}
		return string(out)
	}
	if !strings.Contains(tables(), "table inet "+table+"\n") {
		t.Fatalf("the linked worker's filter %s is not in the root namespace:\n%s", table, tables())
	}
	if err := syscall.Kill(w.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 worker: %v", err)
	}
	<-waited
	_ = stdin.Close() // the worker is gone
	_, _ = io.Copy(io.Discard, stdout)
	if !strings.Contains(tables(), "table inet "+table+"\n") {
		t.Fatalf("the killed worker's filter went without hymn clean: the test does not show what clean does")
	}
	out, err := exec.Command(bin, "clean").CombinedOutput()
	if err != nil {
		t.Fatalf("hymn clean: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "tunnel filter table(s) of split networks' workers:") || !strings.Contains(string(out), table) {
		t.Errorf("hymn clean does not report removing %s:\n%s", table, out)
	}
	if strings.Contains(string(out), liveTable) {
		t.Errorf("hymn clean touched the live run's filter:\n%s", out)
	}
	after := tables()
	if strings.Contains(after, table) {
		t.Errorf("after hymn clean the killed worker's filter remains:\n%s", after)
	}
	if !strings.Contains(after, liveTable) {
		t.Errorf("hymn clean removed the filter of a live run:\n%s", after)
	}
	if ns, _ := owner.Namespaces(run); len(ns) > 0 {
		t.Errorf("after hymn clean, namespaces of run %s remain: %v", run, ns)
	}
	if links, _ := exec.Command("ip", "-o", "link").Output(); strings.Contains(string(links), owner.LinkAlias(run)) {
		t.Errorf("after hymn clean, root-namespace links of run %s remain:\n%s", run, links)
	}
	// Again: nothing of the run is left to remove.
	out, _ = exec.Command(bin, "clean").CombinedOutput()
	if strings.Contains(string(out), table) {
		t.Errorf("a second hymn clean found %s again:\n%s", table, out)
	}
}
