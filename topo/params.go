package topo

import (
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
)

// LinkKinds are the values of a link's kind parameter, in the words the
// errors offer; hymn's registry of link kinds (link.go: linkKinds) builds
// each. veth and sriov are also what --links chooses for every link;
// existing joins two interfaces that exist before the network.
var LinkKinds = []string{"veth", "sriov", "existing"}

// IsLinkKind reports whether v names a link kind: one of LinkKinds, or
// hwpair, CIMininet's name for sriov.
func IsLinkKind(v string) bool {
	v = strings.ToLower(v)
	return v == "hwpair" || slices.Contains(LinkKinds, v)
}

// linkKindWords is LinkKinds as an error offers them: "a, b or c".
func linkKindWords() string {
	return strings.Join(LinkKinds[:len(LinkKinds)-1], ", ") + " or " + LinkKinds[len(LinkKinds)-1]
}

// CheckLinkParams validates topo's own parameters of one link (mtu, kind,
// intfName1/2; ip1/2, mac1/2 are checked by Resolve). The emulation
// parameters (delay=, bw=, emu=, schedules) are the emulator's, checked by
// hymn.New with the positions the loaders recorded (origins.go).
func CheckLinkParams(p Params) error {
	var errs []error
	if v, ok := p["mtu"]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 68 || n > 65535 {
			errs = append(errs, fmt.Errorf("mtu=%q: must be a whole number of bytes from 68 to 65535", v))
		}
	}
	if v, ok := p["kind"]; ok && v != "" && !IsLinkKind(v) {
		errs = append(errs, fmt.Errorf("kind=%q: use %s", v, linkKindWords()))
	}
	for _, k := range []string{"intfName1", "intfName2"} {
		if v, ok := p[k]; ok && v != "" {
			if err := CheckIntfName(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", k, err))
			}
		}
	}
	return errors.Join(errs...)
}

// MTU returns a link's mtu parameter in bytes, 0 when it is unset.
// CheckLinkParams has refused a malformed one, so 0 is also what an
// unchecked bad value gives.
func (p Params) MTU() int {
	n, err := strconv.Atoi(strings.TrimSpace(p["mtu"]))
	if err != nil {
		return 0
	}
	return n
}

// checkNodeParams validates the node parameters topo itself reads (the
// backends check theirs: a VM's in hymn.New). Unknown keys stay
// allowed, as Mininet ignores them.
func checkNodeParams(n *Node) error {
	var errs []error
	bad := func(k, format string, a ...any) {
		errs = append(errs, fmt.Errorf("node %s: %s=%q: %s", n.Name, k, n.Params[k], fmt.Sprintf(format, a...)))
	}
	if v, ok := n.Params["cpu"]; ok {
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil || !validCPUFraction(f) {
			bad("cpu", "must be a fraction in (0, 1], or -1 for no limit")
		}
	}
	if v, ok := n.Params[ParamPlacement]; ok {
		if _, err := ParsePlacement(v); err != nil {
			bad(ParamPlacement, "must be a worker number (0, 1, ...)")
		}
	}
	if v, ok := n.Params["dpid"]; ok {
		if err := checkDPIDValue(v); err != nil {
			bad("dpid", "%v", err)
		}
	}
	if v := strings.TrimSpace(n.Params["defaultRoute"]); v != "" {
		if _, err := checkRoute("default " + v); err != nil {
			bad("defaultRoute", "%v", err)
		}
	}
	if v, ok := n.Params["routes"]; ok {
		for _, r := range strings.Split(v, ";") {
			if strings.TrimSpace(r) == "" {
				continue
			}
			if _, err := checkRoute(r); err != nil {
				bad("routes", "%v", err)
			}
		}
	}
	if v, ok := n.Params["backend"]; ok {
		switch v {
		case "", "netns", "vm":
		default:
			bad("backend", "use netns or vm")
		}
	}
	return errors.Join(errs...)
}

// validCPUFraction accepts Mininet's cpu values: a finite share in (0, 1],
// or -1 (no limit).
func validCPUFraction(f float64) bool {
	return f == -1 || (!math.IsNaN(f) && f > 0 && f <= 1)
}

// ValidCPUFraction reports whether f is a CPU share hymn accepts (--host
// cfs,cpu=F and a node's cpu parameter): finite, in (0, 1], or -1.
func ValidCPUFraction(f float64) bool { return validCPUFraction(f) }

// checkDPIDValue accepts a datapath id as Mininet does: up to 16 hex
// digits, optionally with 0x.
func checkDPIDValue(v string) error {
	h := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(v), "0x"), "0X")
	if h == "" || len(h) > 16 {
		return errors.New("must be 1 to 16 hex digits")
	}
	if _, err := strconv.ParseUint(h, 16, 64); err != nil {
		return errors.New("must be hex digits")
	}
	return nil
}

// parseUnicastMAC accepts a MAC address an interface can have: six bytes,
// not multicast or broadcast (the kernel refuses those), not all zero.
func parseUnicastMAC(s string) (net.HardwareAddr, error) {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return nil, fmt.Errorf("%q is not a MAC address like 00:00:00:00:00:01", clip(s))
	}
	if hw[0]&1 != 0 {
		return nil, fmt.Errorf("%q is a multicast or broadcast address; an interface needs a unicast MAC", s)
	}
	if hw.String() == "00:00:00:00:00:00" {
		return nil, fmt.Errorf("%q: an interface cannot have the all-zero MAC", s)
	}
	return hw, nil
}
