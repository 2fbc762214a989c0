package kubecli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/hymn-net/hymn/cli"
	"github.com/hymn-net/hymn/kube/api/v1alpha1"
	"github.com/hymn-net/hymn/kube/config"
	"github.com/hymn-net/hymn/kube/controller"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// ErrUsage marks bad input: the command exits with status 2.
var ErrUsage = errors.New("usage error")

// maxFile bounds a topology file (the CRD's spec.file holds at most
// 512 KiB).
const maxFile = 512 << 10

type globals struct {
	kubeconfig string
	namespace  string
	timeout    time.Duration // each API request
}

// Execute runs hymn-kube with args and returns the exit status.
func Execute(ctx context.Context, args []string, stdin *os.File, stdout, stderr io.Writer) int {
	// Ctrl-C interrupts a node command in run's shell, else ends ctx (run
	// then removes its Topology).
	ctx, stop := cli.WatchInterrupts(ctx)
	defer stop()
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	msg := err.Error()
	if errors.Is(err, ErrUsage) {
		msg = strings.TrimPrefix(msg, ErrUsage.Error()+": ")
		_, _ = fmt.Fprintf(stderr, "hymn-kube: %s\n", msg)
		return 2
	}
	_, _ = fmt.Fprintf(stderr, "hymn-kube: %s\n", msg)
	return 1
}

func usage(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, a...))
}

func newRoot(stdin *os.File, stdout, stderr io.Writer) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "hymn-kube",
		Short: "Run hymn topologies on Kubernetes (the Topology resource and its controller)",
		Long: `hymn-kube runs a hymn topology across the nodes of a Kubernetes cluster: a
Topology resource (hymn.hymn-net.io/v1alpha1) names the topology and how many
worker pods it is split over; the controller (hymn-kube controller) creates the
worker pods (with network administration rights on their node: creating a
Topology is a privileged act), builds the parts in them and joins the cut links with
VXLAN tunnels, and reports the phase in the resource's status.

  hymn-kube install [--namespaces a,b]   the CRD and the controller's roles
  hymn-kube controller [--namespaces a,b] [--allow-image I]   run the controller
  hymn-kube run --topo linear,4 --workers 2
  hymn-kube list
  hymn-kube delete NAME`,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usage("unknown command %q (see hymn-kube --help)", args[0])
			}
			return cmd.Help()
		},
		Args: cobra.ArbitraryArgs,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage("%v", err) })
	pf := root.PersistentFlags()
	pf.StringVar(&g.kubeconfig, "kubeconfig", "", "the kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	pf.StringVarP(&g.namespace, "namespace", "n", "default", "the namespace of the Topologies")
	pf.DurationVar(&g.timeout, "request-timeout", 30*time.Second, "how long one API request may take")
	for _, c := range []*cobra.Command{newController(g, stderr), newInstall(g, stdout), newList(g, stdout), newDelete(g, stdout), newRun(g, stdin, stdout, stderr)} {
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage("%v", err) })
		root.AddCommand(c)
	}
	return root
}

func args(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if len(a) != n {
			return usage("%s takes %s, got %d arguments", cmd.Name(), what, len(a))
		}
		return nil
	}
}

// restConfig loads the kubeconfig (a named file must exist).
func (g *globals) restConfig() (*rest.Config, error) {
	if errs := validation.IsDNS1123Label(g.namespace); len(errs) > 0 {
		return nil, usage("--namespace %q: %s", g.namespace, strings.Join(errs, "; "))
	}
	if g.timeout <= 0 {
		return nil, usage("--request-timeout must be positive")
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if g.kubeconfig != "" {
		if _, err := os.Stat(g.kubeconfig); err != nil {
			return nil, usage("--kubeconfig: %v", err)
		}
		rules.ExplicitPath = g.kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, usage("no cluster configured: give --kubeconfig FILE, set $KUBECONFIG or write ~/.kube/config")
		}
		return nil, usage("kubeconfig: %v", err)
	}
	cfg.Timeout = g.timeout
	return cfg, nil
}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

func (g *globals) client() (client.WithWatch, *rest.Config, error) {
	cfg, err := g.restConfig()
	if err != nil {
		return nil, nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		return nil, nil, apiErr(cfg, err)
	}
	return c, cfg, nil
}

// apiErr explains the errors a user meets first: no server, no CRD, no
// permission.
func apiErr(cfg *rest.Config, err error) error {
	var nomatch *meta.NoKindMatchError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nomatch) || meta.IsNoMatchError(err) || apierrors.IsNotFound(err) && strings.Contains(err.Error(), "the server could not find the requested resource"):
		return fmt.Errorf("the Topology resource is not installed on %s: run hymn-kube install (%v)", cfg.Host, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("not allowed (RBAC) on %s: %v", cfg.Host, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server at %s does not accept these credentials: %v", cfg.Host, err)
	case strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "no such host") ||
		strings.Contains(err.Error(), "i/o timeout") || strings.Contains(err.Error(), "no route to host") ||
		errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("cannot reach the API server at %s: %v", cfg.Host, err)
	}
	return err
}

func newController(g *globals, stderr io.Writer) *cobra.Command {
	r := &controller.Reconciler{}
	var pull, metrics, probe, namespaces string
	var leader bool
	var restarts int
	var allow []string
	cmd := &cobra.Command{
		Use:   "controller [--kubeconfig F] [--image I]",
		Short: "Run the Topology controller until interrupted",
		Args:  args(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch corev1.PullPolicy(pull) {
			case corev1.PullNever, corev1.PullIfNotPresent, corev1.PullAlways:
				r.PullPolicy = corev1.PullPolicy(pull)
			default:
				return usage("--pull-policy %q: use Never, IfNotPresent or Always", pull)
			}
			if r.PodTimeout <= 0 || r.LinkTimeout <= 0 {
				return usage("--pod-timeout and --link-timeout must be positive")
			}
			switch {
			case restarts < 0 || restarts > 1000:
				return usage("--max-restarts %d: use 0 (never restore a lost worker) to 1000", restarts)
			case r.RestartWindow <= 0:
				return usage("--restart-window must be positive")
			case restarts == 0:
				r.MaxRestarts = -1
			default:
				r.MaxRestarts = restarts
			}
			if err := controller.CheckAllowList(allow); err != nil {
				return usage("--allow-image: %v", err)
			}
			r.AllowedImages = allow
			if err := g.watched(namespaces, &r.Namespaces); err != nil {
				return err
			}
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			// The CRD must be there and the namespaces readable: say so
			// now rather than in the log.
			c, err := client.New(cfg, client.Options{Scheme: scheme()})
			if err != nil {
				return apiErr(cfg, err)
			}
			for _, ns := range r.Namespaces {
				if err := c.List(cmd.Context(), &v1alpha1.TopologyList{}, client.InNamespace(ns), client.Limit(1)); err != nil {
					return apiErr(cfg, err)
				}
			}
			ctrl.SetLogger(zap.New(zap.WriteTo(&lockedWriter{w: stderr})))
			mgr, err := ctrl.NewManager(cfg, ctrl.Options{
				Scheme:                  scheme(),
				Metrics:                 metricsserver.Options{BindAddress: metrics},
				HealthProbeBindAddress:  probe,
				Cache:                   controller.CacheOptions(r.Namespaces),
				LeaderElection:          leader,
				LeaderElectionID:        "hymn-kube-controller.hymn.hymn-net.io",
				LeaderElectionNamespace: r.Namespaces[0],
			})
			if err != nil {
				return err
			}
			if probe != "0" {
				if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
					return err
				}
			}
			if err := r.SetupWithManager(mgr); err != nil {
				return err
			}
			return mgr.Start(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&r.Image, "image", controller.DefaultImage, "the worker image of Topologies that name none (always allowed)")
	f.StringSliceVar(&allow, "allow-image", nil, "an image a Topology's spec.image may name besides --image: IMAGE, or NAME:* for any tag or digest of NAME (repeatable, or comma-separated); any other fails the Topology")
	f.StringVar(&namespaces, "namespaces", "", "the namespaces to watch, comma-separated (default: --namespace); the controller acts nowhere else")
	f.StringVar(&pull, "pull-policy", string(controller.DefaultPullPolicy), "the worker pods' image pull policy when a Topology names none (Never: images imported into the nodes)")
	f.DurationVar(&r.PodTimeout, "pod-timeout", controller.DefaultPodTimeout, "how long a worker pod may take to run")
	f.DurationVar(&r.LinkTimeout, "link-timeout", controller.DefaultLinkTimeout, "how long building and linking the parts may take")
	f.IntVar(&restarts, "max-restarts", controller.DefaultMaxRestarts, "how many lost worker pods of a running Topology are restored within --restart-window before the next loss fails it (0: none)")
	f.DurationVar(&r.RestartWindow, "restart-window", controller.DefaultRestartWindow, "the window --max-restarts counts in")
	f.StringVar(&metrics, "metrics-bind-address", "0", "where to serve metrics (0: nowhere)")
	f.StringVar(&probe, "health-probe-bind-address", "0", "where to serve /healthz (0: nowhere)")
	f.BoolVar(&leader, "leader-elect", false, "elect a leader among several controllers (a Lease in the first watched namespace)")
	return cmd
}

// lockedWriter serialises the log's writes (zap does not for a plain
// io.Writer).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// watched parses --namespaces (default: --namespace) into ns.
func (g *globals) watched(list string, ns *[]string) error {
	if list == "" {
		list = g.namespace
	}
	var err error
	if *ns, err = config.ParseNamespaces(list); err != nil {
		return usage("--namespaces: %v", err)
	}
	return nil
}

func newInstall(g *globals, stdout io.Writer) *cobra.Command {
	var print bool
	var namespaces, account string
	cmd := &cobra.Command{
		Use:   "install [--namespaces a,b] [--service-account NS/NAME] [--print]",
		Short: "Create or update the Topology CRD and the controller's service account and roles",
		Args:  args(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			access := config.Access{}
			if err := g.watched(namespaces, &access.Namespaces); err != nil {
				return err
			}
			if account != "" {
				ns, name, ok := strings.Cut(account, "/")
				if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
					return usage("--service-account %q: use NAMESPACE/NAME", account)
				}
				access.Subject = &rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
			} else {
				access.Subject = &rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: access.Namespaces[0], Name: config.DefaultServiceAccount}
			}
			if print {
				rbac, err := access.Objects()
				if err != nil {
					return err
				}
				y, err := config.YAML(rbac)
				if err != nil {
					return err
				}
				// The manifests are the output (piped to kubectl apply): a
				// failed write is an error, not a silent success.
				_, err = fmt.Fprintf(stdout, "%s---\n%s", config.CRD, y)
				return err
			}
			c, cfg, err := g.client()
			if err != nil {
				return err
			}
			return apiErr(cfg, config.Install(cmd.Context(), c, access, time.Minute, func(f string, a ...any) { _, _ = fmt.Fprintf(stdout, f, a...) }))
		},
	}
	cmd.Flags().BoolVar(&print, "print", false, "print the manifests instead (for kubectl apply -f -)")
	cmd.Flags().StringVar(&namespaces, "namespaces", "", "the namespaces the controller watches, comma-separated (default: --namespace): a Role and RoleBinding in each")
	cmd.Flags().StringVar(&account, "service-account", "", "the controller's service account, NAMESPACE/NAME (default: hymn-kube-controller in the first watched namespace)")
	return cmd
}

func newList(g *globals, stdout io.Writer) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "list [-A]",
		Short: "List the Topologies with their phase, workers, nodes and links",
		Args:  args(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, cfg, err := g.client()
			if err != nil {
				return err
			}
			l := &v1alpha1.TopologyList{}
			var opts []client.ListOption
			if !all {
				opts = append(opts, client.InNamespace(g.namespace))
			}
			if err := c.List(cmd.Context(), l, opts...); err != nil {
				return apiErr(cfg, err)
			}
			sort.Slice(l.Items, func(i, j int) bool {
				a, b := l.Items[i], l.Items[j]
				return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
			})
			// A tabwriter buffers: a write error comes back from Flush.
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			if all {
				_, _ = fmt.Fprint(tw, "NAMESPACE\t")
			}
			_, _ = fmt.Fprintln(tw, "NAME\tPHASE\tWORKERS\tNODES\tLINKS\tAGE\tMESSAGE")
			for _, t := range l.Items {
				if all {
					_, _ = fmt.Fprintf(tw, "%s\t", t.Namespace)
				}
				_, _ = fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", t.Name, orDash(string(t.Status.Phase)), t.WorkerCount(),
					t.Status.NodesReady, t.Status.LinksUp, duration.HumanDuration(time.Since(t.CreationTimestamp.Time)), clipLine(t.Status.Message, 80))
			}
			if len(l.Items) == 0 {
				_, _ = fmt.Fprintln(tw, "(none)")
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list the Topologies of every namespace")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clipLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func newDelete(g *globals, stdout io.Writer) *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a Topology: its workers stop and its pods go",
		Args:  args(1, "one Topology name"),
		RunE: func(cmd *cobra.Command, a []string) error {
			name := a[0]
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				return usage("%q is not a Topology name: %s", name, strings.Join(errs, "; "))
			}
			c, cfg, err := g.client()
			if err != nil {
				return err
			}
			t := &v1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: g.namespace}}
			if err := c.Delete(cmd.Context(), t); err != nil {
				if apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) && !strings.Contains(err.Error(), "the server could not find the requested resource") {
					return fmt.Errorf("no Topology %q in namespace %s", name, g.namespace)
				}
				return apiErr(cfg, err)
			}
			if wait > 0 {
				if err := waitGone(cmd.Context(), c, t, wait); err != nil {
					return err
				}
			}
			_, _ = fmt.Fprintf(stdout, "*** Topology %s deleted\n", name)
			return nil
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", time.Minute, "how long to wait for the workers to stop (0: do not wait)")
	return cmd
}

// waitGone watches until the Topology is gone (its finalizer has run).
func waitGone(ctx context.Context, c client.WithWatch, t *v1alpha1.Topology, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		cur := &v1alpha1.Topology{}
		err := c.Get(ctx, client.ObjectKeyFromObject(t), cur)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		w, err := c.Watch(ctx, &v1alpha1.TopologyList{}, client.InNamespace(t.Namespace),
			client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", t.Name)},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: cur.ResourceVersion}})
		if err != nil {
			return err
		}
		gone, err := func() (bool, error) {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return false, fmt.Errorf("topology %s still there after %v (phase %s: %s); is hymn-kube controller running? Its finalizer %s stops the workers",
						t.Name, timeout, orDash(string(cur.Status.Phase)), cur.Status.Message, controller.Finalizer)
				case ev, ok := <-w.ResultChan():
					if !ok {
						return false, nil // the watch ended: look again
					}
					if ev.Type == watch.Deleted {
						return true, nil
					}
					if x, ok := ev.Object.(*v1alpha1.Topology); ok {
						cur = x
					}
				}
			}
		}()
		if gone || err != nil {
			return err
		}
	}
}
