package kubecli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hymn-net/hymn/cli"
	"github.com/hymn-net/hymn/internal/fileio"
	"github.com/hymn-net/hymn/kube/api/v1alpha1"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

type runFlags struct {
	topo, image, pull, ipbase, name string
	workers                         int
	timeout, stopWait               time.Duration
	hold                            bool
	test                            string
}

// runTests are run's --test values: what to do once the Topology runs.
var runTests = []string{"cli", "pingall", "pingpair", "none"}

func newRun(g *globals, stdin *os.File, stdout, stderr io.Writer) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run (--topo SPEC | FILE) [--workers N] [--image I] [--test cli|pingall|pingpair|none | --hold]",
		Short: "Create a Topology, wait until it runs, open the mininet> shell on it, then remove it",
		Long: `hymn-kube run creates a Topology resource from a topology spec string (--topo
linear,4) or a hymn topology file, prints the controller's progress until the
topology is Running or Failed, prints its status, and then (--test):

  cli       the mininet> shell (the default), reading commands from stdin until
            exit or EOF: nodes, net, pingall, pingpair, sh, time, source, and
            "<node> <cmd>" (node names become addresses, as in Mininet), run
            in the worker pod that holds the node through pods/exec
  pingall   every host pings every other; exit status 1 if one is lost
  pingpair  the first two hosts ping each other
  none      nothing

and removes the resource again; with --hold instead, when interrupted (Ctrl-C).
It needs the controller (hymn-kube controller) running against the same
cluster; the shell needs permission to create pods/exec and get ConfigMaps in
the namespace.`,
		Args: func(cmd *cobra.Command, a []string) error {
			if len(a) > 1 {
				return usage("run takes at most one topology file, got %d arguments", len(a))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			spec, err := f.spec(a)
			if err != nil {
				return err
			}
			c, cfg, err := g.client()
			if err != nil {
				return err
			}
			t := &v1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: g.namespace}, Spec: spec}
			if f.name != "" {
				t.Name = f.name
			} else {
				t.GenerateName = "hymn-"
			}
			if err := c.Create(cmd.Context(), t); err != nil {
				return apiErr(cfg, err)
			}
			what := spec.Topology
			if what == "" {
				what = a[0]
			}
			_, _ = fmt.Fprintf(stdout, "*** Created topology %s/%s: %s over %d workers\n", t.Namespace, t.Name, what, t.WorkerCount())
			defer func() {
				_, _ = fmt.Fprintf(stdout, "*** Removing topology %s\n", t.Name)
				ctx, cancel := context.WithTimeout(context.Background(), f.stopWait+10*time.Second)
				defer cancel()
				if err := c.Delete(ctx, t); err != nil && !strings.Contains(err.Error(), "not found") {
					_, _ = fmt.Fprintf(stdout, "*** Could not delete topology %s: %v\n", t.Name, apiErr(cfg, err))
					return
				}
				if err := waitGone(ctx, c, t, f.stopWait); err != nil {
					_, _ = fmt.Fprintf(stdout, "*** %v\n", err)
				}
			}()
			final, err := follow(cmd.Context(), c, t, f.timeout, stdout)
			if err != nil {
				return apiErr(cfg, err)
			}
			printStatus(stdout, final)
			if final.Status.Phase == v1alpha1.PhaseFailed {
				return fmt.Errorf("topology %s failed: %s", t.Name, final.Status.Message)
			}
			if f.hold {
				_, _ = fmt.Fprintf(stdout, "*** Running; interrupt (Ctrl-C) to remove it\n")
				<-cmd.Context().Done()
				return nil
			}
			return runTest(cmd.Context(), f.test, c, cfg, final, stdin, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.topo, "topo", "", "a built-in topology spec (linear,4; tree,depth=2)")
	fl.IntVar(&f.workers, "workers", v1alpha1.DefaultWorkers, fmt.Sprintf("worker pods to split the topology over (1-%d)", v1alpha1.MaxWorkers))
	fl.StringVar(&f.image, "image", "", "the worker image (default: the controller's)")
	fl.StringVar(&f.pull, "pull-policy", "", "the worker pods' image pull policy (Never, IfNotPresent, Always; default: the controller's)")
	fl.StringVar(&f.ipbase, "ipbase", "", "the hosts' address range (default 10.0.0.0/8)")
	fl.StringVar(&f.name, "name", "", "the Topology's name (default: hymn-<random>)")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Minute, "how long to wait for Running")
	fl.DurationVar(&f.stopWait, "stop-timeout", time.Minute, "how long to wait for the workers to stop at exit")
	fl.BoolVar(&f.hold, "hold", false, "keep the topology running until interrupted (no test, no shell)")
	fl.StringVar(&f.test, "test", "cli", "once it runs: "+strings.Join(runTests, ", ")+" (see above)")
	return cmd
}

// runTest does run's --test on the Running Topology t.
func runTest(ctx context.Context, test string, c client.Reader, cfg *rest.Config, t *v1alpha1.Topology, stdin *os.File, stdout, stderr io.Writer) error {
	if test == "none" {
		return nil
	}
	n, err := newPodNet(ctx, c, cfg, t)
	if err != nil {
		return apiErr(cfg, err)
	}
	if test == "cli" {
		if stdin == nil {
			stdin = os.Stdin
		}
		cli.RunRemoteShell(ctx, n, stdin, stdout, stderr)
		return nil
	}
	res, err := cli.PingRemote(ctx, n, test == "pingpair", stderr)
	if err != nil {
		return err
	}
	if res.Received != res.Sent {
		return fmt.Errorf("%s: %d of %d pings lost", test, res.Sent-res.Received, res.Sent)
	}
	return nil
}

// spec checks the flags and builds the Topology's spec.
func (f *runFlags) spec(a []string) (v1alpha1.TopologySpec, error) {
	var s v1alpha1.TopologySpec
	switch {
	case f.topo != "" && len(a) == 1:
		return s, usage("give --topo SPEC or a topology FILE, not both")
	case f.topo == "" && len(a) == 0:
		return s, usage("run needs --topo SPEC (like linear,4) or a topology FILE")
	case f.topo != "":
		s.Topology = f.topo
	default:
		data, err := fileio.ReadLimited(a[0], maxFile)
		if err != nil {
			return s, usage("topology file: %v", err)
		}
		if strings.TrimSpace(string(data)) == "" {
			return s, usage("topology file %s is empty", a[0])
		}
		s.File = string(data)
	}
	if f.workers < 1 || f.workers > v1alpha1.MaxWorkers {
		return s, usage("--workers %d: use 1 to %d", f.workers, v1alpha1.MaxWorkers)
	}
	s.Workers = int32(f.workers)
	switch corev1.PullPolicy(f.pull) {
	case "", corev1.PullNever, corev1.PullIfNotPresent, corev1.PullAlways:
	default:
		return s, usage("--pull-policy %q: use Never, IfNotPresent or Always", f.pull)
	}
	if f.name != "" {
		if errs := validation.IsDNS1123Subdomain(f.name); len(errs) > 0 || len(f.name) > 240 {
			return s, usage("--name %q is not a valid name (lower-case letters, digits, '-' and '.', at most 240): %s", f.name, strings.Join(errs, "; "))
		}
	}
	if !slices.Contains(runTests, f.test) {
		return s, usage("--test %q: use %s", f.test, strings.Join(runTests, ", "))
	}
	if f.hold && f.test != "cli" {
		return s, usage("--hold and --test: --hold keeps the topology running without a test or shell")
	}
	if f.timeout <= 0 || f.stopWait <= 0 {
		return s, usage("--timeout and --stop-timeout must be positive")
	}
	s.Image, s.ImagePullPolicy, s.IPBase = f.image, f.pull, f.ipbase
	return s, nil
}

// follow watches the Topology, printing a line at every change of phase
// or message, until it is Running or Failed.
func follow(ctx context.Context, c client.WithWatch, t *v1alpha1.Topology, timeout time.Duration, out io.Writer) (*v1alpha1.Topology, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nudge := time.NewTimer(10 * time.Second) // no status by then: say what is needed
	defer nudge.Stop()
	last := ""
	cur := t
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(t), cur); err != nil {
			return nil, done(ctx, cur, timeout, err)
		}
		w, err := c.Watch(ctx, &v1alpha1.TopologyList{}, client.InNamespace(t.Namespace),
			client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", t.Name)},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: cur.ResourceVersion}})
		if err != nil {
			return nil, done(ctx, cur, timeout, err)
		}
		res, err := func() (*v1alpha1.Topology, error) {
			defer w.Stop()
			for {
				if s := string(cur.Status.Phase) + ": " + cur.Status.Message; cur.Status.Phase != "" && s != last {
					_, _ = fmt.Fprintf(out, "*** %s\n", strings.TrimSuffix(s, ": "))
					last = s
				}
				if p := cur.Status.Phase; p == v1alpha1.PhaseRunning || p == v1alpha1.PhaseFailed {
					return cur, nil
				}
				select {
				case <-ctx.Done():
					return nil, done(ctx, cur, timeout, ctx.Err())
				case <-nudge.C:
					if cur.Status.Phase == "" {
						_, _ = fmt.Fprintf(out, "*** No status yet: is hymn-kube controller running against this cluster?\n")
					}
				case ev, ok := <-w.ResultChan():
					if !ok {
						return nil, nil // the watch ended: look again
					}
					switch ev.Type {
					case watch.Deleted:
						return nil, fmt.Errorf("topology %s was deleted (by someone else) while starting", t.Name)
					case watch.Error:
						return nil, nil
					}
					if x, ok := ev.Object.(*v1alpha1.Topology); ok {
						cur = x
					}
				}
			}
		}()
		if res != nil || err != nil {
			return res, err
		}
	}
}

// done turns the end of the wait into the error to report.
func done(ctx context.Context, t *v1alpha1.Topology, timeout time.Duration, err error) error {
	if ctx.Err() == nil {
		return err
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("topology %s not Running after %v (phase %s: %s)", t.Name, timeout, orDash(string(t.Status.Phase)), t.Status.Message)
	}
	return errors.New("interrupted")
}

func printStatus(out io.Writer, t *v1alpha1.Topology) {
	s := t.Status
	_, _ = fmt.Fprintf(out, "*** Topology %s/%s: %s\n", t.Namespace, t.Name, s.Phase)
	_, _ = fmt.Fprintf(out, "workers ready %d/%d, nodes %d, cut links up %d\n", s.WorkersReady, t.WorkerCount(), s.NodesReady, s.LinksUp)
	for _, c := range s.Conditions {
		_, _ = fmt.Fprintf(out, "%s=%s (%s) %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
}
