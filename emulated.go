package hymn

import (
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/topo"
	"github.com/vishvananda/netlink"
)

// Direction selects which direction of a link a change applies to, seen
// from the order in which the caller names the two nodes (node1 is a). It
// is emulator.Direction, the one direction type of hymn, so a value means
// the same in every package and prints as a>b, b>a or both.
type Direction = emulator.Direction

// Directions of a link between node1 and node2.
const (
	Forward        = emulator.AtoB // node1→node2 only
	Reverse        = emulator.BtoA // node2→node1 only
	BothDirections = emulator.Both // node1→node2 and node2→node1
)

// ParseDirection accepts "a>b", "b>a", and "both" or "" for BothDirections.
func ParseDirection(s string) (Direction, error) { return emulator.ParseDirection(s) }

// EmulatorConfigs turns link Params into the emulator configurations of
// the two directions (a→b is Node1→Node2), as linkparams.Configs does,
// and checks the links' schedules against them.
func EmulatorConfigs(p topo.Params) (ab, ba emulator.Config, err error) {
	emu, err := emulatorConfigs(p)
	return emu.ab, emu.ba, err
}

// emulatorConfigs is EmulatorConfigs keeping the schedules it loaded.
func emulatorConfigs(p topo.Params) (emu linkEmulation, err error) {
	if emu.ab, emu.ba, err = linkparams.Configs(p); err != nil {
		return emu, err
	}
	emu.schedules, err = loadScheduleParams(p, [2]*emulator.Config{&emu.ab, &emu.ba}, topo.LocalFiles(""))
	return emu, err
}

// helperNS is the network's helper namespace, where emulator ports live.
// The Network holds it (emuState), made on first use, so that networks
// without emulated links never create it. Each emulated link holds its own
// emulator (emulatedVethLink, vfLink).
type helperNS struct {
	mu     sync.Mutex
	helper *links.HelperNS
}

func (n *Network) emu() *helperNS {
	n.emuState.CompareAndSwap(nil, &helperNS{})
	return n.emuState.Load()
}

// helperNamespace returns the network's helper namespace, creating it on
// first use. '@' cannot occur in a node name, so it never collides.
func (e *helperNS) helperNamespace(run string) (*links.HelperNS, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.helper != nil {
		return e.helper, nil
	}
	h, err := links.CreateHelperNS(owner.NamespaceName(run, "@emu"))
	if err != nil {
		return nil, err
	}
	e.helper = h
	return h, nil
}

// helperNamespace returns the network's helper namespace, where emulator
// ports live, creating it on first use.
func (n *Network) helperNamespace() (*links.HelperNS, error) { return n.emu().helperNamespace(n.run) }

// emulatorPortNames names an emulated link's two ports in the helper
// namespace by the link's seq: unique among the network's links, also
// those added and deleted while it runs (by its place in the list, a link
// added live was -1 like the one before it, and one behind a deleted link
// took the name of the link behind it).
func (n *Network) emulatorPortNames(l *netLink) [2]string {
	return [2]string{fmt.Sprintf("e%da", l.seq), fmt.Sprintf("e%db", l.seq)}
}

// emulatedVethLink is a veth link split by an emulator: a ─ [emulator] ─ b,
// the emulator's ports in the network's helper namespace.
type emulatedVethLink struct {
	helper *links.HelperNS
	el     *links.EmulatedLink
	// Set when an emulator is inserted live: the MACs the ends had.
	macs []net.HardwareAddr
}

func (e *emulatedVethLink) create(env linkEnv, l *netLink) error {
	emu := env.emulation(l.plan)
	if emu == nil {
		return fmt.Errorf("link %s: its emulation parameters were not parsed", l.plan)
	}
	fc := emulator.ForwarderConfig{AtoB: emu.ab, BtoA: emu.ba}
	helper, err := env.helperNamespace()
	if err != nil {
		return fmt.Errorf("link %s: %w", l.plan, err)
	}
	end := func(i *topo.Intf, k int) links.End {
		le := env.linkEnd(l.plan, i)
		if e.macs != nil && e.macs[k] != nil {
			le.MAC = e.macs[k] // re-created ends keep the MACs they had
		}
		return le
	}
	ports := env.emulatorPortNames(l)
	el, err := links.CreateEmulated(helper, end(l.plan.Intf1, 0), end(l.plan.Intf2, 1), ports[0], ports[1], fc)
	if err != nil {
		return fmt.Errorf("link %s: %w", l.plan, err)
	}
	e.helper, e.el = helper, el
	return nil
}

func (e *emulatedVethLink) waitEnds() []links.End {
	return []links.End{{NS: e.helper, Name: e.el.PortA}, {NS: e.helper, Name: e.el.PortB}}
}

func (e *emulatedVethLink) ready(linkEnv, *netLink) error { return nil }
func (e *emulatedVethLink) emulator() *links.EmulatedLink { return e.el }
func (e *emulatedVethLink) describe(li *LinkInfo)         { li.Kind = linkKindEmulated }
func (e *emulatedVethLink) release() error                { return nil }

func (e *emulatedVethLink) stop() error {
	if e.el == nil {
		return nil
	}
	return e.el.Stop()
}

func (e *emulatedVethLink) delete() error {
	if e.el == nil {
		return nil
	}
	return e.el.Delete()
}

// deleteEmulatorHelper removes the helper namespace and with it the
// emulator ports of veth links.
func (n *Network) deleteEmulatorHelper() error {
	e := n.emuState.Swap(nil)
	if e == nil || e.helper == nil {
		return nil
	}
	return e.helper.Delete()
}

// findLink returns the link between two nodes and whether node1 is its
// Node1 (so Forward is the link's a→b).
func (n *Network) findLink(node1, node2 string) (*netLink, bool, error) {
	for _, name := range []string{node1, node2} {
		if n.Plan().Node(name) == nil {
			return nil, false, fmt.Errorf("%w: %s", ErrUnknownNode, name)
		}
	}
	for _, l := range n.links {
		a, b := l.plan.Intf1.Node, l.plan.Intf2.Node
		if a == node1 && b == node2 {
			return l, true, nil
		}
		if a == node2 && b == node1 {
			return l, false, nil
		}
	}
	return nil, false, fmt.Errorf("%w: %s and %s are not linked", ErrUnknownLink, node1, node2)
}

// SetLinkParams changes the emulation of the link between node1 and node2
// while traffic flows. params is either the emulator's text form
// ("delay 50ms jitter 1ms", applied on top of the current settings like
// `tc qdisc change`) or Mininet-style key=value pairs ("delay=50ms bw=10").
// dir picks the direction relative to the order of node1 and node2. All of
// it is validated before anything changes. A link built without an
// emulator gets one inserted (its interfaces are re-created with the same
// names, MACs and addresses, so traffic pauses briefly).
//
// Files the parameters name (trace=FILE) are read as the local user's,
// relative to the working directory; a front end that passes on a change
// from outside calls SetLinkParamsFrom.
func (n *Network) SetLinkParams(node1, node2 string, dir Direction, params string) error {
	return n.SetLinkParamsFrom(topo.LocalFiles(""), node1, node2, dir, params)
}

// SetLinkParamsFrom is SetLinkParams for a change whose file names files
// resolves. A front end that passes on input from outside (a live view's
// action, a worker protocol's request) gives topo.RemoteFiles naming
// where it came from: a parameter that names a file is then refused, with
// one line naming the key, before any file is touched.
func (n *Network) SetLinkParamsFrom(files topo.Files, node1, node2 string, dir Direction, params string) error {
	if files == nil {
		files = topo.RemoteFiles("")
	}
	return n.changeLink(node1, node2, dir, func(c *emulator.Config) error { return linkparams.ChangeFrom(c, params, files) })
}

// SetLink is SetLinkParams with typed values: the parameters given
// (linkparams.Delay, Rate, Loss, ...) change, the others keep their
// current values.
//
//	net.SetLink("h1", "s1", hymn.Forward, linkparams.Delay(50*time.Millisecond), linkparams.Loss(0.01))
func (n *Network) SetLink(node1, node2 string, dir Direction, ps ...linkparams.Param) error {
	p := linkparams.Params(ps...)
	for k := range p {
		if strings.Contains(k, ">") {
			return fmt.Errorf("%w: %s: give the direction as SetLink's dir, not with linkparams.For", ErrLinkParams, k)
		}
		if !linkparams.IsKey(k) {
			return fmt.Errorf("%w: %s cannot change while the link runs", ErrLinkParams, k)
		}
	}
	if len(p) == 0 {
		return fmt.Errorf("%w: no parameters given", ErrLinkParams)
	}
	return n.changeLink(node1, node2, dir, func(c *emulator.Config) error { return linkparams.Apply(c, p) })
}

// linkDirections says which of a link's directions (a→b = 0, b→a = 1) a
// caller means by dir, who named the link's ends in the link's own order
// when fwd, else the other way round.
func linkDirections(dir Direction, fwd bool) [2]bool {
	if !fwd {
		dir = dir.Reverse()
	}
	return [2]bool{dir.Includes(emulator.AtoB), dir.Includes(emulator.BtoA)}
}

// changeLink applies change to the emulator configurations of the
// directions dir picks, validating both before either changes.
func (n *Network) changeLink(node1, node2 string, dir Direction, change func(*emulator.Config) error) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.built || n.stopped {
		return ErrNotBuilt
	}
	l, fwd, err := n.findLink(node1, node2)
	if err != nil {
		return err
	}
	if !dir.Valid() {
		return fmt.Errorf("unknown direction %d", dir)
	}
	el := n.emulatedLink(l)
	var cur [2]emulator.Config
	if el != nil {
		cur[0], cur[1] = el.Fwd.Config(emulator.AtoB), el.Fwd.Config(emulator.BtoA)
	} else {
		cur[0], cur[1] = emulator.DefaultConfig(), emulator.DefaultConfig()
	}
	touch := linkDirections(dir, fwd)
	var next [2]emulator.Config
	for i := range next {
		next[i] = cur[i]
		if !touch[i] {
			continue
		}
		cp := next[i]
		if err := change(&cp); err != nil {
			return fmt.Errorf("link %s-%s: %w", node1, node2, err)
		}
		next[i] = cp
	}
	if el == nil {
		return n.insertEmulator(l, next[0], next[1])
	}
	for i := range next {
		if touch[i] {
			if err := el.Fwd.Reconfigure(emulator.Direction(i), next[i]); err != nil {
				return fmt.Errorf("link %s-%s: %w", node1, node2, err)
			}
		}
	}
	return nil
}

// insertEmulator turns a plain veth link into an emulated one while the
// network runs, keeping interface names, MACs and addresses.
func (n *Network) insertEmulator(l *netLink, ab, ba emulator.Config) error {
	if why := n.kindOf(l.plan).noLiveEmulator; why != "" {
		return fmt.Errorf("link %s %s", l.plan, why)
	}
	for _, i := range []*topo.Intf{l.plan.Intf1, l.plan.Intf2} {
		if n.guestOf(i) != nil {
			// Inserting an emulator re-creates the link's ends; a VM's
			// end is a NIC hot-plugged into the guest, which would have
			// to be re-plugged too.
			return fmt.Errorf("link %s: an emulator cannot be inserted live into a link to VM node %s; give the link its parameters when the network is built", l.plan, i.Node)
		}
	}
	if l.impl == nil {
		return fmt.Errorf("link %s: not created", l.plan)
	}
	macs := make([]net.HardwareAddr, 2)
	for k, i := range []*topo.Intf{l.plan.Intf1, l.plan.Intf2} {
		if err := n.nodes[i.Node].Netlink(func(h *netlink.Handle) error {
			link, err := h.LinkByName(i.Name)
			if err == nil {
				macs[k] = link.Attrs().HardwareAddr
			}
			return err
		}); err != nil {
			return fmt.Errorf("link %s: reading %s's MAC to keep it: %w", l.plan, i.Name, err)
		}
	}
	if err := l.impl.delete(); err != nil {
		return fmt.Errorf("link %s: %w", l.plan, err)
	}
	// From here the link is of the emulated kind, with these parameters.
	n.resolved[l.plan] = resolvedLink{kind: linkKindNamed(linkKindEmulated), emulation: &linkEmulation{ab: ab, ba: ba}}
	l.impl = &emulatedVethLink{macs: macs}
	if err := l.impl.create(n, l); err != nil {
		return err
	}
	return n.attachAndWait(l)
}

// LinkStats are the counters of an emulated link, per direction, seen
// from the order in which the caller named the nodes.
type LinkStats struct {
	Node1, Node2     string
	Forward, Reverse emulator.DirectionStats // node1→node2, node2→node1
	ForwardConfig    emulator.Config
	ReverseConfig    emulator.Config
}

// LinkStats reads the counters of the emulated link between two nodes.
func (n *Network) LinkStats(node1, node2 string) (LinkStats, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.built || n.stopped {
		return LinkStats{}, ErrNotBuilt
	}
	l, fwd, err := n.findLink(node1, node2)
	if err != nil {
		return LinkStats{}, err
	}
	el := n.emulatedLink(l)
	if el == nil {
		return LinkStats{}, fmt.Errorf("%w: %s-%s; give it link parameters (delay=..., bw=..., or emu=...) or call SetLinkParams to insert one", ErrNoEmulator, node1, node2)
	}
	s := LinkStats{Node1: node1, Node2: node2}
	f, r := emulator.AtoB, emulator.BtoA
	if !fwd {
		f, r = r, f
	}
	s.Forward, s.Reverse = el.Fwd.Stats(f), el.Fwd.Stats(r)
	s.ForwardConfig, s.ReverseConfig = el.Fwd.Config(f), el.Fwd.Config(r)
	return s, nil
}

// EmulatedLinks lists the emulated links as "node1-node2" pairs in
// creation order.
func (n *Network) EmulatedLinks() [][2]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out [][2]string
	for _, l := range n.links {
		if n.emulatedLink(l) != nil {
			out = append(out, [2]string{l.plan.Intf1.Node, l.plan.Intf2.Node})
		}
	}
	return out
}
