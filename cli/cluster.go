package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/cluster"
	"github.com/hymn-net/hymn/internal/fileio"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/partition"
	"github.com/hymn-net/hymn/topo"
	"github.com/hymn-net/hymn/ui"
	"github.com/spf13/cobra"
)

// maxSpecFile bounds a worker's spec file (it holds the topology).
const maxSpecFile = 64 << 20

type workerFlags struct {
	spec         string
	address      string
	switchSpec   string
	nodes        string
	buildTimeout time.Duration
}

// newWorkerCmd returns "hymn worker": one part of a topology split over
// several machines, driven by a coordinator over stdin/stdout.
func newWorkerCmd(stdin io.Reader, stdout io.Writer) *cobra.Command {
	f := &workerFlags{}
	cmd := &cobra.Command{
		Use:   "worker --spec FILE [--address IP]",
		Short: "Run one worker's part of a topology split over machines (driven by hymn cluster)",
		Long: `hymn worker runs one part of a topology that hymn cluster split over several
machines (or pods): the part's nodes and links, built as on a single machine,
and its side of every cut link as a VXLAN tunnel to the peer worker.

It speaks JSON lines: on stdout it reports
  {"event":"ready","worker":0,"address":"10.251.0.1","run":"...","nodes":[...],"links":3,"ms":420}
once the part is built; it then reads commands on stdin:
  {"cmd":"link","id":1,"peers":["10.251.0.1","10.251.0.2"]}   make the cut links -> "linked"
  {"cmd":"stats","id":2}                                      tunnel counters   -> "stats"
  {"cmd":"exec","id":3,"node":"h1","argv":["ping","-c1","10.0.0.2"],"timeout":10}  -> "exec"
  {"cmd":"api","id":4,"method":"GET","target":"/api/stats"}   the live view's API -> "api"
  {"cmd":"stop"}
A bad command gets {"event":"error",...} and the worker goes on; a failure
that leaves the part unusable is a "fatal" error. On stop, the end of stdin,
SIGTERM or SIGINT it tears everything down and reports "stopped": nothing is
left behind.

The spec (--spec, JSON) holds the whole topology, the worker's number and the
node-to-worker assignment; hymn cluster writes it. --address is where the
peers' tunnels reach this worker (default: its first global IPv4 address).
The underlay toward the peers needs an MTU of 1550 for 1500-byte links.`,
		Args:          usageArgs(cobra.NoArgs),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWorker(cmd.Context(), f, stdin, stdout)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", ErrUsage, err) })
	fl := cmd.Flags()
	fl.StringVar(&f.spec, "spec", "", "the part's specification (JSON, written by hymn cluster)")
	fl.StringVar(&f.address, "address", "", "this worker's address for the peers' tunnels (default: its first global IPv4 address)")
	fl.StringVar(&f.switchSpec, "switch", "lxbr", "switch kind, as hymn --switch (lxbr, ovsbr or bpf)")
	fl.StringVar(&f.nodes, "nodes", "netns", "backend of the hosts, as hymn --nodes")
	fl.DurationVar(&f.buildTimeout, "build-timeout", 5*time.Minute, "how long building the part may take")
	return cmd
}

func runWorker(ctx context.Context, f *workerFlags, stdin io.Reader, stdout io.Writer) error {
	if f.spec == "" {
		return fmt.Errorf("%w: worker: --spec FILE is required", ErrUsage)
	}
	data, err := fileio.ReadLimited(f.spec, maxSpecFile)
	if err != nil {
		return fmt.Errorf("%w: worker: --spec: %v", ErrUsage, err)
	}
	spec, err := cluster.LoadSpec(data)
	if err != nil {
		return fmt.Errorf("%w: worker: %s: %v", ErrUsage, f.spec, err)
	}
	if _, err := spec.Resolve(); err != nil {
		return fmt.Errorf("%w: worker: %s: %v", ErrUsage, f.spec, err)
	}
	opts := cluster.WorkerOptions{Spec: spec, BuildTimeout: f.buildTimeout,
		// The coordinator's live view reads and acts through it; the
		// coordinator logs the actions.
		View: func(n *hymn.Network) (http.Handler, func(), error) { return ui.Handler(n, ui.Options{}) }}
	if f.address != "" {
		if opts.Address, err = netip.ParseAddr(f.address); err != nil || !opts.Address.IsGlobalUnicast() && !opts.Address.IsPrivate() {
			return fmt.Errorf("%w: worker: --address %q is not a unicast IP address", ErrUsage, f.address)
		}
	}
	if f.buildTimeout <= 0 {
		return fmt.Errorf("%w: worker: --build-timeout must be positive", ErrUsage)
	}
	if opts.Net.Switch, err = hymn.ParseSwitchKind(f.switchSpec); err != nil {
		return fmt.Errorf("%w: worker: --switch: %v", ErrUsage, err)
	}
	if opts.Net.Switch == hymn.SwitchOVS {
		// Each worker runs its own controller for its part's switches
		// (Mininet's default, a learning switch): a controller's reach
		// across workers is not needed for that.
		c, err := topo.New().ParseControllerFor("c0", "default")
		if err != nil {
			return err
		}
		opts.Net.Controllers = []topo.Controller{*c}
	}
	if opts.Net.Nodes, err = hymn.ParseNodeBackend(f.nodes); err != nil {
		return fmt.Errorf("%w: worker: --nodes: %v", ErrUsage, err)
	}
	if err := hymn.CheckRoot(); err != nil {
		return err
	}
	if err := cluster.RunWorker(ctx, opts, stdin, stdout); err != nil {
		return fmt.Errorf("worker %d: %w", spec.Worker, err)
	}
	return nil
}

// clusterWorkerArgs checks cluster run's --switch and --nodes and returns
// them as every worker's flags (none for the defaults).
func clusterWorkerArgs(f *clusterFlags) ([]string, error) {
	if _, err := hymn.ParseSwitchKind(f.switchSpec); err != nil {
		return nil, fmt.Errorf("%w: cluster run: --switch: %v", ErrUsage, err)
	}
	if _, err := hymn.ParseNodeBackend(f.nodes); err != nil {
		return nil, fmt.Errorf("%w: cluster run: --nodes: %v", ErrUsage, err)
	}
	var args []string
	if f.switchSpec != "lxbr" {
		args = append(args, "--switch", f.switchSpec)
	}
	if f.nodes != "netns" {
		args = append(args, "--nodes", f.nodes)
	}
	return args, nil
}

type clusterFlags struct {
	topo    string
	where   string
	slack   int
	port    int
	vniBase int
	tests   []string
	jsonOut bool
	ipbase  string
	mac     bool
	timeout time.Duration
	worker  string
	// --cluster kube:N
	image, kubeconfig, namespace, pull string
	// passed to every worker
	switchSpec, nodes string
	ui                uiFlags
}

// newClusterCmd returns "hymn cluster": split a topology over workers
// (split), or run it on them (run).
func newClusterCmd(stdin *os.File, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Run one topology across several workers, cut links as VXLAN tunnels",
		Long: `hymn cluster splits a topology over several workers (machines or pods) and
runs it there: each worker builds its part as hymn does on one machine, and
every link between parts becomes a VXLAN tunnel (one VNI per link) with its
emulator, if any, on the sending side of each direction.

  hymn cluster split --topo linear,100 --workers 4          the split, as JSON
  hymn cluster run --topo linear,4 --cluster local:2 --test pingall
  hymn cluster run net.yaml --cluster local:3 --test pingall+stats --json

--cluster local:N runs N workers as processes of this machine, each in a
network namespace of its own ("machine") on a shared bridge: the same
worker, protocol and tunnels a cluster of machines uses. --cluster kube:N
runs them as privileged pods through kubectl (--image, --kubeconfig,
--namespace); the pods are deleted at the end. Placement hints
in the topology file (placement:) pin nodes or keep groups together.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("%w: cluster: give a subcommand (split or run; see hymn cluster --help)", ErrUsage)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", ErrUsage, err) })
	cmd.AddCommand(newClusterSplitCmd(stdout), newClusterRunCmd(stdin, stdout, stderr))
	return cmd
}

func addClusterTopoFlags(c *cobra.Command, f *clusterFlags) {
	fl := c.Flags()
	fl.StringVar(&f.topo, "topo", "", "built-in topology spec (linear,4...), when no FILE is given")
	fl.IntVar(&f.slack, "slack", 0, "nodes a worker may hold beyond an even share (for crowded placement hints)")
	fl.StringVarP(&f.ipbase, "ipbase", "i", "", "base IP network for hosts (default: the file's, else 10.0.0.0/8)")
	fl.BoolVar(&f.mac, "mac", false, "host MACs from their index")
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", ErrUsage, err) })
}

// clusterTopology returns the topology source a spec carries: a file's
// contents (validated here, with positions) or a built-in spec.
func clusterTopology(f *clusterFlags, args []string, sub string) (source, file string, err error) {
	switch {
	case len(args) == 1 && f.topo != "":
		return "", "", fmt.Errorf("%w: cluster %s: give FILE or --topo, not both", ErrUsage, sub)
	case len(args) == 1:
		switch strings.ToLower(filepath.Ext(args[0])) {
		case ".py", ".mn":
			return "", "", fmt.Errorf("%w: cluster %s: %s: only hymn's YAML/JSON files and built-in topologies run across workers so far", ErrUsage, sub, args[0])
		}
		data, err := fileio.ReadLimited(args[0], topo.DefaultMaxFileSize)
		if err != nil {
			return "", "", fmt.Errorf("%w: cluster %s: %v", ErrUsage, sub, err)
		}
		if _, _, err := topo.Load(args[0], data); err != nil {
			return "", "", fmt.Errorf("%w: %v", ErrUsage, err)
		}
		return string(data), args[0], nil
	case f.topo != "":
		if _, err := topo.FromSpecString(f.topo); err != nil {
			return "", "", fmt.Errorf("%w: cluster %s: --topo: %v", ErrUsage, sub, err)
		}
		return f.topo, "", nil
	}
	return "", "", fmt.Errorf("%w: cluster %s: give a topology FILE or --topo SPEC", ErrUsage, sub)
}

func checkIPBase(s string) error {
	if s == "" {
		return nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		return fmt.Errorf("%w: --ipbase %q is not an IPv4 network like 10.0.0.0/8", ErrUsage, s)
	}
	return nil
}

func newClusterSplitCmd(stdout io.Writer) *cobra.Command {
	f := &clusterFlags{}
	var workers int
	cmd := &cobra.Command{
		Use:   "split [FILE] [--topo SPEC] --workers N",
		Short: "Print how a topology splits over N workers (JSON); builds nothing",
		Long: `hymn cluster split prints the split hymn cluster run would use, as JSON:
the worker of every node, each worker's nodes, the cut links (each becomes a
VXLAN tunnel) and each worker's VM memory. Nothing is built; no root needed.`,
		Args:          usageArgs(cobra.MaximumNArgs(1)),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			src, file, err := clusterTopology(f, args, "split")
			if err != nil {
				return err
			}
			if workers < 1 {
				return fmt.Errorf("%w: cluster split: --workers must be at least 1, got %d", ErrUsage, workers)
			}
			if err := checkIPBase(f.ipbase); err != nil {
				return err
			}
			_, res, err := cluster.NewSpec(src, file, f.ipbase, f.mac, workers, partition.Options{Slack: f.slack})
			if err != nil {
				return fmt.Errorf("%w: cluster split: %v", ErrUsage, err)
			}
			out := struct {
				*partition.Result
				Sizes     []int `json:"sizes"`
				CutLinks  int   `json:"cut_links"`
				Imbalance int   `json:"imbalance"`
			}{res, res.Sizes(), res.CutSize(), res.Imbalance()}
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false) // link names hold "<->"
			return enc.Encode(out)
		},
	}
	addClusterTopoFlags(cmd, f)
	cmd.Flags().IntVar(&workers, "workers", 2, "number of workers")
	return cmd
}

// parseWhere reads --cluster: local:N or kube:N.
func parseWhere(s string) (string, int, error) {
	kind, n, ok := strings.Cut(s, ":")
	if !ok || (kind != "local" && kind != "kube") {
		return "", 0, fmt.Errorf("%w: --cluster %q: use local:N (N workers on this machine) or kube:N (N worker pods)", ErrUsage, s)
	}
	k, err := strconv.Atoi(n)
	if err != nil || k < 1 || k > 64 {
		return "", 0, fmt.Errorf("%w: --cluster %q: N must be a number from 1 to 64", ErrUsage, s)
	}
	return kind, k, nil
}

var clusterTests = []string{"pingall", "rtt", "stats", "cli", "none"}

func newClusterRunCmd(stdin *os.File, stdout, stderr io.Writer) *cobra.Command {
	f := &clusterFlags{}
	cmd := &cobra.Command{
		Use:   "run [FILE] [--topo SPEC] --cluster local:N [--test pingall+stats] [--json]",
		Short: "Run a topology across workers and test it",
		Long: `hymn cluster run splits the topology, starts one worker per part (--cluster
local:N: processes of this machine, each in its own network namespace),
waits until every part is built and every cut link is up, runs the tests,
and stops every worker, which tears its part down.

Tests (--test, joined with '+'): pingall (every host pings every other, the
command routed to the worker that holds the host), rtt (the first host pings
every other 20 times, 50 ms apart: min, median and max RTT, so a delay on a
cut link shows), stats (each worker's tunnel counters), cli (the mininet>
shell, after the other tests: node commands run by the worker holding the
node; nodes, net, pingall, pingpair, sh, time, source), none. --json prints one JSON object on stdout: the split,
each worker's build and link times, the test results; progress stays on
stderr. --ui serves the live view of the whole split network in the browser
(docs/ui.md; the URL is printed) while it runs: with --test cli, until the
shell ends. Exit status 1 if a test fails, 2 for bad input.`,
		Args:          usageArgs(cobra.MaximumNArgs(1)),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCluster(cmd.Context(), f, args, stdin, stdout, stderr)
		},
	}
	addClusterTopoFlags(cmd, f)
	fl := cmd.Flags()
	fl.StringVar(&f.where, "cluster", "local:2", "where the workers run: local:N (processes in namespaces of this machine) or kube:N (privileged pods, through kubectl)")
	fl.IntVar(&f.port, "port", cluster.DefaultPort, "VXLAN UDP port")
	fl.IntVar(&f.vniBase, "vni-base", 0, "number the cut links' VNIs vni-base+i (i: the link's index), predictable; 0: random for each run")
	fl.StringArrayVar(&f.tests, "test", nil, "tests: pingall, rtt, stats, cli, none (joined with '+' or repeated; default pingall)")
	fl.BoolVar(&f.jsonOut, "json", false, "print the results as one JSON object on stdout")
	fl.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long building and linking every part may take")
	fl.StringVar(&f.worker, "worker-binary", "", "local: the hymn binary the workers run (default: this one)")
	fl.StringVar(&f.switchSpec, "switch", "lxbr", "the workers' switches, as hymn --switch: lxbr, ovsbr, bpf, or ovsk (OpenFlow: each worker runs a controller for its own switches)")
	fl.StringVar(&f.nodes, "nodes", "netns", "the workers' hosts, as hymn --nodes: netns or vm (a kube worker image then needs QEMU)")
	fl.StringVar(&f.image, "image", "", "kube: the worker image (hymn as entrypoint, with bash, ip and ping; scripts/oci-image.py makes one, as scripts/k8s-check.sh shows)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kube: kubectl's --kubeconfig")
	fl.StringVar(&f.namespace, "namespace", "", "kube: the Kubernetes namespace of the worker pods (default: default)")
	fl.StringVar(&f.pull, "pull-policy", "", "kube: the image pull policy: Never (default: an image imported into the node), IfNotPresent or Always (from a registry)")
	addUIFlags(fl, &f.ui)
	return cmd
}

// ClusterReport is hymn cluster run --json's output.
type ClusterReport struct {
	Workers   int               `json:"workers"`
	Split     *partition.Result `json:"split"`
	BuildMS   int64             `json:"build_ms"`
	LinkMS    int64             `json:"link_ms"`
	Ready     []cluster.Event   `json:"ready"`
	PingAll   *RemotePingAll    `json:"pingall,omitempty"`
	RTT       []ClusterRTT      `json:"rtt,omitempty"`
	Stats     []cluster.Event   `json:"stats,omitempty"`
	Elapsed   float64           `json:"elapsed_s"`
	StopError string            `json:"stop_error,omitempty"`
}

func runCluster(ctx context.Context, f *clusterFlags, args []string, stdin *os.File, stdout, stderr io.Writer) error {
	src, file, err := clusterTopology(f, args, "run")
	if err != nil {
		return err
	}
	kind, n, err := parseWhere(f.where)
	if err != nil {
		return err
	}
	if kind == "kube" && f.image == "" {
		return fmt.Errorf("%w: --cluster kube:N needs --image (the worker image; scripts/k8s-check.sh shows how to make one)", ErrUsage)
	}
	if kind != "kube" && (f.image != "" || f.kubeconfig != "" || f.namespace != "" || f.pull != "") {
		return fmt.Errorf("%w: --image, --kubeconfig, --namespace and --pull-policy are for --cluster kube:N", ErrUsage)
	}
	switch f.pull {
	case "", "Never", "IfNotPresent", "Always":
	default:
		return fmt.Errorf("%w: --pull-policy %q: use Never, IfNotPresent or Always", ErrUsage, f.pull)
	}
	if err := checkIPBase(f.ipbase); err != nil {
		return err
	}
	if _, err := f.ui.check(); err != nil { // before any worker starts (ui.go)
		return err
	}
	if f.port < 1 || f.port > 65535 {
		return fmt.Errorf("%w: --port %d is not a UDP port", ErrUsage, f.port)
	}
	if f.vniBase < 0 || f.vniBase > cluster.MaxVNI {
		return fmt.Errorf("%w: --vni-base %d is outside 1-%d (0: random)", ErrUsage, f.vniBase, cluster.MaxVNI)
	}
	if f.slack < 0 {
		return fmt.Errorf("%w: --slack must not be negative", ErrUsage)
	}
	if f.timeout <= 0 {
		return fmt.Errorf("%w: --timeout must be positive", ErrUsage)
	}
	workerArgs, err := clusterWorkerArgs(f)
	if err != nil {
		return err
	}
	tests := map[string]bool{}
	for _, t := range f.tests {
		for _, one := range strings.Split(t, "+") {
			if !contains(clusterTests, one) {
				return fmt.Errorf("%w: --test %q: use %s", ErrUsage, one, strings.Join(clusterTests, ", "))
			}
			tests[one] = true
		}
	}
	if len(f.tests) == 0 {
		tests["pingall"] = true
	}
	// Split now, so a split that cannot be made is a usage error before
	// anything starts.
	if _, _, err := cluster.NewSpec(src, file, f.ipbase, f.mac, n, partition.Options{Slack: f.slack}); err != nil {
		return fmt.Errorf("%w: cluster run: %v", ErrUsage, err)
	}
	var tr cluster.Transport
	switch kind {
	case "kube":
		// Bad flag values are usage errors whatever the machine has, so
		// they are checked before kubectl is looked for.
		k := &cluster.Kubectl{Kubeconfig: f.kubeconfig, Namespace: f.namespace, Image: f.image, PullPolicy: f.pull, Stderr: stderr, WorkerArgs: workerArgs}
		if err := k.Check(); err != nil {
			return fmt.Errorf("%w: %v", ErrUsage, err)
		}
		if err := hymn.CheckTools("kubectl"); err != nil {
			return err
		}
		tr = k
	default:
		if err := hymn.CheckRoot(); err != nil {
			return err
		}
		if err := hymn.CheckTools("ip"); err != nil {
			return err
		}
		bin := f.worker
		if bin == "" {
			if bin, err = os.Executable(); err != nil {
				return err
			}
		}
		tr = &cluster.Local{Command: append([]string{bin, "worker"}, workerArgs...), Stderr: stderr}
	}
	logf := func(format string, a ...any) { _, _ = fmt.Fprintf(stderr, format, a...) }
	start := time.Now()
	c, err := cluster.Start(ctx, tr, src, file, f.ipbase, f.mac, cluster.Options{
		Partition: partition.Options{Parts: n, Slack: f.slack}, Port: f.port, VNIBase: f.vniBase,
		ReadyTimeout: f.timeout, Log: logf,
	})
	if err != nil {
		return err
	}
	rep := &ClusterReport{Workers: n, Split: c.Split, BuildMS: c.BuildTime.Milliseconds(), LinkMS: c.LinkTime.Milliseconds(), Ready: c.Ready}
	cn := &clusterNet{c: c}
	if f.ui.listen != "" {
		v, err := cn.LiveView(f.ui, mnlog.New(stderr, mnlog.Info))
		if err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			_ = c.Stop(sctx) // the view's error is the news
			cancel()
			return err
		}
		logf("*** Live view: %s\n", v.URL())
	}
	var testErr error
	if tests["pingall"] {
		rep.PingAll, testErr = clusterPingAll(ctx, c, logf)
	}
	if tests["rtt"] && ctx.Err() == nil {
		rtt, err := clusterRTT(ctx, c, logf)
		testErr = errors.Join(testErr, err)
		rep.RTT = rtt
	}
	if tests["stats"] && ctx.Err() == nil {
		st, err := c.Stats(ctx)
		if err != nil {
			testErr = errors.Join(testErr, err)
		}
		rep.Stats = st
		for _, e := range st {
			for _, cs := range e.Cut {
				logf("worker %d %s vni %d -> worker %d: tx %d pkts %d bytes, rx %d pkts %d bytes\n",
					e.Worker, cs.Link, cs.VNI, cs.Peer, cs.Tunnel.TxPackets, cs.Tunnel.TxBytes, cs.Tunnel.RxPackets, cs.Tunnel.RxBytes)
			}
		}
	}
	if tests["cli"] && ctx.Err() == nil {
		if stdin == nil {
			stdin = os.Stdin
		}
		RunRemoteShell(ctx, cn, stdin, stderr, stderr)
	}
	if cn.view != nil {
		_ = cn.view.Close() // the network is going down: see startLiveView
	}
	logf("*** Stopping %d workers\n", n)
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	stopErr := c.Stop(sctx)
	cancel()
	if stopErr != nil {
		rep.StopError = stopErr.Error()
	}
	rep.Elapsed = time.Since(start).Seconds()
	logf("*** Done: %.1f s\n", rep.Elapsed)
	if f.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rep); err != nil {
			return err
		}
	}
	if err := errors.Join(testErr, stopErr); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// clusterPingAll pings every host from every other, as Mininet's pingall
// prints it, each ping run by the worker holding the source.
func clusterPingAll(ctx context.Context, c *cluster.Cluster, logf func(string, ...any)) (*RemotePingAll, error) {
	r := &clusterNet{c: c}
	plan := r.Plan()
	if plan == nil {
		return nil, r.planErr
	}
	res, err := pingMatrixRemote(ctx, plan.Hosts(), func(ctx context.Context, src, dst string) (bool, error) {
		ip := plan.Node(dst).IP
		if !ip.IsValid() {
			return false, nil
		}
		e, err := c.Exec(ctx, src, 10*time.Second, "ping", "-c1", "-W1", ip.Addr().String())
		return err == nil && e.Exit != nil && *e.Exit == 0, err
	}, logf)
	if err == nil && res.Received != res.Sent {
		err = fmt.Errorf("pingall: %d of %d pings failed", res.Sent-res.Received, res.Sent)
	}
	return res, err
}

// clusterNet is a running cluster as the mininet> shell sees it.
type clusterNet struct {
	c       *cluster.Cluster
	plan    *topo.Plan
	planErr error
	view    *ui.Server // the live view, once started
}

func (n *clusterNet) Plan() *topo.Plan {
	if n.plan == nil && n.planErr == nil {
		r, err := n.c.Specs[0].Resolve()
		if err != nil {
			n.planErr = err
			return nil
		}
		n.plan = r.Plan
	}
	return n.plan
}

// Run runs cmdline through the worker protocol's exec, which returns the
// output at the end (at most cluster.MaxOutput bytes of each stream) and
// stops the command after cluster.DefaultExecTimeout.
func (n *clusterNet) Run(ctx context.Context, node, cmdline string, out io.Writer) (int, error) {
	e, err := n.c.Exec(ctx, node, cluster.DefaultExecTimeout, "sh", "-c", cmdline)
	if err != nil {
		return -1, err
	}
	// out is the shell's output (or io.Discard): a failed write there has
	// nowhere else to be reported.
	_, _ = io.WriteString(out, e.Stdout)
	_, _ = io.WriteString(out, e.Stderr)
	if e.Exit == nil {
		return -1, errors.New("the worker reported no exit status")
	}
	return *e.Exit, nil
}

// ClusterRTT is one pair's round trips (rtt test), in milliseconds, each
// measured to the ns by the source's worker (kernel receive stamps), so a
// 1 % check of a 5 ms delay has a resolution a thousand times finer than
// its tolerance; ping's text has 0.1 ms above 10 ms.
type ClusterRTT struct {
	From       string  `json:"from"`
	To         string  `json:"to"`
	Sent       int     `json:"sent"`
	Received   int     `json:"received"`
	Min        float64 `json:"min_ms"`
	Median     float64 `json:"median_ms"`
	Mean       float64 `json:"mean_ms"`
	Max        float64 `json:"max_ms"`
	SameWorker bool    `json:"same_worker"`
}

// rttCount echoes, rttGap apart, per pair: the median of 500 moves by
// well under a µs for one stalled echo.
const (
	rttCount = 500
	rttGap   = 2 * time.Millisecond
)

// clusterRTT measures the round trips from the first host to every other,
// after a few echoes that fill the ARP caches and the bridges' tables.
func clusterRTT(ctx context.Context, c *cluster.Cluster, logf func(string, ...any)) ([]ClusterRTT, error) {
	r, err := c.Specs[0].Resolve()
	if err != nil {
		return nil, err
	}
	hosts := r.Plan.Hosts()
	if len(hosts) < 2 {
		return nil, nil
	}
	src := hosts[0]
	var out []ClusterRTT
	logf("*** RTT from %s (%d echoes each, to the ns)\n", src.Name, rttCount)
	for _, dst := range hosts[1:] {
		if !dst.IP.IsValid() {
			continue
		}
		if _, err := c.RTT(ctx, src.Name, dst.IP.Addr(), 5, 10*time.Millisecond); err != nil {
			return out, err
		}
		us, err := c.RTT(ctx, src.Name, dst.IP.Addr(), rttCount, rttGap)
		if err != nil {
			return out, err
		}
		res := ClusterRTT{From: src.Name, To: dst.Name, Sent: rttCount, Received: len(us), SameWorker: c.Split.Assign[src.Name] == c.Split.Assign[dst.Name]}
		if len(us) > 0 {
			sort.Float64s(us)
			sum := 0.0
			for _, v := range us {
				sum += v
			}
			res.Min, res.Median, res.Max = us[0]/1e3, us[len(us)/2]/1e3, us[len(us)-1]/1e3
			res.Mean = sum / float64(len(us)) / 1e3
		}
		where := "across workers"
		if res.SameWorker {
			where = "same worker"
		}
		logf("%s -> %s (%s): %d/%d, rtt min %.4f median %.4f mean %.4f max %.4f ms\n", src.Name, dst.Name, where, res.Received, res.Sent, res.Min, res.Median, res.Mean, res.Max)
		out = append(out, res)
	}
	return out, nil
}
