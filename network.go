package hymn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/tools"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/sriov"
	"github.com/hymn-net/hymn/topo"
	"github.com/hymn-net/hymn/vm"
	"github.com/vishvananda/netlink"
)

// Options configure a network. The zero value gives Mininet's defaults.
type Options struct {
	IPBase  netip.Prefix // --ipbase; zero means 10.0.0.0/8
	AutoMAC bool         // --mac
	STP     bool         // STP on every switch (torus switches have it anyway)
	// Switch is the switch kind: SwitchLinuxBridge (the default),
	// SwitchOVSBridge (Open vSwitch in userspace mode, standalone),
	// SwitchBPF (a MAC-learning BPF program on the ports, no bridge),
	// SwitchOVS (OpenFlow switches connected to the controllers), or
	// SwitchAuto (BPF switches where they serve, else Linux bridges: the
	// hymn command's default; switchauto.go).
	Switch  SwitchKind
	Workers int // setup concurrency; 0 chooses from the CPU count
	// CPU makes every host CPU-limited (mn --host cfs,cpu=F); nil for none.
	CPU *CPUOptions
	// Log receives Mininet's progress lines; nil prints nothing.
	Log *mnlog.Logger
	// Nodes is the backend of hosts without a backend parameter:
	// BackendNetns (the default) or BackendVM.
	Nodes NodeBackend
	// Links is the backend of links without a kind parameter: LinksVeth
	// (the default) or LinksSRIOV. ParseLinkBackend reads --links specs.
	Links LinkBackend
	// SRIOV configures SR-IOV links (VF pairs, VLANs, the simulated NIC).
	SRIOV *sriov.Config
	// Controllers are OpenFlow controllers added to the topology's own
	// (mn's --controller); with Switch "ovsk" every switch connects to all
	// of them (sdn.go).
	Controllers []topo.Controller
	// FailMode ("secure", Mininet's default, or "standalone") and
	// Protocols ("OpenFlow10,OpenFlow13") of OpenFlow switches; a switch's
	// failMode and protocols params win.
	FailMode, Protocols string
	// MaxNodes bounds the topology's node count (mn --max-nodes): 0 means
	// topo.DefaultMaxNodes(), what the machine's available memory holds;
	// negative means no limit.
	MaxNodes int
	// Routing is how routers without a routing parameter get their
	// routes: RoutingNone (the default) or RoutingStatic (routes.go,
	// docs/routing.md). Routed segments get subnets of their own.
	Routing RoutingMode
	// IPv6 gives every host and router interface a global IPv6 address
	// too, from IPBase6 (zero: fd00::/48), one /64 per segment.
	IPv6    bool
	IPBase6 netip.Prefix
}

// Network is a topology being built, running or stopped.
type Network struct {
	opts Options
	// plan is the resolved topology (topo's plans are frozen); a live
	// change, under mu, stores the plan it makes and puts the one it
	// replaced back if deploying fails (runtime.go).
	plan atomic.Pointer[topo.Plan]
	run  string

	mu    sync.Mutex
	nodes map[string]Node
	links []*netLink
	// resolved holds each planned link's kind and parsed emulation,
	// decided once (in New, or AddLink for a live link): link.go.
	resolved map[*topo.PlannedLink]resolvedLink
	// linkBackend is Options.SRIOV resolved in New (which checks
	// Options.Links there too).
	linkBackend linkBackendConfig
	// backends holds each node's backend by name, decided once (in New,
	// or AddNode): node.go. A sync.Map, so that front ends read it
	// without waiting for a live change that holds mu.
	backends sync.Map
	claimed  bool
	built    bool
	stopped  bool

	// nextSeq is the seq of the next link added live (netLink.seq).
	nextSeq int

	// switchNote says which switch SwitchAuto chose and why, for Build's
	// log (switchauto.go); empty when the caller named the kind.
	switchNote string

	// Backend state made on first use (emulated.go, sriovlink.go).
	emuState atomic.Pointer[helperNS]
	sriov    atomic.Pointer[vfBackend]

	sdn *sdnNet // controllers and OpenFlow switches (sdn.go)
	// switchNS is the namespace the BPF switches share (switchbpf.go);
	// nil without BPF switches, or when their port names collide.
	switchNS *netnsx.Named
	// routes is the layer-3 state: static routers, links down, routes
	// installed (routes.go).
	routes *routeState
}

// New resolves a topology into a network, validating it completely; nothing
// touches the kernel until Build.
func New(t *topo.Topo, opts Options) (*Network, error) {
	if t == nil {
		return nil, errors.New("no topology")
	}
	if err := (topo.Limits{MaxNodes: opts.MaxNodes}).CheckSize("topology", uint64(t.NodeCount()), uint64(len(t.Links()))); err != nil {
		return nil, err
	}
	if opts.CPU != nil && !topo.ValidCPUFraction(opts.CPU.Fraction) && opts.CPU.Fraction != 0 {
		return nil, fmt.Errorf("cpu=%v: must be a fraction in (0, 1], or -1 for no limit", opts.CPU.Fraction)
	}
	plan, err := topo.Resolve(t, topo.AddressOptions{IPBase: opts.IPBase, AutoMAC: opts.AutoMAC})
	if err != nil {
		return nil, err
	}
	emulations, err := checkPlanParams(plan) // validate.go
	if err != nil {
		return nil, err
	}
	if err := checkLinkKinds(plan.Links, plan.Links); err != nil { // link.go
		return nil, err
	}
	backend, err := resolveLinkBackend(opts) // sriovlink.go
	if err != nil {
		return nil, err
	}
	if opts.Workers <= 0 {
		opts.Workers = defaultWorkers()
	}
	n := &Network{opts: opts, run: owner.NewRunID(), nodes: map[string]Node{}, linkBackend: backend,
		resolved: make(map[*topo.PlannedLink]resolvedLink, len(plan.Links))}
	if err := n.planRouting(plan); err != nil { // routes.go
		return nil, err
	}
	n.plan.Store(plan)
	for _, pl := range plan.Links {
		n.resolveLink(pl, emulations[pl])
	}
	n.chooseSwitch() // switchauto.go: before anything asks which kind a switch is
	if err := n.initSDN(t); err != nil {
		return nil, err
	}
	if err := n.checkBPFSwitches(); err != nil { // switchbpf.go
		return nil, err
	}
	// Backends and VM parameters are checked here, before anything exists.
	if err := n.resolveNodes(plan.Nodes); err != nil { // node.go
		return nil, err
	}
	// DPDK ports: on emulated VF links of a binary with DPDK (dpdklink.go).
	if err := n.checkLinkPorts(plan.Links); err != nil {
		return nil, err
	}
	return n, nil
}

// RunID returns the id that marks everything this network creates.
func (n *Network) RunID() string { return n.run }

// Plan returns the resolved topology as it is now. A plan is never
// changed: a live change (AddNode, AddLink, DeleteLink, DeleteNode)
// publishes a new one, so a plan read while another goroutine changes the
// network stays consistent (it may show a node or link still being made).
func (n *Network) Plan() *topo.Plan { return n.plan.Load() }

func (n *Network) log() *mnlog.Logger { return n.opts.Log }

// CheckRoot returns ErrNotRoot unless the process is root.
func CheckRoot() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: run it with sudo (namespaces and links need CAP_NET_ADMIN and CAP_SYS_ADMIN)", ErrNotRoot)
	}
	return nil
}

// CheckTools returns ErrMissingTool naming the first program not on PATH
// and the Debian package that has it.
func CheckTools(names ...string) error {
	return tools.Check(names...)
}

// Build creates every node and link. On failure it removes what it built and
// returns the error.
func (n *Network) Build(ctx context.Context) (err error) {
	if err := CheckRoot(); err != nil {
		return err
	}
	if err := CheckTools("bash", "ip"); err != nil {
		return err
	}
	if err := n.ensureFiles(); err != nil { // nodens.go
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.built || n.stopped {
		return errors.New("network was already built")
	}
	if err := owner.Claim(n.run); err != nil {
		return err
	}
	n.debugf("*** run %s: owner record in %s\n", n.run, owner.StateDir)
	n.claimed = true
	defer func() {
		if err != nil {
			err = errors.Join(err, n.teardown(false))
		}
	}()
	lg := n.log()
	lg.Info("*** Creating network\n")
	if n.switchNote != "" {
		lg.Infof("*** Switches: %s\n", n.switchNote)
	}
	lg.Info("*** Adding controller\n")
	hosts, switches := n.Plan().Hosts(), n.Plan().Switches()

	lg.Info("*** Adding hosts:\n")
	t0 := time.Now()
	if err := n.createNodes(ctx, hosts); err != nil {
		return err
	}
	lg.Info(names(hosts) + "\n")
	lg.Debugf("*** created %d host namespaces in %v\n", len(hosts), time.Since(t0))
	lg.Info("*** Adding switches:\n")
	t0 = time.Now()
	if err := n.buildOVS(); err != nil {
		return err
	}
	if err := n.buildSwitchNamespace(); err != nil { // switchbpf.go
		return err
	}
	if err := n.createNodes(ctx, switches); err != nil {
		return err
	}
	lg.Info(names(switches) + "\n")
	lg.Debugf("*** created %d switches in %v\n", len(switches), time.Since(t0))

	lg.Info("*** Adding links:\n")
	t0 = time.Now()
	n.links = make([]*netLink, len(n.Plan().Links))
	for i, pl := range n.Plan().Links {
		n.links[i] = &netLink{plan: pl, seq: i}
	}
	n.nextSeq = len(n.links)
	// Every link is made and attached first, then all are waited for
	// (link.go: createAttached, waitReady); they are made in an order that
	// keeps the broadcast domains small until the end (buildorder.go).
	order := mergeOrder(n.linkEnds())
	if err := forEach(ctx, n.opts.Workers, len(n.links), func(_ context.Context, i int) error { return n.createAttached(n.links[order[i]]) }); err != nil {
		return err
	}
	lg.Debugf("*** made and attached %d links in %v\n", len(n.links), time.Since(t0))
	if err := forEach(ctx, n.opts.Workers, len(n.links), func(ctx context.Context, i int) error { return n.waitReady(ctx, n.links[i]) }); err != nil {
		return err
	}
	var b strings.Builder
	for _, l := range n.Plan().Links {
		// Mininet's TCLink prints each shaped interface first.
		b.WriteString(linkparams.TCIntfInfo(l.Params, Forward) + linkparams.TCIntfInfo(l.Params, Reverse))
		fmt.Fprintf(&b, "(%s, %s) ", l.Intf1.Node, l.Intf2.Node)
	}
	lg.Info(b.String() + "\n")
	lg.Debugf("*** created %d links in %v\n", len(n.links), time.Since(t0))
	if err := forEach(ctx, n.opts.Workers, len(hosts), func(ctx context.Context, i int) error { return n.configureRoutes(ctx, hosts[i]) }); err != nil {
		return err
	}
	if err := n.configureLayer3(ctx); err != nil { // routes.go
		return err
	}
	if err := n.setupNAT(ctx); err != nil {
		return err
	}
	lg.Info("*** Configuring hosts\n" + names(hosts) + "\n")
	// Link schedules start together: their time zero (schedule.go).
	if err := n.startLinkSchedules(time.Now()); err != nil {
		return err
	}
	n.built = true
	return nil
}

func names(ns []*topo.PlannedNode) string {
	var b strings.Builder
	for _, p := range ns {
		b.WriteString(p.Name + " ")
	}
	return b.String()
}

func (n *Network) createNodes(ctx context.Context, list []*topo.PlannedNode) error {
	made := make([]Node, len(list))
	err := forEach(ctx, n.opts.Workers, len(list), func(ctx context.Context, i int) (err error) {
		made[i], err = n.newNode(ctx, list[i])
		return err
	})
	for i, node := range made {
		if node != nil {
			n.nodes[list[i].Name] = node
		}
	}
	return err
}

// newNode starts one planned node on the backend New (or AddNode)
// decided for it. Build and AddNode both come here, so a node added to a
// running network is the node the same plan would have built. A node that
// started but failed to configure comes back with the error, for its
// caller to delete.
func (n *Network) newNode(ctx context.Context, p *topo.PlannedNode) (Node, error) {
	b := n.backendOf(p.Name)
	if b == nil {
		return nil, fmt.Errorf("node %s: no backend was decided for it", p.Name)
	}
	return b.start(ctx, n, p)
}

// namespaceOf names the namespace of a node (a VM's helper namespace).
func (n *Network) namespaceOf(name string) string { return owner.NamespaceName(n.run, name) }

// linkEnd describes one interface of a link for every link kind (veth,
// emulated, VF): the node's namespace (a VM's helper namespace), the
// planned name, MAC and address, and the link's mtu. A VM's end stays
// bare in its helper namespace: the guest's own interface gets the MAC and
// the address when it is attached (GuestNode.AttachIntf).
func (n *Network) linkEnd(l *topo.PlannedLink, i *topo.Intf) links.End {
	e := links.End{NS: n.nodes[i.Node], Name: i.Name, MAC: i.MAC, IP: i.IP, MTU: l.Params.MTU()}
	if n.guestOf(i) != nil {
		e.MAC, e.IP = nil, netip.Prefix{}
	}
	// Open vSwitch's userspace datapath forwards frames as they are.
	e.Complete = n.usesOVS() && n.Plan().Node(i.Node).IsSwitch()
	if sw := n.switchNode(i.Node); sw != nil {
		e.UpLater = sw.SetsPortsUp()
	}
	return e
}

// CPUOptions are Mininet's CPULimitedHost settings for every host.
type CPUOptions struct {
	Fraction float64 // cpu=F: each host's share of the whole machine; 0 means no limit, as Mininet's cpu=-1
	Pin      bool    // --pin: host i runs on core i mod cores
}

// cpuLimit returns a host's CPU limit: a node's own cpu= parameter, else
// the network-wide option. Switches are never limited.
// stp reports whether a node is a switch that runs STP: every switch with
// --switch STP (Options.STP), and those whose params say stp=1 (a torus's).
func (n *Network) stp(p *topo.PlannedNode) bool {
	return p.IsSwitch() && (n.opts.STP || truthy(p.Params["stp"]))
}

func (n *Network) cpuLimit(p *topo.PlannedNode) *nodes.CPULimit {
	if p.IsSwitch() {
		return nil
	}
	var lim nodes.CPULimit
	if v, ok := p.Params["cpu"]; ok {
		// checkNodeParams accepted it as a fraction before anything was built.
		_, _ = fmt.Sscan(v, &lim.Fraction)
	} else if n.opts.CPU == nil {
		return nil
	} else {
		lim.Fraction = n.opts.CPU.Fraction
	}
	if n.opts.CPU != nil && n.opts.CPU.Pin {
		for i, h := range n.Plan().Hosts() {
			if h.Name == p.Name {
				lim.Cores = strconv.Itoa(i % runtime.NumCPU())
			}
		}
	}
	return &lim
}

// configureRoutes applies a host's routes: Mininet's defaultRoute ("via
// 10.0.0.1" or "dev h1-eth0") and hymn's routes parameter, ip-route
// specifications separated by ';' ("10.0.2.0/24 via 10.0.1.2; default via
// 10.0.1.2").
func (n *Network) configureRoutes(ctx context.Context, p *topo.PlannedNode) error {
	var specs []string
	if dr := strings.TrimSpace(p.Params["defaultRoute"]); dr != "" {
		specs = append(specs, "default "+dr)
	}
	for _, r := range strings.Split(p.Params["routes"], ";") {
		if r = strings.TrimSpace(r); r != "" {
			specs = append(specs, r)
		}
	}
	for _, spec := range specs {
		res, err := n.nodes[p.Name].Exec(ctx, "ip", append([]string{"route", "replace"}, strings.Fields(spec)...)...)
		if err != nil {
			return err
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("node %s: route %q: %s", p.Name, spec, strings.TrimSpace(string(res.Stderr)))
		}
	}
	return nil
}

func truthy(v string) bool {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// WaitConnected waits until every switch forwards (Mininet's -w), printing
// Mininet's lines.
func (n *Network) WaitConnected(ctx context.Context) error {
	switches := n.Plan().Switches()
	n.log().Info("*** Waiting for switches to connect\n")
	err := errors.Join(n.waitOpenFlow(ctx), n.waitSTP(ctx))
	n.log().Info(names(switches) + "\n")
	return err
}

// waitSTP returns once no bridge port of an STP switch is listening or
// learning (or after a minute, with an error).
func (n *Network) waitSTP(ctx context.Context) error {
	var stp []*topo.PlannedNode
	for _, s := range n.Plan().Switches() {
		if n.opts.STP || truthy(s.Params["stp"]) {
			stp = append(stp, s)
		}
	}
	if len(stp) == 0 {
		return nil
	}
	deadline := time.Now().Add(time.Minute)
	for {
		settled := true
		for _, s := range stp {
			out, err := exec.CommandContext(ctx, "bridge", "-n", n.nodes[s.Name].Namespace(), "link", "show").Output()
			if err != nil {
				return fmt.Errorf("switch %s: reading STP state: %w", s.Name, err)
			}
			if strings.Contains(string(out), "state listening") || strings.Contains(string(out), "state learning") {
				settled = false
				break
			}
		}
		if settled {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("spanning tree did not converge within a minute")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop tears the network down in reverse: node shells and the processes
// in the nodes, links, switches, hosts; then the run's record. It is safe to
// call more than once.
func (n *Network) Stop() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.teardown(true)
}

func (n *Network) teardown(verbose bool) error {
	if n.stopped {
		return nil
	}
	n.stopped = true
	lg := n.log()
	if !verbose {
		lg = nil
	}
	ctx := context.Background()
	var errs []error
	// Captures flush their files while the interfaces still exist.
	errs = append(errs, n.stopCaptures())
	// Forwarders hold sockets in the helper namespace: stop them first;
	// VFs go home while the nodes and the helper namespace still exist.
	errs = append(errs, n.stopLinks())
	// Then the SR-IOV backend (allocations, the simulated NIC).
	errs = append(errs, n.stopSRIOV())
	errs = append(errs, n.deleteEmulatorHelper())

	// Everything running in our namespaces goes first, so no process holds
	// a namespace alive after it is deleted.
	inodes := map[uint64]bool{}
	for _, node := range n.nodes {
		node.Halt() // a shell's jobs end, a guest powers off, before the sweep below
		if ino, err := netnsx.Inode(node.Namespace()); err == nil {
			inodes[ino] = true
		}
	}
	t0 := time.Now()
	procs := owner.ProcessesIn(inodes)
	n.debugProcs(procs) // sdn.go
	owner.KillAll(procs)
	n.log().Debugf("*** stopped node processes in %v\n", time.Since(t0))

	lg.Infof("*** Stopping %d controllers\n%s\n", len(n.ControllerNames()), strings.Join(append(n.ControllerNames(), ""), " "))
	// Links are not deleted one by one: deleting a veth waits for an RCU
	// grace period under the RTNL lock (about 5 ms each, serialised), while
	// deleting a namespace removes all its interfaces in one batch. So the
	// links go with the switch namespaces below; only a link whose ends
	// both survive (none in a namespace topology) would need its own delete.
	lg.Infof("*** Stopping %d links\n%s\n", len(n.links), strings.Repeat(".", len(n.links)))

	errs = append(errs, n.removeNATLink())
	switches, hosts := n.Plan().Switches(), n.Plan().Hosts()
	t0 = time.Now()
	lg.Infof("*** Stopping %d switches\n", len(switches))
	errs = append(errs, n.deleteNodes(ctx, n.splitOrdered(switches)))
	errs = append(errs, n.deleteSwitchNamespace()) // switchbpf.go
	// Controllers stop after the switches that use them (sdn.go).
	errs = append(errs, n.stopSDN())
	lg.Info(names(switches) + "\n")
	lg.Infof("*** Stopping %d hosts\n", len(hosts))
	lastFirst := slices.Clone(hosts) // the order teardown has always used
	slices.Reverse(lastFirst)
	errs = append(errs, n.deleteNodes(ctx, lastFirst))
	lg.Info(names(hosts) + "\n")
	n.log().Debugf("*** deleted namespaces in %v\n", time.Since(t0))

	// After a failure, or if anything of the run is left (a namespace file
	// a failed build made without a node), the crash-proof sweep runs as
	// hymn clean would; otherwise releasing the run's record is enough.
	if n.claimed {
		left, _ := owner.Namespaces(n.run)
		if len(left) > 0 || errors.Join(errs...) != nil || !n.built {
			if _, _, err := owner.RemoveRun(n.run); err != nil {
				errs = append(errs, err)
			}
			errs = append(errs, vm.RemoveRunDirs(owner.Prefix+n.run+"-"))
		} else {
			errs = append(errs, owner.Release(n.run))
		}
	}
	lg.Info("*** Done\n")
	return errors.Join(errs...)
}

// linkEnds lists each link's end nodes, for mergeOrder and splitOrder.
func (n *Network) linkEnds() [][2]string {
	ends := make([][2]string, len(n.links))
	for i, l := range n.links {
		ends[i] = [2]string{l.plan.Intf1.Node, l.plan.Intf2.Node}
	}
	return ends
}

// splitOrdered returns the switches in the order that cuts the network's
// broadcast domains first (splitOrder).
func (n *Network) splitOrdered(switches []*topo.PlannedNode) []*topo.PlannedNode {
	names := make([]string, len(switches))
	for i, p := range switches {
		names[i] = p.Name
	}
	out := make([]*topo.PlannedNode, 0, len(switches))
	for _, i := range splitOrder(names, n.linkEnds()) {
		out = append(out, switches[i])
	}
	return out
}

// deleteNodes deletes every node of list that was made, in list's order. A failure does not
// stop the others: teardown removes all it can and reports what it could
// not.
func (n *Network) deleteNodes(ctx context.Context, list []*topo.PlannedNode) error {
	var (
		mu   sync.Mutex
		errs []error
	)
	err := forEach(ctx, n.opts.Workers, len(list), func(_ context.Context, i int) error {
		p := list[i]
		if node, ok := n.nodes[p.Name]; ok {
			if ns, ok := namespaceNode(node); ok && ns.SharesNamespace() {
				n.debugf("*** %s leaves %s\n", p.Name, node.Namespace())
			} else {
				n.debugf("*** ip netns del %s\n", node.Namespace())
			}
			if err := node.Delete(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

// Node returns a node by name.
func (n *Network) Node(name string) (Node, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	node, ok := n.nodes[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownNode, name)
	}
	return node, nil
}

// Hosts returns the hosts (every node that is not a switch) in Mininet's
// order.
func (n *Network) Hosts() []*topo.PlannedNode { return n.Plan().Hosts() }

// Switches returns the switches in Mininet's order.
func (n *Network) Switches() []*topo.PlannedNode { return n.Plan().Switches() }

// IP returns the address of a node's default interface.
func (n *Network) IP(name string) (netip.Addr, error) {
	p := n.Plan().Node(name)
	if p == nil {
		return netip.Addr{}, fmt.Errorf("%w: %s", ErrUnknownNode, name)
	}
	if d := p.DefaultIntf(); d != nil && d.IP.IsValid() {
		return d.IP.Addr(), nil
	}
	return netip.Addr{}, fmt.Errorf("node %s has no IP address", name)
}

// StaticARP fills every host's ARP table with every other host's address
// (mn --arp), so the first ping of a test does not wait for ARP.
func (n *Network) StaticARP(ctx context.Context) error {
	type entry struct {
		ip  netip.Addr
		mac net.HardwareAddr
	}
	var entries []entry
	hosts := n.Plan().Hosts() // one plan for both passes, filtered once
	for _, h := range hosts {
		d := h.DefaultIntf()
		if d == nil || !d.IP.IsValid() {
			continue
		}
		var mac net.HardwareAddr
		err := n.nodes[h.Name].Netlink(func(nl *netlink.Handle) error {
			link, err := nl.LinkByName(d.Name)
			if err == nil {
				mac = link.Attrs().HardwareAddr
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("static ARP: %s: %w", d.Name, err)
		}
		entries = append(entries, entry{d.IP.Addr(), mac})
	}
	return forEach(ctx, n.opts.Workers, len(hosts), func(_ context.Context, i int) error {
		h := hosts[i]
		d := h.DefaultIntf()
		if d == nil || !d.IP.IsValid() {
			return nil
		}
		return n.nodes[h.Name].Netlink(func(nl *netlink.Handle) error {
			link, err := nl.LinkByName(d.Name)
			if err != nil {
				return err
			}
			for _, e := range entries {
				if e.ip == d.IP.Addr() {
					continue
				}
				neigh := &netlink.Neigh{LinkIndex: link.Attrs().Index, Family: netlink.FAMILY_V4,
					State: netlink.NUD_PERMANENT, IP: e.ip.AsSlice(), HardwareAddr: e.mac}
				if err := nl.NeighSet(neigh); err != nil {
					return fmt.Errorf("static ARP on %s: %w", h.Name, err)
				}
			}
			return nil
		})
	})
}
