package cli

import (
	"context"
	"fmt"

	"github.com/hymn-net/hymn/topo"
)

// loadCustomPython runs a Mininet custom topology file; see topo.LoadCustom.
func loadCustomPython(ctx context.Context, path, spec string) (*topo.Topo, topo.FileOptions, error) {
	return nil, topo.FileOptions{}, fmt.Errorf("%w: --custom %s: Mininet Python topologies are not supported yet", ErrUsage, path)
}
