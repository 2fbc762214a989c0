package hymn

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/topo"
)

// withLinkParams sets params on every link of a topology, as --link does.
func withLinkParams(t *testing.T, spec string, params topo.Params) *topo.Topo {
	t.Helper()
	top := mustTopo(t, spec)
	for _, l := range top.Links() {
		if l.Params == nil {
			l.Params = topo.Params{}
		}
		for k, v := range params {
			l.Params[k] = v
		}
	}
	return top
}

var pingRTT = regexp.MustCompile(`rtt min/avg/max/mdev = ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+) ms`)

func pingAvg(t *testing.T, n *Network, src, dst string, args ...string) (avg float64, out string) {
	t.Helper()
	node, err := n.Node(src)
	if err != nil {
		t.Fatal(err)
	}
	ip, err := n.IP(dst)
	if err != nil {
		t.Fatal(err)
	}
	res, err := node.Exec(context.Background(), "ping", append(args, ip.String())...)
	if err != nil {
		t.Fatal(err)
	}
	out = string(res.Stdout)
	m := pingRTT.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("ping %s -> %s: no RTT in output:\n%s%s", src, dst, out, res.Stderr)
	}
	avg, _ = strconv.ParseFloat(m[2], 64)
	return avg, out
}

func TestEmulatedParamsUnit(t *testing.T) {
	ab, ba, err := EmulatorConfigs(topo.Params{"bw": "10", "delay": "10ms", "loss": "1", "max_queue_size": "100", "b>a.delay": "20ms", "mtu": "1500"})
	if err != nil {
		t.Fatal(err)
	}
	if ab.Delay != 10*time.Millisecond || ba.Delay != 20*time.Millisecond {
		t.Errorf("delays %v %v", ab.Delay, ba.Delay)
	}
	if !ab.Space.Enabled || ab.Space.Rate != 10_000_000 || ab.Buffer != 100 || ab.Loss.Prob != 0.01 {
		t.Errorf("a>b config %+v", ab)
	}
	for _, bad := range []topo.Params{
		{"bw": "0"}, {"bw": "-1"}, {"delay": "-5ms"}, {"loss": "101"}, {"max_queue_size": "0"},
		{"a>b.frobnicate": "1"}, {"dist": "pareto"}, {"delay": "soon"},
	} {
		_, _, err := EmulatorConfigs(bad)
		if !errors.Is(err, ErrLinkParams) && !errors.Is(err, emulator.ErrInvalidConfig) {
			t.Errorf("%v: err = %v, want a parameter error", bad, err)
			continue
		}
		for k := range bad {
			k = strings.TrimPrefix(k, "a>b.")
			if !strings.Contains(err.Error(), k) {
				t.Errorf("%v: error %q does not name %s", bad, err, k)
			}
		}
	}
	if NeedsEmulator(topo.Params{"mtu": "1500"}) || !NeedsEmulator(topo.Params{"delay": "0"}) || !NeedsEmulator(topo.Params{"a>b.loss": "1"}) {
		t.Error("NeedsEmulator")
	}
}

// TestEmulatedLinkChange is Mininet's walkthrough testLinkChange:
// single,2 with bw=10, delay=10ms gives 9.0–10.1 Mbit/s and a 40–50 ms RTT.
func TestEmulatedLinkChange(t *testing.T) {
	requireRoot(t)
	if err := CheckTools("iperf3"); err != nil {
		t.Skip(err)
	}
	n := startNet(t, withLinkParams(t, "single,2", topo.Params{"bw": "10", "delay": "10ms"}), Options{})
	res, err := n.Iperf(context.Background(), "h1", "h2", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mbps := res.ServerBps / 1e6
	t.Logf("iperf h1->h2: server %.3f Mbit/s, client %.3f Mbit/s", mbps, res.ClientBps/1e6)
	if mbps < 9.0 || mbps > 10.1 {
		t.Errorf("iperf %.3f Mbit/s, want [9.0, 10.1]", mbps)
	}
	// After iperf, as in Mininet's walkthrough: ARP is resolved, so the
	// first echo does not pay two extra round trips.
	avg, out := pingAvg(t, n, "h1", "h2", "-c", "4", "-i", "0.2")
	t.Logf("h1 ping -c 4 h2: avg %.3f ms", avg)
	if avg < 40 || avg > 50 {
		t.Errorf("avg RTT %.3f ms, want [40, 50]\n%s", avg, out)
	}
	st, err := n.LinkStats("h1", "s1")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []emulator.DirectionStats{st.Forward, st.Reverse} {
		s := d.Emulator
		if s.Received != s.Sent+s.Dropped()+uint64(s.Queued) {
			t.Errorf("counters do not add up: %+v", s)
		}
	}
	t.Logf("h1>s1: rx %d tx %d dropped %d, delay p50 %v, lateness p50 %v p99 %v",
		st.Forward.Emulator.Received, st.Forward.Emulator.Sent, st.Forward.Emulator.Dropped(),
		st.Forward.Emulator.Delay.P50, st.Forward.Emulator.Lateness.P50, st.Forward.Emulator.Lateness.P99)
}
