package hymn

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/sriov"
	"github.com/hymn-net/hymn/topo"
)

// SR-IOV links (CIMininet's HwPair): a link is realised as a VF pair on
// two cabled PF ports, both VFs on a VLAN of their own, instead of a veth
// pair. Options.Links = "sriov" (or the --links flag, or kind: sriov in a
// link's params) selects it; Options.SRIOV configures it. Without SR-IOV
// hardware the simulated NIC of package sriov stands in.

// vfBackend is the SR-IOV state of one network. The Network holds it
// (Network.sriov), made on first use, so that networks without VF links
// never look for SR-IOV hardware.
type vfBackend struct {
	mu    sync.Mutex
	init  bool
	err   error
	sim   *sriov.SimNIC
	alloc *sriov.Allocator
	home  links.Namespace // where the VFs live when no node has them
	sys   sriov.SysFS     // the hardware's sysfs (vfio-pci for DPDK ports)
	dir   string          // /run/hymn/<run>-sriov: state file, simulated sysfs
	// reserved holds the pairs taken at start for the planned links, in
	// plan order: links are then built in parallel, and reserving first
	// keeps which link gets which pair and VLAN reproducible.
	reserved map[*topo.PlannedLink][]*sriov.Pair
}

// sriovLink is a link made of a VF pair, or, when it carries an emulator,
// of two: node1 ─pair 1─ [emulator] ─pair 2─ node2, the emulator's two VFs
// in the network's helper namespace (as DPDS sits between two NIC ports).
type sriovLink struct {
	pairs []*sriov.Pair
	ends  []links.End // where each VF went, in the order of vfs
	vfs   []string    // the VFs' own netdev names, to give them back
	took  []bool
}

// pairsFor is how many VF pairs a link takes.
func pairsFor(pl *topo.PlannedLink) int {
	if linkparams.NeedsEmulator(pl.Params) {
		return 2
	}
	return 1
}

// allocatePairs takes the VF pairs of one link, all or none.
func (s *vfBackend) allocatePairs(pl *topo.PlannedLink) ([]*sriov.Pair, error) {
	var pairs []*sriov.Pair
	for i := range pairsFor(pl) {
		label := pl.String()
		if pairsFor(pl) > 1 {
			label += fmt.Sprintf(" (emulator side %c)", 'a'+i)
		}
		p, err := s.alloc.Allocate(label)
		if err != nil {
			errs := []error{fmt.Errorf("%w: %w", ErrSRIOV, err)}
			for _, q := range pairs {
				errs = append(errs, s.alloc.Release(q))
			}
			return nil, errors.Join(errs...)
		}
		pairs = append(pairs, p)
	}
	return pairs, nil
}

func (n *Network) sriovState() *vfBackend {
	n.sriov.CompareAndSwap(nil, &vfBackend{})
	return n.sriov.Load()
}

// linkBackendConfig is the SR-IOV configuration VF links use
// (Options.SRIOV, or the defaults), resolved once by New, which also
// checks the network-wide backend (Options.Links).
type linkBackendConfig struct {
	sriov sriov.Config
}

// resolveLinkBackend checks and normalises Options.Links and Options.SRIOV.
func resolveLinkBackend(opts Options) (linkBackendConfig, error) {
	var c linkBackendConfig
	switch opts.Links {
	case "", LinksVeth, LinksSRIOV:
	default:
		return c, fmt.Errorf("%w: unknown link backend %q (use veth or sriov; parse --links specs with ParseLinkBackend)", ErrSRIOV, opts.Links)
	}
	// SR-IOV options alone do not switch the backend: links with kind
	// sriov use them.
	if opts.SRIOV != nil {
		c.sriov = c.sriov.Merge(*opts.SRIOV)
	}
	// Normalised here, so "DPDK" from Go means what emulator=dpdk does
	// on the command line.
	ports, err := linkparams.ParsePorts(c.sriov.Emulator)
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrSRIOV, err)
	}
	c.sriov.Emulator = ports
	return c, nil
}

// linkKindVF is the kind= value of a link built from a VF pair.
const linkKindVF = "sriov"

// wantsVFPair is the VF pair kind's test (link.go: linkKinds): a link's
// own kind param wins over the network-wide backend.
func (n *Network) wantsVFPair(pl *topo.PlannedLink) bool {
	switch strings.ToLower(pl.Params["kind"]) {
	case linkKindVF, "hwpair":
		return true
	case "veth":
		return false
	}
	return n.opts.Links == LinksSRIOV
}

// CheckLinks validates Options.Links (and Options.SRIOV) without touching
// the machine, for callers that want errors before Build.
func CheckLinks(opts Options) error {
	c, err := resolveLinkBackend(opts)
	if err != nil {
		return err
	}
	if _, err := c.sriov.LoadInventory(); err != nil {
		return fmt.Errorf("%w: %w", ErrSRIOV, err)
	}
	return nil
}

// countSRIOVLinks counts the planned links that take a VF pair, to size
// the simulated NIC.
func (n *Network) countSRIOVLinks() int {
	c := 0
	for _, pl := range n.Plan().Links {
		if n.linkIsSRIOV(pl) {
			c += pairsFor(pl)
		}
	}
	return c
}

// sriovBackend sets up the backend on first use: real PFs from the
// inventory, or the simulated NIC.
func (n *Network) sriovBackend() (*vfBackend, error) {
	s := n.sriovState()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.init {
		return s, s.err
	}
	s.init = true
	s.err = n.initSRIOV(s)
	if s.err == nil {
		s.err = n.reserveSRIOV(s)
	}
	return s, s.err
}

// reserveSRIOV allocates the pairs of every planned SR-IOV link in plan
// order.
func (n *Network) reserveSRIOV(s *vfBackend) error {
	s.reserved = map[*topo.PlannedLink][]*sriov.Pair{}
	for _, pl := range n.Plan().Links {
		if !n.linkIsSRIOV(pl) {
			continue
		}
		p, err := s.allocatePairs(pl)
		if err != nil {
			return err
		}
		s.reserved[pl] = p
	}
	return nil
}

func (n *Network) initSRIOV(s *vfBackend) error {
	cfg := n.linkBackend.sriov
	inv, err := cfg.LoadInventory()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSRIOV, err)
	}
	s.dir = filepath.Join(owner.StateDir, n.run+"-sriov")
	sys := sriov.SysFS{Root: cfg.SysRoot}
	simulate := false
	switch cfg.Mode() {
	case sriov.SimAlways:
		simulate = true
	case sriov.SimNever:
		if !sys.HasHardware() {
			return fmt.Errorf("%w: %w (sim=off)", ErrSRIOV, sriov.ErrNoHardware)
		}
	default:
		if !sys.HasHardware() {
			simulate = true
			n.log().Warningf("*** No SR-IOV hardware here: using hymn's simulated SR-IOV NIC\n")
		}
	}
	state := filepath.Join(s.dir, "state.json")
	s.sys = sys
	if !simulate {
		if s.home, err = links.HostNamespace(); err != nil {
			return fmt.Errorf("%w: %w", ErrSRIOV, err)
		}
		var conf sriov.Configurator = sriov.NetlinkConfigurator{}
		if cfg.Conf != nil {
			conf = cfg.Conf
		}
		s.alloc, err = sriov.NewAllocator(sriov.AllocatorConfig{Inventory: inv, SysFS: sys, Conf: conf,
			NeedNetdev: true, StatePath: state, LockPath: filepath.Join(owner.StateDir, "sriov.lock"), Run: n.run})
		if err != nil {
			return fmt.Errorf("%w: %w", ErrSRIOV, err)
		}
		return nil
	}
	vfs := cfg.SimVFs
	if vfs == 0 {
		// Room for links added at run time too, within reason.
		vfs = max(n.countSRIOVLinks(), 8)
	}
	mtu := 1500
	for _, pl := range n.Plan().Links {
		mtu = max(mtu, pl.Params.MTU())
	}
	sim, err := sriov.NewSimNIC(sriov.SimConfig{Namespace: owner.NamespaceName(n.run, "sriov"), Dir: s.dir,
		Cables: inv.Cables, VFs: vfs, MTU: mtu})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSRIOV, err)
	}
	s.sim, s.home = sim, sim.Home()
	inv.Cables = sim.Cables()
	s.alloc, err = sriov.NewAllocator(sriov.AllocatorConfig{Inventory: inv, SysFS: sim.SysFS(), Conf: sim,
		NeedNetdev: true, StatePath: state, Run: n.run})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSRIOV, err)
	}
	return nil
}

// vfLink is a link made of a VF pair: allocate the pair and its VLAN,
// move each VF into its node under the topology's name and configure it as
// a veth end would be. A link with emulation parameters takes two pairs,
// and the emulator forwards between the far VF of each, in the network's
// helper namespace, on AF_PACKET ports or, with emulator=dpdk, on DPDK
// ports (dpdklink.go).
type vfLink struct {
	s        *vfBackend
	sl       *sriovLink
	emulated bool
	dpdk     bool // the emulator's ports are DPDK ports
	fc       emulator.ForwarderConfig
	helper   *links.HelperNS
	ports    [2]string
	el       *links.EmulatedLink
	// vfio holds the drivers of hardware VFs handed to vfio-pci for DPDK
	// ports, by PCI address, until release gives them back.
	vfio map[string]string
}

func (v *vfLink) create(env linkEnv, l *netLink) (err error) {
	emu := env.emulation(l.plan)
	v.emulated = emu != nil
	v.dpdk = v.emulated && env.linkPorts(l.plan) == linkparams.PortsDPDK
	if v.emulated {
		v.fc.AtoB, v.fc.BtoA = emu.ab, emu.ba
	}
	s, err := env.sriovBackend()
	if err != nil {
		return err
	}
	v.s = s
	s.mu.Lock()
	pairs, ok := s.reserved[l.plan]
	delete(s.reserved, l.plan)
	s.mu.Unlock()
	if !ok {
		// A link added while the network runs.
		if pairs, err = s.allocatePairs(l.plan); err != nil {
			return err
		}
	}
	sl := &sriovLink{pairs: pairs}
	v.sl = sl
	defer func() {
		if err != nil {
			err = errors.Join(err, v.delete())
		}
	}()
	first, last := l.plan.Intf1, l.plan.Intf2
	sl.ends = []links.End{env.linkEnd(l.plan, first)}
	if v.emulated {
		if v.helper, err = env.helperNamespace(); err != nil {
			return fmt.Errorf("link %s: %w", l.plan, err)
		}
		v.ports = env.emulatorPortNames(l)
		mtu := sl.ends[0].MTU
		sl.ends = append(sl.ends, links.End{NS: v.helper, Name: v.ports[0], MTU: mtu}, links.End{NS: v.helper, Name: v.ports[1], MTU: mtu})
	}
	sl.ends = append(sl.ends, env.linkEnd(l.plan, last))
	for _, p := range pairs {
		sl.vfs = append(sl.vfs, p.A.Netdev, p.B.Netdev)
	}
	sl.took = make([]bool, len(sl.vfs))
	for i, e := range sl.ends {
		if v.hardwareDPDK() && i > 0 && i < len(sl.ends)-1 {
			// A hardware VF under DPDK leaves the kernel: its own
			// poll-mode driver takes it through vfio-pci.
			if err := v.bindVFIO(i); err != nil {
				return fmt.Errorf("link %s: %w", l.plan, err)
			}
			continue
		}
		if err := links.TakeInterface(s.home, sl.vfs[i], e); err != nil {
			return fmt.Errorf("link %s: %w", l.plan, err)
		}
		sl.took[i] = true
		if s.sim != nil {
			// The simulated VF is a veth end whose frames cross a
			// user-space switch: checksums must be complete.
			if err := links.DisableOffloads(e.NS, e.Name); err != nil {
				return fmt.Errorf("link %s: %w", l.plan, err)
			}
		}
	}
	for _, p := range pairs {
		env.debugf("*** link %s: VF pair %s vf %d / %s vf %d on VLAN %d\n", l.plan, p.Cable.A, p.A.Index, p.Cable.B, p.B.Index, p.VLAN)
	}
	return nil
}

// waitEnds are the VFs in the helper namespace of an emulated VF link
// (none for hardware VFs under DPDK, which have no netdev).
func (v *vfLink) waitEnds() []links.End {
	if len(v.sl.ends) <= 2 || v.hardwareDPDK() {
		return nil
	}
	return v.sl.ends[1 : len(v.sl.ends)-1]
}

// hardwareDPDK: the link's emulator runs on DPDK ports over hardware VFs,
// which leave the kernel for vfio-pci (the simulated NIC's VFs stay
// netdevs, under DPDK's AF_PACKET devices).
func (v *vfLink) hardwareDPDK() bool { return v.dpdk && v.s.sim == nil }

// ready starts the emulator between the far VFs, now that they are up.
func (v *vfLink) ready(env linkEnv, l *netLink) error {
	if !v.emulated {
		return nil
	}
	if v.dpdk {
		el, err := v.startDPDKEmulator(env, l.plan)
		if err != nil {
			return fmt.Errorf("link %s: %w", l.plan, err)
		}
		v.el = el
		return nil
	}
	el, err := links.EmulateBetween(v.helper, v.ports[0], v.ports[1], v.sl.ends[0].MTU, v.fc)
	if err != nil {
		return fmt.Errorf("link %s: %w", l.plan, err)
	}
	v.el = el
	return nil
}

func (v *vfLink) emulator() *links.EmulatedLink { return v.el }

func (v *vfLink) describe(li *LinkInfo) {
	li.Kind = "vf"
	if v.emulated {
		li.Kind = "emulated-vf"
	}
	if v.sl != nil {
		for _, p := range v.sl.pairs {
			li.VLANs = append(li.VLANs, p.VLAN)
		}
	}
}

func (v *vfLink) stop() error {
	if v.el == nil {
		return nil
	}
	return v.el.Stop()
}

// release gives the link's VFs back to their home namespace, or from
// vfio-pci to their driver (real VFs only: simulated ones vanish with the
// NIC) and restores their settings.
func (v *vfLink) release() error {
	if v.sl == nil || v.s == nil || v.s.sim != nil {
		return nil
	}
	return errors.Join(v.unbindVFIO(), v.returnVFs())
}

// returnVFs moves the VFs the link took back to the NIC's namespace.
func (v *vfLink) returnVFs() error {
	var errs []error
	for i, took := range v.sl.took {
		if took {
			errs = append(errs, links.ReturnInterface(v.sl.ends[i].NS, v.sl.ends[i].Name, v.s.home, v.sl.vfs[i]))
			v.sl.took[i] = false
		}
	}
	return errors.Join(errs...)
}

// delete releases the VFs and frees the link's pairs and VLANs, for a
// link that failed or is removed while the network runs. Simulated VFs
// go home too here (release leaves them to vanish with the NIC), so the
// pair can serve a later link.
func (v *vfLink) delete() error {
	errs := []error{v.stop(), v.release()}
	if v.sl != nil && v.s != nil && v.s.sim != nil {
		errs = append(errs, v.returnVFs())
	}
	if v.sl != nil && v.s != nil {
		for _, p := range v.sl.pairs {
			errs = append(errs, v.s.alloc.Release(p))
		}
		v.sl.pairs = nil
	}
	return errors.Join(errs...)
}

// stopSRIOV releases every VF pair (VFs home, settings restored) and
// stops the simulated NIC. It runs before the node and helper namespaces
// go, so real VFs are still reachable to be handed back.
func (n *Network) stopSRIOV() error {
	s := n.sriov.Swap(nil)
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The links gave their VFs back already (vfLink.release).
	var errs []error
	if s.alloc != nil {
		errs = append(errs, s.alloc.ReleaseAll())
	}
	if s.sim != nil {
		errs = append(errs, s.sim.Close())
	}
	if s.dir != "" {
		if err := os.RemoveAll(s.dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: teardown: %w", ErrSRIOV, err)
	}
	return nil
}

// SRIOVPairs returns the VF pairs the network's links use, in allocation
// order (nil when it has no SR-IOV links).
func (n *Network) SRIOVPairs() []*sriov.Pair {
	s := n.sriov.Load()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.alloc == nil {
		return nil
	}
	return s.alloc.Pairs()
}

// SRIOVSimulated returns the simulated NIC the network uses, or nil when
// it uses hardware or has no SR-IOV links.
func (n *Network) SRIOVSimulated() *sriov.SimNIC {
	s := n.sriov.Load()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sim
}
