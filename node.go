package hymn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
)

// Node is a running node of a network, whatever runs it: a namespace
// (*nodes.NsNode) or a VM (*vm.Node). Its links.Namespace is where its link
// ends are created: the node's own namespace, or a VM's helper namespace.
type Node interface {
	nodes.Node
	links.Namespace
	// Namespace names the node's (helper) namespace.
	Namespace() string
	// CmdStream runs a command in the node's persistent shell, writing the
	// output as it comes.
	CmdStream(ctx context.Context, line string, w io.Writer) (int, error)
	// Halt stops what runs in the node on hymn's behalf (a namespace
	// node's shell, a VM's guest) before teardown sweeps its processes.
	Halt()
	// Delete stops the node and removes its namespace.
	Delete() error
}

// nodeBackend is one entry of the registry of node backends, each in its
// own file: network namespaces (nodens.go) and QEMU/KVM VMs (nodevm.go).
// New decides each planned node's backend once (resolveNodes) and keeps
// it; building, linking and live changes ask the kept entry.
type nodeBackend struct {
	name NodeBackend
	// switches says whether the backend can run switches; only
	// namespaces can.
	switches bool
	// check validates a planned node's parameters for the backend before
	// anything exists and returns the memory the node will take (MiB),
	// for the topology's memory limit.
	check func(env nodeEnv, p *topo.PlannedNode) (mib int64, err error)
	// start runs a planned node. A node that started but failed to
	// configure comes back with the error, for its caller to delete.
	start func(ctx context.Context, env nodeEnv, p *topo.PlannedNode) (Node, error)
	// guest returns a running node's guest, for a backend whose nodes'
	// interfaces live in one (nodes.GuestNode); nil for the others.
	guest func(Node) nodes.GuestNode
}

// nodeEnv is what a node backend sees of the network while it checks and
// starts a node. *Network implements it; a backend reaches nothing else.
type nodeEnv interface {
	// namespaceOf names a node's namespace (a VM's helper namespace).
	namespaceOf(name string) string
	// namespaceConfig is a namespace node's nodes.Config: its namespace,
	// switch plane, STP and CPU limit, as the network's options say.
	namespaceConfig(p *topo.PlannedNode) nodes.Config
	// newOpenFlowSwitch starts a switch as a bridge of the network's
	// shared OpenFlow Open vSwitch; ok is false when it has none.
	newOpenFlowSwitch(p *topo.PlannedNode) (node Node, ok bool, err error)
	// progressf is where a backend's progress lines go (a VM's boot).
	progressf(format string, args ...any)
	debugf(format string, args ...any)
}

// nodeBackends is the registry of node backends.
var nodeBackends = []*nodeBackend{&netnsBackend, &vmBackend}

// decideBackend returns the backend of a planned node: its own backend
// parameter, else the network's default for hosts (switches default to
// namespaces), checked against what the backend can run.
func (n *Network) decideBackend(p *topo.PlannedNode) (*nodeBackend, error) {
	name := NodeBackend(p.Params["backend"])
	if name == "" && !p.IsSwitch() {
		name = n.opts.Nodes
	}
	if name == "" {
		name = BackendNetns
	}
	for _, b := range nodeBackends {
		if b.name != name {
			continue
		}
		if p.IsSwitch() && !b.switches {
			return nil, fmt.Errorf("node %s: switches cannot be VMs (they are bridges in namespaces)", p.Name)
		}
		return b, nil
	}
	words := make([]string, len(nodeBackends))
	for i, b := range nodeBackends {
		words[i] = string(b.name)
	}
	return nil, fmt.Errorf("node %s: unknown backend %q (use %s)", p.Name, name, strings.Join(words, " or "))
}

// resolveNodes decides and checks the backend of each planned node (all
// the plan's in New, the live one in AddNode) and keeps it; the VM nodes'
// memory is checked against the topology's limit. Nothing is kept when a
// node is refused.
func (n *Network) resolveNodes(ps []*topo.PlannedNode) error {
	var errs []error
	decided := make([]*nodeBackend, len(ps))
	var guests, mib int64
	for i, p := range ps {
		b, err := n.decideBackend(p)
		if err == nil {
			var m int64
			m, err = b.check(n, p)
			if m > 0 {
				guests, mib = guests+1, mib+m
			}
		}
		decided[i] = b
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if guests > 0 {
		if err := (topo.Limits{MaxNodes: n.opts.MaxNodes}).CheckMemory(fmt.Sprintf("topology: %d VM nodes", guests), uint64(mib)<<20); err != nil {
			return err
		}
	}
	for i, p := range ps {
		n.backends.Store(p.Name, decided[i])
	}
	return nil
}

// backendOf returns the backend New or AddNode decided for a node, or nil.
// It takes no lock: the front ends ask it while a live change runs.
func (n *Network) backendOf(name string) *nodeBackend {
	b, _ := n.backends.Load(name)
	nb, _ := b.(*nodeBackend)
	return nb
}

// guestOf returns the running node of an interface as a guest (a VM), or
// nil when its interfaces live in a namespace; n.mu is held.
func (n *Network) guestOf(i *topo.Intf) nodes.GuestNode { return n.guestIn(n.nodes, i.Node) }

// guestIn is guestOf for a node of a map of running nodes.
func (n *Network) guestIn(running map[string]Node, name string) nodes.GuestNode {
	b, node := n.backendOf(name), running[name]
	if b == nil || b.guest == nil || node == nil {
		return nil
	}
	return b.guest(node)
}

// NsNode returns a namespace node by name, for what only namespace nodes
// offer (Listen, DialContext, Sysctl, Start).
func (n *Network) NsNode(name string) (*nodes.NsNode, error) {
	node, err := n.Node(name)
	if err != nil {
		return nil, err
	}
	ns, ok := namespaceNode(node)
	if !ok {
		return nil, fmt.Errorf("node %s is not a namespace node", name)
	}
	return ns, nil
}

// attachToSwitch makes an interface a port of a switch node's bridge.
func (n *Network) attachToSwitch(node, intf string) error {
	if sw := n.switchNode(node); sw != nil {
		return sw.AttachPort(intf)
	}
	return nil
}
