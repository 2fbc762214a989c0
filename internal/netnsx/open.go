package netnsx

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// OpenNamed opens a namespace that exists already with handles of its own,
// for a second owner of one namespace (all Open vSwitch switches of a
// network share theirs). Close frees only these handles; Delete removes
// the namespace for every owner.
func OpenNamed(name string) (*Named, error) {
	ns, err := Open(name)
	if err != nil {
		return nil, err
	}
	nl, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		_ = ns.Close() // best effort: the netlink error is the one to report
		return nil, fmt.Errorf("%s: netlink: %w", name, err)
	}
	return &Named{name: name, ns: ns, nl: nl}, nil
}
