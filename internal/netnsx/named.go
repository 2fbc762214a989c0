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

// Named is a named network namespace this process created or opened, with
// a namespace handle and a netlink handle that callers share one at a
// time: what a namespace node, a VM node's helper namespace and an
// emulator's helper namespace all need.
//
// Descriptors are what bound a network's size on a machine whose hard
// open-file limit is 20 000 (and where root may not raise it), so a Named
// holds as few as it can. Every Named of one namespace in this process
// (the BPF switches sharing the network's switch namespace, the Open
// vSwitch switches sharing theirs) shares one namespace handle and one
// netlink handle. The netlink handle, a socket speaking only the route
// family, is opened on first use and kept in a cache of NetlinkCache
// sockets: the least recently used is closed when the cache is full and
// opened again when next needed (about 20 µs). A network of 10 000
// namespaces holds 10 000 namespace handles and at most NetlinkCache
// sockets, not twice 10 000.
type Named struct {
	name   string
	h      *handles
	mu     sync.Mutex // guards closed
	closed bool
}

// handles are one namespace's descriptors, shared by the Named values on
// it in this process.
type handles struct {
	name string
	mu   sync.Mutex // one netlink user at a time; guards nl and ns
	ns   netns.NsHandle
	nl   *netlink.Handle
	refs int // Named values holding these; guarded by registry.mu
	// cached is nl's place in the netlink cache; guarded by cache.mu,
	// set while nl is open.
	cached *cacheEntry
}

// registry maps a namespace's name to the handles this process holds on
// it, so a second Named of one namespace (OpenNamed) shares them.
var registry = struct {
	mu sync.Mutex
	m  map[string]*handles
}{m: map[string]*handles{}}

// CreateNamed creates the namespace, opens it and sets its loopback up.
// On failure nothing is left behind.
func CreateNamed(name string) (_ *Named, err error) {
	if err := Create(name); err != nil {
		return nil, err
	}
	ns, err := Open(name)
	if err != nil {
		return nil, errors.Join(err, Delete(name))
	}
	n := register(name, ns, true)
	defer func() {
		if err != nil {
			_ = n.Delete() // best effort: err is what CreateNamed reports
		}
	}()
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

// OpenNamed opens a namespace that exists already, for a second owner of
// one namespace (the BPF switches of a network share one, so do its Open
// vSwitch switches). Where this process holds the namespace open already,
// the new Named shares those descriptors. Close frees the handles when
// their last Named closes; Delete removes the namespace for every owner.
func OpenNamed(name string) (*Named, error) {
	registry.mu.Lock()
	if h, ok := registry.m[name]; ok {
		h.refs++
		registry.mu.Unlock()
		return &Named{name: name, h: h}, nil
	}
	registry.mu.Unlock()
	ns, err := Open(name)
	if err != nil {
		return nil, err
	}
	return register(name, ns, false), nil
}

// register makes a Named on a namespace handle just opened. A fresh
// namespace (CreateNamed) replaces whatever the registry held under its
// name (a namespace of that name deleted before); a second opener that
// lost a race to register shares the winner's handles.
func register(name string, ns netns.NsHandle, fresh bool) *Named {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if h, ok := registry.m[name]; ok && !fresh {
		h.refs++
		_ = ns.Close() // ours is a duplicate of h's: nothing to report
		return &Named{name: name, h: h}
	}
	h := &handles{name: name, ns: ns, refs: 1}
	registry.m[name] = h
	return &Named{name: name, h: h}
}

// Namespace returns the namespace's name.
func (n *Named) Namespace() string { return n.name }

// NsHandle returns the namespace handle (-1 after Close). It stays valid
// until this Named is closed.
func (n *Named) NsHandle() netns.NsHandle {
	if n.isClosed() {
		return -1
	}
	return n.h.ns
}

func (n *Named) isClosed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closed
}

// Netlink runs fn with the namespace's netlink handle, one caller at a
// time (among every Named of the namespace). fn must not keep the handle:
// the cache may close it once fn returns.
func (n *Named) Netlink(fn func(h *netlink.Handle) error) error {
	if n.isClosed() {
		return ErrClosed
	}
	h := n.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ns < 0 {
		return ErrClosed
	}
	if h.nl == nil {
		nl, err := netlink.NewHandleAt(h.ns, unix.NETLINK_ROUTE)
		if err != nil {
			return fmt.Errorf("%s: netlink: %w", h.name, err)
		}
		h.nl = nl
	}
	cache.use(h)
	return fn(h.nl)
}

// Sysctl writes a sysctl of the namespace (key like "net/ipv4/ip_forward").
func (n *Named) Sysctl(key, value string) error {
	ns := n.NsHandle()
	if ns < 0 {
		return ErrClosed
	}
	return Do(ns, func() error {
		return os.WriteFile("/proc/sys/"+key, []byte(value), 0o644)
	})
}

// Close gives up this Named's share of the handles, freeing them with the
// last share; the namespace stays.
func (n *Named) Close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	n.mu.Unlock()
	registry.mu.Lock()
	n.h.refs--
	last := n.h.refs == 0
	if last && registry.m[n.name] == n.h {
		delete(registry.m, n.name)
	}
	registry.mu.Unlock()
	if last {
		n.h.close()
	}
}

// close frees the descriptors.
func (h *handles) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.nl != nil {
		cache.drop(h)
		h.nl.Close()
		h.nl = nil
	}
	if h.ns >= 0 {
		_ = h.ns.Close() // a descriptor of our own: nothing to report (Close returns nothing)
		h.ns = -1
	}
}

// Delete closes this Named and removes the namespace. Other Named values
// of it keep their handles (the kernel frees the namespace when the last
// goes), but a later OpenNamed of the name no longer shares them.
func (n *Named) Delete() error {
	registry.mu.Lock()
	if registry.m[n.name] == n.h {
		delete(registry.m, n.name)
	}
	registry.mu.Unlock()
	n.Close()
	return Delete(n.name)
}
