package hymn

import (
	"math"
	"strings"
	"testing"
	"time"
)

// ping's output comes from a node, which may print anything: whatever it
// prints, the result is one a pingall can add up.
func FuzzParsePing(f *testing.F) {
	for _, seed := range []string{
		"PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data.\n64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.05 ms\n\n--- 10.0.0.2 ping statistics ---\n1 packets transmitted, 1 received, 0% packet loss, time 0ms\nrtt min/avg/max/mdev = 0.050/0.050/0.050/0.000 ms\n",
		"1 packets transmitted, 0 received, 100% packet loss",
		"connect: Network is unreachable",
		"1 packets transmitted, 2 received",
		"99999999999999999999999 packets transmitted, 1 received",
		"0 packets transmitted, 0 received",
		"1 packets transmitted, 1 received\nrtt min/avg/max/mdev = " + strings.Repeat("9", 400) + ".0/1.0/1.0/1.0 ms",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, out string) {
		r := parsePing(out)
		if r.Sent < 1 || r.Received < 0 || r.Received > r.Sent {
			t.Fatalf("parsePing(%q) = %+v: sent must be ≥ 1 and 0 ≤ received ≤ sent", out, r)
		}
		for _, v := range []time.Duration{r.RTTMin, r.RTTAvg, r.RTTMax, r.RTTMdev} {
			if v < 0 {
				t.Fatalf("parsePing(%q) = %+v: RTTs must be non-negative", out, r)
			}
		}
	})
}

// iperf3's JSON report, likewise from a node: rates are finite and
// non-negative, errors are bounded, FormatBps prints them.
func FuzzParseIperf3(f *testing.F) {
	for _, seed := range []string{
		`{"end":{"sum_sent":{"bits_per_second":9.57e6},"sum_received":{"bits_per_second":9.5e6}}}`,
		`{"end":{"sum":{"bits_per_second":1e6},"sum_received":{"bits_per_second":1e6}}}`,
		`{"error":"unable to connect to server: Connection refused"}`,
		`{"end":{"sum_sent":{"bits_per_second":-1}}}`,
		`{"end":{"sum_sent":{"bits_per_second":1e308},"sum_received":{"bits_per_second":1e308}}}`,
		`not json at all`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		server, client, err := parseIperf3(out)
		if err != nil {
			if len(err.Error()) > 600 {
				t.Fatalf("error of %d bytes: errors quote at most 200 bytes of the output", len(err.Error()))
			}
			return
		}
		for _, v := range []float64{server, client} {
			if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				t.Fatalf("parseIperf3(%q) = %v, %v", out, server, client)
			}
			if s := FormatBps(v); !strings.HasSuffix(s, "bits/sec") || len(s) > 40 {
				t.Fatalf("FormatBps(%v) = %q", v, s)
			}
		}
	})
}

func TestParsePingHostile(t *testing.T) {
	for _, c := range []struct {
		out            string
		sent, received int
	}{
		{"1 packets transmitted, 2 received", 1, 0},
		{"99999999999999999999999 packets transmitted, 1 received", 1, 0},
		{"3 packets transmitted, 2 received, 33% packet loss", 3, 2},
		{"0 packets transmitted, 0 received", 1, 0},
	} {
		if r := parsePing(c.out); r.Sent != c.sent || r.Received != c.received {
			t.Errorf("parsePing(%q) = %d/%d, want %d/%d", c.out, r.Received, r.Sent, c.received, c.sent)
		}
	}
	if _, _, err := parseIperf3([]byte(`{"end":{"sum_sent":{"bits_per_second":-5}}}`)); err == nil {
		t.Error("a negative iperf3 rate was accepted")
	}
	if _, _, err := parseIperf3([]byte(strings.Repeat("x", 1<<20))); err == nil || len(err.Error()) > 600 {
		t.Errorf("a megabyte of garbage: %v", err)
	}
}
