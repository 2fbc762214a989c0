package pyapi

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/hymn-net/hymn"
)

// pingWorkers bounds the pings of one request that run at once.
const pingWorkers = 8

var (
	pingCounts = regexp.MustCompile(`(\d+) packets transmitted, (\d+)( packets)? received`)
	pingRTT    = regexp.MustCompile(`rtt min/avg/max/mdev = (\d+\.\d+)/(\d+\.\d+)/(\d+\.\d+)/(\d+\.\d+) ms`)
)

// pingAddrs pings every ordered pair of hosts as Mininet does, at the
// address the script gives a host (its IP() after a setIP hymn did not
// make) or else at the one hymn gave it; each ping is ping -c1 in the
// source node. A host with no address at all counts one sent, none
// received, as Mininet's ping of "None" does.
func pingAddrs(ctx context.Context, n *hymn.Network, hosts []string, addrs map[string]string, timeout time.Duration) ([]PingInfo, error) {
	if hosts == nil {
		for _, h := range n.Hosts() {
			hosts = append(hosts, h.Name)
		}
	}
	target := map[string]netip.Addr{}
	for _, h := range hosts {
		if s, ok := addrs[h]; ok {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("%w: ping: address of %s: %v", errUsage, h, err)
			}
			target[h] = a
		} else if a, err := n.IP(h); err == nil {
			target[h] = a
		}
	}
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	type job struct{ src, dst string }
	var jobs []job
	for _, s := range hosts {
		for _, d := range hosts {
			if s != d {
				jobs = append(jobs, job{s, d})
			}
		}
	}
	out := make([]PingInfo, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, pingWorkers)
	var wg sync.WaitGroup
	for i, j := range jobs {
		out[i] = PingInfo{Src: j.src, Dst: j.dst, Sent: 1}
		addr, ok := target[j.dst]
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			node, err := n.Node(j.src)
			if err != nil {
				errs[i] = err
				return
			}
			res, err := node.Exec(ctx, "ping", "-c1", "-W", strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64), addr.String())
			if err != nil && ctx.Err() != nil {
				errs[i] = err
				return
			}
			parsePing(string(res.Stdout)+string(res.Stderr), &out[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parsePing reads ping's summary into r (which counts one sent, none
// received, when the output has none: an unreachable network).
func parsePing(text string, r *PingInfo) {
	m := pingCounts.FindStringSubmatch(text)
	if m == nil {
		return
	}
	sent, err1 := strconv.Atoi(m[1])
	received, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil || sent < 1 || received > sent {
		return
	}
	r.Sent, r.Received = sent, received
	if m := pingRTT.FindStringSubmatch(text); m != nil {
		for i, p := range []*float64{&r.RTTMin, &r.RTTAvg, &r.RTTMax, &r.RTTMdev} {
			*p, _ = strconv.ParseFloat(m[i+1], 64)
		}
	}
}
