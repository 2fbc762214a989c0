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
	emu.schedules, err = loadScheduleParams(p, [2]*emulator.Config{&emu.ab, &emu.ba})
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

func (n *Network) linkIndex(l *netLink) int {
	for i, x := range n.links {
		if x == l {
			return i
		}
	}
	return -1
}

// emulatedVethLink is a veth link split by an emulator: a ─ [emulator] ─ b,
// the emulator's ports in the network's helper namespace.
type emulatedVethLink struct {
	helper *links.HelperNS
	el     *links.EmulatedLink
	// Set when an emulator is inserted live: the configurations changed
	// and the MACs the ends had.
	cfg  *emulator.ForwarderConfig
	macs []net.HardwareAddr
}

func (e *emulatedVethLink) create(n *Network, l *netLink) error {
	fc := emulator.ForwarderConfig{}
	if e.cfg != nil {
		fc = *e.cfg
	} else if emu := n.emulation(l.plan); emu != nil {
		fc.AtoB, fc.BtoA = emu.ab, emu.ba
	} else {
		return fmt.Errorf("link %s: its emulation parameters were not parsed", l.plan)
	}
	for _, i := range []*topo.Intf{l.plan.Intf1, l.plan.Intf2} {
		if n.guestOf(i) != nil && e.macs != nil {
			// Inserting an emulator live re-creates the link's ends; a
			// VM's end is a NIC hot-plugged into the guest, which would
			// have to be re-plugged too.
			return fmt.Errorf("link %s: an emulator cannot be inserted live into a link to VM node %s; give the link its parameters when the network is built", l.plan, i.Node)
		}
	}
	helper, err := n.emu().helperNamespace(n.run)
	if err != nil {
		return fmt.Errorf("link %s: %w", l.plan, err)
	}
	end := func(i *topo.Intf, k int) links.End {
		le := n.linkEnd(l.plan, i)
		// Open vSwitch's userspace datapath forwards frames as they are.
		le.Complete = n.usesOVS() && n.plan.Node(i.Node).IsSwitch()
		if e.macs != nil && e.macs[k] != nil {
			le.MAC = e.macs[k] // re-created ends keep the MACs they had
		}
		return le
	}
	idx := n.linkIndex(l)
	el, err := links.CreateEmulated(helper, end(l.plan.Intf1, 0), end(l.plan.Intf2, 1),
		fmt.Sprintf("e%da", idx), fmt.Sprintf("e%db", idx), fc)
	if err != nil {
		return fmt.Errorf("link %s: %w", l.plan, err)
	}
	e.helper, e.el = helper, el
	return nil
}

func (e *emulatedVethLink) waitEnds() []links.End {
	return []links.End{{NS: e.helper, Name: e.el.PortA}, {NS: e.helper, Name: e.el.PortB}}
}

func (e *emulatedVethLink) ready(*Network, *netLink) error { return nil }
func (e *emulatedVethLink) emulator() *links.EmulatedLink  { return e.el }
func (e *emulatedVethLink) release() error                 { return nil }

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
		if n.plan.Node(name) == nil {
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
func (n *Network) SetLinkParams(node1, node2 string, dir Direction, params string) error {
	return n.changeLink(node1, node2, dir, func(c *emulator.Config) error { return linkparams.Change(c, params) })
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
	plain, ok := l.impl.(*vethLink)
	if !ok {
		if _, vf := l.impl.(*vfLink); vf {
			return fmt.Errorf("link %s is a VF pair built without an emulator, and an emulator cannot be inserted into it live: give the link emulation parameters (delay=..., bw=..., emu=...) when the network is built", l.plan)
		}
		if _, existing := l.impl.(*existingLink); existing {
			return fmt.Errorf("link %s joins existing interfaces (kind=existing): hymn inserts an emulator only between ends it makes", l.plan)
		}
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
	if err := plain.delete(); err != nil {
		return fmt.Errorf("link %s: %w", l.plan, err)
	}
	l.impl = &emulatedVethLink{cfg: &emulator.ForwarderConfig{AtoB: ab, BtoA: ba}, macs: macs}
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
