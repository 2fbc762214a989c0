package hymn

import (
	"errors"
	"fmt"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/topo"
	"github.com/hymn-net/hymn/vm"
)

// Parameters that only this package can check (the emulator's parser,
// schedules and traces, a VM's parameters) are checked by New, before
// anything is built, for topologies from files and from Go alike; topo
// checks its own at load and in Resolve, and records where a file wrote
// each value, so these errors name the file, line and field too.

// linkEmulation is a link's emulation parameters parsed: the emulator
// configurations of its two directions (a→b is Node1→Node2), schedules
// and traces loaded and checked. New parses each link's once and the link
// is built from them; nothing parses the text again.
type linkEmulation struct {
	ab, ba    emulator.Config
	schedules [2]*emulator.Schedule // by direction; nil: none
}

// parseLinkEmulation parses a link's emulation parameters (delay=, bw=,
// emu=, the emulator port, schedules and traces); nil without any.
func parseLinkEmulation(p topo.Params) (*linkEmulation, error) {
	if _, err := linkparams.PortsOf(p); err != nil {
		return nil, err
	}
	if !linkparams.NeedsEmulator(p) {
		return nil, nil
	}
	emu, err := emulatorConfigs(p)
	if err != nil {
		return nil, err
	}
	return &emu, nil
}

// checkLinkEmulation validates a link's emulation parameters.
func checkLinkEmulation(p topo.Params) error {
	_, err := parseLinkEmulation(p)
	return err
}

// checkPlanParams checks every link's emulation parameters and the VM
// parameters of nodes that say they are VMs (backend: vm), all of them,
// each error at the value that is wrong: the first key a file wrote that
// is wrong on its own, else the link's parameters as a whole. It returns
// the emulated links' parsed parameters.
func checkPlanParams(plan *topo.Plan) (map[*topo.PlannedLink]*linkEmulation, error) {
	var errs []error
	parsed := map[*topo.PlannedLink]*linkEmulation{}
	for _, l := range plan.Links {
		emu, err := parseLinkEmulation(l.Params)
		if err == nil {
			if emu != nil {
				parsed[l] = emu
			}
			continue
		}
		key := ""
		for _, k := range l.FileKeys() {
			if one := checkLinkEmulation(topo.Params{k: l.Params[k]}); one != nil {
				key, err = k, one
				break
			}
		}
		errs = append(errs, l.ParamsError(key, err))
	}
	for _, n := range plan.Nodes {
		if n.Params["backend"] != string(BackendVM) {
			continue
		}
		if err := vm.ParseParams(&vm.Config{}, n.Params); err != nil {
			errs = append(errs, n.ParamsError(err))
		}
	}
	return parsed, errors.Join(errs...)
}

// checkLiveLink is checkPlanParams for a link added to a running network.
func checkLiveLink(node1, node2 string, p topo.Params) (*linkEmulation, error) {
	emu, err := parseLinkEmulation(p)
	if err != nil {
		return nil, fmt.Errorf("link %s<->%s: %w", node1, node2, err)
	}
	return emu, nil
}

// emulation returns a planned link's parsed emulation parameters (nil
// without any); n.mu is held or the network is being built.
func (n *Network) emulation(pl *topo.PlannedLink) *linkEmulation { return n.resolved[pl].emulation }
