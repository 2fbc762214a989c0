package hymn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// IperfResult is the outcome of an iperf run: the rate the server measured
// and the rate the client sent, in bit/s, with Mininet's text for each.
type IperfResult struct {
	Client, Server         string
	ServerBps, ClientBps   float64
	ServerText, ClientText string
	UDPBw                  string // the offered UDP rate; empty for TCP
}

// IperfPort is the port iperf uses, Mininet's 5001.
const IperfPort = 5001

// Iperf measures TCP throughput from client to server with iperf3 for the
// given duration (Mininet's default 5 s when zero). With no hosts named it
// uses the first and last host, as Mininet does. It prints Mininet's
// "*** Iperf:" and "*** Results: ['x Gbits/sec', 'y Gbits/sec']" lines.
func (n *Network) Iperf(ctx context.Context, client, server string, seconds time.Duration) (IperfResult, error) {
	return n.iperf(ctx, client, server, seconds, "")
}

// IperfUDP is Iperf over UDP at the offered rate udpBw (iperf's syntax,
// "10M"; Mininet's default when empty). It prints Mininet's
// "*** Results: ['10M', server, client]".
func (n *Network) IperfUDP(ctx context.Context, udpBw, client, server string, seconds time.Duration) (IperfResult, error) {
	if udpBw == "" {
		udpBw = "10M"
	}
	return n.iperf(ctx, client, server, seconds, udpBw)
}

func (n *Network) iperf(ctx context.Context, client, server string, seconds time.Duration, udpBw string) (IperfResult, error) {
	if err := CheckTools("iperf3"); err != nil {
		return IperfResult{}, err
	}
	if client == "" && server == "" {
		hosts := n.Plan().Hosts()
		if len(hosts) < 2 {
			return IperfResult{}, fmt.Errorf("iperf needs two hosts; the network has %d", len(hosts))
		}
		client, server = hosts[0].Name, hosts[len(hosts)-1].Name
	}
	if seconds <= 0 {
		seconds = 5 * time.Second
	}
	cn, err := n.Node(client)
	if err != nil {
		return IperfResult{}, err
	}
	sn, err := n.Node(server)
	if err != nil {
		return IperfResult{}, err
	}
	ip, err := n.IP(server)
	if err != nil {
		return IperfResult{}, err
	}
	l4 := "TCP"
	if udpBw != "" {
		l4 = "UDP"
	}
	n.log().Output("*** Iperf: testing", l4, "bandwidth between", client, "and", server, "\n")

	// The server runs as a background job of the node's persistent shell
	// (as Mininet runs it), so the same steps work in a namespace and in a
	// VM through its agent.
	out, err := sn.Cmd(ctx, fmt.Sprintf("iperf3 -s -1 -p %d >/dev/null 2>&1 & echo $!", IperfPort))
	if err != nil {
		return IperfResult{}, fmt.Errorf("starting the iperf3 server on %s: %w", server, err)
	}
	srvPid := strings.TrimSpace(out)
	// Gone already after its one test; this covers failures, so its own
	// error (no such process) says nothing.
	defer func() {
		_, _ = sn.Cmd(context.Background(), "kill "+srvPid+" 2>/dev/null; wait "+srvPid+" 2>/dev/null")
	}()
	if err := waitListening(ctx, sn, IperfPort, 5*time.Second); err != nil {
		return IperfResult{}, fmt.Errorf("iperf3 server on %s: %w", server, err)
	}
	args := []string{"-J", "-c", ip.String(), "-p", fmt.Sprint(IperfPort), "-t", fmt.Sprintf("%.3f", seconds.Seconds())}
	if udpBw != "" {
		args = append(args, "-u", "-b", udpBw)
	}
	res, err := cn.Exec(ctx, "iperf3", args...)
	if err != nil {
		return IperfResult{}, err
	}
	serverBps, clientBps, err := parseIperf3(res.Stdout)
	if err != nil {
		return IperfResult{}, fmt.Errorf("iperf3 from %s to %s: %w", client, server, err)
	}
	r := IperfResult{Client: client, Server: server, ServerBps: serverBps, ClientBps: clientBps}
	r.ServerText, r.ClientText = FormatBps(r.ServerBps), FormatBps(r.ClientBps)
	if udpBw != "" {
		r.UDPBw = udpBw
		n.log().Outputf("*** Results: ['%s', '%s', '%s']\n", udpBw, r.ServerText, r.ClientText)
	} else {
		n.log().Outputf("*** Results: ['%s', '%s']\n", r.ServerText, r.ClientText)
	}
	return r, nil
}

// parseIperf3 reads the rates from iperf3's JSON report (-J). The report
// comes from a node, which may print anything: rates must be finite and
// non-negative, and an error quotes at most 200 bytes of the output.
func parseIperf3(out []byte) (serverBps, clientBps float64, err error) {
	type rate struct {
		BitsPerSecond float64 `json:"bits_per_second"`
	}
	var report struct {
		Error string `json:"error"`
		End   struct {
			SumSent     rate `json:"sum_sent"`
			SumReceived rate `json:"sum_received"`
			Sum         rate `json:"sum"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		return 0, 0, fmt.Errorf("could not parse iperf3 output: %w: %s", err, quoteClipped(bytes.TrimSpace(out), 200))
	}
	if report.Error != "" {
		return 0, 0, errors.New(quoteClipped([]byte(report.Error), 200))
	}
	serverBps, clientBps = report.End.SumReceived.BitsPerSecond, report.End.SumSent.BitsPerSecond
	if clientBps == 0 { // older iperf3 reports UDP only in "sum"
		clientBps = report.End.Sum.BitsPerSecond
	}
	for _, v := range []float64{serverBps, clientBps} {
		if v < 0 || v > maxBps || math.IsNaN(v) {
			return 0, 0, fmt.Errorf("iperf3 reported an impossible rate %v", v)
		}
	}
	return serverBps, clientBps, nil
}

// maxBps bounds a believable rate: a petabit per second.
const maxBps = 1e15

// quoteClipped quotes text a node printed (so control characters cannot
// reach the user's terminal) and keeps at most n bytes of the quoted form.
func quoteClipped(b []byte, n int) string {
	q := strconv.Quote(string(b))
	if len(q) > n {
		q = q[:n] + "..."
	}
	return q
}

// FormatBps renders a rate the way iperf prints it (and so Mininet's
// results): three significant digits and a decimal prefix, "9.57 Mbits/sec".
func FormatBps(bps float64) string {
	if bps < 0 || math.IsNaN(bps) || bps >= 1e18 {
		return fmt.Sprintf("%.3g bits/sec", bps)
	}
	units := []string{"", "K", "M", "G", "T"} // Mininet stops at T: "94960 Tbits/sec"
	u := 0
	for bps >= 1000 && u < len(units)-1 {
		bps /= 1000
		u++
	}
	format := "%.0f %sbits/sec"
	switch {
	case bps < 9.995:
		format = "%.2f %sbits/sec"
	case bps < 99.95:
		format = "%.1f %sbits/sec"
	}
	return fmt.Sprintf(format, bps, units[u])
}

// waitListening polls the node's TCP tables until something listens on
// port. Connecting to probe would use up iperf3's one-off (-1) session.
func waitListening(ctx context.Context, node Node, port int, limit time.Duration) error {
	want := fmt.Sprintf(":%04X ", port)
	deadline := time.Now().Add(limit)
	for {
		res, err := node.Exec(ctx, "cat", "/proc/net/tcp", "/proc/net/tcp6")
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(res.Stdout), "\n") {
			fields := strings.Fields(line)
			// local_address is field 1, st is field 3; 0A is LISTEN.
			if len(fields) > 3 && strings.HasSuffix(fields[1]+" ", want) && fields[3] == "0A" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("not listening after " + limit.String())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
