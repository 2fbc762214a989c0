package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
	"github.com/vishvananda/netlink"
)

// Part is one worker's share of a topology, running.
type Part struct {
	R        *Resolved
	Net      *hymn.Network
	underlay links.Namespace

	mu     sync.Mutex
	linked []*cutSide
	helper *links.HelperNS
	// local is this worker's address, where its tunnels end; peers are
	// every worker's address as last told (link, relink); filter admits
	// each cut link's frames from its peer only (nil until Link).
	local  netip.Addr
	peers  []netip.Addr
	filter *tunnelFilter
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
		if err := checkCut(c); err != nil {
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

func checkCut(c CutLink) error {
	if k := c.Link.Params["kind"]; k != "" && k != "veth" {
		return fmt.Errorf("cut link %s: kind %s cannot cross workers (only veth links become VXLAN tunnels)", c.Link, k)
	}
	for k := range c.Link.Params {
		if strings.Contains(k, "schedule") {
			return fmt.Errorf("cut link %s: link schedules are not carried across workers yet; place both ends on one worker (placement:)", c.Link)
		}
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
	// The tunnels are bound to this worker's address, which must be one
	// of the underlay's: a source address the machine does not have could
	// not send.
	local := peers[s.Worker]
	if err := checkLocalAddress(p.underlay, local); err != nil {
		return fmt.Errorf("worker %d: %w", s.Worker, err)
	}
	defer func() {
		if err != nil {
			_ = p.unlinkLocked() // best effort: the link error is returned
		}
	}()
	p.local, p.peers = local, slices.Clone(peers)
	// Check every underlay first: a bad MTU should fail before any
	// device exists.
	ends := make([]VXLANEnd, len(p.R.Cut))
	for i, c := range p.R.Cut {
		if ends[i], err = p.end(c, peers[c.Peer]); err != nil {
			return err
		}
	}
	// The filter goes in before any tunnel exists: no moment when a
	// device takes frames from anyone.
	if len(p.R.Cut) > 0 {
		p.filter = &tunnelFilter{ns: p.underlay, table: filterTable(p.Net.RunID()), port: s.port()}
		if err := p.filter.set(p.filterRules()); err != nil {
			return err
		}
	}
	for i, c := range p.R.Cut {
		side, err := p.createSide(c, ends[i], false)
		if err != nil {
			return fmt.Errorf("cut link %s: %w", c, err)
		}
		p.linked = append(p.linked, side)
	}
	if err := p.routes(ctx); err != nil {
		return err
	}
	for i, side := range p.linked {
		if err := waitSide(ctx, side, ends[i]); err != nil {
			return err
		}
	}
	return nil
}

// end describes this worker's side of cut link c toward remote, after
// checking the underlay toward it.
func (p *Part) end(c CutLink, remote netip.Addr) (VXLANEnd, error) {
	node, err := p.Net.Node(c.Local.Node)
	if err != nil {
		return VXLANEnd{}, err
	}
	if remote.Is4() != p.local.Is4() {
		return VXLANEnd{}, fmt.Errorf("cut link %s: this worker's address %v and peer %v are not of one family", c.Link, p.local, remote)
	}
	v := VXLANEnd{
		Underlay: p.underlay, Local: p.local, Remote: remote, Port: p.R.Spec.port(), VNI: c.VNI,
		Alias: owner.LinkAlias(p.Net.RunID()),
		End:   links.End{NS: node, Name: c.Local.Name, MAC: c.Local.MAC, IP: c.Local.IP, MTU: c.Link.Params.MTU()},
	}
	if _, ok := node.(nodes.GuestNode); ok {
		// A VM's end stays bare in its helper namespace, as for any of
		// its links: the guest's interface gets the MAC and the address
		// when the end is attached.
		v.End.MAC, v.End.IP = nil, netip.Prefix{}
	}
	if _, err := v.CheckUnderlay(); err != nil {
		return VXLANEnd{}, fmt.Errorf("cut link %s: %w", c.Link, err)
	}
	return v, nil
}

// filterRules are the tunnel filter's rules for every cut link of this
// worker toward its peer's current address.
func (p *Part) filterRules() []filterRule {
	rules := make([]filterRule, 0, len(p.R.Cut))
	for _, c := range p.R.Cut {
		rules = append(rules, filterRule{VNI: c.VNI, Local: p.local, Remote: p.peers[c.Peer]})
	}
	return rules
}

// checkLocalAddress checks that addr is an address of the namespace.
func checkLocalAddress(ns links.Namespace, addr netip.Addr) error {
	found := false
	err := ns.Netlink(func(h *netlink.Handle) error {
		addrs, err := h.AddrList(nil, netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap() == addr.Unmap() {
				found = true
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing the underlay's addresses: %w", err)
	}
	if !found {
		return fmt.Errorf("address %v is not one of this machine's: the tunnels must be bound to an address the worker holds (--address)", addr)
	}
	return nil
}

// routes applies the part's static routes (idempotent: ip route replace).
func (p *Part) routes(ctx context.Context) error {
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
	return nil
}

// waitSide waits for an emulated side's veth end in the node to be up. A
// VXLAN device has no carrier to report (its operational state stays
// "unknown"); an emulated side's veth end in the node does, and drops
// packets until it is up.
func waitSide(ctx context.Context, side *cutSide, v VXLANEnd) error {
	if side.emu == nil {
		return nil
	}
	if err := links.WaitOperUp(ctx, v.End.NS, v.End.Name); err != nil {
		return fmt.Errorf("cut link %s: %w", side.CutLink, err)
	}
	return nil
}

// Relink re-creates this worker's side of every cut link shared with
// worker peer, toward the peer's new address (a replaced worker): same
// VNI, interface name, MAC, address and MTU, emulated sides with their
// emulator again. The other cut links are not touched. It returns the
// re-created sides' counters. The new address and the underlay toward it
// are checked before anything is deleted; a side that cannot be created
// again is left out (the error names it) and the others go on.
func (p *Part) Relink(ctx context.Context, peer int, addr netip.Addr) ([]CutStats, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.R.Spec
	switch {
	case peer < 0 || peer >= s.Workers:
		return nil, fmt.Errorf("worker %d does not exist (%d workers)", peer, s.Workers)
	case peer == s.Worker:
		return nil, fmt.Errorf("worker %d cannot relink to itself", peer)
	case !addr.IsValid() || addr.IsUnspecified() || addr.IsMulticast() || addr.IsLoopback():
		return nil, fmt.Errorf("worker %d's address %v is not a unicast address", peer, addr)
	case len(p.linked) != len(p.R.Cut):
		return nil, errors.New("cut links are not up yet (link first)")
	}
	var idx []int
	ends := map[int]VXLANEnd{}
	for i, side := range p.linked {
		if side.Peer != peer {
			continue
		}
		v, err := p.end(side.CutLink, addr)
		if err != nil {
			return nil, err
		}
		idx, ends[i] = append(idx, i), v
	}
	// The filter admits the new address (and no longer the old one)
	// before the sides toward it are made again.
	old := p.peers[peer]
	p.peers[peer] = addr
	if p.filter != nil {
		if err := p.filter.set(p.filterRules()); err != nil {
			p.peers[peer] = old
			return nil, err
		}
	}
	var errs []error
	var made []*cutSide
	for _, i := range idx {
		old := p.linked[i]
		var err error
		if old.emu != nil {
			err = old.emu.delete(p.helper, old.dev)
		} else {
			err = DeleteIn(old.ns, old.dev)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("cut link %s: deleting the old side: %w", old.CutLink, err))
			continue
		}
		p.linked[i] = nil
		side, err := p.createSide(old.CutLink, ends[i], true)
		if err != nil {
			errs = append(errs, fmt.Errorf("cut link %s: %w", old.CutLink, err))
			continue
		}
		p.linked[i] = side
		made = append(made, side)
	}
	// A side that could not be made again is gone: keep the list to the
	// sides that exist (Stats, Stop).
	p.linked = slices.DeleteFunc(p.linked, func(s *cutSide) bool { return s == nil })
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// Deleting a device took the routes through it.
	if err := p.routes(ctx); err != nil {
		return nil, err
	}
	out := make([]CutStats, 0, len(made))
	for _, side := range made {
		v := ends[slices.Index(p.linked, side)]
		if err := waitSide(ctx, side, v); err != nil {
			return nil, err
		}
		st, err := side.stats()
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// createSide makes this worker's side of cut link c; again says it is
// made anew toward a replaced peer (Relink), the node unchanged.
func (p *Part) createSide(c CutLink, v VXLANEnd, again bool) (*cutSide, error) {
	// attach joins the side's end to its node as a link end is joined on
	// one machine: a switch port, or a VM's interface (a NIC hot-plugged
	// into the guest; when made again, only the end rejoins its bridge).
	attach := func() error {
		node, err := p.Net.Node(c.Local.Node)
		if err != nil {
			return err
		}
		if sw, ok := node.(*nodes.NsNode); ok && sw.Kind() == topo.KindSwitch {
			return sw.AttachPort(c.Local.Name)
		}
		g, ok := node.(nodes.GuestNode)
		if !ok {
			return nil
		}
		if again {
			r, ok := node.(interface{ RejoinIntf(string) error })
			if !ok {
				return fmt.Errorf("node %s cannot rejoin %s", c.Local.Node, c.Local.Name)
			}
			return r.RejoinIntf(c.Local.Name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), guestAttachTimeout)
		defer cancel()
		return g.AttachIntf(ctx, c.Local.Name, c.Local.MAC, c.Local.IP)
	}
	side := &cutSide{CutLink: c, remote: v.Remote, ns: v.End.NS, dev: v.End.Name}
	if !linkparams.NeedsEmulator(c.Link.Params) {
		if err := CreateVXLAN(v); err != nil {
			return nil, err
		}
		if err := attach(); err != nil {
			_ = DeleteIn(v.End.NS, v.End.Name) // best effort: the attach error is returned
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

// guestAttachTimeout bounds hot-plugging a VM's NIC for a cut link (as
// the network's own links are bounded).
const guestAttachTimeout = time.Minute

// CutStats are one cut link's counters on this side.
type CutStats struct {
	Link string `json:"link"`
	// Index is the link's place in the whole topology's links; First
	// says this worker holds its first end (the tunnel's tx is then the
	// link's a>b).
	Index    int        `json:"index"`
	First    bool       `json:"first,omitempty"`
	VNI      int        `json:"vni"`
	Peer     int        `json:"peer"`
	Remote   netip.Addr `json:"remote"`
	Emulated bool       `json:"emulated"`
	// XDP: the peer's direction of an emulated cut link reaches the node
	// by an XDP redirect in the kernel, not through the forwarder.
	XDP    bool     `json:"xdp,omitempty"`
	Tunnel Counters `json:"tunnel"` // the VXLAN device: tx is toward the peer
}

// Stats reads the counters of every cut link's tunnel.
func (p *Part) Stats() ([]CutStats, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]CutStats, 0, len(p.linked))
	for _, side := range p.linked {
		st, err := side.stats()
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (side *cutSide) stats() (CutStats, error) {
	c, err := ReadCounters(side.ns, side.dev)
	if err != nil {
		return CutStats{}, fmt.Errorf("cut link %s: %w", side.CutLink, err)
	}
	return CutStats{Link: side.Link.String(), Index: side.Index, First: side.First, VNI: side.VNI, Peer: side.Peer, Remote: side.remote,
		Emulated: side.emu != nil, XDP: side.emu != nil && side.emu.inKernel, Tunnel: c}, nil
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
	if p.filter != nil {
		errs = append(errs, p.filter.remove())
		p.filter = nil
	}
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
