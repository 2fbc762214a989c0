package hymn

import (
	"context"
	"fmt"
	"io"

	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
	"github.com/hymn-net/hymn/vm"
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

// backendOf returns the backend of a planned node: its own backend
// parameter, else the network's default for hosts. Switches and routers
// are always namespaces.
func (n *Network) backendOf(p *topo.PlannedNode) (NodeBackend, error) {
	b := NodeBackend(p.Params["backend"])
	if b == "" && !p.IsSwitch() {
		b = n.opts.Nodes
	}
	switch b {
	case "", BackendNetns:
		return BackendNetns, nil
	case BackendVM:
		if p.IsSwitch() {
			return "", fmt.Errorf("node %s: switches cannot be VMs (they are bridges in namespaces)", p.Name)
		}
		return BackendVM, nil
	}
	return "", fmt.Errorf("node %s: unknown backend %q (use netns or vm)", p.Name, b)
}

// vmConfig returns a VM host's configuration, validated.
func (n *Network) vmConfig(p *topo.PlannedNode, namespace string) (vm.Config, error) {
	cfg := vm.Config{Name: p.Name, Namespace: namespace}
	if lg := n.log(); lg != nil {
		cfg.Logf = lg.Infof
	}
	if err := vm.ParseParams(&cfg, p.Params); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

// NsNode returns a namespace node by name, for what only namespace nodes
// offer (Listen, DialContext, Sysctl, Start).
func (n *Network) NsNode(name string) (*nodes.NsNode, error) {
	node, err := n.Node(name)
	if err != nil {
		return nil, err
	}
	ns, ok := node.(*nodes.NsNode)
	if !ok {
		return nil, fmt.Errorf("node %s is not a namespace node", name)
	}
	return ns, nil
}

// attachToSwitch makes an interface a port of a switch node's bridge.
func (n *Network) attachToSwitch(node, intf string) error {
	sw, ok := n.nodes[node].(*nodes.NsNode)
	if !ok || sw.Kind() != topo.KindSwitch {
		return nil
	}
	return sw.AttachPort(intf)
}
