package sriov

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/hymn-net/hymn/emulator/afpacket"
	"github.com/hymn-net/hymn/links"
	"github.com/vishvananda/netlink"
)

// DefaultSimCable is the simulated NIC's cable when none is given: the
// names of the X710 loop ports in the CIMininet scripts.
var DefaultSimCable = Cable{A: "enp33s0f0", B: "enp100s0f0"}

// SimConfig describes a simulated SR-IOV NIC.
type SimConfig struct {
	// Namespace is the hidden namespace that holds the NIC: the cable,
	// the VF "representor" ends and the VFs nobody took. Name it after the
	// run (owner.NamespaceName(run, "sriov")) so `hymn clean` removes it.
	Namespace string
	// Dir receives the fake sysfs tree (created if missing, removed by
	// Close).
	Dir string
	// Cables are the PF ports to simulate, wired pairwise. Empty: one
	// cable, DefaultSimCable.
	Cables []Cable
	// VFs is the number of VFs enabled per PF (default 8); TotalVFs is
	// sriov_totalvfs (default max(VFs, 64)).
	VFs, TotalVFs int
	// MTU of VFs and cable (default 1500).
	MTU int
}

// SimStats counts what the simulated cable did.
type SimStats struct {
	Tagged       uint64 // frames a VF sent that went onto the cable tagged
	Untagged     uint64 // frames delivered from the cable to a VF (its tag removed)
	DropVLAN     uint64 // frames from the cable no VF's VLAN matched
	DropTagged   uint64 // tagged frames a VF with a port VLAN tried to send
	DropSpoof    uint64 // spoofchk: source MAC not the VF's
	DropDisabled uint64 // VF link state disable
	// Overload, as a NIC counts its overruns: RxOverrun frames found a
	// receive ring full (the switch fell behind its senders), TxOverrun
	// frames a transmit ring full (the receiving side fell behind).
	RxOverrun, TxOverrun uint64
}

// SimNIC is a simulated SR-IOV NIC: see the package documentation and
// simswitch.go for its data path. It implements Configurator, and its VF
// settings take effect on the cable at once.
type SimNIC struct {
	cfg      SimConfig
	helper   *links.HelperNS
	mem      *MemConfigurator
	pfs      []*simPF
	byName   map[string]*simPF
	table    atomic.Pointer[simTable]
	ports    []*simPort
	switches []*simSwitch
	once     sync.Once

	tagged, untagged, dropVLAN, dropTagged, dropSpoof, dropDisabled atomic.Uint64
}

type simPF struct {
	name   string
	index  int
	cable  *simPort   // every VF of the PF sends onto it
	vfs    []*simPort // the VFs' representor ends, by VF index
	netdev []string
}

// simTable is an immutable snapshot of every VF's settings, swapped in
// whole on each change so the data path reads it without locks.
type simTable struct {
	state  map[string][]VFState
	byVLAN map[string]map[int][]int // pf → VLAN (0: none) → enabled VFs
}

// NewSimNIC builds the simulated NIC. On failure it removes what it made.
func NewSimNIC(cfg SimConfig) (_ *SimNIC, err error) {
	if cfg.Namespace == "" || cfg.Dir == "" {
		return nil, errors.New("simulated SR-IOV NIC: Namespace and Dir are required")
	}
	if len(cfg.Cables) == 0 {
		cfg.Cables = []Cable{DefaultSimCable}
	}
	if cfg.VFs <= 0 {
		cfg.VFs = 8
	}
	if cfg.TotalVFs < cfg.VFs {
		cfg.TotalVFs = max(cfg.VFs, 64)
	}
	if cfg.MTU <= 0 {
		cfg.MTU = 1500
	}
	inv := Inventory{Cables: cfg.Cables}
	if err := inv.check(); err != nil {
		return nil, err
	}
	s := &SimNIC{cfg: cfg, mem: NewMemConfigurator(), byName: map[string]*simPF{}}
	s.mem.OnSet = s.rebuild
	defer func() {
		if err != nil {
			_ = s.Close() // best effort: the setup error is returned
		}
	}()
	var fake []FakePF
	for _, c := range cfg.Cables {
		for _, name := range []string{c.A, c.B} {
			fp := FakePF{Name: name, TotalVFs: cfg.TotalVFs, NumVFs: cfg.VFs}
			for i := 0; i < cfg.VFs; i++ {
				if n := fp.VFName(i); len(n) > 15 {
					return nil, fmt.Errorf("simulated PF %s: VF name %s is longer than 15 bytes", name, n)
				}
			}
			pf := &simPF{name: name, index: len(s.pfs)}
			for i := 0; i < cfg.VFs; i++ {
				pf.netdev = append(pf.netdev, fp.VFName(i))
			}
			s.pfs = append(s.pfs, pf)
			s.byName[name] = pf
			fake = append(fake, fp)
		}
	}
	s.rebuild()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := WriteFakeTree(filepath.Join(cfg.Dir, "sys"), fake); err != nil {
		return nil, fmt.Errorf("simulated SR-IOV NIC: %w", err)
	}
	if s.helper, err = links.CreateHelperNS(cfg.Namespace); err != nil {
		return nil, fmt.Errorf("simulated SR-IOV NIC: %w", err)
	}
	for _, c := range cfg.Cables {
		if err := s.addVeth(c.A, c.B, true, true); err != nil {
			return nil, err
		}
	}
	for _, pf := range s.pfs {
		for i, name := range pf.netdev {
			// The VF end stays down: it is renamed when a node takes it.
			if err := s.addVeth(repName(pf.index, i), name, true, false); err != nil {
				return nil, err
			}
		}
	}
	open := func(pf *simPF, vf int, name string, rx, tx int) (*simPort, error) {
		p, err := afpacket.OpenIn(s.helper.NsHandle(), name, afpacket.Options{MTU: cfg.MTU, RxFrames: rx, TxFrames: tx})
		if err != nil {
			return nil, fmt.Errorf("simulated SR-IOV NIC: %w", err)
		}
		sp := &simPort{port: p, pf: pf, vf: vf}
		s.ports = append(s.ports, sp)
		return sp, nil
	}
	repRx := repRxFrames(len(s.pfs)*cfg.VFs, cfg.MTU)
	for _, pf := range s.pfs {
		if pf.cable, err = open(pf, -1, pf.name, cableRxFrames, cableTxFrames); err != nil {
			return nil, err
		}
		for i := range pf.netdev {
			vf, err := open(pf, i, repName(pf.index, i), repRx, repTxFrames)
			if err != nil {
				return nil, err
			}
			pf.vfs = append(pf.vfs, vf)
		}
	}
	// PFs come in cable order, A then B: one switch thread per cable.
	for i := 0; i < len(s.pfs); i += 2 {
		w, err := newSimSwitch(s, s.pfs[i], s.pfs[i+1])
		if err != nil {
			return nil, fmt.Errorf("simulated SR-IOV NIC: %w", err)
		}
		w.start()
		s.switches = append(s.switches, w)
	}
	return s, nil
}

// repName names the hidden end of VF i of PF number pf: short, and unique
// in the hidden namespace.
func repName(pf, i int) string { return "sim" + strconv.Itoa(pf) + "r" + strconv.Itoa(i) }

// addVeth makes a veth pair inside the hidden namespace with offloads off
// (frames cross a user-space switch, which cannot finish checksums).
func (s *SimNIC) addVeth(a, b string, upA, upB bool) error {
	err := s.helper.Netlink(func(h *netlink.Handle) error {
		v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: a, MTU: s.cfg.MTU}, PeerName: b}
		if err := h.LinkAdd(v); err != nil {
			return err
		}
		for name, up := range map[string]bool{a: upA, b: upB} {
			if !up {
				continue
			}
			l, err := h.LinkByName(name)
			if err == nil {
				err = h.LinkSetUp(l)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("simulated SR-IOV NIC: veth %s<->%s: %w", a, b, err)
	}
	for _, n := range []string{a, b} {
		if err := links.DisableOffloads(s.helper, n); err != nil {
			return fmt.Errorf("simulated SR-IOV NIC: %w", err)
		}
	}
	return nil
}

// Namespace returns the name of the hidden namespace.
func (s *SimNIC) Namespace() string { return s.cfg.Namespace }

// Home returns the hidden namespace, where untaken VF netdevs live (real
// VFs live in the root namespace).
func (s *SimNIC) Home() links.Namespace { return s.helper }

// SysFS returns the fake sysfs of the NIC. Its /dev has no vfio.
func (s *SimNIC) SysFS() SysFS {
	return SysFS{Root: filepath.Join(s.cfg.Dir, "sys"), DevRoot: filepath.Join(s.cfg.Dir, "dev")}
}

// Cables returns the simulated cables.
func (s *SimNIC) Cables() []Cable { return append([]Cable(nil), s.cfg.Cables...) }

// GetVF implements Configurator.
func (s *SimNIC) GetVF(pf string, vf int) (VFState, error) {
	if err := s.check(pf, vf); err != nil {
		return VFState{}, err
	}
	return s.mem.GetVF(pf, vf)
}

// SetVF implements Configurator; the cable obeys the new settings from
// the next frame on.
func (s *SimNIC) SetVF(pf string, vf int, st VFState) error {
	if err := s.check(pf, vf); err != nil {
		return err
	}
	return s.mem.SetVF(pf, vf, st)
}

func (s *SimNIC) check(pf string, vf int) error {
	p, ok := s.byName[pf]
	if !ok {
		return fmt.Errorf("%w: %s (simulated)", ErrUnknownPF, pf)
	}
	if vf < 0 || vf >= len(p.netdev) {
		return fmt.Errorf("%s: no VF %d (%d enabled)", pf, vf, len(p.netdev))
	}
	return nil
}

func (s *SimNIC) rebuild() {
	t := &simTable{state: map[string][]VFState{}, byVLAN: map[string]map[int][]int{}}
	for _, pf := range s.pfs {
		t.byVLAN[pf.name] = map[int][]int{}
		for i := range pf.netdev {
			st, _ := s.mem.GetVF(pf.name, i)
			t.state[pf.name] = append(t.state[pf.name], st)
			if st.LinkState != LinkDisable {
				t.byVLAN[pf.name][st.VLAN] = append(t.byVLAN[pf.name][st.VLAN], i)
			}
		}
	}
	s.table.Store(t)
}

// vfTable returns the VF settings for the state file.
func (s *SimNIC) vfTable() map[string][]VFState { return s.table.Load().state }

// Stats returns the cable's counters.
func (s *SimNIC) Stats() SimStats {
	st := SimStats{Tagged: s.tagged.Load(), Untagged: s.untagged.Load(), DropVLAN: s.dropVLAN.Load(),
		DropTagged: s.dropTagged.Load(), DropSpoof: s.dropSpoof.Load(), DropDisabled: s.dropDisabled.Load()}
	for _, p := range s.ports {
		ps := p.port.Stats()
		st.RxOverrun += ps.RxRingDrops
		st.TxOverrun += ps.TxDropped
	}
	return st
}

const (
	tpid8021 = 0x8100
	tpidQinQ = 0x88a8
)

// frameBuf is the buffer size for one frame: MTU, Ethernet header and two
// tags (the kernel's stripped tag put back, and QinQ).
func (s *SimNIC) frameBuf() int { return s.cfg.MTU + 14 + 8 }

func isTagged(f []byte) bool {
	if len(f) < 18 {
		return false
	}
	et := int(f[12])<<8 | int(f[13])
	return et == tpid8021 || et == tpidQinQ
}

// tag writes f with an 802.1Q header (VLAN vid, priority qos) into dst.
func tag(dst, f []byte, vid, qos int) []byte {
	copy(dst[:12], f[:12])
	tci := uint16(qos&7)<<13 | uint16(vid&0xfff)
	dst[12], dst[13] = tpid8021>>8, tpid8021&0xff
	dst[14], dst[15] = byte(tci>>8), byte(tci)
	n := copy(dst[16:], f[12:])
	return dst[:16+n]
}

// untag removes the 802.1Q header in place.
func untag(f []byte) []byte {
	copy(f[4:16], f[:12])
	return f[4:]
}

// Close stops the cable, deletes the hidden namespace (and with it every
// VF netdev still in it and the peer of every VF a node took, so those
// vanish from the nodes too) and removes the fake sysfs.
func (s *SimNIC) Close() error {
	var errs []error
	s.once.Do(func() {
		for _, w := range s.switches {
			errs = append(errs, w.close())
		}
		// Closing a packet socket waits for an RCU grace period in the
		// kernel, two per port, so the ports close in parallel.
		var mu sync.Mutex
		var closing sync.WaitGroup
		for _, p := range s.ports {
			closing.Go(func() {
				if err := p.port.Close(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		closing.Wait()
		if s.helper != nil {
			errs = append(errs, s.helper.Delete())
		}
		errs = append(errs, os.RemoveAll(s.cfg.Dir))
	})
	return errors.Join(errs...)
}

// VFNetdev returns the netdev name VF i of a simulated PF starts with.
func (s *SimNIC) VFNetdev(pf string, i int) (string, error) {
	if err := s.check(pf, i); err != nil {
		return "", err
	}
	return s.byName[pf].netdev[i], nil
}
