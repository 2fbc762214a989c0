package links

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/emulator/afpacket"
	"github.com/hymn-net/hymn/internal/netnsx"
	"golang.org/x/sys/unix"
)

// HelperNS is a namespace that holds no node, only the emulator ports of a
// network's emulated links, so the nodes never see them. Its name carries
// the network's run id, so `hymn clean` finds it like a node namespace.
type HelperNS struct{ *netnsx.Named }

// CreateHelperNS creates the named helper namespace. IPv6 is turned off
// inside so the ports send no router solicitations or DAD probes of their
// own into the links they emulate.
func CreateHelperNS(name string) (*HelperNS, error) {
	named, err := netnsx.CreateNamed(name)
	if err != nil {
		return nil, err
	}
	err = netnsx.Do(named.NsHandle(), func() error {
		for _, k := range []string{"default", "all"} {
			// A kernel without IPv6 has no such file; that is fine.
			if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+k+"/disable_ipv6", []byte("1"), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = named.Delete() // best effort: err is the one to report
		return nil, fmt.Errorf("helper namespace %s: %w", name, err)
	}
	return &HelperNS{named}, nil
}

// Name returns the namespace name.
func (h *HelperNS) Name() string { return h.Namespace() }

// EmulatedLink is a link a–b split in two by an emulator:
//
//	a ─veth─ [PortA  helper namespace  PortB] ─veth─ b
//
// a and b keep the names, addresses and namespaces the topology gave them.
type EmulatedLink struct {
	A, B         End
	PortA, PortB string
	Fwd          *emulator.Forwarder

	// Offloads says whether the link carries GSO super-frames and
	// checksum-offload state through the emulator (the ends keep TSO,
	// GSO and checksum offload on) or runs with them off.
	Offloads bool

	helper       *HelperNS
	vethA, vethB *Veth
	ports        []emulator.Port
	release      func() error // after the ports closed (EmulateOnPorts)
	stopOnce     sync.Once
}

// CreateEmulated builds the two veth pairs, opens AF_PACKET ports on the
// helper ends and starts the forwarder with cfg. The ports carry GSO
// super-frames and checksum-offload state (PACKET_VNET_HDR), so every end
// keeps the offloads a plain veth has and TCP runs at kernel speed; where
// the kernel refuses that, the ends get checksum offload, TSO and GSO
// turned off instead (Offloads false). portA and portB name the helper
// ends (unique inside the helper namespace, at most 15 bytes). On failure
// everything made so far is removed.
func CreateEmulated(helper *HelperNS, a, b End, portA, portB string, cfg emulator.ForwarderConfig) (_ *EmulatedLink, err error) {
	l := &EmulatedLink{A: a, B: b, PortA: portA, PortB: portB, helper: helper}
	defer func() {
		if err != nil {
			// Best effort: err is the one to report.
			_ = l.Stop()
			_ = l.Delete()
		}
	}()
	pa := End{NS: helper, Name: portA, MTU: a.MTU}
	pb := End{NS: helper, Name: portB, MTU: b.MTU}
	if l.vethA, err = CreateVeth(a, pa); err != nil {
		return nil, err
	}
	if l.vethB, err = CreateVeth(b, pb); err != nil {
		return nil, err
	}
	for _, e := range [][2]End{{a, pa}, {b, pb}} {
		if e[0].Complete {
			// The kernel fills in checksums and cuts super-frames for
			// a port without the offloads (afpacket's txBypass), so the
			// far end keeps TSO and what reaches this end is complete.
			if err := DisableOffloads(e[1].NS, e[1].Name); err != nil {
				return nil, err
			}
		}
	}
	if !NoOffloads {
		err := l.start(a.MTU, cfg, true)
		if err == nil {
			return l, nil
		}
		l.closePorts()
	}
	for _, e := range []End{a, b, pa, pb} {
		if err := DisableOffloads(e.NS, e.Name); err != nil {
			return nil, err
		}
	}
	if err := l.start(a.MTU, cfg, false); err != nil {
		return nil, err
	}
	return l, nil
}

// NoOffloads makes CreateEmulated run every link with offloads off, as
// before ports carried them (for measurements side by side).
var NoOffloads = os.Getenv("HYMN_EMU_OFFLOADS") == "off"

func (l *EmulatedLink) closePorts() {
	for _, p := range l.ports {
		_ = p.Close() // the ports of a failed start, before a start without offloads
	}
	l.ports = nil
}

// EmulateBetween starts an emulator between two interfaces that already
// sit, up, in the helper namespace: the emulator's own VFs of an SR-IOV
// link, each the far end of a VF pair whose near end is in a node.
func EmulateBetween(helper *HelperNS, portA, portB string, mtu int, cfg emulator.ForwarderConfig) (*EmulatedLink, error) {
	l := &EmulatedLink{A: End{NS: helper, Name: portA}, B: End{NS: helper, Name: portB}, PortA: portA, PortB: portB, helper: helper}
	for _, name := range []string{portA, portB} {
		// GRO on a receiving port would hand the forwarder merged
		// segments larger than the far link's MTU.
		if err := DisableOffloads(helper, name); err != nil {
			return nil, err
		}
	}
	if err := l.start(mtu, cfg, false); err != nil {
		_ = l.Stop() // best effort: err is the one to report
		return nil, err
	}
	return l, nil
}

// EmulateOnPorts starts an emulator between two ports the caller opened
// for the helper ends portA and portB (DPDK ports on the far VFs of an
// SR-IOV link). The link owns them from then on, also when it fails:
// Stop stops the forwarder, closes both ports and then calls release
// (nil for none), which removes what the ports were opened on.
func EmulateOnPorts(helper *HelperNS, portA, portB string, pa, pb emulator.Port, mtu int, cfg emulator.ForwarderConfig, release func() error) (*EmulatedLink, error) {
	l := &EmulatedLink{A: End{NS: helper, Name: portA}, B: End{NS: helper, Name: portB}, PortA: portA, PortB: portB,
		helper: helper, ports: []emulator.Port{pa, pb}, release: release}
	if cfg.MTU == 0 {
		cfg.MTU = mtu
	}
	if err := l.startForwarder(cfg); err != nil {
		return nil, errors.Join(err, l.Stop())
	}
	return l, nil
}

// start opens AF_PACKET ports on the two helper ends and starts the
// forwarder between them.
func (l *EmulatedLink) start(mtu int, cfg emulator.ForwarderConfig, offloads bool) error {
	var mtus []int
	for _, name := range []string{l.PortA, l.PortB} {
		p, err := afpacket.OpenIn(l.helper.NsHandle(), name, afpacket.Options{MTU: mtu, Offloads: offloads})
		if err != nil {
			return err
		}
		l.ports = append(l.ports, p)
		mtus = append(mtus, p.MTU())
	}
	l.Offloads = offloads
	if cfg.MTU == 0 {
		// Frame buffers and max-frame follow the link's MTU, so jumbo
		// frames pass whole.
		cfg.MTU = max(mtu, mtus[0], mtus[1])
	}
	return l.startForwarder(cfg)
}

func (l *EmulatedLink) startForwarder(cfg emulator.ForwarderConfig) error {
	var err error
	if l.Fwd, err = emulator.NewForwarder(l.ports[0], l.ports[1], cfg); err != nil {
		return fmt.Errorf("emulated link %s<->%s: %w", l.A.Name, l.B.Name, err)
	}
	l.Fwd.Start()
	return nil
}

// Stop stops the forwarder and closes its ports; the interfaces stay until
// their namespaces go (or Delete).
func (l *EmulatedLink) Stop() error {
	var errs []error
	l.stopOnce.Do(func() {
		if l.Fwd != nil {
			l.Fwd.Stop()
		}
		for _, p := range l.ports {
			errs = append(errs, p.Close())
		}
		if l.release != nil {
			errs = append(errs, l.release())
		}
	})
	return errors.Join(errs...)
}

// Delete removes both veth pairs.
func (l *EmulatedLink) Delete() error {
	var errs []error
	for _, v := range []*Veth{l.vethA, l.vethB} {
		if v != nil {
			errs = append(errs, v.Delete())
		}
	}
	return errors.Join(errs...)
}

// Legacy ethtool commands: each flips one offload and needs no string set
// lookup, which the generic ETHTOOL_SFEATURES would.
const (
	ethtoolSTXCSUM = 0x17
	ethtoolSSG     = 0x19
	ethtoolSTSO    = 0x1f
	ethtoolSGSO    = 0x24
	ethtoolSGRO    = 0x2c
)

type ethtoolValue struct {
	cmd, data uint32
}

type ifreqPtr struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [16]byte
}

// DisableOffloads turns off TX checksum offload, scatter-gather, TSO, GSO
// and GRO on an interface, as `ethtool -K IF tx off sg off tso off gso off
// gro off` does. A frame that crosses a user-space forwarder must be
// complete on the wire: with offloads on, the kernel hands AF_PACKET
// frames whose checksums are left for a NIC to fill in, and TCP segments
// of up to 64 KiB.
func DisableOffloads(ns Namespace, name string) error {
	if len(name) >= unix.IFNAMSIZ {
		return fmt.Errorf("%s: interface name too long", name)
	}
	err := netnsx.Do(ns.NsHandle(), func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer func() { _ = unix.Close(fd) }() // an ioctl socket: nothing to report
		for _, cmd := range []uint32{ethtoolSTXCSUM, ethtoolSSG, ethtoolSTSO, ethtoolSGSO, ethtoolSGRO} {
			v := &ethtoolValue{cmd: cmd}
			ifr := &ifreqPtr{data: unsafe.Pointer(v)}
			copy(ifr.name[:], name)
			_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(ifr)))
			if e != 0 && e != unix.EOPNOTSUPP {
				return fmt.Errorf("ethtool command %#x: %w", cmd, e)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: turning offloads off: %w", name, err)
	}
	return nil
}
