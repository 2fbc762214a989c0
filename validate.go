package hymn

import (
	"errors"
	"fmt"

	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/topo"
	"github.com/hymn-net/hymn/vm"
)

// Parameters that only this package can check (the emulator's parser,
// schedules and traces, a VM's parameters) are checked by New, before
// anything is built, for topologies from files and from Go alike; topo
// checks its own at load and in Resolve, and records where a file wrote
// each value, so these errors name the file, line and field too.

// checkLinkEmulation validates a link's emulation parameters (delay=,
// bw=, emu=, the emulator port, schedules and traces).
func checkLinkEmulation(p topo.Params) error {
	if _, err := linkparams.PortsOf(p); err != nil {
		return err
	}
	if !linkparams.NeedsEmulator(p) {
		return nil
	}
	_, _, err := EmulatorConfigs(p)
	return err
}

// checkPlanParams checks every link's emulation parameters and the VM
// parameters of nodes that say they are VMs (backend: vm), all of them,
// each error at the value that is wrong: the first key a file wrote that
// is wrong on its own, else the link's parameters as a whole.
func checkPlanParams(plan *topo.Plan) error {
	var errs []error
	for _, l := range plan.Links {
		err := checkLinkEmulation(l.Params)
		if err == nil {
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
	return errors.Join(errs...)
}

// checkLiveLink is checkPlanParams for a link added to a running network.
func checkLiveLink(node1, node2 string, p topo.Params) error {
	if err := checkLinkEmulation(p); err != nil {
		return fmt.Errorf("link %s<->%s: %w", node1, node2, err)
	}
	return nil
}
