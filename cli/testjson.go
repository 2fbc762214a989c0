package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/topo"
)

// checkResultFlags validates --json, --capture and the action's needs
// (measure's hosts) against the loaded topology, before anything is built.
func checkResultFlags(f *mnFlags, tests []string, t *topo.Topo) error {
	if f.jsonOut && len(tests) == 0 && f.action == nil {
		return fmt.Errorf("%w: --json needs --test (it prints the tests' results)", ErrUsage)
	}
	for _, c := range f.captures {
		spec, err := hymn.ParseCaptureSpec(c)
		if err != nil {
			return fmt.Errorf("%w: --capture %s: %v", ErrUsage, c, err)
		}
		if t != nil && !linked(t, spec.Node1, spec.Node2) {
			return fmt.Errorf("%w: --capture %s: no link joins %s and %s", ErrUsage, c, spec.Node1, spec.Node2)
		}
	}
	if f.checkTopo != nil && t != nil {
		return f.checkTopo(t)
	}
	return nil
}

func linked(t *topo.Topo, a, b string) bool {
	for _, l := range t.Links() {
		if (l.Node1 == a && l.Node2 == b) || (l.Node1 == b && l.Node2 == a) {
			return true
		}
	}
	return false
}

// pingJSON is one ping of a matrix; RTTs in ms (absent when none came back).
type pingJSON struct {
	Src      string   `json:"src"`
	Dst      string   `json:"dst"`
	Family   string   `json:"family,omitempty"` // IPv4 or IPv6 with --ipv6
	Sent     int      `json:"sent"`
	Received int      `json:"received"`
	RTT      *rttJSON `json:"rtt_ms,omitempty"`
}

type rttJSON struct {
	Min  float64 `json:"min"`
	Avg  float64 `json:"avg"`
	Max  float64 `json:"max"`
	Mdev float64 `json:"mdev"`
}

// testJSON is one --test's result.
type testJSON struct {
	Test string `json:"test"`
	// ping tests
	DroppedPercent *float64   `json:"dropped_percent,omitempty"`
	Sent           int        `json:"sent,omitempty"`
	Received       int        `json:"received,omitempty"`
	Pings          []pingJSON `json:"pings,omitempty"`
	// iperf tests
	Iperf *iperfJSON `json:"iperf,omitempty"`
}

type iperfJSON struct {
	Client     string  `json:"client"`
	Server     string  `json:"server"`
	Protocol   string  `json:"protocol"`
	ServerBps  float64 `json:"server_bps"`
	ClientBps  float64 `json:"client_bps"`
	UDPOffered string  `json:"udp_offered,omitempty"`
}

func pingsJSON(test string, results []hymn.PingResult) testJSON {
	t := testJSON{Test: test, Pings: []pingJSON{}}
	for _, r := range results {
		p := pingJSON{Src: r.Src, Dst: r.Dst, Family: r.Family, Sent: r.Sent, Received: r.Received}
		if r.Received > 0 {
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			p.RTT = &rttJSON{ms(r.RTTMin), ms(r.RTTAvg), ms(r.RTTMax), ms(r.RTTMdev)}
		}
		t.Sent += r.Sent
		t.Received += r.Received
		t.Pings = append(t.Pings, p)
	}
	d := 0.0
	if t.Sent > 0 {
		d = 100 * float64(t.Sent-t.Received) / float64(t.Sent)
	}
	t.DroppedPercent = &d
	return t
}

func iperfResultJSON(test string, r hymn.IperfResult) testJSON {
	proto := "tcp"
	if r.UDPBw != "" {
		proto = "udp"
	}
	return testJSON{Test: test, Iperf: &iperfJSON{Client: r.Client, Server: r.Server, Protocol: proto, ServerBps: r.ServerBps, ClientBps: r.ClientBps, UDPOffered: r.UDPBw}}
}

// runTestsJSON runs the tests as runTest does (Mininet's lines on stderr)
// and prints {"tests": [...]} on stdout.
func runTestsJSON(ctx context.Context, net *hymn.Network, tests []string, stdout io.Writer) error {
	out := struct {
		Run   string     `json:"run"`
		Tests []testJSON `json:"tests"`
	}{Run: net.RunID(), Tests: []testJSON{}}
	pingTest := func(name string, hosts []string, full bool) error {
		var res []hymn.PingResult
		var err error
		if full {
			res, err = net.PingFull(ctx, hosts, 0)
		} else {
			res, _, err = net.PingResults(ctx, hosts, 0)
		}
		if err == nil {
			out.Tests = append(out.Tests, pingsJSON(name, res))
		}
		return err
	}
	pair := func() ([]string, error) {
		h := net.Hosts()
		if len(h) < 2 {
			return nil, fmt.Errorf("pingpair needs two hosts; the network has %d", len(h))
		}
		return []string{h[0].Name, h[1].Name}, nil
	}
	for _, name := range tests {
		var err error
		if pairs, ok, perr := pingSampleSize(name); ok && perr == nil {
			var res []hymn.PingResult
			if res, _, err = net.PingSample(ctx, pairs, uint64(time.Now().UnixNano()), 0); err != nil {
				return err
			}
			out.Tests = append(out.Tests, pingsJSON("pingsample", res))
			continue
		}
		switch name {
		case "pingall":
			err = pingTest(name, nil, false)
		case "pingallfull":
			err = pingTest(name, nil, true)
		case "pingpair", "pingpairfull":
			var hosts []string
			if hosts, err = pair(); err == nil {
				err = pingTest(name, hosts, name == "pingpairfull")
			}
		case "iperf":
			var r hymn.IperfResult
			if r, err = net.Iperf(ctx, "", "", 0); err == nil {
				out.Tests = append(out.Tests, iperfResultJSON(name, r))
			}
		case "iperfudp":
			var r hymn.IperfResult
			if r, err = net.IperfUDP(ctx, "", "", "", 0); err == nil {
				out.Tests = append(out.Tests, iperfResultJSON(name, r))
			}
		case "all":
			if err = pingTest("pingall", nil, false); err == nil {
				var r hymn.IperfResult
				if r, err = net.Iperf(ctx, "", "", 0); err == nil {
					out.Tests = append(out.Tests, iperfResultJSON("iperf", r))
				}
			}
		default: // build, none
			out.Tests = append(out.Tests, testJSON{Test: name})
		}
		if err != nil {
			return err
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
