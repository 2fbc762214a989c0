package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hymn-net/hymn/internal/mnlog"
	"github.com/hymn-net/hymn/topo"
	"github.com/spf13/cobra"
)

func newRunCmd(stdin *os.File, stdout, stderr io.Writer) *cobra.Command {
	f := &mnFlags{}
	cmd := &cobra.Command{
		Use:   "run FILE [mn flags]",
		Short: "Build the topology in a hymn YAML/JSON file (or a MiniEdit .mn file) and test it or open the shell",
		Long: `run builds the topology described in FILE, a hymn YAML or JSON topology file
(schema/topology.schema.json, docs/topology-files.md) or a MiniEdit .mn file,
then runs --test or opens the mininet> shell, exactly like hymn --custom FILE.

  hymn run examples/line7.yaml --test pingall`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.file = args[0]
			return runMN(cmd.Context(), f, stdin, stdout, stderr)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", ErrUsage, err) })
	addMNFlags(cmd.Flags(), f)
	return cmd
}

// loadTopology returns the topology the command line asks for: a file
// (hymn run FILE, or --custom FILE) or a built-in spec (--topo).
func loadTopology(ctx context.Context, f *mnFlags, lg *mnlog.Logger) (*topo.Topo, topo.FileOptions, error) {
	path := f.file
	if path == "" {
		path = f.custom
	}
	if path == "" {
		t, err := topo.FromSpecString(f.topo)
		if err != nil {
			return nil, topo.FileOptions{}, fmt.Errorf("%w: --topo: %v", ErrUsage, err)
		}
		return t, topo.FileOptions{}, nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil, topo.FileOptions{}, fmt.Errorf("%w: topology file %s: %v", ErrUsage, path, errors.Unwrap(err))
	}
	var (
		t    *topo.Topo
		opts topo.FileOptions
		err  error
	)
	switch strings.ToLower(filepath.Ext(path)) {
	case ".py":
		t, opts, err = loadCustomPython(ctx, path, f.topo)
	case ".mn":
		t, opts, err = topo.LoadMiniEdit(path)
	default:
		t, opts, err = topo.LoadFile(path)
	}
	for _, w := range opts.Warnings {
		lg.Warningf("*** Warning: %s\n", w)
	}
	if err != nil {
		if errors.Is(err, topo.ErrBadFile) || errors.Is(err, topo.ErrBadSpec) {
			return nil, opts, fmt.Errorf("%w: %v", ErrUsage, err)
		}
		return nil, opts, err
	}
	return t, opts, nil
}
