package hymn

import (
	"context"
	"time"
)

// PingResults is Ping (Mininet's pingall output and result line) that also
// returns every pair's result, for callers that want the matrix as data.
func (n *Network) PingResults(ctx context.Context, hosts []string, timeout time.Duration) ([]PingResult, float64, error) {
	list, err := n.hostList(hosts)
	if err != nil {
		return nil, 0, err
	}
	results, err := n.pingMatrix(ctx, list, timeout, hosts == nil)
	if err != nil {
		return nil, 0, err
	}
	sent, received := 0, 0
	for _, r := range results {
		sent += r.Sent
		received += r.Received
	}
	if sent == 0 {
		n.log().Output("*** Warning: No packets sent\n")
		return results, 0, nil
	}
	loss := 100 * float64(sent-received) / float64(sent)
	n.log().Outputf("*** Results: %d%% dropped (%d/%d received)\n", int(loss), received, sent)
	return results, loss, nil
}
