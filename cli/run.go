package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/routing"
	"github.com/hymn-net/hymn/topo"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newRunCmd(stdin *os.File, stdout, stderr io.Writer) *cobra.Command {
	f, k := &mnFlags{}, &kubeFlags{}
	cmd := &cobra.Command{
		Use:   "run FILE [mn flags]",
		Short: "Build the topology in a hymn YAML/JSON file, a MiniEdit .mn file or a Topology Zoo map and test it or open the shell",
		Long: `run builds the topology described in FILE, a hymn YAML or JSON topology file
(schema/topology.schema.json, docs/topology-files.md), a MiniEdit .mn file
or a real network's map in the Internet Topology Zoo's GraphML (.graphml) or
GML (.gml) format, then runs --test or opens the mininet> shell, exactly
like hymn --custom FILE.

  hymn run examples/line7.yaml --test pingall
  hymn run Abilene.graphml --test pingall        routers with fibre delays, static routes

A map's nodes become routers, each with a host (--hosts=false: none), its
edges links whose delay is the great-circle distance at the speed of light
in fibre (docs/routing.md).

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
	cmd.Flags().BoolVar(&f.net.hosts, "hosts", true, "give every router of a map (.graphml, .gml) a host of its own")
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
	case ".graphml", ".gml":
		t, opts, err = topo.LoadZoo(path, topo.ZooOptions{NoHosts: f.net.noHosts(f), Limits: lim})
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

// netFlags are the flags of routed and dual-stack networks (docs/routing.md).
type netFlags struct {
	hosts   bool   // hymn run MAP --hosts=false: routers only
	routing string // --routing none|static
	ipv6    bool   // --ipv6
	ipbase6 string // --ipbase6
}

// addNetFlags registers --routing, --ipv6 and --ipbase6 (with mn's flags).
func addNetFlags(fl *pflag.FlagSet, f *netFlags) {
	fl.StringVar(&f.routing, "routing", "", "how routers without a routing parameter get routes: none (the topology's own routes; the default, except for maps) or static (hymn computes shortest paths by link delay, else hops, and installs them; routed segments get subnets of their own: docs/routing.md)")
	fl.BoolVar(&f.ipv6, "ipv6", false, "dual-stack: every host and router interface also gets a global IPv6 address (one /64 per segment from --ipbase6); pingall and pingpair test both families")
	fl.StringVar(&f.ipbase6, "ipbase6", routing.DefaultIPBase6.String(), "base IPv6 network with --ipv6: segment k gets its k-th /64")
}

// options applies the flags, and the topology file's options the command
// line leaves unset, to the network's options.
func (nf netFlags) options(f *mnFlags, fileOpts topo.FileOptions, opts *hymn.Options) error {
	mode := fileOpts.Routing
	if f.changed("routing") || mode == "" {
		mode = nf.routing
	}
	m, err := hymn.ParseRoutingMode(mode)
	if err != nil {
		return fmt.Errorf("%w: --routing: %v", ErrUsage, err)
	}
	opts.Routing = m
	opts.IPv6 = nf.ipv6 || (fileOpts.IPv6 && !f.changed("ipv6"))
	if !opts.IPv6 {
		if f.changed("ipbase6") {
			return fmt.Errorf("%w: --ipbase6 needs --ipv6", ErrUsage)
		}
		return nil
	}
	base6 := fileOpts.IPBase6
	if f.changed("ipbase6") || !base6.IsValid() {
		base6, err = netip.ParsePrefix(nf.ipbase6)
		if err != nil || !base6.Addr().Is6() || base6.Addr().Is4In6() || base6.Bits() > 64 {
			return fmt.Errorf("%w: --ipbase6 %q is not an IPv6 network of /64 or larger like fd00::/48", ErrUsage, nf.ipbase6)
		}
	}
	opts.IPBase6 = base6
	return nil
}

// noHosts reports whether --hosts=false was given (commands without the
// flag keep the hosts).
func (n netFlags) noHosts(f *mnFlags) bool {
	return f.changed != nil && f.changed("hosts") && !n.hosts
}
