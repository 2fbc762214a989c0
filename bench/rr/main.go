// Command rr measures request/response latency across a line of nodes
// (h1 - h2 - ... - hN, the inner nodes routing, as in examples/cimininet)
// built once with veth links and once with SR-IOV VF pairs (the simulated
// NIC where there is no hardware), each with and without a constant delay
// on every link, side by side in one run: all the networks are built
// first and then take turns, a round of requests each, so that every
// variant sees the same machine.
//
// A request is a 64-byte UDP datagram from h1 to an echo responder on hN;
// the next one leaves -gap after the reply (a closed loop, one request in
// flight). Two times are kept per request:
//
//   - app: from just before the send to the return of the receive, on the
//     monotonic clock, as an application sees it (both ends' wake-ups
//     included);
//
//   - net: from just before the send to the kernel's receive stamp of the
//     reply, less the time the responder held the request (its kernel
//     receive stamp to its reply), so the path alone, without either
//     process's scheduling.
//
//     sudo go run ./bench/rr -hosts 3 -delays 0,5ms -links veth,sriov -requests 1000
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/measure"
	"github.com/hymn-net/hymn/sriov"
	"github.com/hymn-net/hymn/topo"
	"golang.org/x/sys/unix"
)

// variant is one network of the run.
type variant struct {
	links          hymn.LinkBackend
	delay          time.Duration
	name           string
	nw             *hymn.Network
	cli            *net.UDPConn
	srv            *net.UDPConn
	to             *net.UDPAddr
	seq            uint32
	appRTT, netRTT []time.Duration
	lost           int
}

// Summary is one variant's result.
type Summary struct {
	Variant  string
	Requests int
	Lost     int
	App, Net Percentiles
}

// Percentiles of one series, in µs.
type Percentiles struct {
	P50, P90, P99, P999, Max, Spread float64 // Spread = P99 - P50
}

func main() {
	hosts := flag.Int("hosts", 3, "nodes in the line (≥ 2)")
	delays := flag.String("delays", "0,5ms", "comma-separated constant delays per link (0: plain links)")
	linkList := flag.String("links", "veth,sriov", "comma-separated link backends")
	requests := flag.Int("requests", 1000, "measured requests per variant")
	round := flag.Int("round", 50, "requests per variant per turn")
	gap := flag.Duration("gap", time.Millisecond, "pause between a reply and the next request")
	jsonOut := flag.Bool("json", false, "print the summaries as JSON")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
	defer stop()
	if err := run(ctx, *hosts, *delays, *linkList, *requests, *round, *gap, *jsonOut); err != nil {
		fmt.Fprintln(os.Stderr, "rr:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, hosts int, delays, linkList string, requests, round int, gap time.Duration, jsonOut bool) (err error) {
	if hosts < 2 || requests < 1 || round < 1 {
		return errors.New("need -hosts ≥ 2, -requests ≥ 1, -round ≥ 1")
	}
	var vs []*variant
	defer func() {
		for _, v := range vs {
			v.close()
		}
	}()
	for _, l := range strings.Split(linkList, ",") {
		backend, _, err := hymn.ParseLinkBackend(l)
		if err != nil {
			return err
		}
		for _, d := range strings.Split(delays, ",") {
			delay, err := time.ParseDuration(d)
			if d == "0" {
				delay, err = 0, nil
			}
			if err != nil {
				return fmt.Errorf("delay %q: %w", d, err)
			}
			v := &variant{links: backend, delay: delay, name: fmt.Sprintf("%s delay %v", backend, delay)}
			vs = append(vs, v)
			if err := v.start(ctx, hosts); err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
		}
	}
	for _, v := range vs {
		// Warm-up: ARP, the emulators' first frames, the NIC's first wake-ups.
		for range 20 {
			v.request(gap, false)
		}
	}
	fmt.Fprintf(os.Stderr, "load average at start: %s", loadavg())
	for done := 0; done < requests; done += round {
		for _, v := range vs {
			for range min(round, requests-done) {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				v.request(gap, true)
			}
		}
	}
	fmt.Fprintf(os.Stderr, "load average at end: %s", loadavg())
	var out []Summary
	for _, v := range vs {
		out = append(out, Summary{Variant: v.name, Requests: len(v.appRTT) + v.lost, Lost: v.lost, App: percentiles(v.appRTT), Net: percentiles(v.netRTT)})
	}
	if jsonOut {
		e := json.NewEncoder(os.Stdout)
		e.SetIndent("", "  ")
		return e.Encode(out)
	}
	fmt.Printf("%-22s %6s %5s | %-44s | %s\n", "", "", "", "app µs: p50 p90 p99 p99.9 max (p99-p50)", "net µs: p50 p90 p99 p99.9 max (p99-p50)")
	for _, s := range out {
		fmt.Printf("%-22s %6d %5d | %s | %s\n", s.Variant, s.Requests, s.Lost, s.App, s.Net)
	}
	return nil
}

func (p Percentiles) String() string {
	return fmt.Sprintf("%7.0f %7.0f %7.0f %7.0f %7.0f (%5.0f)", p.P50, p.P90, p.P99, p.P999, p.Max, p.Spread)
}

func percentiles(d []time.Duration) Percentiles {
	if len(d) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return float64(s[max(i, 0)]) / 1e3
	}
	p := Percentiles{P50: at(0.5), P90: at(0.9), P99: at(0.99), P999: at(0.999), Max: float64(s[len(s)-1]) / 1e3}
	p.Spread = p.P99 - p.P50
	return p
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(b)
}

// line is the routed line (topo.RoutedLine), every link with the
// variant's delay.
func line(n int, delay time.Duration) (*topo.Topo, error) {
	t, err := topo.RoutedLine(n)
	if err != nil {
		return nil, err
	}
	if delay > 0 {
		for _, l := range t.Links() {
			l.Params["delay"] = delay.String()
		}
	}
	return t, nil
}

func (v *variant) start(ctx context.Context, hosts int) error {
	opts := hymn.Options{Links: v.links}
	if v.links == hymn.LinksSRIOV {
		opts.SRIOV = &sriov.Config{Simulate: sriov.SimAlways}
	}
	t, err := line(hosts, v.delay)
	if err != nil {
		return err
	}
	n, err := hymn.New(t, opts)
	if err != nil {
		return err
	}
	if err := n.Start(ctx); err != nil {
		// Start already removed what it built (this Stop is then a
		// no-op); Start's error is the one to report.
		_ = n.Stop()
		return err
	}
	v.nw = n
	last := fmt.Sprintf("h%d", hosts)
	ip, err := n.IP(last)
	if err != nil {
		return err
	}
	if v.srv, err = listen(n, last); err != nil {
		return err
	}
	if v.cli, err = listen(n, "h1"); err != nil {
		return err
	}
	v.to = &net.UDPAddr{IP: net.IP(ip.AsSlice()), Port: v.srv.LocalAddr().(*net.UDPAddr).Port}
	go measure.Echo(v.srv)
	return nil
}

func (v *variant) close() {
	for _, c := range []*net.UDPConn{v.cli, v.srv} {
		if c != nil {
			_ = c.Close() // a UDP socket: closing it cannot lose data
		}
	}
	if v.nw != nil {
		if err := v.nw.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "rr: %s: %v\n", v.name, err)
		}
	}
}

// listen opens a UDP socket in a node's namespace with kernel receive
// stamps on.
func listen(n *hymn.Network, node string) (*net.UDPConn, error) {
	nd, err := n.Node(node)
	if err != nil {
		return nil, err
	}
	return measure.ListenStamped(nd.NsHandle(), netip.AddrPort{})
}

// request sends one request and waits up to a second for its reply.
func (v *variant) request(gap time.Duration, record bool) {
	defer time.Sleep(gap)
	v.seq++
	buf, oob := make([]byte, 64), make([]byte, 128)
	binary.BigEndian.PutUint32(buf, v.seq)
	t0 := time.Now()
	if _, err := v.cli.WriteToUDP(buf, v.to); err != nil {
		if record {
			v.lost++
		}
		return
	}
	// SetReadDeadline fails only on a closed socket, and then the read
	// below fails too and counts the request lost.
	_ = v.cli.SetReadDeadline(t0.Add(time.Second))
	for {
		k, oobn, _, _, err := v.cli.ReadMsgUDP(buf, oob)
		if err != nil {
			if record {
				v.lost++
			}
			return
		}
		if k < 16 || binary.BigEndian.Uint32(buf) != v.seq {
			continue // a late reply to an earlier request
		}
		app := time.Since(t0)
		rx := measure.KernelStamp(oob[:oobn])
		if rx == 0 {
			rx = time.Now().UnixNano()
		}
		hold := int64(binary.BigEndian.Uint64(buf[8:]))
		if record {
			v.appRTT = append(v.appRTT, app)
			v.netRTT = append(v.netRTT, time.Duration(rx-t0.UnixNano()-hold))
		}
		return
	}
}
