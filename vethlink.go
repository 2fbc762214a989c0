package hymn

import (
	"fmt"

	"github.com/hymn-net/hymn/links"
)

// vethLink is a plain veth pair, its ends created directly in their
// namespaces.
type vethLink struct {
	veth *links.Veth
}

func (v *vethLink) create(env linkEnv, l *netLink) error {
	env.debugLink(l.plan)
	a, b := env.linkEnd(l.plan, l.plan.Intf1), env.linkEnd(l.plan, l.plan.Intf2)
	veth, err := links.CreateVeth(a, b)
	if err != nil {
		return err
	}
	v.veth = veth
	if a.Complete || b.Complete {
		// Open vSwitch's userspace datapath forwards frames as they are:
		// checksums must be complete when they leave the senders.
		for _, e := range []links.End{a, b} {
			if err := links.DisableOffloads(e.NS, e.Name); err != nil {
				return fmt.Errorf("link %s: %w", l.plan, err)
			}
		}
	}
	return nil
}

func (v *vethLink) waitEnds() []links.End         { return nil }
func (v *vethLink) ready(linkEnv, *netLink) error { return nil }
func (v *vethLink) emulator() *links.EmulatedLink { return nil }
func (v *vethLink) describe(li *LinkInfo)         { li.Kind = "veth" }
func (v *vethLink) stop() error                   { return nil }
func (v *vethLink) release() error                { return nil }

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
