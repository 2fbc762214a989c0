package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/hymn-net/hymn/emulator/dpdk"
	"github.com/hymn-net/hymn/internal/mnlog"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/sriov"
	"github.com/hymn-net/hymn/vm"
	"github.com/spf13/cobra"
)

func newCleanCmd(_, stderr io.Writer) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove the namespaces, links and processes that crashed hymn runs left behind",
		Long: `clean removes what hymn runs left behind when they could not stop themselves
(a crash, kill -9): the processes inside their namespaces, the namespaces with
every interface in them, and their records under /run/hymn. It only ever
touches objects named hymn-<run>-..., and by default only runs whose owning
process is gone, so networks that are still running are left alone.
"hymn -c" does the same.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClean(mnlog.New(stderr, mnlog.Info), all)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also stop and remove networks whose hymn process is still running")
	return cmd
}

func runClean(lg *mnlog.Logger, all bool) error {
	lg.Info("*** Removing what crashed hymn runs left behind\n")
	rep, err := owner.Clean(all)
	for _, run := range rep.Runs {
		// Outside the namespaces: VM sockets and console logs, and real
		// SR-IOV VFs, which go back to the root namespace with their
		// original settings.
		err = errors.Join(err, vm.RemoveRunDirs(owner.Prefix+run+"-"), sriov.RemoveRun(owner.StateDir, run, nil))
	}
	if _, dpdkErr := dpdk.RemoveStale(); dpdkErr != nil {
		err = errors.Join(err, dpdkErr)
	}
	for _, r := range rep.Skipped {
		lg.Infof("*** Run %s is still running; left alone (use hymn clean --all to stop it)\n", r)
	}
	if err != nil {
		return fmt.Errorf("cleaning: %w", err)
	}
	if rep.Empty() {
		lg.Info("*** Nothing to clean\n")
		return nil
	}
	lg.Infof("*** Removed %d run(s): %d namespace(s), %d process(es)\n", len(rep.Runs), rep.Namespaces, rep.Processes)
	lg.Info("*** Cleanup complete.\n")
	return nil
}
