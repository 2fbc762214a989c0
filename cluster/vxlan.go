package cluster

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/links"
	"github.com/vishvananda/netlink"
)

// VXLANEnd says how to realise one side of a cut link.
type VXLANEnd struct {
	// Underlay is where the tunnel's UDP socket lives: the worker's own
	// namespace, whose address the peer sends to.
	Underlay links.Namespace
	// Local is this worker's address: the tunnel's source, which the
	// peer's filter expects, and the only destination this side's filter
	// lets the tunnel's frames arrive at. Invalid: the kernel's choice
	// (tests of the device alone).
	Local  netip.Addr
	Remote netip.Addr // the peer worker's address
	Port   int        // UDP port
	VNI    int
	// Alias marks the device for hymn clean (owner.LinkAlias of the run)
	// while it sits in the underlay, before it reaches its namespace.
	Alias string
	// End is the interface the node sees: its namespace, planned name,
	// MAC, address and MTU (0: 1500).
	End links.End
}

// innerMTU is the MTU the node's interface gets.
func (v VXLANEnd) innerMTU() int {
	if v.End.MTU > 0 {
		return v.End.MTU
	}
	return 1500
}

// overhead is what the tunnel adds to each inner frame.
func (v VXLANEnd) overhead() int {
	if v.Remote.Is6() && !v.Remote.Is4In6() {
		return VXLANOverhead + 20
	}
	return VXLANOverhead
}

// CheckUnderlay checks that the route to the peer carries the inner MTU
// plus the tunnel's overhead, so a full-size inner frame is never
// fragmented or dropped on the way. It returns the underlay device.
func (v VXLANEnd) CheckUnderlay() (string, error) {
	if !v.Remote.IsValid() || v.Remote.IsUnspecified() || v.Remote.IsMulticast() {
		return "", fmt.Errorf("peer address %v is not a unicast address", v.Remote)
	}
	var dev string
	var mtu int
	err := v.Underlay.Netlink(func(h *netlink.Handle) error {
		routes, err := h.RouteGet(v.Remote.AsSlice())
		if err != nil {
			return fmt.Errorf("no route to peer %s: %w", v.Remote, err)
		}
		if len(routes) == 0 {
			return fmt.Errorf("no route to peer %s", v.Remote)
		}
		l, err := h.LinkByIndex(routes[0].LinkIndex)
		if err != nil {
			return fmt.Errorf("route to peer %s: device %d: %w", v.Remote, routes[0].LinkIndex, err)
		}
		dev, mtu = l.Attrs().Name, l.Attrs().MTU
		return nil
	})
	if err != nil {
		return "", err
	}
	if need := v.innerMTU() + v.overhead(); mtu < need {
		return dev, fmt.Errorf("the underlay %s toward peer %s has MTU %d; an inner MTU of %d needs %d (%d bytes of VXLAN); raise the underlay's MTU or set mtu=%d on the link",
			dev, v.Remote, mtu, v.innerMTU(), need, v.overhead(), mtu-v.overhead())
	}
	return dev, nil
}

// CreateVXLAN creates the tunnel device in the underlay (so its socket
// stays there), moves it into End's namespace under End's name, gives it
// End's MAC, address and MTU and brings it up. On failure nothing is left.
func CreateVXLAN(v VXLANEnd) error {
	if v.VNI < 1 || v.VNI > MaxVNI {
		return fmt.Errorf("VNI %d is outside 1-%d", v.VNI, MaxVNI)
	}
	if v.Port < 1 || v.Port > 65535 {
		return fmt.Errorf("UDP port %d is outside 1-65535", v.Port)
	}
	tmp := "hvx" + strconv.Itoa(v.VNI)
	dev := &netlink.Vxlan{
		LinkAttrs: netlink.LinkAttrs{Name: tmp, MTU: v.innerMTU(), Alias: v.Alias},
		VxlanId:   v.VNI,
		Group:     net.IP(v.Remote.AsSlice()),
		Port:      v.Port,
		// Point to point: everything goes to the one remote; learning
		// would only fill a table with the far side's MACs.
		Learning: false,
	}
	if v.Local.IsValid() {
		dev.SrcAddr = net.IP(v.Local.AsSlice())
	}
	err := v.Underlay.Netlink(func(h *netlink.Handle) error {
		if err := h.LinkAdd(dev); err != nil {
			return fmt.Errorf("creating VXLAN %s (VNI %d to %s:%d): %w", tmp, v.VNI, v.Remote, v.Port, err)
		}
		l, err := h.LinkByName(tmp)
		if err == nil {
			err = h.LinkSetNsFd(l, int(v.End.NS.NsHandle()))
		}
		if err != nil {
			// The deletes in this function are best effort beside the
			// error returned.
			if l != nil {
				_ = h.LinkDel(l)
			}
			return fmt.Errorf("moving VXLAN %s into the node's namespace: %w", tmp, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = v.End.NS.Netlink(func(h *netlink.Handle) error {
		l, err := h.LinkByName(tmp)
		if err != nil {
			return err
		}
		if err := h.LinkSetName(l, v.End.Name); err != nil {
			_ = h.LinkDel(l)
			return fmt.Errorf("renaming VXLAN %s to %s: %w", tmp, v.End.Name, err)
		}
		fail := func(what string, err error) error {
			_ = h.LinkDel(l)
			return fmt.Errorf("VXLAN %s: %s: %w", v.End.Name, what, err)
		}
		if v.End.MAC != nil {
			if err := h.LinkSetHardwareAddr(l, v.End.MAC); err != nil {
				return fail("setting MAC "+v.End.MAC.String(), err)
			}
		}
		if v.End.IP.IsValid() {
			ipn := &net.IPNet{IP: v.End.IP.Addr().AsSlice(), Mask: net.CIDRMask(v.End.IP.Bits(), v.End.IP.Addr().BitLen())}
			if err := h.AddrAdd(l, &netlink.Addr{IPNet: ipn}); err != nil {
				return fail("adding address "+v.End.IP.String(), err)
			}
		}
		if err := h.LinkSetUp(l); err != nil {
			return fail("setting up", err)
		}
		return nil
	})
	if err != nil {
		// The device may still be in the node's namespace under its
		// temporary name; DeleteIn finds either name.
		_ = DeleteIn(v.End.NS, tmp)
		return err
	}
	return nil
}

// DeleteIn removes an interface from a namespace; one already gone is not
// an error.
func DeleteIn(ns links.Namespace, name string) error {
	return ns.Netlink(func(h *netlink.Handle) error {
		l, err := h.LinkByName(name)
		if err != nil {
			var nf netlink.LinkNotFoundError
			if errors.As(err, &nf) {
				return nil
			}
			return err
		}
		return h.LinkDel(l)
	})
}

// Counters are an interface's kernel counters.
type Counters struct {
	RxPackets uint64 `json:"rx_packets"`
	TxPackets uint64 `json:"tx_packets"`
	RxBytes   uint64 `json:"rx_bytes"`
	TxBytes   uint64 `json:"tx_bytes"`
	RxDropped uint64 `json:"rx_dropped"`
	TxDropped uint64 `json:"tx_dropped"`
	TxErrors  uint64 `json:"tx_errors"`
}

// ReadCounters reads an interface's counters.
func ReadCounters(ns links.Namespace, name string) (Counters, error) {
	var c Counters
	err := ns.Netlink(func(h *netlink.Handle) error {
		l, err := h.LinkByName(name)
		if err != nil {
			return err
		}
		if s := l.Attrs().Statistics; s != nil {
			c = Counters{s.RxPackets, s.TxPackets, s.RxBytes, s.TxBytes, s.RxDropped, s.TxDropped, s.TxErrors}
		}
		return nil
	})
	return c, err
}

// emulatedVXLAN is the emulated form of a cut link's side:
//
//	node ─veth─ [xNa  helper  xNb=VXLAN] ─ underlay ─ peer
//
// the emulator applies this side's sending direction (node to tunnel);
// what arrives from the tunnel (the peer already emulated it) goes
// straight to the node by an XDP redirect, or through the forwarder
// untouched where XDP is missing.
type emulatedVXLAN struct {
	veth     *links.Veth
	el       *links.EmulatedLink
	inKernel bool // the tunnel's frames bypass the forwarder
}

func createEmulatedVXLAN(helper *links.HelperNS, idx int, v VXLANEnd, send, pass emulator.Config, attach func() error) (_ *emulatedVXLAN, err error) {
	portA, portB := fmt.Sprintf("x%da", idx), fmt.Sprintf("x%db", idx)
	e := &emulatedVXLAN{}
	defer func() {
		if err != nil {
			_ = e.delete(helper, portB) // best effort: the create error is returned
		}
	}()
	mtu := v.innerMTU()
	if e.veth, err = links.CreateVeth(v.End, links.End{NS: helper, Name: portA, MTU: v.End.MTU}); err != nil {
		return nil, err
	}
	// The ports run without offloads (EmulateBetween), so the node's
	// end must not hand them GSO super-frames either.
	if err := links.DisableOffloads(v.End.NS, v.End.Name); err != nil {
		return nil, err
	}
	if err := attach(); err != nil {
		return nil, err
	}
	tunnel := v
	tunnel.End = links.End{NS: helper, Name: portB, MTU: v.End.MTU}
	if err := CreateVXLAN(tunnel); err != nil {
		return nil, err
	}
	fc := emulator.ForwarderConfig{AtoB: send, BtoA: pass, MTU: mtu}
	if e.el, err = links.EmulateBetween(helper, portA, portB, mtu, fc); err != nil {
		return nil, err
	}
	// What arrives from the tunnel goes to the node in the kernel: the
	// forwarder would pass it untouched anyway, at the price of a wake-up
	// per frame (about 50 µs on a VM, 1 % of a 5 ms link). Where XDP is
	// missing, the forwarder does it.
	e.inKernel = links.RedirectXDP(helper, portB, portA) == nil
	return e, nil
}

func (e *emulatedVXLAN) delete(helper *links.HelperNS, portB string) error {
	var errs []error
	if e.el != nil {
		errs = append(errs, e.el.Stop())
	}
	if e.veth != nil {
		errs = append(errs, e.veth.Delete())
	}
	errs = append(errs, DeleteIn(helper, portB))
	return errors.Join(errs...)
}
