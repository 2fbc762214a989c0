package linkparams

import (
	"fmt"
	"strings"

	"github.com/hymn-net/hymn/topo"
)

// PortsKey is the link parameter that picks how an emulated link's
// forwarder reaches its two ports: emulator=afpacket (the default: hymn's
// own AF_PACKET ports) or emulator=dpdk (DPDK poll-mode ports, for links
// made of SR-IOV VFs). It says nothing about the emulation itself, so it
// is not one of Keys and alone asks for no emulator; --links sriov takes
// the same key network-wide (sriov.Config.Emulator).
const PortsKey = "emulator"

// The values of PortsKey.
const (
	PortsAFPacket = "afpacket"
	PortsDPDK     = "dpdk"
)

// Ports picks the emulator's ports of a link (PortsAFPacket or PortsDPDK),
// overriding the network's --links sriov,emulator=... for that link.
func Ports(kind string) Param { return set(PortsKey, kind) }

// ParsePorts checks a value of PortsKey and returns its canonical
// spelling ("" stays "": not chosen).
func ParsePorts(v string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "":
		return "", nil
	case "afpacket", "af_packet", "af-packet":
		return PortsAFPacket, nil
	case "dpdk":
		return PortsDPDK, nil
	}
	return "", fmt.Errorf("%w: %s=%s: use %s or %s", ErrInvalid, PortsKey, v, PortsAFPacket, PortsDPDK)
}

// PortsOf returns a link's own choice of emulator ports ("" when it has
// none), checked.
func PortsOf(p topo.Params) (string, error) {
	v, ok := p[PortsKey]
	if !ok {
		return "", nil
	}
	if strings.TrimSpace(v) == "" {
		return "", fmt.Errorf("%w: %s= is empty: use %s or %s", ErrInvalid, PortsKey, PortsAFPacket, PortsDPDK)
	}
	return ParsePorts(v)
}
