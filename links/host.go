package links

import (
	"fmt"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// hostNS is the namespace the process started in: the root end of a NAT
// link, the home of real VF netdevs. It is opened once: /proc/self/ns/net
// names the thread-group leader's namespace, which hymn never moves.
type hostNS struct {
	mu  sync.Mutex
	nl  *netlink.Handle
	ns  netns.NsHandle
	err error
}

var (
	hostOnce sync.Once
	host     hostNS
)

// HostNamespace returns the namespace hymn was started in as a Namespace.
// It stays open for the life of the process.
func HostNamespace() (Namespace, error) {
	hostOnce.Do(func() {
		host.ns, host.err = netns.GetFromPath("/proc/self/ns/net")
		if host.err == nil {
			host.nl, host.err = netlink.NewHandleAt(host.ns)
		}
	})
	if host.err != nil {
		return nil, fmt.Errorf("opening the host network namespace: %w", host.err)
	}
	return &host, nil
}

// Netlink runs fn with the namespace's netlink handle, one caller at a time.
func (h *hostNS) Netlink(fn func(*netlink.Handle) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fn(h.nl)
}

// NsHandle returns the namespace handle.
func (h *hostNS) NsHandle() netns.NsHandle { return h.ns }
