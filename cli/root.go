package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"

	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/topo"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Version is hymn's version, set at build time with -ldflags.
var Version = "0.1.0-dev"

type mnFlags struct {
	topo       string
	switchSpec string
	controller []string
	link       string
	links      string // --links veth|sriov[,options]
	mac        bool
	ipbase     string
	tests      []string
	verbosity  string
	clean      bool
	wait       bool
	twait      float64
	version    bool
	pre, post  string
	arp        bool
	xterms     bool
	host       string
	pin        bool
	inNS       bool
	listenPort int
	noListen   bool
	nat        string
	nodes      string
	custom     string                 // --custom FILE
	maxNodes   int                    // --max-nodes
	maxFile    string                 // --max-file-size
	customTime time.Duration          // --custom-timeout
	file       string                 // hymn run FILE
	changed    func(name string) bool // whether a flag was given
	jsonOut    bool                   // --json: --test results as JSON on stdout
	captures   []string               // --capture LINK[,dir=..][,file=..]
	ui         uiFlags                // --ui[=ADDR], --ui-read-only (ui.go)
	tc         string                 // --tc emulator|kernel (shell_tc.go)
	net        netFlags               // --routing, --ipv6, --ipbase6, --hosts (run.go)
	// action, when set (hymn measure), runs on the started network
	// instead of the tests or the shell.
	action func(ctx context.Context, net *hymn.Network) error
	// checkTopo, when set, validates the loaded topology for the action
	// before anything is built.
	checkTopo func(t *topo.Topo) error
}

// NewRootCmd returns the hymn command with every subcommand.
func NewRootCmd(stdin *os.File, stdout, stderr io.Writer) *cobra.Command {
	f := &mnFlags{}
	root := &cobra.Command{
		Use:   "hymn [mn flags]",
		Short: "hymn: a Mininet-compatible network emulator",
		Long: `hymn builds Mininet topologies from network-namespace or QEMU VM nodes joined by
veth pairs or SR-IOV VF pairs, can put its link emulator (delay, jitter,
reordering, policing, spacing, loss) on any link, runs Mininet's tests or the
mininet> shell on them and tears them down, with Mininet's flags and output.

  hymn --topo linear,4 --test pingall     build, ping all pairs, tear down
  hymn --topo tree,depth=2,fanout=3       build and open the mininet> shell
  hymn --link tc,bw=10,delay=10ms --test iperf
  hymn --topo single,2 --nodes vm --test pingall
  hymn run examples/wan.yaml --test pingall
  hymn clean                              remove what a crashed run left

Topologies: minimal, single,K, reversed,K, linear,K[,N], tree,DEPTH,FANOUT,
torus,X,Y[,N]; arguments may be named (tree,depth=2,fanout=3).
Tests (--test, several joined with '+'): pingall, pingpair, pingallfull,
pingpairfull, pingsample[,N] (N random pairs, 1000 by default: pingall for
large networks), iperf, iperfudp, all, build, none.
Switches: by default hymn builds eBPF switches (--switch bpf, freed at once
at teardown) for loop-free topologies without STP, and Linux bridges with
STP for a torus or a topology that asks for STP; the "*** Switches:" line
says which. --switch lxbr keeps Linux bridges; mn keeps Mininet's defaults.
Progress goes to stderr, as Mininet's does. hymn must run as root.`,
		Args:          cobra.ArbitraryArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%w: unexpected argument %q (mn takes only flags; see hymn --help)", ErrUsage, args[0])
			}
			return runMN(cmd.Context(), f, stdin, stdout, stderr)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", ErrUsage, err) })
	addMNFlags(root.Flags(), f)
	if MNMode() {
		setupMNMode(root, f) // mn.go
	}
	root.AddCommand(newCleanCmd(stdout, stderr), newVersionCmd(stdout), newEmulateCmd(), newRunCmd(stdin, stdout, stderr), NewGraphCmd(), NewVMCmd(), NewSRIOVCmd(), newMeasureCmd(stdin, stdout, stderr), newListCmd(stdout),
		newWorkerCmd(stdin, stdout), newClusterCmd(stdin, stdout, stderr), newExecCmd(), newKubeCmd(stdout, stderr), newUICmd(stdout)) // cluster.go, exec.go, run_kube.go, ui.go
	root.AddCommand(newPythonCmd(stdout), newPyserveCmd(stdout, stderr))      // python.go
	root.AddCommand(newTCCmd(stdout, stderr), newOVSVsctlCmd(stdout, stderr)) // tc.go, tc_ovsvsctl.go
	root.AddCommand(newCalibrateCmd(stdout))                                  // calibrate.go
	return root
}

// addMNFlags registers mn's flags (shared by the root command and run).
func addMNFlags(fl *pflag.FlagSet, f *mnFlags) {
	f.changed = fl.Changed
	fl.StringVar(&f.topo, "topo", "minimal", "topology spec: "+strings.Join(topo.BuiltinNames(), "|")+"[,arg...][,key=value...]")
	fl.StringVar(&f.switchSpec, "switch", "auto", "switch: auto[,stp=1] (the default: bpf for a loop-free topology without STP, else lxbr, with STP where the topology asks for it; the build log's \"*** Switches:\" line says which), lxbr[,stp=1] (a Linux bridge in its own namespace), ovsbr[,stp=1] (Open vSwitch in userspace mode, standalone), bpf (a MAC-learning switch in eBPF on each port's tc ingress: no bridge device, no STP, faster teardown), or ovsk|ovs|default|user[,stp=1,failMode=secure|standalone,protocols=OpenFlow13] (Open vSwitch OpenFlow switches connected to the controllers)")
	fl.StringArrayVar(&f.controller, "controller", nil, "controller (repeatable): default|ref|ovsc|remote[,ip=IP][,port=PORT]|none; without it, OpenFlow switches get default (ovs-testcontroller) and other switches none")
	fl.StringVar(&f.link, "link", "default", "link type: default (veth), tc[,bw=MBIT,delay=T,jitter=T,loss=PCT,max_queue_size=N] or emu[,emulator params][,emulator=afpacket|dpdk] (hymn's emulator on every link; emulator=dpdk: DPDK ports, SR-IOV links only)")
	fl.StringVar(&f.links, "links", "veth", "link backend: veth, or sriov[,pairs=PF:PF,vlans=400-4094,inventory=FILE,sim=auto|on|off,emulator=afpacket|dpdk] for SR-IOV VF pairs (simulated NIC without hardware); emulator=dpdk runs emulated VF links on DPDK ports (net_af_packet on simulated VFs, the VF's PMD under vfio-pci on hardware; needs a build with -tags dpdk)")
	fl.BoolVar(&f.mac, "mac", false, "automatically set host MACs from their index (00:00:00:00:00:01, ...)")
	fl.StringVarP(&f.ipbase, "ipbase", "i", topo.DefaultIPBase.String(), "base IP network for hosts")
	fl.StringArrayVar(&f.tests, "test", nil, "test to run: pingall|pingpair|pingallfull|pingpairfull|pingsample[,N]|iperf|iperfudp|all|build|none (repeatable, or joined with '+'); without it, the mininet> shell")
	fl.StringVarP(&f.verbosity, "verbosity", "v", "info", "verbosity: "+strings.Join(mnlog.LevelNames, "|"))
	fl.BoolVarP(&f.clean, "clean", "c", false, "clean up what crashed hymn runs left and exit")
	fl.BoolVarP(&f.wait, "wait", "w", false, "wait for switches to forward before running tests")
	fl.Float64VarP(&f.twait, "twait", "t", 0, "wait at most this many seconds for switches to forward")
	fl.BoolVar(&f.version, "version", false, "print the version and exit")
	fl.StringVar(&f.pre, "pre", "", "shell script (mininet> commands) to run before the tests")
	fl.StringVar(&f.post, "post", "", "shell script (mininet> commands) to run after the tests")
	fl.BoolVar(&f.arp, "arp", false, "set every host's ARP table statically")
	fl.BoolVarP(&f.xterms, "xterms", "x", false, "open a terminal (tmux window) per node")
	fl.StringVar(&f.host, "host", "proc", "host: proc, or cfs|rt[,cpu=F] for CPU-limited hosts (cgroups)")
	fl.BoolVar(&f.pin, "pin", false, "pin hosts to CPU cores round robin (needs --host cfs or rt)")
	fl.StringVar(&f.nodes, "nodes", "netns", "backend of the hosts: netns (network namespaces) or vm (QEMU VMs; KVM when usable, else TCG)")
	fl.StringVar(&f.nat, "nat", "", "add a NAT node (nat0) on the first switch, toward the root namespace; hosts route through it")
	fl.Lookup("nat").NoOptDefVal = "nat0"
	fl.BoolVar(&f.inNS, "innamespace", false, "OpenFlow switches in a namespace of their own (hymn's OpenFlow switches always are; the controller stays on 127.0.0.1)")
	fl.IntVar(&f.listenPort, "listenport", 6654, "accepted for compatibility: no effect without OpenFlow")
	fl.BoolVar(&f.noListen, "nolistenport", false, "accepted for compatibility: no effect without OpenFlow")
	fl.BoolVar(&f.jsonOut, "json", false, "print --test results (and measure's) as JSON on stdout; Mininet's lines stay on stderr")
	addUIFlags(fl, &f.ui)
	addTCFlag(fl, &f.tc)    // shell_tc.go
	addNetFlags(fl, &f.net) // run.go
	fl.StringArrayVar(&f.captures, "capture", nil, "capture a link to pcapng: NODE1-NODE2[,dir=a>b|b>a|both][,file=F.pcapng][,limit=BYTES] (repeatable)")
	fl.StringVar(&f.custom, "custom", "", "topology file: a Mininet custom .py file (then --topo names one of its topos), a MiniEdit .mn file or a hymn YAML/JSON file")
	fl.IntVar(&f.maxNodes, "max-nodes", 0, "refuse topologies with more nodes (0: what the machine's available memory holds, about 1 MiB per node; -1: no limit)")
	fl.StringVar(&f.maxFile, "max-file-size", "16M", "refuse topology files (and custom-topology results) larger than this (bytes, or with K, M, G)")
	fl.DurationVar(&f.customTime, "custom-timeout", topo.DefaultCustomTimeout, "stop a Mininet custom .py file that runs longer than this")
}

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print hymn's version",
		Args:  usageArgs(cobra.NoArgs),
		Run:   func(*cobra.Command, []string) { _, _ = fmt.Fprint(stdout, versionText()) },
	}
}

// knownTests are the --test names (runTest says what each runs).
var knownTests = []string{"pingall", "pingpair", "pingallfull", "pingpairfull", "pingsample", "iperf", "iperfudp", "all", "build", "none"}

// pingSampleSize reads pingsample's optional pair count (pingsample,N):
// ok is false for another test, err for a count that is not a positive
// number.
func pingSampleSize(name string) (pairs int, ok bool, err error) {
	rest, found := strings.CutPrefix(name, "pingsample")
	if !found || (rest != "" && rest[0] != ',') {
		return 0, false, nil
	}
	if rest == "" {
		return hymn.DefaultPingSample, true, nil
	}
	pairs, err = strconv.Atoi(rest[1:])
	if err != nil || pairs < 1 {
		return 0, true, fmt.Errorf("%w: test %s: the pair count must be a positive number", ErrUsage, name)
	}
	return pairs, true, nil
}

func parseTests(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		for _, t := range strings.Split(v, "+") {
			name := strings.ToLower(strings.TrimSpace(t))
			if _, ok, err := pingSampleSize(name); ok {
				if err != nil {
					return nil, err
				}
				out = append(out, name)
				continue
			}
			if !slices.Contains(knownTests, name) {
				return nil, fmt.Errorf("%w: test %s is unknown - please specify one of %s", ErrUsage, t, strings.Join(knownTests, ", "))
			}
			out = append(out, name)
		}
	}
	return out, nil
}

func runMN(ctx context.Context, f *mnFlags, stdin *os.File, stdout, stderr io.Writer) error {
	if f.version {
		_, _ = fmt.Fprint(stdout, versionText())
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
	// The live view's flags are judged before anything is loaded or
	// built: a refusal once the network stands would have built it for
	// nothing (startLiveView judges them again, for its warning).
	if _, err := f.ui.check(); err != nil { // ui.go
		return err
	}
	start := time.Now()
	lim, err := f.limits()
	if err != nil {
		return err
	}
	t, fileOpts, err := loadTopology(ctx, f, lim, lg)
	if errors.Is(err, context.Canceled) {
		// Ctrl-C or SIGTERM while a custom file ran: as during a run.
		lg.Info("\n\nKeyboard Interrupt. Shutting down and cleaning up...\n\n")
		return nil
	}
	if err != nil {
		return err
	}
	sw, err := parseSwitchSpec(f.switchSpec, f.inNS, lg) // mn.go
	if err != nil {
		return err
	}
	controllers, err := parseControllers(f.controller, sw, t)
	if err != nil {
		return err
	}
	if err := ApplyLinkSpec(t, f.link); err != nil {
		return err
	}
	base, err := netip.ParsePrefix(f.ipbase)
	if err != nil || !base.Addr().Is4() {
		return fmt.Errorf("%w: --ipbase %q is not an IPv4 network like 10.0.0.0/8", ErrUsage, f.ipbase)
	}
	// A topology file's own options apply unless the command line says otherwise.
	if fileOpts.IPBase.IsValid() && !f.changed("ipbase") {
		base = fileOpts.IPBase
	}
	if fileOpts.AutoMAC && !f.changed("mac") {
		f.mac = true
	}
	tests, err := parseTests(f.tests)
	if err != nil {
		return err
	}
	// !(x >= 0) also catches NaN; a year bounds the conversion to a Duration.
	if !(f.twait >= 0) || f.twait > 365*24*3600 {
		return fmt.Errorf("%w: --twait %v: a number of seconds from 0 to a year", ErrUsage, f.twait)
	}
	if err := checkResultFlags(f, tests, t); err != nil {
		return err
	}
	if err := hymn.CheckRoot(); err != nil {
		return err
	}
	for _, t := range tests {
		if t == "iperf" || t == "iperfudp" || t == "all" {
			if err := hymn.CheckTools("iperf3"); err != nil {
				return err
			}
		}
	}
	for flag, script := range map[string]string{"--pre": f.pre, "--post": f.post} {
		if script == "" {
			continue
		}
		st, err := os.Stat(script)
		if err != nil {
			return fmt.Errorf("%w: %s %s: %v", ErrUsage, flag, script, errors.Unwrap(err))
		}
		// A device (/dev/zero) or a huge file would never finish reading.
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%w: %s %s: not a regular file", ErrUsage, flag, script)
		}
		if st.Size() > lim.MaxFileSize {
			return fmt.Errorf("%w: %s %s: larger than the limit of %d bytes (set --max-file-size to raise it)", ErrUsage, flag, script, lim.MaxFileSize)
		}
	}
	if f.nat != "" {
		// Mininet's --nat takes k=v options for its NAT class; hymn's NAT
		// node needs none, so anything but a name is ignored with a warning.
		name := "nat0"
		if spec, err := topo.ParseSpec(f.nat); err == nil && spec.Name != "nat0" {
			lg.Warningf("*** --nat %s: NAT options are ignored; the NAT node is nat0\n", f.nat)
		}
		if err := hymn.AddNAT(t, name); err != nil {
			return fmt.Errorf("%w: --nat: %v", ErrUsage, err)
		}
	}
	hostOpts, err := parseHost(f.host, f.pin)
	if err != nil {
		return err
	}
	nodeBackend, err := hymn.ParseNodeBackend(f.nodes)
	if err != nil {
		return fmt.Errorf("%w: --nodes: %v", ErrUsage, err)
	}
	linkBackend, sriovCfg, err := hymn.ParseLinkBackend(f.links)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	opts := hymn.Options{IPBase: base, AutoMAC: f.mac, STP: sw.stp, Log: lg, CPU: hostOpts, Links: linkBackend, SRIOV: &sriovCfg,
		Nodes: nodeBackend, Switch: sw.kind, Controllers: controllers, FailMode: sw.failMode, Protocols: sw.protocols, MaxNodes: lim.MaxNodes}
	if err := f.net.options(f, fileOpts, &opts); err != nil { // run.go
		return err
	}
	if err := hymn.CheckLinks(opts); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	net, err := hymn.New(t, opts)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if limit := applyMemoryLimit(net, f); limit > 0 { // memlimit.go
		lg.Debugf("*** soft memory limit %d MiB\n", limit>>20)
	}
	r := &mnRun{net: net, lg: lg, flags: f, tests: tests, stdin: stdin, stdout: stdout}
	err = r.run(ctx)
	if errors.Is(err, context.Canceled) {
		lg.Info("\n\nKeyboard Interrupt. Shutting down and cleaning up...\n\n")
		return nil
	}
	if err != nil {
		lg.Errorf("%s\nCaught exception. Cleaning up...\n\nException: %v\n%s\n", strings.Repeat("-", 80), err, strings.Repeat("-", 80))
		return errReported
	}
	lg.Infof("completed in %0.3f seconds\n", time.Since(start).Seconds())
	return nil
}

// errReported is returned when the error has been printed already
// (Mininet's "Caught exception" block): the command exits 1 quietly.
var errReported = errors.New("reported")

// errReportedUsage is errReported for a usage error (exit status 2), as
// hymn-kube's under hymn run --kube.
var errReportedUsage = errors.New("reported usage error")

// mnRun is one run of the mn-style command: build, pre script, start,
// tests or the shell, post script, stop.
type mnRun struct {
	net    *hymn.Network
	lg     *mnlog.Logger
	flags  *mnFlags
	tests  []string
	stdin  *os.File
	stdout io.Writer
}

func (r *mnRun) run(ctx context.Context) (err error) {
	intr := interrupterFrom(ctx)
	defer func() {
		if stopErr := r.net.Stop(); err == nil {
			err = stopErr
		}
	}()
	sh := &shell{net: r.net, lg: r.lg, stdout: r.stdout, intr: intr, tcMode: r.flags.tc}
	if err := r.net.Build(ctx); err != nil {
		return err
	}
	if err := startCaptures(r.net, r.flags.captures); err != nil {
		return err
	}
	stopUI, err := startLiveView(r.net, r.flags.ui, r.lg) // ui.go
	if err != nil {
		return err
	}
	defer stopUI()
	if r.flags.arp {
		if err := r.net.StaticARP(ctx); err != nil {
			return err
		}
	}
	if r.flags.pre != "" {
		sh.runScript(ctx, r.flags.pre)
	}
	if err := r.net.Start(ctx); err != nil {
		return err
	}
	wait := r.flags.wait || r.flags.twait > 0 || (len(r.tests) > 0 && r.tests[0] != "none")
	if wait {
		wctx := ctx
		if r.flags.twait > 0 {
			var cancelWait context.CancelFunc
			wctx, cancelWait = context.WithTimeout(ctx, time.Duration(r.flags.twait*float64(time.Second)))
			defer cancelWait()
		}
		if err := r.net.WaitConnected(wctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	}
	if r.flags.xterms {
		for _, n := range r.net.Plan().Nodes {
			if err := sh.openTerminal(n.Name, ""); err != nil {
				r.lg.Warningf("*** %v\n", err)
				break
			}
		}
	}
	if r.flags.action != nil {
		if err := r.flags.action(ctx, r.net); err != nil {
			return err
		}
	} else if len(r.tests) > 0 && r.flags.jsonOut {
		if err := runTestsJSON(ctx, r.net, r.tests, r.stdout); err != nil {
			return err
		}
	} else if len(r.tests) > 0 {
		for _, t := range r.tests {
			if err := runTest(ctx, r.net, t); err != nil {
				return err
			}
		}
	} else {
		sh.runShell(ctx, r.stdin)
	}
	if r.flags.post != "" {
		sh.runScript(ctx, r.flags.post)
	}
	return ctx.Err()
}

func runTest(ctx context.Context, net *hymn.Network, name string) error {
	if pairs, ok, err := pingSampleSize(name); ok && err == nil {
		_, _, err = net.PingSample(ctx, pairs, uint64(time.Now().UnixNano()), 0)
		return err
	}
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
	case "iperfudp":
		// Mininet maps this to a method it no longer has; run what was meant.
		_, err = net.IperfUDP(ctx, "", "", "", 0)
	case "all":
		if _, err = net.PingAll(ctx, 0); err == nil {
			_, err = net.Iperf(ctx, "", "", 0)
		}
	}
	return err
}

// Execute runs the hymn command and returns the process exit status.
func Execute(ctx context.Context, args []string, stdin *os.File, stdout, stderr io.Writer) int {
	if err := emulator.CheckCPUIdleEnv(); err != nil {
		_, _ = fmt.Fprintf(stderr, "hymn: %s\n", err)
		return 2
	}
	root := NewRootCmd(stdin, stdout, stderr)
	root.SetArgs(args)
	// Ctrl-C cancels the command's context; the mininet> shell narrows it
	// to the node command it is running.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	intr, stopWatching := watchInterrupts(cancel)
	defer stopWatching()
	err := root.ExecuteContext(withInterrupter(ctx, intr))
	if err == nil {
		return 0
	}
	if errors.Is(err, errReported) {
		return 1
	}
	if errors.Is(err, errReportedUsage) {
		return 2
	}
	msg := err.Error()
	if errors.Is(err, ErrUsage) {
		msg = strings.TrimPrefix(msg, ErrUsage.Error()+": ")
		_, _ = fmt.Fprintf(stderr, "hymn: %s\n", oneLine(msg))
		return 2
	}
	if errors.Is(err, hymn.ErrNotRoot) || errors.Is(err, hymn.ErrMissingTool) {
		_, _ = fmt.Fprintf(stderr, "hymn: %s\n", msg)
		return 2
	}
	_, _ = fmt.Fprintf(stderr, "hymn: error: %s\n", msg)
	return 1
}

// oneLine keeps a usage error to one line: the first problem, and how
// many more there are (a file with several mistakes reports each on its
// own line of the joined error).
func oneLine(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	if len(lines) == 1 {
		return lines[0]
	}
	return fmt.Sprintf("%s (and %d more problems)", lines[0], len(lines)-1)
}

// parseHost reads --host: proc (plain hosts) or cfs|rt[,cpu=F] for
// CPU-limited hosts; --pin needs one of the latter, as in Mininet.
func parseHost(spec string, pin bool) (*hymn.CPUOptions, error) {
	s, err := topo.ParseSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: --host: %v", ErrUsage, err)
	}
	switch s.Name {
	case "proc":
		if pin {
			return nil, fmt.Errorf("%w: --pin needs CPU-limited hosts: add --host cfs (or rt)", ErrUsage)
		}
		if len(s.Args)+len(s.Kwargs) > 0 {
			return nil, fmt.Errorf("%w: --host proc takes no options", ErrUsage)
		}
		return nil, nil
	case "cfs", "rt":
	default:
		return nil, fmt.Errorf("%w: --host %s: unknown host type; use proc, cfs or rt", ErrUsage, s.Name)
	}
	opts := &hymn.CPUOptions{Pin: pin}
	for _, kv := range s.Kwargs {
		switch kv.Key {
		case "cpu":
			f, err := strconv.ParseFloat(kv.Value, 64)
			if err != nil || !(f > 0 && f <= 1) {
				return nil, fmt.Errorf("%w: --host %s: cpu must be a fraction in (0, 1], got %q", ErrUsage, spec, kv.Value)
			}
			opts.Fraction = f
		default:
			return nil, fmt.Errorf("%w: --host %s: unknown option %q (cfs and rt take cpu)", ErrUsage, spec, kv.Key)
		}
	}
	if len(s.Args) > 0 {
		return nil, fmt.Errorf("%w: --host %s: unexpected argument %q", ErrUsage, spec, s.Args[0])
	}
	return opts, nil
}
