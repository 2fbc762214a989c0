package hymn

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/topo"
)

func TestParseCaptureSpec(t *testing.T) {
	c, err := ParseCaptureSpec("h1-s1,dir=b>a,file=x.pcapng,limit=10M")
	if err != nil || c.Node1 != "h1" || c.Node2 != "s1" || c.Dir != Reverse || c.File != "x.pcapng" || c.Limit != 10<<20 {
		t.Errorf("%+v %v", c, err)
	}
	if c, err := ParseCaptureSpec("my-h1:s1"); err != nil || c.Node1 != "my-h1" || c.Node2 != "s1" {
		t.Errorf("%+v %v", c, err)
	}
	for _, bad := range []string{"", "h1", "h1-", "-s1", "h1-s1-s2", "h1-s1,dir=up", "h1-s1,file=", "h1-s1,limit=0", "h1-s1,limit=-5", "h1-s1,limit=9999G", "h1-s1,x=1", "h1-s1,dir"} {
		if _, err := ParseCaptureSpec(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// countPackets reads a pcapng file with tcpdump and counts the ICMP echo
// requests in it.
func countEchoRequests(t *testing.T, file string) int {
	t.Helper()
	out, err := exec.Command("tcpdump", "-nr", file, "icmp[icmptype] == icmp-echo").CombinedOutput()
	if err != nil {
		t.Fatalf("tcpdump -r %s: %v\n%s", file, err, out)
	}
	return strings.Count(string(out), "ICMP echo request")
}

// TestCaptureEmulatedLoss captures 1000 pings across a link with 1 %
// loss: all 1000 requests are in the file before the emulator, about 990
// after it. The count after is Binomial(1000, 0.99): mean 990, σ = √(1000·
// 0.01·0.99) ≈ 3.1, so 975..1000 is ±5σ. The pings leave 1 ms apart
// (ping -i 0.001 needs root).
func TestCaptureEmulatedLoss(t *testing.T) {
	testenv.RootAndTools(t, "tcpdump", "ping")
	top := topo.New()
	top.AddHost("h1")
	top.AddHost("h2")
	top.AddLink("h1", "h2", topo.Params{"loss": "1", "seed": "11"})
	n := startNet(t, top, Options{})
	dir := t.TempDir()
	lc, err := n.StartCapture(CaptureSpec{Node1: "h1", Node2: "h2", Dir: Forward, File: filepath.Join(dir, "h1-h2.pcapng")})
	if err != nil {
		t.Fatal(err)
	}
	if len(lc.Files) != 2 {
		t.Fatalf("files %v, want before and after", lc.Files)
	}
	node, _ := n.Node("h1")
	ip, _ := n.IP("h2")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := node.Exec(ctx, "ping", "-n", "-q", "-c", "1000", "-i", "0.002", "-W", "1", ip.String())
	if err != nil {
		t.Fatal(err)
	}
	received := -1
	if m := regexp.MustCompile(`(\d+) received`).FindStringSubmatch(string(res.Stdout)); m != nil {
		received, _ = strconv.Atoi(m[1])
	}
	st, err := lc.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats %+v; ping received %d", st, received)
	before := countEchoRequests(t, lc.Files[0])
	after := countEchoRequests(t, lc.Files[1])
	t.Logf("echo requests: %d before the emulator, %d after", before, after)
	if before != 1000 {
		t.Errorf("%d echo requests before the emulator, want 1000", before)
	}
	if after < 975 || after > 1000 {
		t.Errorf("%d echo requests after 1%% loss, want 990 ± 15 (5σ)", after)
	}
	if received >= 0 && received > after {
		t.Errorf("ping got %d replies but only %d requests passed", received, after)
	}
	if _, err := exec.LookPath("tshark"); err == nil {
		out, err := exec.Command("tshark", "-r", lc.Files[1], "-c", "1").CombinedOutput()
		if err != nil {
			t.Errorf("tshark -r: %v\n%s", err, out)
		}
	}
}

// TestCapturePlainBothDirections captures a veth link to a switch.
func TestCapturePlainBothDirections(t *testing.T) {
	testenv.RootAndTools(t, "tcpdump")
	n := startNet(t, mustTopo(t, "single,2"), Options{})
	dir := t.TempDir()
	lc, err := n.StartCapture(CaptureSpec{Node1: "h1", Node2: "s1", File: filepath.Join(dir, "c.pcapng"), Limit: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.PingAll(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if err := n.StopCaptures(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("tcpdump", "-nr", lc.Files[0], "icmp").CombinedOutput()
	if err != nil {
		t.Fatalf("tcpdump: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "echo request") || !strings.Contains(string(out), "echo reply") {
		t.Errorf("capture misses a direction:\n%s", out)
	}
	if _, err := n.StartCapture(CaptureSpec{Node1: "h1", Node2: "h2"}); err == nil {
		t.Error("capture between unlinked nodes: no error")
	}
}
