package hymn

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/topo"
	"github.com/vishvananda/netlink"
)

// linkKindExisting is the kind= value of a link between two interfaces
// that exist before the network does.
const linkKindExisting = "existing"

// existingLink joins two interfaces of the host namespace that hymn did
// not make and will not delete: two cabled NIC ports, two VFs that share
// a VLAN (CIMininet's HwPair with available_pairs), a veth pair another
// tool made. In a topology: kind=existing, with intfName1 and intfName2
// naming the interfaces, which keep their names in the nodes.
//
// Build moves each into its node and gives it the planned MAC, MTU and
// address (a VM node's end takes the path a VF's does, links.TakeInterface
// into the namespace linkEnd names, then attach; not tested with VMs);
// Stop and DeleteLink move it back to the host namespace, down, without
// addresses, with the MAC and MTU it had. A link of this kind carries no
// emulator: hymn inserts one by making the link's ends itself.
type existingLink struct {
	host links.Namespace
	ends [2]links.End
	orig [2]hostIntf
	took [2]bool
}

// hostIntf is what an existing interface had before hymn took it.
type hostIntf struct {
	mac net.HardwareAddr
	mtu int
}

func isExistingLink(pl *topo.PlannedLink) bool {
	return strings.EqualFold(pl.Params["kind"], linkKindExisting)
}

func (e *existingLink) create(env linkEnv, l *netLink) (err error) {
	if e.host, err = links.HostNamespace(); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.release())
		}
	}()
	for k, i := range []*topo.Intf{l.plan.Intf1, l.plan.Intf2} {
		if err := e.host.Netlink(func(h *netlink.Handle) error {
			dev, err := h.LinkByName(i.Name)
			if err == nil {
				e.orig[k] = hostIntf{mac: dev.Attrs().HardwareAddr, mtu: dev.Attrs().MTU}
			}
			return err
		}); err != nil {
			return fmt.Errorf("link %s: existing interface %s: %w", l.plan, i.Name, err)
		}
		end := env.linkEnd(l.plan, i)
		if err := links.TakeInterface(e.host, i.Name, end); err != nil {
			return fmt.Errorf("link %s: %w", l.plan, err)
		}
		e.ends[k], e.took[k] = end, true
	}
	return nil
}

func (e *existingLink) waitEnds() []links.End         { return nil }
func (e *existingLink) ready(linkEnv, *netLink) error { return nil }
func (e *existingLink) emulator() *links.EmulatedLink { return nil }
func (e *existingLink) describe(li *LinkInfo)         { li.Kind = linkKindExisting }
func (e *existingLink) stop() error                   { return nil }
func (e *existingLink) delete() error                 { return e.release() }

// release moves the interfaces back to the host namespace as they were.
// Safe to call twice.
func (e *existingLink) release() error {
	var errs []error
	for k := range e.ends {
		if !e.took[k] {
			continue
		}
		e.took[k] = false
		name := e.ends[k].Name
		if err := links.ReturnInterface(e.ends[k].NS, name, e.host, name); err != nil {
			errs = append(errs, err)
			continue
		}
		orig := e.orig[k]
		errs = append(errs, e.host.Netlink(func(h *netlink.Handle) error {
			dev, err := h.LinkByName(name)
			if err != nil {
				return err
			}
			if len(orig.mac) > 0 && !bytes.Equal(dev.Attrs().HardwareAddr, orig.mac) {
				if err := h.LinkSetHardwareAddr(dev, orig.mac); err != nil {
					return fmt.Errorf("restoring %s's MAC %s: %w", name, orig.mac, err)
				}
			}
			if orig.mtu > 0 && dev.Attrs().MTU != orig.mtu {
				if err := h.LinkSetMTU(dev, orig.mtu); err != nil {
					return fmt.Errorf("restoring %s's MTU %d: %w", name, orig.mtu, err)
				}
			}
			return nil
		}))
	}
	return errors.Join(errs...)
}

// checkExistingLinks is the kind's check (linkKinds), before anything is
// built: each existing-interface link added names interfaces that no
// other link of the plan takes, that are in the host namespace, no
// loopback, no port of a bridge or bond, and carry no global address
// (taking one would cut the host off a network it uses); none asks for an
// emulator.
func checkExistingLinks(all, added []*topo.PlannedLink) error {
	var errs []error
	taken := map[string]*topo.PlannedLink{}
	for _, pl := range all {
		if isExistingLink(pl) && !slices.Contains(added, pl) {
			for _, i := range []*topo.Intf{pl.Intf1, pl.Intf2} {
				taken[i.Name] = pl
			}
		}
	}
	var host links.Namespace
	for _, pl := range added {
		if !isExistingLink(pl) {
			continue
		}
		if linkparams.NeedsEmulator(pl.Params) {
			errs = append(errs, pl.ParamsError("kind", fmt.Errorf("kind=existing takes no emulation parameters: hymn inserts an emulator only between ends it makes (use kind=veth)")))
			continue
		}
		if host == nil {
			var err error
			if host, err = links.HostNamespace(); err != nil {
				return err
			}
		}
		for _, i := range []*topo.Intf{pl.Intf1, pl.Intf2} {
			if other, dup := taken[i.Name]; dup {
				errs = append(errs, pl.ParamsError("kind", fmt.Errorf("kind=existing: interface %s is taken by link %s too", i.Name, other)))
				continue
			}
			taken[i.Name] = pl
			if err := checkHostIntf(host, i.Name); err != nil {
				errs = append(errs, pl.ParamsError("kind", fmt.Errorf("kind=existing: %w", err)))
			}
		}
	}
	return errors.Join(errs...)
}

// checkHostIntf checks that an interface of the host namespace may be
// moved into a node.
func checkHostIntf(host links.Namespace, name string) error {
	return host.Netlink(func(h *netlink.Handle) error {
		dev, err := h.LinkByName(name)
		if err != nil {
			return fmt.Errorf("no interface %s in the host namespace (ip link show): %w", name, err)
		}
		a := dev.Attrs()
		switch {
		case a.Flags&net.FlagLoopback != 0:
			return fmt.Errorf("%s is a loopback interface", name)
		case a.MasterIndex != 0:
			return fmt.Errorf("%s is a port of another interface (ip link show %s: master); release it first", name, name)
		}
		addrs, err := h.AddrList(dev, netlink.FAMILY_ALL)
		if err != nil {
			return fmt.Errorf("%s: listing its addresses: %w", name, err)
		}
		for _, ad := range addrs {
			if ad.IP.IsGlobalUnicast() {
				return fmt.Errorf("%s has the host's address %s: hymn would take it from the host; remove the address first", name, ad.IPNet)
			}
		}
		return nil
	})
}
