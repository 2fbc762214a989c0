package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"

	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/links"
)

// A worker removes its run's tunnel filter when it tears its part down. A
// worker killed outright (kill -9, a crash) cannot: in a pod the table
// goes with the pod's namespace, but a worker that ran in a machine's own
// namespace (a split network over real machines, `hymn worker` started
// by hand) leaves it there, dropping that run's VNIs for good. Its run
// record under /run/hymn says whether the run is still alive, so `hymn
// clean` removes the tables of dead runs as it removes their namespaces.

// filterTableName matches the tables filterTable names, capturing the run.
var filterTableName = regexp.MustCompile(`^table inet (hymn-([0-9a-f]+)-vxlan)$`)

// RemoveStaleFilters removes, from this process's network namespace, the
// tunnel filter tables of the runs keep does not keep (keep nil: all of
// them), and returns the tables it removed. Only tables named as a run's
// filter are looked at; a machine without nft has none (hymn could not
// have made them), which is not an error.
func RemoveStaleFilters(keep func(run string) bool) ([]string, error) {
	path, err := exec.LookPath("nft")
	if err != nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), nftTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "list", "tables", "inet")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("tunnel filters: listing nftables tables: %w: %s", err, clip(strings.TrimSpace(errOut.String()), 400))
	}
	host, err := links.HostNamespace()
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, line := range strings.Split(out.String(), "\n") {
		m := filterTableName.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil || !owner.ValidRunID(m[2]) || (keep != nil && keep(m[2])) {
			continue
		}
		f := &tunnelFilter{ns: host, table: m[1]}
		if err := f.remove(); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, m[1])
	}
	return removed, errors.Join(errs...)
}
