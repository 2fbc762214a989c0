package cli

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hymn-net/hymn/bpfswitch"
	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
)

// The shell's OpenFlow side: dpctl and switch, and the controllers in
// nodes, net, dump and intfs.

func (s *shell) doDpctl(ctx context.Context, args string) bool {
	fields := strings.Fields(args)
	if len(fields) == 0 {
		s.out("Usage: dpctl command [arg1] [arg2] ...\n")
		return false
	}
	for _, sw := range s.net.Switches() {
		s.outf("*** %s %s\n", sw.Name, strings.Repeat("-", 72))
		var out string
		s.interruptible(ctx, func(ctx context.Context) error {
			var err error
			out, err = s.dpctl(ctx, sw, fields)
			return err
		})
		s.out(out)
	}
	return false
}

// dpctl runs Mininet's dpctl on one switch: ovs-ofctl CMD SWITCH ARGS on
// an OpenFlow switch, brctl ARGS in a Linux bridge's namespace, and on a
// BPF switch showmacs, its learned addresses as brctl shows a bridge's.
func (s *shell) dpctl(ctx context.Context, sw *topo.PlannedNode, args []string) (string, error) {
	node, err := s.net.Node(sw.Name)
	if err != nil {
		return "", err
	}
	if ns, ok := node.(*nodes.NsNode); ok && ns.OVSNet() != nil {
		out, _ := ns.OVSNet().Ofctl(ctx, sw.Name, args[0], args[1:]...)
		return out, nil // a failing ovs-ofctl explains itself in its output
	}
	if ns, ok := node.(*nodes.NsNode); ok && ns.BPFSwitch() != nil {
		return bpfShowMacs(ns.BPFSwitch(), args), nil
	}
	res, err := node.Exec(ctx, "brctl", args...)
	if err != nil {
		return "", err
	}
	return string(res.Stdout) + string(res.Stderr), nil
}

func (s *shell) doSwitch(ctx context.Context, args string) bool {
	fields := strings.Fields(args)
	if len(fields) != 2 {
		s.out("invalid number of args: switch <switch name>{start, stop}\n")
		return false
	}
	name, command := fields[0], fields[1]
	if p := s.net.Plan().Node(name); p == nil || !p.IsSwitch() {
		s.outf("invalid switch: %s\n", name)
		return false
	}
	switch command {
	case "start":
		s.interruptible(ctx, func(ctx context.Context) error { return s.net.StartSwitch(ctx, name) })
	case "stop":
		s.interruptible(ctx, func(ctx context.Context) error { return s.net.StopSwitch(ctx, name) })
	default:
		s.out("invalid command: switch <switch name> {start, stop}\n")
	}
	return false
}

// controllerNet is net's part for controllers: their names, one a line.
func (s *shell) controllerNet() string {
	var b strings.Builder
	for _, name := range s.net.ControllerNames() {
		b.WriteString(name + "\n")
	}
	return b.String()
}

// controllerIntfs is intfs' part for controllers (they have none).
func (s *shell) controllerIntfs() string {
	var b strings.Builder
	for _, name := range s.net.ControllerNames() {
		b.WriteString(name + ": \n")
	}
	return b.String()
}

// controllerDump is dump's part: <OVSController c0: 127.0.0.1:6653 pid=N>.
func (s *shell) controllerDump() string {
	var b strings.Builder
	for _, c := range s.net.Controllers() {
		b.WriteString(c.String() + "\n")
	}
	return b.String()
}

// classOf is the Mininet class a node's repr shows.
func (s *shell) classOf(n *topo.PlannedNode) string {
	if n.IsSwitch() {
		if node, err := s.net.Node(n.Name); err == nil {
			if ns, ok := node.(*nodes.NsNode); ok && ns.OVSNet() != nil {
				return "OVSSwitch"
			}
			if ns, ok := node.(*nodes.NsNode); ok && ns.BPFSwitch() != nil {
				return "BPFSwitch"
			}
		}
	}
	return className(n)
}

// bpfShowMacs is dpctl on a BPF switch: showmacs lists what it learned
// (port, address, seconds since its last frame), as brctl showmacs does;
// aged entries (older than bpfswitch.Ageing) are left out, as the switch
// ignores them.
func bpfShowMacs(sw *bpfswitch.Switch, args []string) string {
	if args[0] != "showmacs" {
		return fmt.Sprintf("%s is a bpf switch: dpctl takes showmacs only\n", sw.Name())
	}
	entries, err := sw.FDB()
	if err != nil {
		return err.Error() + "\n"
	}
	names := map[int]string{}
	for _, p := range sw.Ports() {
		names[p.Ifindex] = p.Name
	}
	slices.SortFunc(entries, func(a, b bpfswitch.Entry) int { return strings.Compare(a.MAC.String(), b.MAC.String()) })
	var b strings.Builder
	b.WriteString("port\tmac addr\t\tageing timer\n")
	for _, e := range entries {
		if e.Age > bpfswitch.Ageing {
			continue
		}
		name := names[e.Ifindex]
		if name == "" {
			name = strconv.Itoa(e.Ifindex)
		}
		fmt.Fprintf(&b, "%s\t%s\t%7.2f\n", name, e.MAC, e.Age.Seconds())
	}
	return b.String()
}
