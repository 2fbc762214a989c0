package hymn

import (
	"context"
	"fmt"

	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
	"github.com/hymn-net/hymn/vm"
)

// vmBackend runs a host or router as a QEMU/KVM virtual machine (package
// vm; TCG without /dev/kvm). Its link ends are made in a helper namespace
// of its own and joined to the guest (nodes.GuestNode).
var vmBackend = nodeBackend{
	name:  BackendVM,
	check: checkVMNode,
	start: startVMNode,
	guest: func(node Node) nodes.GuestNode { return node.(*vm.Node) },
}

// vmConfig returns a VM node's configuration, validated.
func vmConfig(env nodeEnv, p *topo.PlannedNode) (vm.Config, error) {
	cfg := vm.Config{Name: p.Name, Namespace: env.namespaceOf(p.Name), Logf: env.progressf}
	if err := vm.ParseParams(&cfg, p.Params); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

func checkVMNode(env nodeEnv, p *topo.PlannedNode) (int64, error) {
	cfg, err := vmConfig(env, p)
	if err != nil {
		return 0, err
	}
	mib, _ := vm.MemoryMiB(cfg.Memory) // valid: vmConfig checked it
	return mib, nil
}

func startVMNode(ctx context.Context, env nodeEnv, p *topo.PlannedNode) (Node, error) {
	cfg, err := vmConfig(env, p)
	if err != nil {
		return nil, err
	}
	node, err := vm.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if p.Kind == topo.KindRouter {
		res, err := node.Exec(ctx, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward")
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("router %s: enabling IPv4 forwarding in the guest: %s", p.Name, res.Stderr)
		}
		return node, err
	}
	return node, nil
}
