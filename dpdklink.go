package hymn

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hymn-net/hymn/emulator/dpdk"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/sriov"
	"github.com/hymn-net/hymn/topo"
)

// DPDK ports for emulated VF links (emulator=dpdk, per link or with
// --links sriov,emulator=dpdk): the forwarder between the two far VFs of
// an emulated VF link polls DPDK ethdevs instead of AF_PACKET sockets.
// On the simulated NIC, whose VFs are veth ends, those are net_af_packet
// virtual devices on the VF netdevs in the helper namespace; on hardware
// the VFs leave their kernel driver for vfio-pci and are driven by their
// own poll-mode driver, attached by PCI address.
//
// DPDK's environment (EAL) starts once per process and cannot start
// again after it ends, so it starts on the first such link and stays for
// the life of the process: each link removes its own devices when it
// stops, and CleanupDPDK (cmd/hymn calls it on exit) ends the EAL and
// removes its runtime directory. A process whose EAL started for
// simulated VFs (--no-pci) cannot attach hardware VFs later.

// errDPDKNotBuilt is DPDK asked for in a binary without it: it matches
// ErrDPDK and dpdk.ErrNotBuilt and says how to get a binary with DPDK.
var errDPDKNotBuilt = dpdkNotBuilt{}

type dpdkNotBuilt struct{}

func (dpdkNotBuilt) Error() string {
	return "DPDK ports: emulator=dpdk: this hymn binary was built without DPDK; build it with `go build -tags dpdk ./cmd/hymn` " +
		"(cgo and Debian's DPDK: apt-get install libdpdk-dev pkg-config), or use emulator=afpacket"
}

func (dpdkNotBuilt) Unwrap() []error { return []error{ErrDPDK, dpdk.ErrNotBuilt} }

// dpdkMaxMTU is the largest link MTU DPDK ports carry: hymn's mbufs hold
// 2 KiB (RTE_MBUF_DEFAULT_BUF_SIZE), and neither net_af_packet nor the
// port's copy gathers frames spread over several.
const dpdkMaxMTU = 1500

// dpdkIdleSleep is how long a DPDK port's Wait sleeps between polls: a
// polled queue has no receive stamps, so a frame is stamped when it is
// read, and on a small machine a thread spinning per direction would
// starve the traffic it carries. The port falls to a 1 ms poll when the
// link has been quiet for 10 ms (dpdk.Options.DeepIdleSleep).
const dpdkIdleSleep = 20 * time.Microsecond

// linkPorts returns the ports a link's emulator uses: the link's own
// emulator= parameter, else, for a VF link, --links sriov,emulator=.
// Values were checked in New.
func (n *Network) linkPorts(pl *topo.PlannedLink) string {
	if own, err := linkparams.PortsOf(pl.Params); err == nil && own != "" {
		return own
	}
	if n.linkIsSRIOV(pl) {
		if e := n.linkBackend.sriov.Emulator; e != "" {
			return e
		}
	}
	return linkparams.PortsAFPacket
}

// checkLinkPorts is the check of the emulator ports New runs on every
// planned link and AddLink on the one it adds: DPDK ports only on emulated
// VF links of a binary that has DPDK, at most dpdkMaxMTU.
func (n *Network) checkLinkPorts(pls []*topo.PlannedLink) error {
	var errs []error
	wantDPDK := false
	for _, pl := range pls {
		own, err := linkparams.PortsOf(pl.Params)
		if err != nil {
			errs = append(errs, fmt.Errorf("link %s: %w", pl, err))
			continue
		}
		if n.linkPorts(pl) != linkparams.PortsDPDK {
			continue
		}
		switch {
		case !n.linkIsSRIOV(pl):
			errs = append(errs, fmt.Errorf("%w: link %s: emulator=dpdk needs an SR-IOV link (kind=sriov, or --links sriov); emulated veth links use AF_PACKET ports", ErrDPDK, pl))
		case !linkparams.NeedsEmulator(pl.Params):
			// --links sriov,emulator=dpdk concerns the emulated links
			// only; a link's own emulator=dpdk without emulation is
			// surely a mistake.
			if own != "" {
				errs = append(errs, fmt.Errorf("%w: link %s: emulator=dpdk, but the link has no emulator: give it emulation parameters (delay=..., bw=..., emu=...)", ErrDPDK, pl))
			}
		default:
			wantDPDK = true
			if mtu := pl.Params.MTU(); mtu > dpdkMaxMTU {
				errs = append(errs, fmt.Errorf("%w: link %s: mtu=%d: DPDK ports carry an MTU of at most %d (2 KiB mbufs); use emulator=afpacket for larger frames", ErrDPDK, pl, mtu, dpdkMaxMTU))
			}
		}
	}
	if wantDPDK && !dpdk.Built {
		errs = append(errs, errDPDKNotBuilt)
	}
	return errors.Join(errs...)
}

// dpdkProc is this process's use of DPDK.
var dpdkProc struct {
	mu       sync.Mutex
	seq      int             // numbers vdev names, unique for the life of the process
	attached map[string]bool // PCI devices attached to the EAL
}

// dpdkEALConfig is the EAL configuration hymn starts DPDK with: virtual
// devices only (--no-pci) for the simulated NIC, or, for a hardware VF,
// PCI with an allow list of that VF alone, so no other device of the
// machine is probed; more VFs are attached later (dpdk.AttachPCI).
func dpdkEALConfig(pci string) dpdk.Config {
	if pci == "" {
		return dpdk.Config{}
	}
	return dpdk.Config{PCI: []string{pci}}
}

// startEAL starts the process's EAL if it is not running. pci is the
// hardware VF about to be used ("" for virtual devices).
func startEAL(pci string) error {
	if cfg, ok := dpdk.Started(); ok {
		if pci != "" && len(cfg.PCI) == 0 {
			return fmt.Errorf("%w: VF %s: DPDK in this process started for simulated VFs (--no-pci) and cannot attach PCI devices; build networks with hardware DPDK links in a process of their own", ErrDPDK, pci)
		}
		return nil
	}
	cfg := dpdkEALConfig(pci)
	if err := dpdk.Init(cfg); err != nil {
		if errors.Is(err, dpdk.ErrNotBuilt) {
			return errDPDKNotBuilt
		}
		return fmt.Errorf("%w: %w", ErrDPDK, err)
	}
	if pci != "" {
		dpdkProc.attached = map[string]bool{pci: true} // probed at start
	}
	return nil
}

// afPacketDevargs are the net_af_packet arguments for a simulated VF's
// netdev: one queue pair on the interface (the PMD's default ring of 512
// 2 KiB frames fits an MTU of 1500).
func afPacketDevargs(iface string) string { return "iface=" + iface + ",qpairs=1" }

// nextVdevName names a net_af_packet device: the driver finds its vdevs
// by the name's prefix, and an ethdev name may not come back while the
// process lives, so the number only grows.
func nextVdevName() string {
	dpdkProc.seq++
	return "net_af_packet_hymn" + strconv.Itoa(dpdkProc.seq)
}

// dpdkPortOptions size a port for the link's MTU.
func dpdkPortOptions(mtu int) dpdk.Options {
	return dpdk.Options{MaxFrame: max(mtu, 1500) + 22, IdleSleep: dpdkIdleSleep}
}

// dpdkVFAddrs are the PCI addresses of an emulated VF link's two far VFs,
// the emulator's: pair 1's B side and pair 2's A side (the order of
// sriovLink.vfs: node1's, the emulator's two, node2's).
func dpdkVFAddrs(pairs []*sriov.Pair) ([2]string, error) {
	if len(pairs) != 2 || pairs[0].B.PCI == "" || pairs[1].A.PCI == "" {
		return [2]string{}, fmt.Errorf("%w: the emulator's VFs have no PCI address", ErrDPDK)
	}
	return [2]string{pairs[0].B.PCI, pairs[1].A.PCI}, nil
}

// dpdkPorts are a link's two open DPDK ports and what undoes them.
type dpdkPorts struct {
	ports [2]*dpdk.Port
	undo  []func() error // in the order done; run backwards
}

// release closes the ports and removes their devices, last made first.
// It is what EmulateOnPorts calls once the forwarder has stopped (the
// link closes the ports itself then; closing twice is harmless).
func (d *dpdkPorts) release() error {
	var errs []error
	for _, p := range d.ports {
		if p != nil {
			errs = append(errs, p.Close())
		}
	}
	dpdkProc.mu.Lock()
	defer dpdkProc.mu.Unlock()
	for i := len(d.undo) - 1; i >= 0; i-- {
		errs = append(errs, d.undo[i]())
	}
	d.undo = nil
	return errors.Join(errs...)
}

// openSimDPDK opens net_af_packet ports on the two far VFs of a simulated
// NIC, netdevs in the helper namespace. On failure nothing is left.
func openSimDPDK(helper *links.HelperNS, ifaces [2]string, mtu int) (_ *dpdkPorts, err error) {
	d := &dpdkPorts{}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.release())
		}
	}()
	dpdkProc.mu.Lock()
	if err := startEAL(""); err != nil {
		dpdkProc.mu.Unlock()
		return nil, err
	}
	var names [2]string
	for i, iface := range ifaces {
		names[i] = nextVdevName()
		// The PMD opens its packet socket in the calling thread's
		// namespace, where it must find the VF.
		if err := dpdk.CreateVdevIn(helper.NsHandle(), names[i], afPacketDevargs(iface)); err != nil {
			dpdkProc.mu.Unlock()
			return nil, fmt.Errorf("%w: VF %s: %w", ErrDPDK, iface, err)
		}
		name := names[i]
		d.undo = append(d.undo, func() error { return dpdk.RemoveVdev(name) })
	}
	dpdkProc.mu.Unlock()
	for i, name := range names {
		if d.ports[i], err = dpdk.OpenIn(helper.NsHandle(), name, dpdkPortOptions(mtu)); err != nil {
			return nil, fmt.Errorf("%w: VF %s: %w", ErrDPDK, ifaces[i], err)
		}
	}
	return d, nil
}

// openHardwareDPDK attaches the two far VFs (bound to vfio-pci) to the EAL
// and opens their ports. On failure nothing is left attached.
func openHardwareDPDK(addrs [2]string, mtu int) (_ *dpdkPorts, err error) {
	d := &dpdkPorts{}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.release())
		}
	}()
	dpdkProc.mu.Lock()
	for _, a := range addrs {
		if err := startEAL(a); err != nil {
			dpdkProc.mu.Unlock()
			return nil, err
		}
		if !dpdkProc.attached[a] {
			if err := dpdk.AttachPCI(a, ""); err != nil {
				dpdkProc.mu.Unlock()
				return nil, fmt.Errorf("%w: %w", ErrDPDK, err)
			}
			dpdkProc.attached[a] = true
		}
		d.undo = append(d.undo, func() error {
			delete(dpdkProc.attached, a)
			return dpdk.DetachPCI(a)
		})
	}
	dpdkProc.mu.Unlock()
	for i, a := range addrs {
		if d.ports[i], err = dpdk.Open(a, dpdkPortOptions(mtu)); err != nil {
			return nil, fmt.Errorf("%w: VF %s: %w", ErrDPDK, a, err)
		}
	}
	return d, nil
}

// startDPDKEmulator starts the forwarder of an emulated VF link on DPDK
// ports: on the simulated NIC's far VFs in the helper namespace, or on the
// hardware VFs create bound to vfio-pci.
func (v *vfLink) startDPDKEmulator(env linkEnv, pl *topo.PlannedLink) (*links.EmulatedLink, error) {
	mtu := v.sl.ends[0].MTU
	if mtu == 0 {
		mtu = 1500
	}
	var d *dpdkPorts
	var err error
	if !v.hardwareDPDK() {
		d, err = openSimDPDK(v.helper, v.ports, mtu)
	} else {
		var addrs [2]string
		if addrs, err = dpdkVFAddrs(v.sl.pairs); err == nil {
			d, err = openHardwareDPDK(addrs, mtu)
		}
	}
	if err != nil {
		return nil, err
	}
	env.debugf("*** link %s: emulator on DPDK ports %s and %s\n", pl, d.ports[0].Name(), d.ports[1].Name())
	fc := v.fc
	fc.MTU = mtu
	el, err := links.EmulateOnPorts(v.helper, v.ports[0], v.ports[1], d.ports[0], d.ports[1], mtu, fc, d.release)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDPDK, err)
	}
	return el, nil
}

// bindVFIO hands the far VFs of a hardware link with DPDK ports to
// vfio-pci, remembering their drivers for unbindVFIO.
func (v *vfLink) bindVFIO(i int) error {
	addrs, err := dpdkVFAddrs(v.sl.pairs)
	if err != nil {
		return err
	}
	pci := addrs[i-1]
	prev, err := v.s.sys.BindVFIO(pci)
	if err != nil {
		return fmt.Errorf("%w: VF %s (%s): %w", ErrDPDK, v.sl.vfs[i], pci, err)
	}
	if v.vfio == nil {
		v.vfio = map[string]string{}
	}
	v.vfio[pci] = prev
	return nil
}

// unbindVFIO gives the VFs bound by bindVFIO back to their drivers; their
// netdevs come back in the host namespace.
func (v *vfLink) unbindVFIO() error {
	var errs []error
	for pci, prev := range v.vfio {
		if err := v.s.sys.UnbindVFIO(pci, prev); err != nil {
			errs = append(errs, fmt.Errorf("%w: VF %s back to %s: %w", ErrDPDK, pci, prev, err))
			continue
		}
		delete(v.vfio, pci)
	}
	return errors.Join(errs...)
}

// CleanupDPDK ends this process's DPDK environment, if emulated links on
// DPDK ports started it, and removes its runtime directory
// (/var/run/dpdk/hymn<pid>). Call it once no network of the process runs
// any more, as the process ends: DPDK cannot start again in the same
// process. `hymn clean` removes the directories of processes that died.
func CleanupDPDK() error {
	dpdkProc.mu.Lock()
	defer dpdkProc.mu.Unlock()
	return dpdk.Cleanup()
}
