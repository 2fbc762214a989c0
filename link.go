package hymn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/topo"
)

// netLink is a planned link and, once created, the implementation of its
// kind, which holds everything the link owns.
type netLink struct {
	plan *topo.PlannedLink
	impl linkImpl
	// seq numbers the link among every link the network ever had (the
	// plan's index for the links Build makes, then one more for each
	// link added live), so the names of its emulator ports stay unique
	// when links come and go.
	seq int
}

// linkEnv is what a link kind sees of the network while it makes and
// starts a link (linkImpl.create and ready): where its ends go, its parsed
// emulation and emulator ports, the helper namespace and names for
// emulator ports, and the VF allocator. *Network implements it; a kind
// reaches nothing else of the network.
type linkEnv interface {
	// linkEnd is one end as the kind creates it: the node's namespace (a
	// VM's helper namespace, the end then bare), the planned name, MAC,
	// address and MTU, and Complete for a port of Open vSwitch's
	// userspace datapath.
	linkEnd(pl *topo.PlannedLink, i *topo.Intf) links.End
	emulation(pl *topo.PlannedLink) *linkEmulation
	linkPorts(pl *topo.PlannedLink) string
	helperNamespace() (*links.HelperNS, error)
	emulatorPortNames(l *netLink) [2]string
	sriovBackend() (*vfBackend, error)
	debugLink(pl *topo.PlannedLink)
	debugf(format string, args ...any)
}

// linkImpl is one kind of link: a veth pair (vethlink.go), an emulated
// veth link (emulated.go), a VF pair with or without an emulator
// (sriovlink.go), a pair of interfaces that existed before the network
// (existinglink.go). Adding a kind means adding an implementation and a
// line in linkKinds; createLink, the attach-and-wait path and teardown go
// through this interface only.
type linkImpl interface {
	// create makes the link's kernel objects: when it returns, both ends
	// exist in their namespaces under the planned names (a VM's end bare
	// in its helper namespace).
	create(env linkEnv, l *netLink) error
	// waitEnds are the interfaces besides the two node ends that must be
	// operationally up before the link carries traffic.
	waitEnds() []links.End
	// ready runs once every end is up (an emulated VF link starts its
	// forwarder there).
	ready(env linkEnv, l *netLink) error
	// emulator returns the link's emulator, or nil.
	emulator() *links.EmulatedLink
	// describe fills in what the link is made of (LinkInfo's Kind and
	// VLANs), for front ends that draw the network.
	describe(li *LinkInfo)
	// stop stops what runs for the link (forwarders). Links stop in
	// parallel.
	stop() error
	// release gives back what the link borrowed (VFs to their home
	// namespace), while the namespaces still exist. Safe to call twice.
	release() error
	// delete removes the link's kernel objects, for a link removed while
	// its namespaces stay (a failed AddLink, an emulator inserted live).
	delete() error
}

// linkKind is one entry of the registry of link kinds.
type linkKind struct {
	name string
	// accepts says whether the kind builds a planned link with the given
	// emulation (nil without); the kinds before it in linkKinds have
	// refused it.
	accepts func(n *Network, pl *topo.PlannedLink, emu *linkEmulation) bool
	impl    func() linkImpl
	// check, if set, is the kind's own check of the links added (all the
	// plan's in New, the live one in AddLink) among all the plan's,
	// before anything is built.
	check func(all, added []*topo.PlannedLink) error
	// noLiveEmulator says why an emulator cannot be inserted into a link
	// of this kind while the network runs (SetLinkParams on a link built
	// without one); empty: it can.
	noLiveEmulator string
}

// linkKinds is the registry of link kinds, tried in order: the first that
// accepts a planned link (its own kind parameter, else the network's link
// backend; emulation parameters add an emulator) builds it. The last
// accepts every link.
var linkKinds = []linkKind{
	{linkKindExisting, func(_ *Network, pl *topo.PlannedLink, _ *linkEmulation) bool { return isExistingLink(pl) }, func() linkImpl { return &existingLink{} }, checkExistingLinks,
		"joins existing interfaces (kind=existing): hymn inserts an emulator only between ends it makes"},
	{linkKindVF, func(n *Network, pl *topo.PlannedLink, _ *linkEmulation) bool { return n.wantsVFPair(pl) }, func() linkImpl { return &vfLink{} }, nil,
		"is a VF pair built without an emulator, and an emulator cannot be inserted into it live: give the link emulation parameters (delay=..., bw=..., emu=...) when the network is built"},
	{linkKindEmulated, func(_ *Network, _ *topo.PlannedLink, emu *linkEmulation) bool { return emu != nil }, func() linkImpl { return &emulatedVethLink{} }, nil,
		"has an emulator already"},
	{"veth", func(*Network, *topo.PlannedLink, *linkEmulation) bool { return true }, func() linkImpl { return &vethLink{} }, nil, ""},
}

// linkKindEmulated names the emulated veth link kind (emulated.go), the
// kind a veth link becomes when an emulator is inserted live.
const linkKindEmulated = "emulated"

// linkKindNamed returns the registry's entry of a kind.
func linkKindNamed(name string) *linkKind {
	for i := range linkKinds {
		if linkKinds[i].name == name {
			return &linkKinds[i]
		}
	}
	panic("unknown link kind " + name)
}

// resolvedLink is what New (or AddLink, for a live link) decides about a
// planned link, once: the kind that builds it and its emulation
// parameters, parsed. Nothing asks the registry or parses the text again.
type resolvedLink struct {
	kind      *linkKind
	emulation *linkEmulation // nil: not emulated
}

// resolveLink decides a planned link's kind (the first in linkKinds that
// accepts it) and records it with the link's parsed emulation; n.mu is
// held or the network is being made.
func (n *Network) resolveLink(pl *topo.PlannedLink, emu *linkEmulation) {
	for i := range linkKinds {
		if k := &linkKinds[i]; k.accepts(n, pl, emu) {
			n.resolved[pl] = resolvedLink{kind: k, emulation: emu}
			return
		}
	}
	panic("unreachable: the last link kind accepts every link")
}

// kindOf returns the kind New or AddLink decided for a planned link.
func (n *Network) kindOf(pl *topo.PlannedLink) *linkKind { return n.resolved[pl].kind }

// linkIsSRIOV reports whether a planned link is built from a VF pair.
func (n *Network) linkIsSRIOV(pl *topo.PlannedLink) bool { return n.kindOf(pl).name == linkKindVF }

// checkLinkKinds runs every kind's own check of the links added.
func checkLinkKinds(all, added []*topo.PlannedLink) error {
	var errs []error
	for _, k := range linkKinds {
		if k.check != nil {
			errs = append(errs, k.check(all, added))
		}
	}
	return errors.Join(errs...)
}

// linkImplOf makes the implementation of a planned link's kind.
func (n *Network) linkImplOf(l *netLink) linkImpl { return n.kindOf(l.plan).impl() }

// createLink builds a link of its kind and waits until it carries traffic.
func (n *Network) createLink(ctx context.Context, l *netLink) error {
	if err := n.createAttached(l); err != nil {
		return err
	}
	return n.waitReady(ctx, l)
}

// createAttached builds a link of its kind and attaches its ends, without
// waiting for them: Build creates every link first and then waits for all
// (waitReady), so a link's carrier comes up (the kernel's linkwatch work)
// while the next links are made, instead of each worker sleeping on its
// own link's first poll. A 2000-node build spent about a second so.
func (n *Network) createAttached(l *netLink) error {
	l.impl = n.linkImplOf(l)
	if err := l.impl.create(n, l); err != nil {
		return err
	}
	return n.attach(l)
}

// linkReadyTimeout bounds attaching a link's ends (a VM's NIC hot-plug
// included) and waiting for them to come up.
const linkReadyTimeout = time.Minute

// attachAndWait is the one path from created ends to a working link: each
// end becomes a switch port or a guest interface (attach), then every end
// (the kind's own too) is waited for until operationally up (waitReady).
func (n *Network) attachAndWait(l *netLink) error {
	if err := n.attach(l); err != nil {
		return err
	}
	// Its callers (SetLinkParams inserting an emulator live) take no
	// context: linkReadyTimeout alone bounds the wait.
	return n.waitReady(context.Background(), l)
}

// attach makes each end of a created link a switch port or a guest
// interface.
func (n *Network) attach(l *netLink) error {
	ctx, cancel := context.WithTimeout(context.Background(), linkReadyTimeout)
	defer cancel()
	for _, i := range []*topo.Intf{l.plan.Intf1, l.plan.Intf2} {
		if err := n.attachToSwitch(i.Node, i.Name); err != nil {
			return fmt.Errorf("link %s: %w", l.plan, err)
		}
		if g := n.guestOf(i); g != nil {
			if err := g.AttachIntf(ctx, i.Name, i.MAC, i.IP); err != nil {
				return fmt.Errorf("link %s: %w", l.plan, err)
			}
		}
	}
	return nil
}

// waitReady waits until every end of an attached link (the kind's own
// too: emulator ports, far VFs) is operationally up, or the first frames
// are lost, then tells the kind the link is ready.
func (n *Network) waitReady(ctx context.Context, l *netLink) error {
	ctx, cancel := context.WithTimeout(ctx, linkReadyTimeout)
	defer cancel()
	intfs := []*topo.Intf{l.plan.Intf1, l.plan.Intf2}
	ends := []links.End{{NS: n.nodes[intfs[0].Node], Name: intfs[0].Name}, {NS: n.nodes[intfs[1].Node], Name: intfs[1].Name}}
	for _, e := range append(ends, l.impl.waitEnds()...) {
		if err := links.WaitOperUp(ctx, e.NS, e.Name); err != nil {
			return fmt.Errorf("link %s: %w", l.plan, err)
		}
	}
	return l.impl.ready(n, l)
}

// emulatedLink returns the emulator of a link, or nil.
func (n *Network) emulatedLink(l *netLink) *links.EmulatedLink {
	if l.impl == nil {
		return nil
	}
	return l.impl.emulator()
}

// stopLinks stops every link's forwarder, in parallel: closing a packet
// socket with a ring waits for an RCU grace period (tens of ms), four
// sockets per link, which adds up to seconds for a hundred links when done
// one after another. Then each link gives back what it borrowed.
func (n *Network) stopLinks() error {
	var wg sync.WaitGroup
	errs := make([]error, len(n.links))
	for i, l := range n.links {
		if l.impl == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = l.impl.stop()
		}()
	}
	wg.Wait()
	for _, l := range n.links {
		if l.impl != nil {
			errs = append(errs, l.impl.release())
		}
	}
	return errors.Join(errs...)
}
