package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/routing"
	"github.com/hymn-net/hymn/topo"
	"github.com/spf13/cobra"
)

type graphFlags struct {
	topo    string
	custom  string
	format  string
	output  string
	ipbase  string
	autoMAC bool
}

// NewGraphCmd returns "hymn graph": a topology (built-in, hymn file,
// MiniEdit file or Mininet custom file) drawn as Graphviz DOT or SVG.
// Nothing is built and no root is needed.
func NewGraphCmd() *cobra.Command {
	f := &graphFlags{}
	cmd := &cobra.Command{
		Use:   "graph [FILE] [--topo SPEC] [--custom FILE.py --topo NAME] [--format dot|svg] [-o FILE]",
		Short: "Draw a topology as Graphviz DOT or SVG",
		Long: `hymn graph prints a topology as a Graphviz graph: hosts are boxes, switches
ellipses, routers hexagons; edges name the interfaces at each end and list
the link's parameters. Nothing is built.

  hymn graph --topo tree,depth=2,fanout=3            DOT on stdout
  hymn graph examples/wan.yaml -o wan.svg            SVG (needs Graphviz's dot)
  hymn graph drawing.mn --format svg > drawing.svg   a MiniEdit file
  hymn graph --custom topo-2sw-2host.py --topo mytopo

FILE is read by its extension: .yaml/.yml/.json (hymn's format), .mn
(MiniEdit), .py (a Mininet custom file; --topo names the topology).`,
		Args:          usageArgs(cobra.MaximumNArgs(1)),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			file := ""
			if len(args) == 1 {
				file = args[0]
			}
			return runGraph(cmd.Context(), f, file, cmd.Flags().Changed("format"), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", ErrUsage, err) })
	fl := cmd.Flags()
	fl.StringVar(&f.topo, "topo", "", "built-in topology spec (default minimal), or the topology name in a custom .py file")
	fl.StringVar(&f.custom, "custom", "", "Mininet custom topology file (.py); --topo names the topology")
	fl.StringVar(&f.format, "format", "dot", "output format: dot or svg (svg needs Graphviz's dot)")
	fl.StringVarP(&f.output, "output", "o", "", "write to this file instead of stdout (a .svg name implies --format svg)")
	fl.StringVarP(&f.ipbase, "ipbase", "i", "", "base IP network for host addresses (default: the file's, else 10.0.0.0/8)")
	fl.BoolVar(&f.autoMAC, "mac", false, "host MACs from their index")
	return cmd
}

func runGraph(ctx context.Context, f *graphFlags, file string, formatSet bool, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	format := strings.ToLower(f.format)
	if !formatSet && strings.EqualFold(filepath.Ext(f.output), ".svg") {
		format = "svg"
	}
	if format != "dot" && format != "svg" {
		return fmt.Errorf("%w: --format %s: use dot or svg", ErrUsage, f.format)
	}
	t, opts, err := graphTopo(ctx, f, file)
	if err != nil {
		return err
	}
	for _, w := range opts.Warnings {
		_, _ = fmt.Fprintf(stderr, "*** Warning: %s\n", w)
	}
	addr := opts.Address()
	if f.ipbase != "" {
		base, err := netip.ParsePrefix(f.ipbase)
		if err != nil || !base.Addr().Is4() {
			return fmt.Errorf("%w: --ipbase %q is not an IPv4 network like 10.0.0.0/8", ErrUsage, f.ipbase)
		}
		addr.IPBase = base
	}
	addr.AutoMAC = addr.AutoMAC || f.autoMAC
	plan, err := topo.Resolve(t, addr)
	if err == nil && (opts.Routing == string(hymn.RoutingStatic) || opts.IPv6) {
		// The addresses a routed or dual-stack run gives (docs/routing.md).
		err = routing.Address(plan, routing.AddressOptions{IPBase: addr.IPBase, Routed: opts.Routing == string(hymn.RoutingStatic),
			IPv6: opts.IPv6, IPBase6: opts.IPBase6})
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	dot := topo.DOT(plan)
	out := []byte(dot)
	if format == "svg" {
		if out, err = renderSVG(ctx, dot); err != nil {
			return err
		}
	}
	if f.output == "" {
		_, err := stdout.Write(out)
		return err
	}
	if err := os.WriteFile(f.output, out, 0o644); err != nil {
		return fmt.Errorf("writing the graph: %w", err)
	}
	return nil
}

// graphTopo loads the topology the flags and argument name.
func graphTopo(ctx context.Context, f *graphFlags, file string) (*topo.Topo, topo.FileOptions, error) {
	if file != "" && f.custom != "" {
		return nil, topo.FileOptions{}, fmt.Errorf("%w: give either a FILE or --custom, not both", ErrUsage)
	}
	if f.custom != "" {
		file = f.custom
		if !strings.EqualFold(filepath.Ext(file), ".py") {
			return nil, topo.FileOptions{}, fmt.Errorf("%w: --custom %s: expected a Mininet custom file (.py); give other files as an argument", ErrUsage, file)
		}
	}
	if file == "" {
		spec := f.topo
		if spec == "" {
			spec = "minimal"
		}
		t, err := topo.FromSpecString(spec)
		if err != nil {
			return nil, topo.FileOptions{}, fmt.Errorf("%w: --topo: %w", ErrUsage, err)
		}
		return t, topo.FileOptions{}, nil
	}
	var spec topo.Spec
	if f.topo != "" {
		s, err := topo.ParseSpec(f.topo)
		if err != nil {
			return nil, topo.FileOptions{}, fmt.Errorf("%w: --topo: %w", ErrUsage, err)
		}
		spec = s
	} else if strings.EqualFold(filepath.Ext(file), ".py") {
		return nil, topo.FileOptions{}, fmt.Errorf("%w: %s is a Mininet custom file: name one of its topologies with --topo NAME", ErrUsage, file)
	}
	t, opts, err := topo.LoadAny(ctx, file, spec)
	if err != nil {
		if errors.Is(err, topo.ErrNoPython) || ctx.Err() != nil {
			return nil, opts, err
		}
		// A missing file, a mistake in it or a topology name it lacks are
		// all the user's input.
		return nil, opts, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return t, opts, nil
}

// renderSVG runs Graphviz's dot on the graph.
func renderSVG(ctx context.Context, dot string) ([]byte, error) {
	bin, err := exec.LookPath("dot")
	if err != nil {
		return nil, fmt.Errorf("%w: SVG output needs Graphviz's dot program (apt-get install graphviz), or use --format dot", ErrNoGraphviz)
	}
	cmd := exec.CommandContext(ctx, bin, "-Tsvg")
	cmd.Stdin = strings.NewReader(dot)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("dot -Tsvg: %v: %s", err, strings.TrimSpace(errOut.String()))
	}
	return out.Bytes(), nil
}
