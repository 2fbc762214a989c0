package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/topo"
	"github.com/spf13/cobra"
)

func newRunCmd(stdin *os.File, stdout, stderr io.Writer) *cobra.Command {
	f, k := &mnFlags{}, &kubeFlags{}
	cmd := &cobra.Command{
		Use:   "run FILE [mn flags]",
		Short: "Build the topology in a hymn YAML/JSON file (or a MiniEdit .mn file) and test it or open the shell",
		Long: `run builds the topology described in FILE, a hymn YAML or JSON topology file
(schema/topology.schema.json, docs/topology-files.md) or a MiniEdit .mn file,
then runs --test or opens the mininet> shell, exactly like hymn --custom FILE.

  hymn run examples/line7.yaml --test pingall

With --kube the topology runs on a Kubernetes cluster instead: hymn hands
over to hymn-kube run (docs/kube.md), which creates a Topology resource,
follows the controller's progress until its workers have built it and
linked it (or it failed), prints its status and removes it again (--hold:
when interrupted).

  hymn run examples/line7.yaml --kube --workers 2 --kubeconfig admin.kubeconfig`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			kargs, err := kubeArgs(cmd, k, args[0])
			if err != nil {
				return err
			}
			if kargs != nil {
				return runKube(cmd.Context(), kargs, stdout, stderr)
			}
			f.file = args[0]
			return runMN(cmd.Context(), f, stdin, stdout, stderr)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", ErrUsage, err) })
	addMNFlags(cmd.Flags(), f)
	addKubeFlags(cmd.Flags(), k)
	return cmd
}

// loadTopology returns the topology the command line asks for: a file
// (hymn run FILE, or --custom FILE) or a built-in spec (--topo).
func loadTopology(ctx context.Context, f *mnFlags, lim topo.Limits, lg *mnlog.Logger) (*topo.Topo, topo.FileOptions, error) {
	path := f.file
	if path == "" {
		path = f.custom
	}
	if path == "" {
		t, err := topo.FromSpecStringWith(f.topo, lim)
		if errors.Is(err, topo.ErrTooLarge) {
			return nil, topo.FileOptions{}, fmt.Errorf("%w: %v", ErrUsage, err)
		}
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
		t, opts, err = loadCustomPython(ctx, path, f.topo, lim)
	case ".mn":
		t, opts, err = topo.LoadMiniEditWith(path, lim)
	default:
		t, opts, err = topo.LoadFileWith(path, lim)
	}
	for _, w := range opts.Warnings {
		lg.Warningf("*** Warning: %s\n", w)
	}
	if err != nil {
		// A file the user named that cannot be read (a directory, no
		// permission) is bad input too.
		_, unreadable := errors.AsType[*os.PathError](err)
		if unreadable || errors.Is(err, topo.ErrBadFile) || errors.Is(err, topo.ErrBadSpec) || errors.Is(err, topo.ErrTooLarge) {
			return nil, opts, fmt.Errorf("%w: %v", ErrUsage, err)
		}
		return nil, opts, err
	}
	return t, opts, nil
}

// limits returns the input limits the flags ask for.
func (f *mnFlags) limits() (topo.Limits, error) {
	size, err := parseByteSize(f.maxFile)
	if err != nil {
		return topo.Limits{}, fmt.Errorf("%w: --max-file-size %q: %v", ErrUsage, f.maxFile, err)
	}
	if f.customTime <= 0 {
		return topo.Limits{}, fmt.Errorf("%w: --custom-timeout %v: must be positive", ErrUsage, f.customTime)
	}
	if f.maxNodes < -1 {
		return topo.Limits{}, fmt.Errorf("%w: --max-nodes %d: use a positive count, 0 for the default or -1 for no limit", ErrUsage, f.maxNodes)
	}
	return topo.Limits{MaxNodes: f.maxNodes, MaxFileSize: size, CustomTimeout: f.customTime}, nil
}

// parseByteSize reads a positive size: bytes, or a number with K, M or G
// (powers of 1024, an optional trailing B or iB).
func parseByteSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	shift := 0
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		}
		if shift > 0 {
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("not a positive size like 16M")
	}
	if n > math.MaxInt64>>shift {
		return 0, errors.New("too large")
	}
	return n << shift, nil
}
