package netnsx

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// ErrClosed is returned by a Named namespace used after Close.
var ErrClosed = errors.New("namespace handle is closed")

// Named is a named network namespace this process created, held open with
// one netlink handle that callers share one at a time: what a namespace
// node, a VM node's helper namespace and an emulator's helper namespace
// all need. The handle speaks only the route family: one socket per
// namespace keeps a 2000-node network within the open-file limit.
type Named struct {
	name string
	mu   sync.Mutex
	ns   netns.NsHandle
	nl   *netlink.Handle
}

// CreateNamed creates the namespace, opens it with its netlink handle and
// sets its loopback up. On failure nothing is left behind.
func CreateNamed(name string) (_ *Named, err error) {
	if err := Create(name); err != nil {
		return nil, err
	}
	n := &Named{name: name, ns: -1}
	defer func() {
		if err != nil {
			_ = n.Delete() // best effort: err is what CreateNamed reports
		}
	}()
	if n.ns, err = Open(name); err != nil {
		return nil, err
	}
	if n.nl, err = netlink.NewHandleAt(n.ns, unix.NETLINK_ROUTE); err != nil {
		return nil, fmt.Errorf("%s: netlink: %w", name, err)
	}
	if err := n.Netlink(func(h *netlink.Handle) error {
		lo, err := h.LinkByName("lo")
		if err != nil {
			return err
		}
		return h.LinkSetUp(lo)
	}); err != nil {
		return nil, fmt.Errorf("%s: loopback up: %w", name, err)
	}
	return n, nil
}

// Namespace returns the namespace's name.
func (n *Named) Namespace() string { return n.name }

// NsHandle returns the namespace handle (-1 after Close).
func (n *Named) NsHandle() netns.NsHandle { return n.ns }

// Netlink runs fn with the namespace's netlink handle, one caller at a time.
func (n *Named) Netlink(fn func(h *netlink.Handle) error) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nl == nil {
		return ErrClosed
	}
	return fn(n.nl)
}

// Sysctl writes a sysctl of the namespace (key like "net/ipv4/ip_forward").
func (n *Named) Sysctl(key, value string) error {
	return Do(n.NsHandle(), func() error {
		return os.WriteFile("/proc/sys/"+key, []byte(value), 0o644)
	})
}

// Close frees the netlink and namespace handles; the namespace stays.
func (n *Named) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nl != nil {
		n.nl.Close()
		n.nl = nil
	}
	if n.ns >= 0 {
		_ = n.ns.Close() // a descriptor of our own: nothing to report (Close returns nothing)
		n.ns = -1
	}
}

// Delete closes the handles and removes the namespace.
func (n *Named) Delete() error {
	n.Close()
	return Delete(n.name)
}
