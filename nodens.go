package hymn

import (
	"context"
	"fmt"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
)

// netnsBackend runs a node in a network namespace of its own (package
// nodes): hosts, routers, and switches with the network's switch kind; a
// switch of the network's shared OpenFlow Open vSwitch lives in that
// switch's namespace instead (sdn.go).
var netnsBackend = nodeBackend{
	name:     BackendNetns,
	switches: true,
	check:    func(nodeEnv, *topo.PlannedNode) (int64, error) { return 0, nil },
	start:    startNamespaceNode,
}

func startNamespaceNode(_ context.Context, env nodeEnv, p *topo.PlannedNode) (Node, error) {
	if node, ok, err := env.newOpenFlowSwitch(p); ok {
		return node, err
	}
	cfg := env.namespaceConfig(p)
	if cfg.Shared {
		env.debugf("*** %s: BPF switch in %s\n", p.Name, cfg.Namespace)
	} else {
		env.debugf("*** %s: ip netns add %s\n", p.Name, cfg.Namespace)
	}
	node, err := nodes.New(cfg)
	if err != nil {
		return nil, err
	}
	env.debugf("*** %s: ip -n %s link set lo up\n", p.Name, cfg.Namespace)
	return node, nil
}

// namespaceConfig is nodeEnv's: the node's switch plane follows the
// network's switch kind.
func (n *Network) namespaceConfig(p *topo.PlannedNode) nodes.Config {
	cfg := nodes.Config{Name: p.Name, Kind: p.Kind, Namespace: n.namespaceOf(p.Name), STP: n.stp(p), CPU: n.cpuLimit(p),
		OVS: p.IsSwitch() && n.opts.Switch == SwitchOVSBridge, BPF: n.isBPF(p), Ports: len(p.Intfs)}
	if cfg.BPF && n.switchNS != nil {
		cfg.Namespace, cfg.Shared = n.switchNS.Namespace(), true
	}
	return cfg
}

// namespaceNode returns a running node as a namespace node, for what only
// those offer (their switch planes, ping from the namespace, Listen and
// DialContext); ok is false for a VM, or an OpenFlow switch.
func namespaceNode(node Node) (ns *nodes.NsNode, ok bool) {
	ns, ok = node.(*nodes.NsNode)
	return ns, ok
}

// switchNode returns a running switch node with a switch plane of its own,
// or nil (a host, a router, an OpenFlow switch of the shared OVS).
func (n *Network) switchNode(name string) *nodes.NsNode {
	if sw, ok := namespaceNode(n.nodes[name]); ok && sw.Kind() == topo.KindSwitch {
		return sw
	}
	return nil
}

// filesNeeded estimates the descriptors the built network holds: each
// node's namespace handle, and a reserve for the rest (the netlink cache
// among it). The BPF switches in the shared switch namespace share one
// handle, and a BPF switch with ports holds no descriptor of its own
// between calls (package bpfswitch).
func (n *Network) filesNeeded() uint64 {
	need := uint64(netnsx.FilesReserve)
	shared, _ := n.sharedSwitchNamespace() // switchbpf.go
	if shared {
		need += netnsx.FilesPerNamespace
	}
	for _, p := range n.Plan().Nodes {
		if !shared || !n.isBPF(p) {
			need += netnsx.FilesPerNamespace
		}
	}
	return need
}

// ensureFiles raises the open-file limit for the network before anything
// is built, or says how large a network fits under it: a build that ran
// out of descriptors halfway (EMFILE on a namespace or a BPF program)
// would only fail later, after making thousands of namespaces.
func (n *Network) ensureFiles() error {
	need := n.filesNeeded()
	limit, err := netnsx.EnsureFiles(need)
	if err == nil {
		return nil
	}
	nodes := len(n.Plan().Nodes)
	fit := 0
	if limit > netnsx.FilesReserve {
		fit = int(uint64(nodes) * (limit - netnsx.FilesReserve) / (need - netnsx.FilesReserve))
	}
	return fmt.Errorf("%d nodes: %w: about %d nodes of this topology fit", nodes, err, fit)
}
