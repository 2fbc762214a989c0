package hymn

import (
	"fmt"

	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/topo"
)

// vethLink is a plain veth pair, its ends created directly in their
// namespaces.
type vethLink struct {
	veth *links.Veth
}

func (v *vethLink) create(n *Network, l *netLink) error {
	n.debugLink(l.plan)
	veth, err := links.CreateVeth(n.linkEnd(l.plan, l.plan.Intf1), n.linkEnd(l.plan, l.plan.Intf2))
	if err != nil {
		return err
	}
	v.veth = veth
	if n.usesOVS() && (n.plan.Node(l.plan.Intf1.Node).IsSwitch() || n.plan.Node(l.plan.Intf2.Node).IsSwitch()) {
		// Open vSwitch's userspace datapath forwards frames as they are:
		// checksums must be complete when they leave the senders.
		for _, i := range []*topo.Intf{l.plan.Intf1, l.plan.Intf2} {
			if err := links.DisableOffloads(n.nodes[i.Node], i.Name); err != nil {
				return fmt.Errorf("link %s: %w", l.plan, err)
			}
		}
	}
	return nil
}

func (v *vethLink) waitEnds() []links.End          { return nil }
func (v *vethLink) ready(*Network, *netLink) error { return nil }
func (v *vethLink) emulator() *links.EmulatedLink  { return nil }
func (v *vethLink) stop() error                    { return nil }
func (v *vethLink) release() error                 { return nil }

// Links are not deleted one by one at teardown: deleting a veth waits for
// an RCU grace period under the RTNL lock, while deleting a namespace
// removes all its interfaces in one batch. delete is for a link removed
// alone.
func (v *vethLink) delete() error {
	if v.veth == nil {
		return nil
	}
	err := v.veth.Delete()
	v.veth = nil
	return err
}
