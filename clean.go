package hymn

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hymn-net/hymn/emulator/dpdk"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/sriov"
	"github.com/hymn-net/hymn/vm"
)

// CleanOptions selects what Clean removes.
type CleanOptions struct {
	// All removes live runs too (their owner still running): it stops
	// networks out from under the programs that run them.
	All bool
	// Runs limits Clean to these run ids (Network.RunID); empty means
	// every run on the machine.
	Runs []string
	// SRIOV restores the VFs of runs on real hardware; nil uses netlink.
	SRIOV sriov.Configurator
}

// CleanReport says what Clean did.
type CleanReport struct {
	Runs       []string // runs removed
	Skipped    []string // live runs left alone
	Namespaces int      // namespaces deleted
	Processes  int      // processes stopped (each had exited before Clean returned)
	DPDK       int      // stale DPDK runtime directories removed
}

// Empty reports whether there was nothing to clean.
func (r CleanReport) Empty() bool { return len(r.Runs) == 0 && r.DPDK == 0 }

// Clean removes what hymn runs left behind when they could not stop
// themselves (a crash, kill -9): for each run whose owning process is gone
// (or every run, with All) it stops the processes in the run's namespaces
// and returns only once they have exited, deletes the namespaces with every
// interface in them, the cgroups, root-namespace links and NAT slots,
// removes VM sockets and consoles, restores the settings of the SR-IOV VFs
// the run had taken, and finally the run's record. It then removes DPDK
// runtime directories of dead processes.
//
// Only objects named after a run (hymn-<run>-...) or recorded under
// /run/hymn are touched. A run is live while the process in its record
// runs with the recorded start time; records are created atomically before
// a run builds anything, so a run being built is never mistaken for a dead
// one. A run whose removal fails keeps its record, so the next Clean tries
// again.
func Clean(ctx context.Context, opts CleanOptions) (CleanReport, error) {
	var rep CleanReport
	if err := CheckRoot(); err != nil {
		return rep, err
	}
	runs, err := owner.Runs()
	if err != nil {
		return rep, err
	}
	var errs []error
	for _, run := range runs {
		if err := ctx.Err(); err != nil {
			return rep, errors.Join(append(errs, err)...)
		}
		if len(opts.Runs) > 0 && !slices.Contains(opts.Runs, run) {
			continue
		}
		if !opts.All && owner.Alive(run) {
			rep.Skipped = append(rep.Skipped, run)
			continue
		}
		ns, procs, err := owner.RemoveObjects(run, owner.CleanGrace)
		rep.Namespaces += ns
		rep.Processes += procs
		// Outside the namespaces: VM sockets and console logs, and real
		// SR-IOV VFs, which go back to their original settings.
		err = errors.Join(err, vm.RemoveRunDirs(owner.Prefix+run+"-"), sriov.RemoveRun(owner.StateDir, run, opts.SRIOV),
			removeRunControllers(run)) // sdn.go
		if err == nil {
			err = owner.Release(run)
		}
		rep.Runs = append(rep.Runs, run)
		if err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", run, err))
		}
	}
	if len(opts.Runs) == 0 {
		owner.SweepTemps()
		sweepControllerRecords() // sdn.go
		n, err := dpdk.RemoveStale()
		rep.DPDK = n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return rep, errors.Join(errs...)
}
