package links

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
)

// TakeInterface moves the existing interface named netdev from home into
// end.NS, renames it to end.Name and configures it like a veth end: MAC
// (if given), MTU, address, up. On failure it goes back home under its own
// name. SR-IOV's VFs and the existing-interface link kind move so.
func TakeInterface(home Namespace, netdev string, end End) error {
	err := home.Netlink(func(h *netlink.Handle) error {
		l, err := h.LinkByName(netdev)
		if err != nil {
			return err
		}
		// A netdev must be down to be renamed, and its old addresses would
		// follow it into the node.
		if err := h.LinkSetDown(l); err != nil {
			return err
		}
		return h.LinkSetNsFd(l, int(end.NS.NsHandle()))
	})
	if err != nil {
		return fmt.Errorf("moving %s into the namespace of %s: %w", netdev, end.Name, err)
	}
	err = end.NS.Netlink(func(h *netlink.Handle) error {
		l, err := h.LinkByName(netdev)
		if err != nil {
			return err
		}
		if err := h.LinkSetName(l, end.Name); err != nil {
			return fmt.Errorf("renaming to %s: %w", end.Name, err)
		}
		if len(end.MAC) > 0 {
			if err := h.LinkSetHardwareAddr(l, end.MAC); err != nil {
				return fmt.Errorf("MAC %s: %w", end.MAC, err)
			}
		}
		if end.MTU > 0 && l.Attrs().MTU != end.MTU {
			if err := h.LinkSetMTU(l, end.MTU); err != nil {
				return fmt.Errorf("MTU %d: %w", end.MTU, err)
			}
		}
		if end.IP.IsValid() {
			ipnet := &net.IPNet{IP: end.IP.Addr().AsSlice(), Mask: net.CIDRMask(end.IP.Bits(), end.IP.Addr().BitLen())}
			if err := h.AddrAdd(l, &netlink.Addr{IPNet: ipnet}); err != nil {
				return fmt.Errorf("address %s: %w", end.IP, err)
			}
		}
		return h.LinkSetUp(l)
	})
	if err != nil {
		err = fmt.Errorf("%s as %s: %w", netdev, end.Name, err)
		return errors.Join(err, ReturnInterface(end.NS, end.Name, home, netdev))
	}
	return nil
}

// ReturnInterface moves an interface that TakeInterface took (now called
// name in ns) back home under its original name, down and without
// addresses. One that is not there (its namespace went first) is not an
// error.
func ReturnInterface(ns Namespace, name string, home Namespace, netdev string) error {
	err := ns.Netlink(func(h *netlink.Handle) error {
		l, err := h.LinkByName(name)
		if err != nil {
			l, err = h.LinkByName(netdev)
		}
		if err != nil {
			var nf netlink.LinkNotFoundError
			if errors.As(err, &nf) {
				return nil
			}
			return err
		}
		if err := h.LinkSetDown(l); err != nil {
			return err
		}
		addrs, _ := h.AddrList(l, netlink.FAMILY_ALL)
		// Best effort, as the listing above: an address left on a VF
		// that is going home does not stop it from being used again.
		for _, a := range addrs {
			_ = h.AddrDel(l, &a)
		}
		if l.Attrs().Name != netdev {
			if err := h.LinkSetName(l, netdev); err != nil {
				return fmt.Errorf("renaming back to %s: %w", netdev, err)
			}
		}
		return h.LinkSetNsFd(l, int(home.NsHandle()))
	})
	if err != nil {
		return fmt.Errorf("returning %s (%s) home: %w", netdev, name, err)
	}
	return nil
}
