package nodes

import (
	"context"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// GuestNode is a node whose interfaces live inside a guest (a VM) rather
// than in a namespace. It still owns a helper namespace: the network creates
// each link end there under its topology name (h1-eth0), exactly as for a
// namespace node, and then calls AttachIntf, which joins that end to the
// guest (a tap hot-plugged into the VM, say) and gives the guest's
// interface the same name and the address. Addresses are therefore never
// put on the helper namespace's end.
type GuestNode interface {
	Node
	// Netlink and NsHandle reach the helper namespace (links.Namespace).
	Netlink(fn func(h *netlink.Handle) error) error
	NsHandle() netns.NsHandle
	// AttachIntf brings the helper-namespace end named name into the guest.
	AttachIntf(ctx context.Context, name string, mac net.HardwareAddr, ip netip.Prefix) error
	// SetIntfUp brings the guest's interface up or down.
	SetIntfUp(ctx context.Context, name string, up bool) error
	// DetachIntf unplugs an attached interface from the guest, for a
	// link removed while the network runs.
	DetachIntf(ctx context.Context, name string) error
}
