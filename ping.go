package hymn

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hymn-net/hymn/topo"
)

// PingResult is one ping between two hosts, as Mininet's pingFull reports
// it: packets sent and received and the rtt figures in milliseconds.
type PingResult struct {
	Src, Dst               string
	Sent, Received         int
	RTTMin, RTTAvg, RTTMax time.Duration // zero when nothing came back
	RTTMdev                time.Duration
	// Family is IPv4 or IPv6 on a dual-stack network (Options.IPv6), where
	// every pair is pinged in both; empty otherwise.
	Family string
}

var (
	pingCountsRE = regexp.MustCompile(`(\d+) packets transmitted, (\d+)( packets)? received`)
	pingRTTRE    = regexp.MustCompile(`rtt min/avg/max/mdev = (\d+\.\d+)/(\d+\.\d+)/(\d+\.\d+)/(\d+\.\d+) ms`)
	unreachRE    = regexp.MustCompile(`[uU]nreachable`)
)

// parsePing reads ping's summary the way Mininet does: an unreachable
// network or unparsable output counts as one sent, none received.
func parsePing(out string) PingResult {
	var r PingResult
	if unreachRE.MatchString(out) {
		r.Sent = 1
		return r
	}
	m := pingCountsRE.FindStringSubmatch(out)
	if m == nil {
		r.Sent = 1
		return r
	}
	sent, err1 := strconv.Atoi(m[1])
	received, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil || sent < 1 || received > sent {
		// Output no ping prints (a guest can print anything): one lost.
		r.Sent = 1
		return r
	}
	r.Sent, r.Received = sent, received
	if m := pingRTTRE.FindStringSubmatch(out); m != nil {
		rtts := []*time.Duration{&r.RTTMin, &r.RTTAvg, &r.RTTMax, &r.RTTMdev}
		for i, p := range rtts {
			// ping prints milliseconds; a value past a Duration's
			// range (292 years) is a guest's nonsense, not an RTT.
			v, err := strconv.ParseFloat(m[i+1], 64)
			if err != nil || v*float64(time.Millisecond) >= math.MaxInt64 {
				r.RTTMin, r.RTTAvg, r.RTTMax, r.RTTMdev = 0, 0, 0, 0
				break
			}
			*p = time.Duration(math.Round(v * float64(time.Millisecond)))
		}
	}
	return r
}

// pingOnce sends one echo request from src to dst's address: natively
// from a namespace node, with the ping program from a VM. timeout 0 means
// the default wait.
func (n *Network) pingOnce(ctx context.Context, src, dst string, timeout time.Duration, family string) (PingResult, error) {
	node, err := n.Node(src)
	if err != nil {
		return PingResult{}, err
	}
	ip, err := n.IP(dst)
	if family == familyIPv6 {
		ip, err = n.IP6(dst) // routes.go
	}
	if err != nil {
		return PingResult{}, err
	}
	wait := timeout
	if wait <= 0 {
		// Mininet leaves ping's own wait (10 s for an unanswered probe);
		// two seconds cover ARP on every hop of a routed path on a busy
		// machine and keep a broken topology from stalling a test run.
		wait = 2 * time.Second
		if n.isOpenFlow() {
			// Behind an OpenFlow controller a pair's first packets go
			// to the controller at every switch on the way: Mininet's
			// (ping's) 10 s keep a long path on a busy machine whole.
			wait = 10 * time.Second
		}
	}
	if ns, ok := namespaceNode(node); ok && ip.Is6() {
		r, err := nativePing6(ctx, ns, ip, wait) // icmp6.go
		r.Src, r.Dst = src, dst
		return r, err
	}
	if ns, ok := namespaceNode(node); ok {
		r, err := nativePing(ctx, ns, ip, wait)
		r.Src, r.Dst = src, dst
		return r, err
	}
	// A VM's network stack is inside the guest: run its ping there.
	if err := CheckTools("ping"); err != nil {
		return PingResult{}, err
	}
	res, err := node.Exec(ctx, "ping", "-"+strings.TrimPrefix(family, "IPv")+"c1", "-W", strconv.FormatFloat(math.Max(wait.Seconds(), 0.001), 'f', -1, 64), ip.String())
	if err != nil {
		return PingResult{}, err
	}
	r := parsePing(string(res.Stdout) + string(res.Stderr))
	r.Src, r.Dst = src, dst
	return r, nil
}

// pingMatrix pings every ordered pair of the hosts, printing Mininet's
// "h1 -> h2 X " rows in order while the pings run concurrently.
// pingRowByRow says whether a matrix pings one source's row at a time
// (its pings to every other host at once): behind OpenFlow controllers.
// A reactive controller (Mininet's learning switch) learns where a host is
// from the first packet it sees and installs flows from what it knows
// then, for a minute. Rows in Mininet's order (h1 to all, then h2, ...)
// teach it where h1 is before anyone pings h1; the whole matrix at once
// can ask first and pin a flow to a port the host has left (mobility.py:
// h2 -> h1 lost after a move, until the flow times out).
func (n *Network) pingRowByRow() bool {
	return n.isOpenFlow() && len(n.ControllerNames()) > 0
}

func (n *Network) pingMatrix(ctx context.Context, hosts []*topo.PlannedNode, timeout time.Duration, header bool) ([]PingResult, error) {
	if header {
		n.log().Output("*** Ping: testing ping reachability\n")
	}
	// A dual-stack network pings in both families, each row saying which
	// (routes.go); otherwise the rows are Mininet's.
	var all []PingResult
	for _, family := range n.pingFamilies() {
		results, err := n.pingMatrixFamily(ctx, hosts, timeout, family)
		if err != nil {
			return nil, err
		}
		n.familyResult(family, results)
		all = append(all, results...)
	}
	return all, nil
}

func (n *Network) pingMatrixFamily(ctx context.Context, hosts []*topo.PlannedNode, timeout time.Duration, family string) ([]PingResult, error) {
	lg := n.log()
	rowPrefix := ""
	if family != "" {
		rowPrefix = family + ": "
	}
	type job struct{ src, dst int }
	var jobs []job
	for i := range hosts {
		for j := range hosts {
			if i != j {
				jobs = append(jobs, job{i, j})
			}
		}
	}
	results := make([]PingResult, len(jobs))
	errs := make([]error, len(jobs))
	done := make([]chan struct{}, len(jobs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rowByRow := n.pingRowByRow()
	rowStart := make([]int, len(hosts)) // the first job of each source's row
	for i := len(jobs) - 1; i >= 0; i-- {
		rowStart[jobs[i].src] = i
	}
	sem := make(chan struct{}, n.opts.Workers)
	for i := range jobs {
		done[i] = make(chan struct{})
		go func() {
			defer close(done[i])
			if rowByRow && jobs[i].src > 0 {
				<-done[rowStart[jobs[i].src]-1] // the rows before this one
			}
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			results[i], errs[i] = n.pingOnce(ctx, hosts[jobs[i].src].Name, hosts[jobs[i].dst].Name, timeout, family)
			results[i].Family = family
		}()
	}
	var firstErr error
	for i, jb := range jobs {
		<-done[i]
		if errs[i] != nil && firstErr == nil {
			firstErr = errs[i]
			cancel()
		}
		if firstErr != nil {
			continue
		}
		if jb.dst == 0 || (jb.src == 0 && jb.dst == 1) {
			lg.Outputf("%s%s -> ", rowPrefix, hosts[jb.src].Name)
		}
		if results[i].Received > 0 {
			lg.Outputf("%s ", hosts[jb.dst].Name)
		} else {
			lg.Output("X ")
		}
		if jb.dst == len(hosts)-1 || (jb.src == len(hosts)-1 && jb.dst == len(hosts)-2) {
			lg.Output("\n")
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return results, nil
}

// Ping pings between every ordered pair of the given hosts (all hosts if
// none) and returns the percentage of lost packets, printing Mininet's
// result line.
func (n *Network) Ping(ctx context.Context, hosts []string, timeout time.Duration) (float64, error) {
	list, err := n.hostList(hosts)
	if err != nil {
		return 0, err
	}
	results, err := n.pingMatrix(ctx, list, timeout, hosts == nil)
	if err != nil {
		return 0, err
	}
	sent, received := 0, 0
	for _, r := range results {
		sent += r.Sent
		received += r.Received
	}
	if sent == 0 {
		n.log().Output("*** Warning: No packets sent\n")
		return 0, nil
	}
	loss := 100 * float64(sent-received) / float64(sent)
	n.log().Outputf("*** Results: %d%% dropped (%d/%d received)\n", int(loss), received, sent)
	return loss, nil
}

// PingAll pings between all hosts; timeout 0 is ping's default.
func (n *Network) PingAll(ctx context.Context, timeout time.Duration) (float64, error) {
	return n.Ping(ctx, nil, timeout)
}

// PingPair pings between the first two hosts.
func (n *Network) PingPair(ctx context.Context) (float64, error) {
	hosts := n.Plan().Hosts()
	if len(hosts) < 2 {
		return 0, fmt.Errorf("pingpair needs two hosts; the network has %d", len(hosts))
	}
	return n.Ping(ctx, []string{hosts[0].Name, hosts[1].Name}, 0)
}

// PingFull is Ping with every pair's result, printed as Mininet's
// pingFull prints it.
func (n *Network) PingFull(ctx context.Context, hosts []string, timeout time.Duration) ([]PingResult, error) {
	list, err := n.hostList(hosts)
	if err != nil {
		return nil, err
	}
	results, err := n.pingMatrix(ctx, list, timeout, hosts == nil)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.WriteString("*** Results: \n")
	for _, r := range results {
		family := ""
		if r.Family != "" {
			family = r.Family + " "
		}
		fmt.Fprintf(&b, " %s%s->%s: %d/%d, rtt min/avg/max/mdev %0.3f/%0.3f/%0.3f/%0.3f ms\n",
			family, r.Src, r.Dst, r.Sent, r.Received, ms(r.RTTMin), ms(r.RTTAvg), ms(r.RTTMax), ms(r.RTTMdev))
	}
	n.log().Output(b.String())
	return results, nil
}

// PingAllFull is PingFull over all hosts.
func (n *Network) PingAllFull(ctx context.Context, timeout time.Duration) ([]PingResult, error) {
	return n.PingFull(ctx, nil, timeout)
}

// PingPairFull is PingFull over the first two hosts.
func (n *Network) PingPairFull(ctx context.Context) ([]PingResult, error) {
	hosts := n.Plan().Hosts()
	if len(hosts) < 2 {
		return nil, fmt.Errorf("pingpairfull needs two hosts; the network has %d", len(hosts))
	}
	return n.PingFull(ctx, []string{hosts[0].Name, hosts[1].Name}, 0)
}

func (n *Network) hostList(names []string) ([]*topo.PlannedNode, error) {
	if names == nil {
		return n.Plan().Hosts(), nil
	}
	var out []*topo.PlannedNode
	for _, name := range names {
		p := n.Plan().Node(name)
		if p == nil {
			return nil, fmt.Errorf("%w: %s", ErrUnknownNode, name)
		}
		out = append(out, p)
	}
	return out, nil
}
