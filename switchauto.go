package hymn

import (
	"fmt"

	"github.com/hymn-net/hymn/bpfswitch"
	"github.com/hymn-net/hymn/topo"
)

// SwitchAuto asks New to choose the switch kind for the topology: the BPF
// switch (SwitchBPF) where it serves, Linux bridges (SwitchLinuxBridge)
// elsewhere. It is the hymn command's default (mn keeps Mininet's).
//
// Why: a Linux bridge is fast to build but slow to free (br_dev_uninit's
// rcu_barrier, about 20 ms per bridge, one after another under the RTNL
// lock), so linear,100 built and torn down with bridges keeps the kernel
// busy for seconds after hymn has exited; BPF switches free at once. A BPF
// switch has no spanning tree, so a topology that needs one (a torus, a
// file or option asking for STP) or that has a loop among its switches,
// gets bridges, as Mininet would build it.
const SwitchAuto SwitchKind = "auto"

// chooseSwitch replaces SwitchAuto by the kind that serves the plan and
// records why, for Build's "*** Switches:" line (switchNote).
func (n *Network) chooseSwitch() {
	if n.opts.Switch != SwitchAuto {
		return
	}
	kind, why := autoSwitch(n.Plan(), n.stp)
	n.opts.Switch = kind
	if kind == SwitchBPF {
		n.switchNote = fmt.Sprintf("bpf (hymn's default for %s: eBPF switches, freed at once at teardown; --switch lxbr for Linux bridges)", why)
		return
	}
	n.switchNote = fmt.Sprintf("lxbr (hymn's default here: %s; --switch to choose another)", why)
}

// autoSwitch decides SwitchAuto for a plan: stp reports whether a switch
// runs STP. The reason is a phrase for the build log.
func autoSwitch(plan *topo.Plan, stp func(*topo.PlannedNode) bool) (SwitchKind, string) {
	switches := plan.Switches()
	if len(switches) == 0 {
		return SwitchBPF, "a topology without switches"
	}
	for _, p := range switches {
		if stp(p) {
			return SwitchLinuxBridge, fmt.Sprintf("switch %s runs STP, which eBPF switches lack", p.Name)
		}
		if truthy(p.Params["vlan_filtering"]) {
			return SwitchLinuxBridge, fmt.Sprintf("switch %s asks for VLAN filtering", p.Name)
		}
		if len(p.Intfs) > bpfswitch.MaxPorts {
			return SwitchLinuxBridge, fmt.Sprintf("switch %s has %d ports, more than a BPF switch takes (%d)", p.Name, len(p.Intfs), bpfswitch.MaxPorts)
		}
	}
	for _, p := range plan.Nodes {
		if _, ok := p.Params["vlan"]; ok {
			return SwitchLinuxBridge, fmt.Sprintf("node %s asks for a VLAN", p.Name)
		}
	}
	if a, b, ok := switchLoop(plan); ok {
		return SwitchLinuxBridge, fmt.Sprintf("the switches have a loop (link %s-%s closes it)", a, b)
	}
	return SwitchBPF, "a loop-free topology without STP"
}

// switchLoop finds a link that closes a loop among switches (a second link
// between two switches counts), with a union-find over switch-to-switch
// links: hosts and routers do not bridge, so only those links can loop.
func switchLoop(plan *topo.Plan) (a, b string, ok bool) {
	isSwitch := map[string]bool{}
	for _, p := range plan.Switches() {
		isSwitch[p.Name] = true
	}
	sets := newNodeSets() // buildorder.go
	for _, l := range plan.Links {
		n1, n2 := l.Intf1.Node, l.Intf2.Node
		if !isSwitch[n1] || !isSwitch[n2] {
			continue
		}
		if !sets.join(n1, n2) {
			return n1, n2, true
		}
	}
	return "", "", false
}
