package cluster

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/internal/testenv"
)

// A VM node holds a cut link as it holds any link: its side of the tunnel
// is bridged to a NIC hot-plugged into the guest, which gets the link's
// address. The cut link is emulated (2 ms each way). After the peer worker
// is killed and replaced, the VM's side is made again toward the new
// worker and rejoins the guest's bridge; the guest is not touched.
func TestVMCutLink(t *testing.T) {
	testenv.RootAndTools(t, "ip", "ping", "qemu-system-x86_64")
	if testing.Short() {
		t.Skip("boots a VM")
	}
	const file = "nodes:\n" +
		"  - {name: h1, backend: vm, params: {memory: 256M}, placement: 0}\n" +
		"  - {name: h2, placement: 1}\n" +
		"  - {name: s1, kind: switch, placement: 1}\n" +
		"links:\n" +
		"  - endpoints: [h1, s1]\n    params: {delay: 2ms}\n" +
		"  - endpoints: [h2, s1]\n"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l, c, runs := startTwo(ctx, t, file, "vm.yaml")
	if w, _ := c.Worker("h1"); w != 0 {
		t.Fatalf("h1 on worker %d, want 0 (placement)", w)
	}
	check := func(when string) {
		t.Helper()
		pingAll(ctx, t, c)
		e, err := c.Exec(ctx, "h1", 30*time.Second, "ip", "-o", "addr", "show", "h1-eth0")
		if err != nil || !strings.Contains(e.Stdout, "10.0.0.1/8") {
			t.Errorf("%s: h1-eth0 in the guest: %+v %v", when, e, err)
		}
		// Both directions cross the emulated cut link: at least 4 ms.
		e, err = c.Exec(ctx, "h2", 30*time.Second, "ping", "-c3", "-i0.2", "-W5", "10.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`= ([0-9.]+)/`).FindStringSubmatch(e.Stdout)
		if m == nil {
			t.Fatalf("%s: h2 ping h1: %s", when, e.Stdout)
		}
		// A floor on ping's summary minimum, which pauses only raise:
		// 0.1 ms under it is a hundred of its 1 µs.
		fastest, _ := strconv.ParseFloat(m[1], 64)
		testenv.JudgeTime(t, testenv.Timing{Quantity: when + ": RTT minimum h2 -> h1 (VM) across the emulated cut link", Got: msDur(fastest),
			Target: 4 * time.Millisecond, Tolerance: 100 * time.Microsecond, Bound: testenv.AtLeast, Resolution: pingSummaryRes})
		t.Logf("%s: %s", when, strings.TrimSpace(e.Stdout[strings.LastIndex(e.Stdout, "\n---"):]))
	}
	check("built")

	p := l.procs[1]
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if _, err := hymn.Clean(ctx, hymn.CleanOptions{Runs: []string{runs[1]}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Replace(ctx, 1); err != nil {
		t.Fatal(err)
	}
	check("after worker 1 was replaced")
}
