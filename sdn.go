package hymn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
)

// sdnNet is a network's OpenFlow side: its controllers and the one Open
// vSwitch serving all its OpenFlow switches.
type sdnNet struct {
	specs       []*topo.Controller
	controllers []*nodes.Controller
	ovs         *nodes.OVSNet
	// only holds the controllers a switch was given by name
	// (SetSwitchControllers); a switch not in it has every controller.
	only map[string][]string
}

// isOpenFlow reports whether the network's switches are OpenFlow switches.
func (n *Network) isOpenFlow() bool { return n.opts.Switch == SwitchOVS }

// usesOVS reports whether switches run on Open vSwitch's userspace
// datapath (whose ports need checksums complete).
func (n *Network) usesOVS() bool { return n.isOpenFlow() || n.opts.Switch == SwitchOVSBridge }

// initSDN gathers the controllers (the topology's, then the options') and
// checks them against the nodes.
func (n *Network) initSDN(t *topo.Topo) error {
	if !n.opts.Switch.valid() {
		return fmt.Errorf("unknown switch kind %q: use lxbr, ovsbr, bpf or ovsk", n.opts.Switch)
	}
	switch n.opts.FailMode {
	case "", "secure", "standalone":
	default:
		return fmt.Errorf("failMode %q: use secure or standalone", n.opts.FailMode)
	}
	var specs []*topo.Controller
	for _, c := range t.Controllers() {
		// A topology's controllers serve OpenFlow switches; with Linux
		// bridges (or ovsbr) nothing would connect to them.
		if !n.isOpenFlow() {
			n.log().Warningf("*** controller %s is not started: the switches are not OpenFlow switches (use --switch ovsk)\n", c.Name)
			continue
		}
		specs = append(specs, c)
	}
	for i := range n.opts.Controllers {
		c := n.opts.Controllers[i]
		specs = append(specs, &c)
	}
	seen := map[string]bool{}
	for _, c := range specs {
		if err := c.Validate(); err != nil {
			return err
		}
		if seen[c.Name] || n.Plan().Node(c.Name) != nil {
			return fmt.Errorf("%w: %q is used twice (controllers and nodes share names)", topo.ErrDuplicateNode, c.Name)
		}
		seen[c.Name] = true
		if _, err := nodes.ResolveControllerKind(c.Kind); err != nil {
			return fmt.Errorf("controller %s: %w", c.Name, err)
		}
	}
	if n.isOpenFlow() {
		if err := nodes.OVSAvailable(); err != nil {
			return err
		}
		for _, s := range n.Plan().Switches() {
			if _, err := nodes.DefaultDPID(s.Name, s.Params["dpid"]); err != nil {
				return err
			}
			if fm := s.Params["failMode"]; fm != "" && fm != "secure" && fm != "standalone" {
				return fmt.Errorf("switch %s: failMode %q: use secure or standalone", s.Name, fm)
			}
		}
	}
	n.sdn = &sdnNet{specs: specs}
	return nil
}

// Controllers returns the running controllers, in the order they started.
func (n *Network) Controllers() []*nodes.Controller {
	if n.sdn == nil {
		return nil
	}
	return n.sdn.controllers
}

// ControllerNames lists the network's controllers (running or not).
func (n *Network) ControllerNames() []string {
	var out []string
	if n.sdn != nil {
		for _, c := range n.sdn.specs {
			out = append(out, c.Name)
		}
	}
	return out
}

// OVS returns the Open vSwitch of the network's OpenFlow switches, or nil.
func (n *Network) OVS() *nodes.OVSNet {
	if n.sdn == nil {
		return nil
	}
	return n.sdn.ovs
}

func (n *Network) debugf(format string, args ...any) { n.log().Debugf(format, args...) }

// progressf writes a progress line at info level (nodeEnv's: a VM's boot).
func (n *Network) progressf(format string, args ...any) {
	if lg := n.log(); lg != nil {
		lg.Infof(format, args...)
	}
}

// buildOVS starts the shared Open vSwitch before the switches are made.
func (n *Network) buildOVS() error {
	if !n.isOpenFlow() || len(n.Plan().Switches()) == 0 {
		return nil
	}
	ns := owner.NamespaceName(n.run, nodes.OVSNetNode)
	o, err := nodes.NewOVSNet(ns, filepath.Join(nodes.OVSRunDir, ns), n.debugf)
	if err != nil {
		return fmt.Errorf("starting Open vSwitch: %w", err)
	}
	n.sdn.ovs = o
	return nil
}

// newOpenFlowSwitch makes a switch node on the shared Open vSwitch; ok is
// false when the switch is not an OpenFlow switch.
func (n *Network) newOpenFlowSwitch(p *topo.PlannedNode) (node Node, ok bool, err error) {
	if !p.IsSwitch() || n.sdn == nil || n.sdn.ovs == nil {
		return nil, false, nil
	}
	sw, err := n.sdn.ovs.NewSwitch(p.Name)
	if err != nil {
		return nil, true, err
	}
	n.debugf("*** %s: OpenFlow switch on %s\n", p.Name, n.sdn.ovs.Namespace())
	return sw, true, nil
}

// bridgeOf is a switch's OpenFlow configuration: its params win over the
// network's options.
func (n *Network) bridgeOf(p *topo.PlannedNode) *nodes.OVSBridge {
	b := &nodes.OVSBridge{Name: p.Name, DPID: p.Params["dpid"], FailMode: n.opts.FailMode, Protocols: n.opts.Protocols,
		STP: n.stp(p)}
	if v := p.Params["failMode"]; v != "" {
		b.FailMode = v
	}
	if v := p.Params["protocols"]; v != "" {
		b.Protocols = v
	}
	chosen, picked := n.sdn.only[p.Name]
	for _, c := range n.sdn.controllers {
		if !picked || slices.Contains(chosen, c.Name()) {
			b.Controllers = append(b.Controllers, c.Target())
		}
	}
	return b
}

// SetSwitchControllers connects a running OpenFlow switch to the given
// controllers only, as Mininet's switch.start([c1]) does (controllers2.py
// gives each switch its own controller); none leaves it without one. An
// entry names one of the network's controllers, or is the address one of
// them listens on as tcp:IP:PORT (controllers.py's RemoteController for
// c0's port): the switches' ovs-vswitchd runs in a namespace of its own,
// whose loopback is not the machine's, so a switch reaches a controller
// through the network's relay to it. The choice holds when the switch is
// stopped and started again.
func (n *Network) SetSwitchControllers(ctx context.Context, name string, controllers []string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.built || n.stopped {
		return ErrNotBuilt
	}
	p := n.Plan().Node(name)
	if p == nil || !p.IsSwitch() {
		return fmt.Errorf("%w: switch %s", ErrUnknownNode, name)
	}
	if n.OVS() == nil || n.sdn.ovs.Bridge(name) == nil {
		return fmt.Errorf("switch %s is not a running OpenFlow switch (--switch ovsk)", name)
	}
	known := n.ControllerNames()
	controllers = slices.Clone(controllers)
	for i, c := range controllers {
		if addr, ok := strings.CutPrefix(c, "tcp:"); ok {
			for _, nc := range n.sdn.controllers {
				if nc.Addr() == addr {
					controllers[i] = nc.Name()
				}
			}
			if controllers[i] == c {
				return fmt.Errorf("switch %s: no controller of the network listens on %s (add it to the network: net.addController, --controller remote,ip=...,port=...)", name, addr)
			}
			continue
		}
		if !slices.Contains(known, c) {
			return fmt.Errorf("switch %s: %w: controller %s (the network has %s)", name, ErrUnknownNode, c, strings.Join(known, ", "))
		}
	}
	if n.sdn.only == nil {
		n.sdn.only = map[string][]string{}
	}
	prev, had := n.sdn.only[name]
	n.sdn.only[name] = slices.Clone(controllers)
	if err := n.sdn.ovs.SetControllers(ctx, name, n.bridgeOf(p).Controllers); err != nil {
		if had {
			n.sdn.only[name] = prev
		} else {
			delete(n.sdn.only, name)
		}
		return err
	}
	return nil
}

// startSDN starts the controllers, then the OpenFlow switches, printing
// Mininet's lines.
func (n *Network) startSDN(ctx context.Context) error {
	lg := n.log()
	lg.Info("*** Starting controller\n")
	var names strings.Builder
	if n.sdn != nil && len(n.sdn.controllers) == 0 {
		for _, spec := range n.sdn.specs {
			relay := ""
			if n.sdn.ovs != nil {
				relay = filepath.Join(n.sdn.ovs.Dir(), spec.Name+".sock")
			}
			c, err := nodes.StartController(ctx, nodes.ControllerConfig{Name: spec.Name, Kind: spec.Kind, IP: spec.IP, Port: spec.Port, Protocols: n.controllerProtocols(), Switches: len(n.Plan().Switches()),
				Record: owner.NamespaceName(n.run, spec.Name), Relay: relay, Logf: n.debugf, Warnf: lg.Warningf})
			if err != nil {
				return err
			}
			n.sdn.controllers = append(n.sdn.controllers, c)
			names.WriteString(spec.Name + " ")
		}
	}
	lg.Info(names.String() + "\n")
	switches := n.Plan().Switches()
	lg.Infof("*** Starting %d switches\n", len(switches))
	if n.sdn == nil || n.sdn.ovs == nil {
		lg.Info(namesOf(switches) + "\n")
		return nil
	}
	var bridges []*nodes.OVSBridge
	for _, s := range switches {
		bridges = append(bridges, n.bridgeOf(s))
	}
	t0 := time.Now()
	if err := n.sdn.ovs.StartBridges(ctx, bridges); err != nil {
		return err
	}
	lg.Info(namesOf(switches) + "...\n")
	n.debugf("*** started %d Open vSwitch bridges in %v\n", len(bridges), time.Since(t0))
	return nil
}

func namesOf(ns []*topo.PlannedNode) string { return names(ns) }

// StartSwitch starts a stopped OpenFlow switch again (the shell's "switch
// s1 start").
func (n *Network) StartSwitch(ctx context.Context, name string) error {
	p := n.Plan().Node(name)
	if p == nil || !p.IsSwitch() {
		return fmt.Errorf("invalid switch: %s", name)
	}
	if n.OVS() == nil {
		return fmt.Errorf("switch %s is not an OpenFlow switch", name)
	}
	return n.sdn.ovs.StartBridges(ctx, []*nodes.OVSBridge{n.bridgeOf(p)})
}

// StopSwitch stops an OpenFlow switch, keeping its ports (the shell's
// "switch s1 stop").
func (n *Network) StopSwitch(ctx context.Context, name string) error {
	p := n.Plan().Node(name)
	if p == nil || !p.IsSwitch() {
		return fmt.Errorf("invalid switch: %s", name)
	}
	if n.OVS() == nil {
		return fmt.Errorf("switch %s is not an OpenFlow switch", name)
	}
	return n.sdn.ovs.StopBridge(ctx, name)
}

// waitOpenFlow waits until every running OpenFlow switch is connected to
// each of its controllers (mn -w).
func (n *Network) waitOpenFlow(ctx context.Context) error {
	if n.OVS() == nil || len(n.sdn.controllers) == 0 {
		return nil
	}
	for {
		ready := true
		for _, c := range n.sdn.controllers {
			ready = ready && c.Connections() >= n.sdn.ovs.BridgesUsing(c.Target())
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// stopSDN stops the shared Open vSwitch (after the switch nodes) and then
// the controllers.
func (n *Network) stopSDN() error {
	if n.sdn == nil {
		return nil
	}
	var errs []error
	if n.sdn.ovs != nil {
		errs = append(errs, n.sdn.ovs.Delete())
		n.sdn.ovs = nil
	}
	for i := len(n.sdn.controllers) - 1; i >= 0; i-- {
		errs = append(errs, n.sdn.controllers[i].Stop())
	}
	n.sdn.controllers = nil
	return errors.Join(errs...)
}

// debugLink prints what creating a link does, as the ip commands it
// amounts to (hymn uses netlink): Mininet's -v debug shows each command.
func (n *Network) debugLink(l *topo.PlannedLink) {
	if !n.log().Enabled(mnlog.Debug) {
		return
	}
	ns := func(i *topo.Intf) string {
		if node, ok := n.nodes[i.Node]; ok {
			return node.Namespace()
		}
		return owner.NamespaceName(n.run, i.Node)
	}
	n.debugf("*** ip link add %s netns %s type veth peer name %s netns %s\n", l.Intf1.Name, ns(l.Intf1), l.Intf2.Name, ns(l.Intf2))
	for _, i := range []*topo.Intf{l.Intf1, l.Intf2} {
		if i.MAC != nil {
			n.debugf("*** %s: ip link set %s address %s\n", i.Node, i.Name, i.MAC)
		}
		if i.IP.IsValid() {
			n.debugf("*** %s: ip addr add %s dev %s\n", i.Node, i.IP, i.Name)
		}
		n.debugf("*** %s: ip link set %s up\n", i.Node, i.Name)
		if n.usesOVS() {
			n.debugf("*** %s: ethtool -K %s tx off rx off tso off gso off\n", i.Node, i.Name)
		}
		if p := n.Plan().Node(i.Node); p != nil && p.IsSwitch() {
			n.debugf("*** %s: port %s joins the switch\n", i.Node, i.Name)
		}
	}
}

// debugProcs names the processes a teardown kills (-v debug).
func (n *Network) debugProcs(pids []int) {
	if !n.log().Enabled(mnlog.Debug) {
		return
	}
	for _, pid := range pids {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		n.debugf("*** kill -9 %d (%s)\n", pid, strings.TrimSpace(string(comm)))
	}
}

// controllerProtocols are the OpenFlow versions the controllers hymn runs
// must speak: OpenFlow 1.0 and every version a switch is limited to.
func (n *Network) controllerProtocols() string {
	versions := []string{"OpenFlow10"}
	add := func(list string) {
		for _, v := range strings.Split(list, ",") {
			if v = strings.TrimSpace(v); v != "" && !slices.Contains(versions, v) {
				versions = append(versions, v)
			}
		}
	}
	add(n.opts.Protocols)
	for _, s := range n.Plan().Switches() {
		add(s.Params["protocols"])
	}
	return strings.Join(versions, ",")
}

// removeRunControllers stops the controller processes a dead run left (its
// records under nodes.ControllerRunDir; they normally die with hymn
// through their parent-death signal) and removes the records.
func removeRunControllers(run string) error {
	_, err := nodes.RemoveControllers(owner.Prefix + run + "-")
	return err
}

// sweepControllerRecords removes controller records of runs that are
// gone, whatever removed the rest of the run.
func sweepControllerRecords() {
	entries, _ := os.ReadDir(nodes.ControllerRunDir)
	for _, e := range entries {
		if run, ok := owner.RunOfNamespace(e.Name()); ok && !owner.Alive(run) {
			// A sweep of what dead runs left: what fails stays for the
			// next sweep (hymn clean reports it).
			_, _ = nodes.RemoveControllers(owner.Prefix + run + "-")
		}
	}
}
