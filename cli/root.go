package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"

	"strings"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/internal/mnlog"
	"github.com/hymn-net/hymn/topo"
	"github.com/spf13/cobra"
)

// Version is hymn's version, set at build time with -ldflags.
var Version = "0.1.0-dev"

type mnFlags struct {
	topo       string
	switchSpec string
	controller []string
	link       string
	mac        bool
	ipbase     string
	tests      []string
	verbosity  string
	clean      bool
	wait       bool
	version    bool
}

// NewRootCmd returns the hymn command with every subcommand.
func NewRootCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &mnFlags{}
	root := &cobra.Command{
		Use:   "hymn [mn flags]",
		Short: "hymn: a Mininet-compatible network emulator",
		Long: `hymn builds Mininet topologies from network namespaces joined by veth pairs,
runs Mininet's tests on them and tears them down, with Mininet's flags and
Mininet's output lines.

  hymn --topo linear,4 --test pingall     build, ping all pairs, tear down
  hymn --topo tree,depth=2,fanout=3 --test iperf
  hymn clean                              remove what a crashed run left

Topologies: minimal, single,K, reversed,K, linear,K[,N], tree,DEPTH,FANOUT,
torus,X,Y[,N]; arguments may be named (tree,depth=2,fanout=3).
Tests (--test, several joined with '+'): pingall, pingpair, pingallfull,
pingpairfull, iperf, all, build, none.
Progress goes to stderr, as Mininet's does. hymn must run as root.`,
		Args:          cobra.ArbitraryArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%w: unexpected argument %q (mn takes only flags; see hymn --help)", ErrUsage, args[0])
			}
			return runMN(cmd.Context(), f, stdout, stderr)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", ErrUsage, err) })
	fl := root.Flags()
	fl.StringVar(&f.topo, "topo", "minimal", "topology spec: "+strings.Join(topo.BuiltinNames(), "|")+"[,arg...][,key=value...]")
	fl.StringVar(&f.switchSpec, "switch", "lxbr", "switch: lxbr[,stp=1] (a Linux bridge in its own namespace)")
	fl.StringArrayVar(&f.controller, "controller", nil, "controller: none (OpenFlow controllers are not supported: Linux bridges learn by themselves)")
	fl.StringVar(&f.link, "link", "default", "link type: default (veth)")
	fl.BoolVar(&f.mac, "mac", false, "automatically set host MACs from their index (00:00:00:00:00:01, ...)")
	fl.StringVarP(&f.ipbase, "ipbase", "i", topo.DefaultIPBase.String(), "base IP network for hosts")
	fl.StringArrayVar(&f.tests, "test", nil, "test to run: pingall|pingpair|pingallfull|pingpairfull|iperf|all|build|none (repeatable, or joined with '+')")
	fl.StringVarP(&f.verbosity, "verbosity", "v", "info", "verbosity: "+strings.Join(mnlog.LevelNames, "|"))
	fl.BoolVarP(&f.clean, "clean", "c", false, "clean up what crashed hymn runs left and exit")
	fl.BoolVarP(&f.wait, "wait", "w", false, "wait for switches to forward before running tests")
	fl.BoolVar(&f.version, "version", false, "print the version and exit")
	root.AddCommand(newCleanCmd(stdout, stderr), newVersionCmd(stdout), newEmulateCmd())
	return root
}

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print hymn's version",
		Args:  cobra.NoArgs,
		Run:   func(*cobra.Command, []string) { fmt.Fprintln(stdout, Version) },
	}
}

// knownTests maps the --test names to what they run.
var knownTests = []string{"pingall", "pingpair", "pingallfull", "pingpairfull", "iperf", "all", "build", "none"}

func parseTests(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		for _, t := range strings.Split(v, "+") {
			name := strings.ToLower(strings.TrimSpace(t))
			switch name {
			case "pingall", "pingpair", "pingallfull", "pingpairfull", "iperf", "all", "build", "none":
				out = append(out, name)
			default:
				return nil, fmt.Errorf("%w: test %s is unknown - please specify one of %s", ErrUsage, t, strings.Join(knownTests, ", "))
			}
		}
	}
	return out, nil
}

// parseSwitch accepts lxbr with its stp option.
func parseSwitch(spec string) (stp bool, err error) {
	s, err := topo.ParseSpec(spec)
	if err != nil {
		return false, fmt.Errorf("%w: --switch: %v", ErrUsage, err)
	}
	switch s.Name {
	case "lxbr", "default":
	case "ovs", "ovsk", "ovsbr", "user", "ivs":
		return false, fmt.Errorf("%w: --switch %s: Open vSwitch and user-space OpenFlow switches are not supported yet; use --switch lxbr (a Linux bridge)", ErrUsage, s.Name)
	default:
		return false, fmt.Errorf("%w: --switch %s: unknown switch; use lxbr", ErrUsage, s.Name)
	}
	if len(s.Args) > 0 {
		return false, fmt.Errorf("%w: --switch %s: unexpected argument %q", ErrUsage, spec, s.Args[0])
	}
	for _, kv := range s.Kwargs {
		if kv.Key != "stp" {
			return false, fmt.Errorf("%w: --switch %s: unknown option %q (lxbr takes stp)", ErrUsage, spec, kv.Key)
		}
		stp = kv.Value == "1" || strings.EqualFold(kv.Value, "true")
	}
	return stp, nil
}

func checkControllers(cs []string) error {
	for _, c := range cs {
		name := strings.SplitN(c, ",", 2)[0]
		if name != "none" {
			return fmt.Errorf("%w: --controller %s: OpenFlow controllers are not supported yet; hymn's Linux bridges forward without one (use --controller none, the default)", ErrUsage, name)
		}
	}
	return nil
}

func runMN(ctx context.Context, f *mnFlags, stdout, stderr io.Writer) error {
	if f.version {
		fmt.Fprintln(stdout, Version)
		return nil
	}
	level, err := mnlog.ParseLevel(f.verbosity)
	if err != nil {
		return fmt.Errorf("%w: -v: %v", ErrUsage, err)
	}
	lg := mnlog.New(stderr, level)
	if level > mnlog.Output {
		lg.Logf(mnlog.Warning, "*** WARNING: selected verbosity level (%s) will hide CLI output!\nPlease restart hymn with -v [debug, info, output].\n", f.verbosity)
	}
	if f.clean {
		return runClean(lg, false)
	}
	start := time.Now()
	t, err := topo.FromSpecString(f.topo)
	if err != nil {
		return fmt.Errorf("%w: --topo: %v", ErrUsage, err)
	}
	stp, err := parseSwitch(f.switchSpec)
	if err != nil {
		return err
	}
	if err := checkControllers(f.controller); err != nil {
		return err
	}
	if f.link != "default" {
		return fmt.Errorf("%w: --link %s: only the default veth link is supported yet", ErrUsage, f.link)
	}
	base, err := netip.ParsePrefix(f.ipbase)
	if err != nil || !base.Addr().Is4() {
		return fmt.Errorf("%w: --ipbase %q is not an IPv4 network like 10.0.0.0/8", ErrUsage, f.ipbase)
	}
	tests, err := parseTests(f.tests)
	if err != nil {
		return err
	}
	if len(tests) == 0 {
		lg.Logf(mnlog.Output, "*** The interactive mininet> shell is not part of this version of hymn yet.\n*** Run a test instead, e.g. hymn --topo %s --test pingall\n", f.topo)
		return nil
	}
	if err := hymn.CheckRoot(); err != nil {
		return err
	}
	for _, t := range tests {
		switch t {
		case "pingall", "pingpair", "pingallfull", "pingpairfull", "all":
			if err := hymn.CheckTools("ping"); err != nil {
				return err
			}
		}
		if t == "iperf" || t == "all" {
			if err := hymn.CheckTools("iperf3"); err != nil {
				return err
			}
		}
	}
	net, err := hymn.New(t, hymn.Options{IPBase: base, AutoMAC: f.mac, STP: stp, Log: lg})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	err = runNetwork(ctx, net, tests, f.wait || tests[0] != "none")
	if errors.Is(err, context.Canceled) {
		lg.Info("\n\nKeyboard Interrupt. Shutting down and cleaning up...\n\n")
		return nil
	}
	if err != nil {
		return err
	}
	lg.Infof("completed in %0.3f seconds\n", time.Since(start).Seconds())
	return nil
}

func runNetwork(ctx context.Context, net *hymn.Network, tests []string, wait bool) (err error) {
	defer func() {
		if stopErr := net.Stop(); err == nil {
			err = stopErr
		}
	}()
	if err := net.Start(ctx); err != nil {
		return err
	}
	if wait {
		if err := net.WaitConnected(ctx); err != nil {
			return err
		}
	}
	for _, t := range tests {
		if err := runTest(ctx, net, t); err != nil {
			return err
		}
	}
	return nil
}

func runTest(ctx context.Context, net *hymn.Network, name string) error {
	var err error
	switch name {
	case "pingall":
		_, err = net.PingAll(ctx, 0)
	case "pingpair":
		_, err = net.PingPair(ctx)
	case "pingallfull":
		_, err = net.PingAllFull(ctx, 0)
	case "pingpairfull":
		_, err = net.PingPairFull(ctx)
	case "iperf":
		_, err = net.Iperf(ctx, "", "", 0)
	case "all":
		if _, err = net.PingAll(ctx, 0); err == nil {
			_, err = net.Iperf(ctx, "", "", 0)
		}
	}
	return err
}

// Execute runs the hymn command and returns the process exit status.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := NewRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	msg := err.Error()
	if errors.Is(err, ErrUsage) {
		msg = strings.TrimPrefix(msg, ErrUsage.Error()+": ")
		fmt.Fprintf(stderr, "hymn: %s\n", msg)
		return 2
	}
	if errors.Is(err, hymn.ErrNotRoot) || errors.Is(err, hymn.ErrMissingTool) {
		fmt.Fprintf(stderr, "hymn: %s\n", msg)
		return 2
	}
	fmt.Fprintf(stderr, "hymn: error: %s\n", msg)
	return 1
}
