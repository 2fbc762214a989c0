package hymn

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/internal/owner"
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

// ErrUnknownLink is returned for a pair of nodes that no link joins.
var ErrUnknownLink = errors.New("no such link")

// ErrNoEmulator is returned (wrapped) for a link built without an emulator.
var ErrNoEmulator = errors.New("link has no emulator")

// ErrLinkParams marks invalid emulation parameters of a link.
var ErrLinkParams = errors.New("invalid link parameters")

// EmulationKeys are the link Params that ask for an emulated link.
// Mininet's TCLink options: bw (Mbit/s), delay, jitter, loss (%),
// max_queue_size (packets). hymn's own: emu (a whole emulator
// configuration in the text form of emulator.Parse) and the emulator's keys
// with '_' for '-'. Any of them may be prefixed with "a>b." or "b>a." to
// apply to one direction only (a is Node1 of the link).
var EmulationKeys = []string{
	"bw", "delay", "jitter", "loss", "max_queue_size",
	"emu", "half_life", "dist", "distribution", "rate_interval", "time_based", "reorder",
	"police", "space", "ge", "seed", "overhead", "max_frame", "limit", "allow_large",
	"schedule", "trace", // schedule.go
}

func isEmulationKey(k string) bool {
	k = strings.TrimPrefix(strings.TrimPrefix(k, "a>b."), "b>a.")
	for _, e := range EmulationKeys {
		if k == e {
			return true
		}
	}
	return false
}

// TCIntfInfo is what Mininet's TCIntf prints for one interface of a link
// while the link is added, e.g. "(10.00Mbit 10ms delay 1.00000% loss) ":
// the shaping of that interface's egress, which is the direction dir
// (emulator.AtoB for the link's first interface, BtoA for the second). It is
// empty when the link sets none of bw, delay, loss and max_queue_size for
// that direction (Mininet's TCIntf then configures nothing and says
// nothing).
func TCIntfInfo(p topo.Params, dir Direction) string {
	get := func(k string) (string, bool) {
		if v, ok := p[dir.String()+"."+k]; ok {
			return strings.TrimSpace(v), true
		}
		v, ok := p[k]
		return strings.TrimSpace(v), ok
	}
	bw, hasBW := get("bw")
	delay, hasDelay := get("delay")
	jitter, hasJitter := get("jitter")
	loss, hasLoss := get("loss")
	_, hasQueue := get("max_queue_size")
	lossPct, _ := strconv.ParseFloat(strings.TrimSuffix(loss, "%"), 64)
	if !hasBW && delay == "" && lossPct == 0 && !hasQueue {
		return ""
	}
	var stuff []string
	if hasBW {
		f, _ := strconv.ParseFloat(bw, 64)
		stuff = append(stuff, fmt.Sprintf("%.2fMbit", f))
	}
	if hasDelay {
		stuff = append(stuff, delay+" delay")
	}
	if hasJitter {
		stuff = append(stuff, jitter+" jitter")
	}
	if hasLoss {
		stuff = append(stuff, fmt.Sprintf("%.5f%% loss", lossPct))
	}
	return "(" + strings.Join(stuff, " ") + ") "
}

// NeedsEmulator reports whether link params ask for an emulator.
func NeedsEmulator(p topo.Params) bool {
	for k := range p {
		if isEmulationKey(k) {
			return true
		}
	}
	return false
}

// EmulatorConfigs turns link Params into the emulator configurations of
// the two directions (a→b is Node1→Node2). Mininet's semantics hold: the
// values apply to each direction once, as Mininet applies them to both
// interfaces, so an h1–s1–h2 round trip with delay=10ms takes 40 ms.
// Errors wrap ErrLinkParams and name the parameter.
func EmulatorConfigs(p topo.Params) (ab, ba emulator.Config, err error) {
	common := map[string]string{}
	dirs := [2]map[string]string{{}, {}}
	for k, v := range p {
		switch {
		case strings.HasPrefix(k, "a>b."):
			dirs[0][k[4:]] = v
		case strings.HasPrefix(k, "b>a."):
			dirs[1][k[4:]] = v
		default:
			common[k] = v
		}
	}
	var out [2]emulator.Config
	for i := range out {
		m := map[string]string{}
		for k, v := range common {
			m[k] = v
		}
		for k, v := range dirs[i] {
			if !isEmulationKey(k) {
				return ab, ba, fmt.Errorf("%w: %s.%s: unknown parameter (use %s)", ErrLinkParams, emulator.Direction(i), k, strings.Join(EmulationKeys, ", "))
			}
			m[k] = v
		}
		c := emulator.DefaultConfig()
		if err := applyParams(&c, m); err != nil {
			return ab, ba, err
		}
		out[i] = c
	}
	if err := checkScheduleParams(p, [2]*emulator.Config{&out[0], &out[1]}); err != nil {
		return ab, ba, err
	}
	return out[0], out[1], nil
}

// applyParams applies Mininet/hymn link params to c. Keys that are not
// emulation keys are ignored, as Mininet ignores unknown link options.
func applyParams(c *emulator.Config, m map[string]string) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		if isEmulationKey(k) {
			keys = append(keys, k)
		}
	}
	// A fixed order makes results independent of map order: allow_large
	// first (every key is validated as it is applied), then emu (so
	// single keys refine it), the rest alphabetically.
	rank := func(k string) int {
		switch k {
		case "allow_large":
			return 0
		case "emu":
			return 1
		}
		return 2
	}
	sort.Slice(keys, func(i, j int) bool {
		if ri, rj := rank(keys[i]), rank(keys[j]); ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
	bad := func(k, format string, a ...any) error {
		return fmt.Errorf("%w: %s=%s: %s", ErrLinkParams, k, m[k], fmt.Sprintf(format, a...))
	}
	for _, k := range keys {
		v := strings.TrimSpace(m[k])
		var args []string
		switch k {
		case "bw":
			bw, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(bw) || math.IsInf(bw, 0) {
				return bad(k, "not a number of Mbit/s")
			}
			if bw <= 0 {
				return bad(k, "bw must be greater than 0 Mbit/s")
			}
			// Mininet's HTB counts the Ethernet frame without FCS,
			// preamble and gap, so bw carries no per-packet overhead: with
			// bw=10 iperf's TCP goodput is 10·1448/1514 = 9.56 Mbit/s, as
			// with Mininet. An explicit overhead= key (sorted later) wins.
			args = []string{"space", strconv.FormatFloat(bw*1e6, 'f', 0, 64) + "bit", "overhead", "0"}
			if q, ok := m["max_queue_size"]; ok {
				args = []string{"space", strconv.FormatFloat(bw*1e6, 'f', 0, 64) + "bit", strings.TrimSpace(q) + "pkt", "overhead", "0"}
			}
		case "max_queue_size":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return bad(k, "must be a whole number of packets greater than 0")
			}
			if _, shaped := m["bw"]; shaped {
				// With bw the queue is the spacer's backlog, limited (above)
				// to N full-size frames in bytes, as Mininet's HTB queue
				// of N packets holds about N frames of bulk traffic.
				continue
			}
			args = []string{"limit", v}
		case "loss":
			f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
			if err != nil || f < 0 || f > 100 {
				return bad(k, "must be a percentage between 0 and 100")
			}
			args = []string{"loss", strconv.FormatFloat(f, 'g', -1, 64) + "%"}
		case "delay", "jitter", "seed", "overhead", "limit", "police":
			args = append([]string{k}, fields(v)...)
		case "emu":
			args = fields(v)
		case "half_life", "rate_interval", "max_frame", "space":
			args = append([]string{strings.ReplaceAll(k, "_", "-")}, fields(v)...)
		case "dist", "distribution":
			args = []string{"distribution", v}
		case "reorder", "time_based", "allow_large":
			on, err := strconv.ParseBool(v)
			if v == "" {
				on, err = true, nil
			}
			if err != nil {
				return bad(k, "must be true or false")
			}
			switch {
			case k == "allow_large":
				c.AllowLarge = on
				continue
			case k == "reorder" && on:
				args = []string{"reorder"}
			case k == "reorder":
				args = []string{"fifo"}
			case on:
				args = []string{"time-based"}
			default:
				args = []string{"interval-based"}
			}
		case "ge":
			args = append([]string{"loss", "gemodel"}, fields(v)...)
		case "trace":
			// A Mahimahi delivery trace is the direction's rate (schedule.go).
			tr, err := emulator.LoadDeliveryTrace(v)
			if err != nil {
				return fmt.Errorf("%w: trace: %v", ErrLinkParams, err)
			}
			c.Trace.Trace = tr
		}
		if len(args) == 0 {
			continue
		}
		if err := c.Apply(args); err != nil {
			return fmt.Errorf("%w: %s=%s: %v", ErrLinkParams, k, m[k], err)
		}
	}
	if c.Delay < 0 {
		return bad("delay", "must not be negative")
	}
	return c.Validate()
}

// fields splits a value on blanks and '/', so `ge=1%/30%` works inside a
// comma-separated --link spec.
func fields(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == '\t' || r == '/' })
}

// emuNet is the emulation state of one network: its helper namespace and
// emulated links. The Network holds it (emuState), made on first use, so
// that networks without emulated links never create the helper namespace.
type emuNet struct {
	mu     sync.Mutex
	helper *links.HelperNS
	links  map[*netLink]*links.EmulatedLink
}

func (n *Network) emu() *emuNet {
	n.emuState.CompareAndSwap(nil, &emuNet{links: map[*netLink]*links.EmulatedLink{}})
	return n.emuState.Load()
}

// emulatedLink returns the emulator of a link, or nil, without creating
// any state.
func (n *Network) emulatedLink(l *netLink) *links.EmulatedLink {
	e := n.emuState.Load()
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.links[l]
}

func waitUp(ns links.Namespace, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return links.WaitOperUp(ctx, ns, name)
}

// linkNeedsEmulator is the hook createLink asks.
func (n *Network) linkNeedsEmulator(pl *topo.PlannedLink) bool { return NeedsEmulator(pl.Params) }

// helperNamespace returns the network's helper namespace, creating it on
// first use. '@' cannot occur in a node name, so it never collides.
func (e *emuNet) helperNamespace(run string) (*links.HelperNS, error) {
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

// createEmulatedLink builds l as a ─ [emulator] ─ b, with the emulator
// ports in the network's helper namespace.
func (n *Network) createEmulatedLink(l *netLink) error {
	ab, ba, err := EmulatorConfigs(l.plan.Params)
	if err != nil {
		return fmt.Errorf("link %s: %w", l.plan, err)
	}
	return n.buildEmulated(l, ab, ba, nil)
}

func (n *Network) buildEmulated(l *netLink, ab, ba emulator.Config, macs []net.HardwareAddr) error {
	for _, i := range []*topo.Intf{l.plan.Intf1, l.plan.Intf2} {
		if n.guestOf(i) != nil && macs != nil {
			// Inserting an emulator live re-creates the link's ends; a
			// VM's end is a NIC hot-plugged into the guest, which would
			// have to be re-plugged too.
			return fmt.Errorf("link %s: an emulator cannot be inserted live into a link to VM node %s; give the link its parameters when the network is built", l.plan, i.Node)
		}
	}
	e := n.emu()
	helper, err := e.helperNamespace(n.run)
	if err != nil {
		return fmt.Errorf("link %s: %w", l.plan, err)
	}
	end := func(i *topo.Intf, k int) links.End {
		le := n.linkEnd(l.plan, i)
		if macs != nil && macs[k] != nil {
			le.MAC = macs[k] // re-created ends keep the MACs they had
		}
		return le
	}
	idx := n.linkIndex(l)
	el, err := links.CreateEmulated(helper, end(l.plan.Intf1, 0), end(l.plan.Intf2, 1),
		fmt.Sprintf("e%da", idx), fmt.Sprintf("e%db", idx),
		emulator.ForwarderConfig{AtoB: ab, BtoA: ba})
	if err != nil {
		return fmt.Errorf("link %s: %w", l.plan, err)
	}
	e.mu.Lock()
	e.links[l] = el
	e.mu.Unlock()
	for _, i := range []*topo.Intf{l.plan.Intf1, l.plan.Intf2} {
		if err := n.attachToSwitch(i.Node, i.Name); err != nil {
			return fmt.Errorf("link %s: %w", l.plan, err)
		}
		if g := n.guestOf(i); g != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := g.AttachIntf(ctx, i.Name, i.MAC, i.IP)
			cancel()
			if err != nil {
				return fmt.Errorf("link %s: %w", l.plan, err)
			}
		}
	}
	for _, i := range []*topo.Intf{l.plan.Intf1, l.plan.Intf2} {
		if err := waitUp(n.nodes[i.Node], i.Name); err != nil {
			return fmt.Errorf("link %s: %w", l.plan, err)
		}
	}
	// The helper ends must be up too, or the first frames are lost.
	for _, p := range []string{el.PortA, el.PortB} {
		if err := waitUp(helper, p); err != nil {
			return fmt.Errorf("link %s: %w", l.plan, err)
		}
	}
	return nil
}

// stopEmulators is the hook teardown calls before namespaces are deleted:
// it stops every forwarder. The helper namespace stays until
// deleteEmulatorHelper, after SR-IOV teardown has taken back the VFs that
// emulated VF links keep in it.
func (n *Network) stopEmulators() error {
	e := n.emuState.Load()
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// In parallel: closing a packet socket with a ring waits for an RCU
	// grace period (tens of ms), four sockets per link, which adds up to
	// seconds for a hundred links when done one after another.
	var wg sync.WaitGroup
	var emu sync.Mutex
	var errs []error
	for _, el := range e.links {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := el.Stop()
			emu.Lock()
			errs = append(errs, err)
			emu.Unlock()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
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
	// Which link directions (a→b = 0, b→a = 1) the caller means.
	touch := [2]bool{true, true}
	if dir != BothDirections {
		ab := (dir == Forward) == fwd
		touch = [2]bool{ab, !ab}
	}
	var next [2]emulator.Config
	for i := range next {
		next[i] = cur[i]
		if !touch[i] {
			continue
		}
		if err := applyChange(&next[i], params); err != nil {
			return fmt.Errorf("link %s-%s: %w", node1, node2, err)
		}
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

func applyChange(c *emulator.Config, params string) error {
	f := strings.Fields(params)
	if len(f) == 0 {
		return fmt.Errorf("%w: no parameters given", ErrLinkParams)
	}
	kv := true
	for _, s := range f {
		if !strings.Contains(s, "=") {
			kv = false
		}
	}
	if !kv {
		cp := *c
		if err := cp.Apply(f); err != nil {
			return fmt.Errorf("%w: %v", ErrLinkParams, err)
		}
		*c = cp
		return nil
	}
	m := map[string]string{}
	for _, s := range f {
		k, v, _ := strings.Cut(s, "=")
		if !isEmulationKey(k) || strings.Contains(k, ">") {
			return fmt.Errorf("%w: %s: unknown parameter (use %s)", ErrLinkParams, k, strings.Join(EmulationKeys, ", "))
		}
		m[k] = v
	}
	cp := *c
	if err := applyParams(&cp, m); err != nil {
		return err
	}
	*c = cp
	return nil
}

// insertEmulator turns a plain veth link into an emulated one while the
// network runs, keeping interface names, MACs and addresses.
func (n *Network) insertEmulator(l *netLink, ab, ba emulator.Config) error {
	if l.veth == nil {
		if n.sriovLinkOf(l) != nil {
			return fmt.Errorf("link %s is a VF pair built without an emulator, and an emulator cannot be inserted into it live: give the link emulation parameters (delay=..., bw=..., emu=...) when the network is built", l.plan)
		}
		return fmt.Errorf("link %s: not created", l.plan)
	}
	macs := make([]net.HardwareAddr, 2)
	for k, i := range []*topo.Intf{l.plan.Intf1, l.plan.Intf2} {
		n.nodes[i.Node].Netlink(func(h *netlink.Handle) error {
			link, err := h.LinkByName(i.Name)
			if err == nil {
				macs[k] = link.Attrs().HardwareAddr
			}
			return err
		})
	}
	if err := l.veth.Delete(); err != nil {
		return fmt.Errorf("link %s: %w", l.plan, err)
	}
	l.veth = nil
	return n.buildEmulated(l, ab, ba, macs)
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
