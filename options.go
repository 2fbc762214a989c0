package hymn

import (
	"fmt"
	"strings"

	"github.com/hymn-net/hymn/sriov"
)

// SwitchKind says what runs a switch (Options.Switch). The zero value is
// SwitchLinuxBridge.
type SwitchKind string

// Switch kinds.
const (
	SwitchLinuxBridge SwitchKind = "lxbr"  // a Linux bridge per switch namespace
	SwitchOVSBridge   SwitchKind = "ovsbr" // Open vSwitch, standalone, daemons per switch namespace
	SwitchOVS         SwitchKind = "ovsk"  // Open vSwitch OpenFlow switches connected to the controllers
	SwitchBPF         SwitchKind = "bpf"   // a MAC-learning BPF program on each port's tc ingress (package bpfswitch), no bridge
)

// String returns the kind's name, as --switch takes it.
func (k SwitchKind) String() string {
	if k == "" {
		return string(SwitchLinuxBridge)
	}
	return string(k)
}

// ParseSwitchKind parses a switch kind name: lxbr (or ""), ovsbr, bpf, auto
// (SwitchAuto: hymn chooses), or
// ovsk (or Mininet's ovs, default and user, all Open vSwitch OpenFlow
// switches here, as mn's --switch takes them).
func ParseSwitchKind(s string) (SwitchKind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "lxbr":
		return SwitchLinuxBridge, nil
	case "ovsbr":
		return SwitchOVSBridge, nil
	case "bpf":
		return SwitchBPF, nil
	case "auto":
		return SwitchAuto, nil
	case "ovsk", "ovs", "default", "user":
		return SwitchOVS, nil
	}
	return "", fmt.Errorf("unknown switch kind %q: use auto, lxbr, ovsbr, bpf or ovsk", s)
}

func (k SwitchKind) valid() bool {
	switch k {
	case "", SwitchLinuxBridge, SwitchOVSBridge, SwitchOVS, SwitchBPF, SwitchAuto:
		return true
	}
	return false
}

// NodeBackend says what runs a host (Options.Nodes, or a node's backend
// parameter). The zero value is BackendNetns.
type NodeBackend string

// Node backends.
const (
	BackendNetns NodeBackend = "netns" // a network namespace
	BackendVM    NodeBackend = "vm"    // a QEMU/KVM virtual machine (TCG without KVM)
)

// String returns the backend's name, as --nodes takes it.
func (b NodeBackend) String() string {
	if b == "" {
		return string(BackendNetns)
	}
	return string(b)
}

// ParseNodeBackend parses a node backend name: netns or vm.
func ParseNodeBackend(s string) (NodeBackend, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "netns":
		return BackendNetns, nil
	case "vm":
		return BackendVM, nil
	}
	return "", fmt.Errorf("unknown node backend %q: use netns or vm", s)
}

// LinkBackend says what a link is made of (Options.Links, or a link's
// kind parameter). The zero value is LinksVeth.
type LinkBackend string

// Link backends.
const (
	LinksVeth  LinkBackend = "veth"  // a veth pair
	LinksSRIOV LinkBackend = "sriov" // a pair of SR-IOV VFs on cabled PF ports, one VLAN per link
)

// String returns the backend's name, as --links takes it.
func (b LinkBackend) String() string {
	if b == "" {
		return string(LinksVeth)
	}
	return string(b)
}

// ParseLinkBackend parses a --links value: "veth", "sriov" (or hwpair,
// CIMininet's word) or "sriov,key=value,..." (keys pairs, vlans, inventory,
// sim, vfs, sysfs, emulator; see sriov.ParseOptions). The SR-IOV settings
// go into Options.SRIOV.
func ParseLinkBackend(spec string) (LinkBackend, sriov.Config, error) {
	word, opts, hasOpts := strings.Cut(spec, ",")
	var cfg sriov.Config
	switch strings.TrimSpace(word) {
	case "", string(LinksVeth), "default":
		if hasOpts {
			return "", cfg, fmt.Errorf("%w: --links %s: veth links take no options", ErrSRIOV, spec)
		}
		return LinksVeth, cfg, nil
	case string(LinksSRIOV), "hwpair":
		cfg, err := sriov.ParseOptions(opts)
		if err != nil {
			return "", cfg, fmt.Errorf("%w: --links %s: %w", ErrSRIOV, spec, err)
		}
		return LinksSRIOV, cfg, nil
	}
	return "", cfg, fmt.Errorf("%w: --links %q: unknown link backend (use veth or sriov)", ErrSRIOV, strings.TrimSpace(word))
}
