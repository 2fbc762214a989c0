package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/hymn-net/hymn/topo"
)

// loadCustomPython runs a Mininet custom topology file (see
// topo.LoadCustom); --topo names one of its topologies, with arguments.
func loadCustomPython(ctx context.Context, path, spec string, lim topo.Limits) (*topo.Topo, topo.FileOptions, error) {
	s, err := topo.ParseSpec(spec)
	if err != nil {
		return nil, topo.FileOptions{}, fmt.Errorf("%w: --topo: %v", ErrUsage, err)
	}
	t, warnings, err := topo.LoadCustomWith(ctx, path, s, lim)
	opts := topo.FileOptions{Warnings: warnings}
	if errors.Is(err, topo.ErrNoPython) {
		return nil, opts, fmt.Errorf("%w: --custom %s: %v (apt-get install python3)", ErrUsage, path, err)
	}
	return t, opts, err
}
