package links

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Namespace is where one end of a link lives: a netlink handle (used
// serially) and the namespace handle to move an interface into.
type Namespace interface {
	Netlink(fn func(h *netlink.Handle) error) error
	NsHandle() netns.NsHandle
}

// End describes one interface of a link.
type End struct {
	NS   Namespace
	Name string
	MAC  net.HardwareAddr // nil: the kernel's random, locally administered MAC
	IP   netip.Prefix     // invalid: no address
	MTU  int              // 0: the default
	// Complete says that frames arriving at the end must be complete:
	// checksums filled in, none larger than the MTU. An end that is a
	// port of Open vSwitch's userspace datapath needs it: ovs-vswitchd
	// reads its ports through packet sockets without offload state and
	// forwards a frame as it is, so a checksum a sender left for the NIC
	// stays unfilled all the way to the receiver (which drops it) and a
	// GSO super-frame does not fit its buffers. CreateEmulated honours it
	// (the emulator's port facing the end gets its offloads off, and the
	// kernel completes what the emulator sends into it); a plain veth's
	// caller turns the offloads of both ends off.
	Complete bool
	// UpLater says that the caller sets the end up itself: a switch port,
	// which its switch sets up once it is a port (package nodes). A
	// plain veth then leaves such an end without an address as the kernel
	// made it (down, with the pair's MTU), which saves two netlink round
	// trips per port: a 2000-node build has 3000 such ends.
	UpLater bool
}

// Veth is a created veth pair.
type Veth struct {
	A, B End
}

// CreateVeth creates the pair with end A in A's namespace and end B placed
// straight into B's, configures both ends and brings them up. On failure
// the pair is removed.
func CreateVeth(a, b End) (*Veth, error) {
	// End A is made up (IFF_UP in the request) with its MAC and MTU, and
	// LinkAdd learns its index: only its address is left to set, without
	// looking it up again. Each netlink round trip here is one more wait
	// for the RTNL lock, and a 2000-node build makes 2000 pairs.
	v := &netlink.Veth{
		LinkAttrs:        netlink.LinkAttrs{Name: a.Name, HardwareAddr: a.MAC, MTU: a.MTU, Flags: net.FlagUp},
		PeerName:         b.Name,
		PeerHardwareAddr: b.MAC,
		PeerNamespace:    netlink.NsFd(int(b.NS.NsHandle())),
	}
	if err := a.NS.Netlink(func(h *netlink.Handle) error { return h.LinkAdd(v) }); err != nil {
		return nil, fmt.Errorf("creating veth %s<->%s: %w", a.Name, b.Name, err)
	}
	pair := &Veth{A: a, B: b}
	for i, e := range []End{a, b} {
		index := 0
		if i == 0 {
			index = v.Attrs().Index // 0 if LinkAdd could not learn it: then as for B
		} else if e.UpLater && !e.IP.IsValid() && (e.MTU == 0 || e.MTU == a.MTU) {
			continue // made with A's MTU (the request's MTU is the peer's too)
		}
		if err := configure(e, index); err != nil {
			_ = pair.Delete() // best effort: err is the one to report
			return nil, fmt.Errorf("veth %s<->%s: %w", a.Name, b.Name, err)
		}
	}
	return pair, nil
}

// configure gives an end its MTU and address and sets it up; an end with a
// known index (end A, made up with its MTU) only gets its address.
func configure(e End, index int) error {
	return e.NS.Netlink(func(h *netlink.Handle) error {
		if index > 0 {
			if !e.IP.IsValid() {
				return nil
			}
			link := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: index, Name: e.Name}}
			if err := h.AddrAdd(link, &netlink.Addr{IPNet: prefixToIPNet(e.IP)}); err != nil {
				return fmt.Errorf("%s: adding address %s: %w", e.Name, e.IP, err)
			}
			return nil
		}
		link, err := h.LinkByName(e.Name)
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name, err)
		}
		if e.MTU > 0 && link.Attrs().MTU != e.MTU {
			if err := h.LinkSetMTU(link, e.MTU); err != nil {
				return fmt.Errorf("%s: setting MTU %d: %w", e.Name, e.MTU, err)
			}
		}
		if e.IP.IsValid() {
			addr := &netlink.Addr{IPNet: prefixToIPNet(e.IP)}
			if err := h.AddrAdd(link, addr); err != nil {
				return fmt.Errorf("%s: adding address %s: %w", e.Name, e.IP, err)
			}
		}
		if err := h.LinkSetUp(link); err != nil {
			return fmt.Errorf("%s: setting up: %w", e.Name, err)
		}
		return nil
	})
}

// Delete removes the pair (deleting one end removes both). An end that is
// already gone is not an error.
func (v *Veth) Delete() error {
	err := v.A.NS.Netlink(func(h *netlink.Handle) error {
		link, err := h.LinkByName(v.A.Name)
		if err != nil {
			var notFound netlink.LinkNotFoundError
			if errors.As(err, &notFound) {
				return nil
			}
			return err
		}
		return h.LinkDel(link)
	})
	if err != nil {
		return fmt.Errorf("deleting veth %s<->%s: %w", v.A.Name, v.B.Name, err)
	}
	return nil
}

// SetUp brings one interface up or down.
func SetUp(ns Namespace, name string, up bool) error {
	return ns.Netlink(func(h *netlink.Handle) error {
		link, err := h.LinkByName(name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if up {
			err = h.LinkSetUp(link)
		} else {
			err = h.LinkSetDown(link)
		}
		if err != nil {
			return fmt.Errorf("%s: setting %s: %w", name, map[bool]string{true: "up", false: "down"}[up], err)
		}
		return nil
	})
}

// WaitOperUp waits until the interface is operationally up. The kernel
// turns the carrier on asynchronously (its linkwatch work attaches the real
// qdisc); until then the device drops what it is given, so a test that
// pings right after a build would lose its first packets.
func WaitOperUp(ctx context.Context, ns Namespace, name string) error {
	return WaitOper(ctx, ns, name, true)
}

// WaitOper waits until the interface is operationally up (up true) or
// anything but up (up false: down, lower layer down, not present...).
func WaitOper(ctx context.Context, ns Namespace, name string, up bool) error {
	for {
		var state netlink.LinkOperState
		err := ns.Netlink(func(h *netlink.Handle) error {
			link, err := h.LinkByName(name)
			if err == nil {
				state = link.Attrs().OperState
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if (state == netlink.OperUp) == up {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s is still %s: %w", name, state, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Status returns "OK" if the interface exists in the namespace and
// "MISSING" otherwise, as Mininet's links command shows it.
func Status(ns Namespace, name string) string {
	err := ns.Netlink(func(h *netlink.Handle) error {
		_, err := h.LinkByName(name)
		return err
	})
	if err != nil {
		return "MISSING"
	}
	return "OK"
}

// IsUp reports whether the interface is administratively up.
func IsUp(ns Namespace, name string) bool {
	up := false
	// A namespace or interface that is not there (or a closed handle) is
	// not up: the error says no more than up's false.
	_ = ns.Netlink(func(h *netlink.Handle) error {
		link, err := h.LinkByName(name)
		if err == nil {
			up = link.Attrs().Flags&net.FlagUp != 0
		}
		return err
	})
	return up
}

func prefixToIPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
