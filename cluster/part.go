package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
)

// Part is one worker's share of a topology, running.
type Part struct {
	R        *Resolved
	Net      *hymn.Network
	underlay links.Namespace

	mu     sync.Mutex
	linked []*cutSide
	helper *links.HelperNS
}

// cutSide is this worker's side of one cut link, once created.
type cutSide struct {
	CutLink
	remote netip.Addr
	ns     links.Namespace // where the VXLAN device is
	dev    string          // its name there
	emu    *emulatedVXLAN
}

// StartPart builds this worker's part with hymn.Network (nodes, internal
// links, their emulators), all or nothing. underlay is the worker's own
// namespace: where the tunnels will be anchored. Cut links are checked
// now (kinds hymn can tunnel, parameters) so a bad one fails before
// anything is built.
func StartPart(ctx context.Context, r *Resolved, underlay links.Namespace, opts hymn.Options) (*Part, error) {
	for _, c := range r.Cut {
		if err := checkCut(r, c, opts); err != nil {
			return nil, err
		}
	}
	t, err := r.Part()
	if err != nil {
		return nil, err
	}
	// The file's address options were applied when the whole plan was
	// resolved; the part carries every address explicitly.
	opts.IPBase, opts.AutoMAC = netip.Prefix{}, false
	net, err := hymn.New(t, opts)
	if err != nil {
		return nil, fmt.Errorf("part %d: %w", r.Spec.Worker, err)
	}
	if err := net.Start(ctx); err != nil {
		return nil, fmt.Errorf("part %d: %w", r.Spec.Worker, err)
	}
	return &Part{R: r, Net: net, underlay: underlay}, nil
}

func checkCut(r *Resolved, c CutLink, opts hymn.Options) error {
	if k := c.Link.Params["kind"]; k != "" && k != "veth" {
		return fmt.Errorf("cut link %s: kind %s cannot cross workers (only veth links become VXLAN tunnels)", c.Link, k)
	}
	for k := range c.Link.Params {
		if strings.Contains(k, "schedule") {
			return fmt.Errorf("cut link %s: link schedules are not carried across workers yet; place both ends on one worker (placement:)", c.Link)
		}
	}
	pn := r.Plan.Node(c.Local.Node)
	if b := pn.Params["backend"]; b == "vm" || (b == "" && !pn.IsSwitch() && opts.Nodes == hymn.BackendVM) {
		return fmt.Errorf("cut link %s: VM node %s cannot hold a cut link yet; place both ends on one worker (placement:)", c.Link, pn.Name)
	}
	if linkparams.NeedsEmulator(c.Link.Params) {
		if _, _, err := hymn.EmulatorConfigs(c.Link.Params); err != nil {
			return fmt.Errorf("cut link %s: %w", c.Link, err)
		}
	}
	return nil
}

// Link creates this worker's side of every cut link, peers[i] being
// worker i's address, then applies the part's static routes (they may go
// through a cut link). All or nothing: on failure the links made are
// removed (the network itself stays, for Stop).
func (p *Part) Link(ctx context.Context, peers []netip.Addr) (err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.linked) > 0 {
		return errors.New("cut links are already up")
	}
	s := p.R.Spec
	if len(peers) != s.Workers {
		return fmt.Errorf("%d peer addresses for %d workers", len(peers), s.Workers)
	}
	for i, a := range peers {
		if !a.IsValid() || a.IsUnspecified() || a.IsMulticast() {
			return fmt.Errorf("worker %d's address %v is not a unicast address", i, a)
		}
	}
	defer func() {
		if err != nil {
			p.unlinkLocked()
		}
	}()
	// Check every underlay first: a bad MTU should fail before any
	// device exists.
	ends := make([]VXLANEnd, len(p.R.Cut))
	for i, c := range p.R.Cut {
		node, err := p.Net.Node(c.Local.Node)
		if err != nil {
			return err
		}
		ends[i] = VXLANEnd{
			Underlay: p.underlay, Remote: peers[c.Peer], Port: s.port(), VNI: c.VNI,
			Alias: owner.LinkAlias(p.Net.RunID()),
			End:   links.End{NS: node, Name: c.Local.Name, MAC: c.Local.MAC, IP: c.Local.IP, MTU: c.Link.Params.MTU()},
		}
		if _, err := ends[i].CheckUnderlay(); err != nil {
			return fmt.Errorf("cut link %s: %w", c.Link, err)
		}
	}
	for i, c := range p.R.Cut {
		side, err := p.createSide(c, ends[i])
		if err != nil {
			return fmt.Errorf("cut link %s: %w", c, err)
		}
		p.linked = append(p.linked, side)
	}
	for _, pn := range p.R.LocalNodes() {
		for _, spec := range Routes(pn) {
			node, err := p.Net.Node(pn.Name)
			if err != nil {
				return err
			}
			res, err := node.Exec(ctx, "ip", append([]string{"route", "replace"}, strings.Fields(spec)...)...)
			if err != nil {
				return fmt.Errorf("node %s: route %q: %w", pn.Name, spec, err)
			}
			if res.ExitCode != 0 {
				return fmt.Errorf("node %s: route %q: %s", pn.Name, spec, strings.TrimSpace(string(res.Stderr)))
			}
		}
	}
	for i, side := range p.linked {
		// A VXLAN device has no carrier to report (its operational
		// state stays "unknown"); an emulated side's veth end in the
		// node does, and drops packets until it is up.
		if side.emu == nil {
			continue
		}
		if err := links.WaitOperUp(ctx, ends[i].End.NS, ends[i].End.Name); err != nil {
			return fmt.Errorf("cut link %s: %w", side.CutLink, err)
		}
	}
	return nil
}

func (p *Part) createSide(c CutLink, v VXLANEnd) (*cutSide, error) {
	attach := func() error {
		node, err := p.Net.Node(c.Local.Node)
		if err != nil {
			return err
		}
		if sw, ok := node.(*nodes.NsNode); ok && sw.Kind() == topo.KindSwitch {
			return sw.AttachPort(c.Local.Name)
		}
		return nil
	}
	side := &cutSide{CutLink: c, remote: v.Remote, ns: v.End.NS, dev: v.End.Name}
	if !linkparams.NeedsEmulator(c.Link.Params) {
		if err := CreateVXLAN(v); err != nil {
			return nil, err
		}
		if err := attach(); err != nil {
			DeleteIn(v.End.NS, v.End.Name)
			return nil, err
		}
		return side, nil
	}
	ab, ba, err := hymn.EmulatorConfigs(c.Link.Params)
	if err != nil {
		return nil, err
	}
	pass, _, err := hymn.EmulatorConfigs(topo.Params{})
	if err != nil {
		return nil, err
	}
	send := ab
	if !c.First {
		send = ba
	}
	if p.helper == nil {
		if p.helper, err = links.CreateHelperNS(owner.NamespaceName(p.Net.RunID(), "@vx")); err != nil {
			return nil, err
		}
	}
	emu, err := createEmulatedVXLAN(p.helper, c.Index, v, send, pass, attach)
	if err != nil {
		return nil, err
	}
	side.emu, side.ns, side.dev = emu, p.helper, fmt.Sprintf("x%db", c.Index)
	return side, nil
}

// CutStats are one cut link's counters on this side.
type CutStats struct {
	Link     string     `json:"link"`
	VNI      int        `json:"vni"`
	Peer     int        `json:"peer"`
	Remote   netip.Addr `json:"remote"`
	Emulated bool       `json:"emulated"`
	Tunnel   Counters   `json:"tunnel"` // the VXLAN device: tx is toward the peer
}

// Stats reads the counters of every cut link's tunnel.
func (p *Part) Stats() ([]CutStats, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]CutStats, 0, len(p.linked))
	for _, side := range p.linked {
		c, err := ReadCounters(side.ns, side.dev)
		if err != nil {
			return nil, fmt.Errorf("cut link %s: %w", side.CutLink, err)
		}
		out = append(out, CutStats{Link: side.Link.String(), VNI: side.VNI, Peer: side.Peer, Remote: side.remote, Emulated: side.emu != nil, Tunnel: c})
	}
	return out, nil
}

func (p *Part) unlinkLocked() error {
	var errs []error
	for _, side := range p.linked {
		if side.emu != nil {
			errs = append(errs, side.emu.delete(p.helper, side.dev))
		} else {
			errs = append(errs, DeleteIn(side.ns, side.dev))
		}
	}
	p.linked = nil
	if p.helper != nil {
		errs = append(errs, p.helper.Delete())
		p.helper = nil
	}
	return errors.Join(errs...)
}

// Stop removes the cut links, then the part's network.
func (p *Part) Stop() error {
	p.mu.Lock()
	err := p.unlinkLocked()
	p.mu.Unlock()
	return errors.Join(err, p.Net.Stop())
}
