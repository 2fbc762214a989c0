package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/cluster"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/spf13/cobra"
)

func newCleanCmd(_, stderr io.Writer) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove the namespaces, links and processes that crashed hymn runs left behind",
		Long: `clean removes what hymn runs left behind when they could not stop themselves
(a crash, kill -9): the processes inside their namespaces (it returns only once
they have exited), the namespaces with every interface in them, cgroups, NAT
links, VM sockets, the settings of SR-IOV VFs, the tunnel filters (nftables
tables hymn-<run>-vxlan) of split networks' workers killed in this machine's
namespace, and their records under /run/hymn. It only ever touches objects named hymn-<run>-... or recorded under
/run/hymn, and by default only runs whose owning process is gone (the pid and
start time in the run's record), so networks that are still running are left
alone. "hymn -c" does the same.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cleanRuns(cmd.Context(), mnlog.New(stderr, mnlog.Info), all)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also stop and remove networks whose hymn process is still running")
	return cmd
}

// runClean is hymn -c: hymn clean without a command context.
func runClean(lg *mnlog.Logger, all bool) error {
	return cleanRuns(context.Background(), lg, all)
}

func cleanRuns(ctx context.Context, lg *mnlog.Logger, all bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	lg.Info("*** Removing what crashed hymn runs left behind\n")
	rep, err := hymn.Clean(ctx, hymn.CleanOptions{All: all})
	for _, r := range rep.Skipped {
		lg.Infof("*** Run %s is still running; left alone (use hymn clean --all to stop it)\n", r)
	}
	// A split network's worker killed in this machine's own namespace
	// leaves its tunnel filter (an nftables table of its run) here; the
	// runs still alive keep theirs. After hymn.Clean, so that --all has
	// stopped the live ones first.
	keep := owner.Alive
	if all {
		keep = nil
	}
	tables, ferr := cluster.RemoveStaleFilters(keep)
	if err = errors.Join(err, ferr); err != nil {
		return fmt.Errorf("cleaning: %w", err)
	}
	if rep.Empty() && len(tables) == 0 {
		lg.Info("*** Nothing to clean\n")
		return nil
	}
	if !rep.Empty() {
		lg.Infof("*** Removed %d run(s): %d namespace(s), %d process(es)\n", len(rep.Runs), rep.Namespaces, rep.Processes)
	}
	if len(tables) > 0 {
		lg.Infof("*** Removed %d tunnel filter table(s) of split networks' workers: %s\n", len(tables), strings.Join(tables, " "))
	}
	lg.Info("*** Cleanup complete.\n")
	return nil
}
