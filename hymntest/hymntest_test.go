package hymntest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/hymntest"
)

// The smallest useful network test: build, check reachability, and let
// Start's cleanup remove the network and check nothing is left.
func TestLinearReachable(t *testing.T) {
	net := hymntest.Start(t, hymntest.Topo(t, "linear,2"), hymn.Options{})
	hymntest.Reachable(t, net, "h1", "h2")
	if out := hymntest.Cmd(t, net, "h1", "echo $((6*7))", 5*time.Second); strings.TrimSpace(out) != "42" {
		t.Errorf("h1 echo: %q", out)
	}
}

func TestLinkDownIsUnreachable(t *testing.T) {
	net := hymntest.Start(t, hymntest.Topo(t, "single,2"), hymn.Options{})
	if err := net.ConfigLinkStatus("h1", "s1", "down"); err != nil {
		t.Fatal(err)
	}
	hymntest.Unreachable(t, net, "h2", "h1")
}

func TestWaitFor(t *testing.T) {
	start := time.Now()
	hymntest.WaitFor(t, time.Second, "time to pass", func() bool { return time.Since(start) > 50*time.Millisecond })
}
