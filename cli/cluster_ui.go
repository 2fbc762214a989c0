package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/hymn-net/hymn/cluster"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/ui"
)

// clusterParts is a running cluster as its live view reads it: the
// workers answer the view's API through the worker protocol.
type clusterParts struct {
	c    *cluster.Cluster
	run  string
	cuts []ui.CutLink
}

func newClusterParts(c *cluster.Cluster, n *clusterNet) (*clusterParts, error) {
	plan := n.Plan()
	if plan == nil {
		return nil, n.planErr
	}
	var runs []string
	for _, e := range c.Ready {
		runs = append(runs, e.Run)
	}
	p := &clusterParts{c: c, run: strings.Join(runs, "+")}
	// Each cut link as its first end's worker made it (VNI, emulation).
	for _, e := range c.Linked {
		for _, cs := range e.Cut {
			if !cs.First || cs.Index < 0 || cs.Index >= len(plan.Links) {
				continue
			}
			l := plan.Links[cs.Index]
			p.cuts = append(p.cuts, ui.CutLink{Index: cs.Index, Node1: l.Intf1.Node, Node2: l.Intf2.Node, Intf1: l.Intf1.Name, Intf2: l.Intf2.Name,
				Worker1: c.Split.Assign[l.Intf1.Node], Worker2: c.Split.Assign[l.Intf2.Node], VNI: cs.VNI, Emulated: cs.Emulated})
		}
	}
	return p, nil
}

func (p *clusterParts) Run() string  { return p.run }
func (p *clusterParts) Workers() int { return len(p.c.Specs) }

func (p *clusterParts) WorkerOf(node string) (int, bool) {
	w, ok := p.c.Split.Assign[node]
	return w, ok
}

func (p *clusterParts) Call(ctx context.Context, w int, method, target string, body []byte) (ui.Reply, error) {
	e, err := p.c.API(ctx, w, method, target, body)
	if err != nil {
		return ui.Reply{}, err
	}
	return ui.Reply{Status: e.Status, Header: e.Header, Body: e.Body}, nil
}

func (p *clusterParts) CutLinks() []ui.CutLink { return p.cuts }

// CutCounters reads each cut link at its first end's worker (the tunnel's
// tx is then a>b), at the other end's when that one did not answer.
func (p *clusterParts) CutCounters(ctx context.Context) (map[int]ui.CutCounters, error) {
	events, err := p.c.Stats(ctx)
	if err != nil {
		return nil, err
	}
	out := map[int]ui.CutCounters{}
	for _, e := range events {
		for _, cs := range e.Cut {
			t := cs.Tunnel
			tx := ui.Counters{Packets: t.TxPackets, Bytes: t.TxBytes, Dropped: t.TxDropped}
			rx := ui.Counters{Packets: t.RxPackets, Bytes: t.RxBytes, Dropped: t.RxDropped}
			if cs.First {
				out[cs.Index] = ui.CutCounters{AB: tx, BA: rx}
			} else if _, ok := out[cs.Index]; !ok {
				out[cs.Index] = ui.CutCounters{AB: rx, BA: tx}
			}
		}
	}
	return out, nil
}

// clusterLiveView serves the page of a split network (cluster run --ui);
// the shell's ui command prints its URL, starting it if needed.
func (n *clusterNet) LiveView(f uiFlags, lg *mnlog.Logger) (*ui.Server, error) {
	if n.view != nil {
		return n.view, nil
	}
	warning, err := f.check()
	if err != nil {
		return nil, err
	}
	parts, err := newClusterParts(n.c, n)
	if err != nil {
		return nil, err
	}
	ui.Version = Version
	s, err := ui.ServeCluster(parts, f.options(lg))
	if err == nil && warning != "" {
		lg.Warningf("%s", warning)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: --ui: %v", ErrUsage, err)
	}
	n.view = s
	return s, nil
}
