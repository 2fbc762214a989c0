package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hymn-net/hymn/cluster"
	"github.com/hymn-net/hymn/kube/api/v1alpha1"
	"github.com/hymn-net/hymn/partition"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Finalizer stops a Topology's workers before the resource goes.
const Finalizer = "hymn.hymn-net.io/stop-workers"

// Labels on the worker pods and ConfigMaps.
const (
	LabelApp      = "app.kubernetes.io/name"
	AppWorker     = "hymn-worker"
	LabelTopology = "hymn.hymn-net.io/topology-uid"
	LabelWorker   = "hymn.hymn-net.io/worker"
)

const (
	workerContainer = "worker"
	specKey         = "spec.json"
	// maxName bounds a Topology's name so "<name>-w63" is a valid pod name.
	maxName = 240
)

// Defaults of the Reconciler's settings.
const (
	DefaultImage       = "localhost/hymn-worker:dev"
	DefaultPullPolicy  = corev1.PullNever
	DefaultPodTimeout  = 2 * time.Minute
	DefaultLinkTimeout = 5 * time.Minute
	DefaultStopTimeout = 45 * time.Second
	// A Topology whose workers were restored DefaultMaxRestarts times
	// within DefaultRestartWindow fails at the next loss instead.
	DefaultMaxRestarts   = 3
	DefaultRestartWindow = 10 * time.Minute
)

// Reconciler turns Topologies into running worker pods.
type Reconciler struct {
	Client client.Client
	// APIReader reads the Topology itself, uncached: a stale copy (the
	// cache lags the reconciler's own writes) would undo a decision, such
	// as recreating the pods of a Topology that just failed.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	// Attach opens a worker pod's protocol streams (NewAttacher; tests
	// use an in-process worker).
	Attach AttachFunc
	// Image and PullPolicy are the worker pods' when the Topology says
	// none.
	Image      string
	PullPolicy corev1.PullPolicy
	// AllowedImages are the images a Topology may name in spec.image
	// besides Image: an exact reference, or "NAME:*" for any tag or
	// digest of NAME. A worker pod administers its node's networking
	// (cluster.WorkerCapabilities), so which program runs there is the
	// operator's choice, not the Topology author's: any other image fails
	// the Topology and no pod is made.
	AllowedImages []string
	// Namespaces are the only ones the controller acts in (the manager's
	// cache watches only them, CacheOptions; RBAC grants it nothing
	// elsewhere, config.Access); at least one.
	Namespaces []string
	// PodTimeout bounds the wait for a worker pod to run with an address;
	// LinkTimeout the build and linking of the parts once they all run;
	// StopTimeout the workers' teardown on deletion.
	PodTimeout, LinkTimeout, StopTimeout time.Duration
	// A worker pod of a running Topology that fails or is deleted is
	// replaced (a new pod, the part built again, its cut links relinked)
	// at most MaxRestarts times within RestartWindow; the next loss fails
	// the Topology. MaxRestarts < 0: never restore.
	MaxRestarts   int
	RestartWindow time.Duration
	// Recorder receives the Topology's events (worker lost, restored);
	// nil: the manager's (SetupWithManager).
	Recorder events.EventRecorder

	nodesForbidden sync.Once // logs that the Nodes may not be read, once

	mu       sync.Mutex
	sessions map[types.NamespacedName]*session
	events   chan event.GenericEvent
	quit     chan struct{}
}

// session is the coordinator of one Topology's workers.
type session struct {
	uid    types.UID
	ctx    context.Context // ends with the session
	cancel context.CancelFunc
	done   chan struct{} // closed when Start returned
	cl     *cluster.Cluster
	err    error
	tr     *podTransport
	// Only Reconcile (one at a time per Topology) touches these.
	restarts []time.Time // when workers were restored, for the budget
	restore  *restoration
}

// restoration is the replacement of one lost worker pod, under way.
type restoration struct {
	worker int
	why    string        // "pod x-w1 was deleted"
	oldUID types.UID     // the lost pod, to tell the new one from it
	done   chan struct{} // made when cluster.Replace starts; closed when it returns
	err    error
}

// CacheOptions makes a manager's cache watch only the given namespaces
// (the cluster-scoped Nodes are read uncached).
func CacheOptions(namespaces []string) cache.Options {
	o := cache.Options{DefaultNamespaces: map[string]cache.Config{}}
	for _, ns := range namespaces {
		o.DefaultNamespaces[ns] = cache.Config{}
	}
	return o
}

// SetupWithManager registers the controller: Topologies, the pods they
// own, and the coordinators' completions.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if len(r.Namespaces) == 0 {
		return errors.New("the controller watches no namespace (give it at least one)")
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Scheme == nil {
		r.Scheme = mgr.GetScheme()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("hymn-kube")
	}
	if r.Attach == nil {
		a, err := NewAttacher(mgr.GetConfig(), mgr.GetLogger().WithName("attach"))
		if err != nil {
			return err
		}
		r.Attach = a
	}
	r.sessions = map[types.NamespacedName]*session{}
	r.events = make(chan event.GenericEvent, 64)
	r.quit = make(chan struct{})
	// On shutdown every coordinator's streams are closed (the workers
	// tear down): the protocol cannot outlive the controller's process.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		close(r.quit)
		r.mu.Lock()
		all := make([]types.NamespacedName, 0, len(r.sessions))
		for k := range r.sessions {
			all = append(all, k)
		}
		r.mu.Unlock()
		for _, k := range all {
			r.stopSession(k, 10*time.Second)
		}
		return nil
	})); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Topology{}).
		Owns(&corev1.Pod{}).
		WatchesRawSource(source.Channel(r.events, &handler.EnqueueRequestForObject{})).
		Named("topology").
		// A deletion waits for its workers to stop (up to StopTimeout):
		// other Topologies go on meanwhile. One key is never reconciled
		// twice at once.
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

func (r *Reconciler) podTimeout() time.Duration  { return or(r.PodTimeout, DefaultPodTimeout) }
func (r *Reconciler) linkTimeout() time.Duration { return or(r.LinkTimeout, DefaultLinkTimeout) }
func (r *Reconciler) stopTimeout() time.Duration { return or(r.StopTimeout, DefaultStopTimeout) }
func (r *Reconciler) restartWindow() time.Duration {
	return or(r.RestartWindow, DefaultRestartWindow)
}

func (r *Reconciler) maxRestarts() int {
	if r.MaxRestarts == 0 {
		return DefaultMaxRestarts
	}
	return max(r.MaxRestarts, 0)
}

func or(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Reconcile moves one Topology a step toward Running (or Failed).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if !slices.Contains(r.Namespaces, req.Namespace) {
		// The cache sees only the watched namespaces, and RBAC grants
		// nothing elsewhere: a request from outside is a mistake, refused.
		log.FromContext(ctx).Info("ignoring a Topology outside the watched namespaces", "namespace", req.Namespace, "watched", r.Namespaces)
		return ctrl.Result{}, nil
	}
	t := &v1alpha1.Topology{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, t); err != nil {
		if apierrors.IsNotFound(err) {
			r.stopSession(req.NamespacedName, r.stopTimeout())
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if s := r.session(req.NamespacedName); s != nil && s.uid != t.UID {
		// A new Topology of the same name: the old one's coordinator goes.
		r.stopSession(req.NamespacedName, r.stopTimeout())
	}
	old := t.Status.DeepCopy()

	if !t.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(t, Finalizer) {
			return ctrl.Result{}, nil
		}
		t.Status.Phase = v1alpha1.PhaseTerminating
		t.Status.Message = "stopping the workers"
		if err := r.writeStatus(ctx, t, old); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return ctrl.Result{}, err
		}
		// Stop the workers (they tear their parts down); the pods and
		// ConfigMaps then go with the Topology (owner references).
		r.stopSession(req.NamespacedName, r.stopTimeout())
		controllerutil.RemoveFinalizer(t, Finalizer)
		if err := r.Client.Update(ctx, t); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, nil
	}
	if !controllerutil.ContainsFinalizer(t, Finalizer) {
		controllerutil.AddFinalizer(t, Finalizer)
		if err := r.Client.Update(ctx, t); err != nil {
			return ctrl.Result{}, err
		}
	}
	if t.Status.Phase == v1alpha1.PhaseFailed && t.Status.ObservedGeneration == t.Generation {
		// Terminal: the pods were removed when it failed.
		return ctrl.Result{}, r.removeWorkers(ctx, t)
	}
	t.Status.ObservedGeneration = t.Generation
	if t.Status.Phase == "" {
		t.Status.Phase = v1alpha1.PhasePending
	}

	specs, needs, res, err := r.validate(t)
	if err != nil {
		var na *imageNotAllowed
		if errors.As(err, &na) {
			r.event(t, corev1.EventTypeWarning, reasonImageNotAllowed, "Validate", err.Error())
			return ctrl.Result{}, r.failReason(ctx, t, old, reasonImageNotAllowed, err.Error())
		}
		return ctrl.Result{}, r.fail(ctx, t, old, err.Error())
	}
	n := len(specs)
	if t.Status.Phase == v1alpha1.PhasePending {
		// Before its pods exist: a topology no node, or not the whole
		// cluster, could hold fails now, not after --pod-timeout.
		nodes, err := r.clusterNodes(ctx)
		if err != nil {
			return ctrl.Result{}, err
		}
		if msg := tooLarge(needs, nodes); msg != "" {
			return ctrl.Result{}, r.fail(ctx, t, old, msg)
		}
	}

	// A coordinator that finished decides the phase.
	if s := r.session(req.NamespacedName); s != nil {
		select {
		case <-s.done:
			if s.err != nil {
				msg := s.err.Error()
				if !strings.Contains(msg, "pod "+t.Name+"-w") {
					msg += fmt.Sprintf(" (worker i runs in pod %s-w<i>)", t.Name)
				}
				return ctrl.Result{}, r.fail(ctx, t, old, msg)
			}
		default:
		}
	} else if t.Status.Phase == v1alpha1.PhaseLinking || t.Status.Phase == v1alpha1.PhaseRunning || t.Status.Phase == v1alpha1.PhaseRestoring {
		return ctrl.Result{}, r.fail(ctx, t, old, "the controller lost its streams to the workers (it restarted); delete and recreate the Topology")
	}

	pods, err := r.ensureWorkers(ctx, t, specs, needs)
	if err != nil {
		return ctrl.Result{}, err
	}
	if s := r.session(req.NamespacedName); s != nil && closed(s.done) && s.cl != nil {
		// Started: keep it running, restoring a lost worker.
		return r.maintain(ctx, t, old, s, specs, needs, pods)
	}
	ready, wait, failMsg := r.judgePods(t, pods, n)
	if lg := log.FromContext(ctx).V(1); lg.Enabled() {
		var states []string
		for i, p := range pods {
			if p == nil {
				states = append(states, PodName(t, i)+"=unseen")
			} else {
				states = append(states, p.Name+"="+string(p.Status.Phase)+"/"+p.Status.PodIP+"@"+p.ResourceVersion)
			}
		}
		lg.Info("worker pods", "phase", t.Status.Phase, "ready", ready, "pods", states, "fail", failMsg)
	}
	if failMsg != "" {
		return ctrl.Result{}, r.fail(ctx, t, old, failMsg)
	}
	t.Status.WorkersReady = int32(ready)
	if ready < n {
		t.Status.Phase = v1alpha1.PhaseBuilding
		t.Status.Message = fmt.Sprintf("%d of %d worker pods running", ready, n)
		setCond(t, v1alpha1.ConditionWorkersReady, metav1.ConditionFalse, "PodsStarting", t.Status.Message)
		setCond(t, v1alpha1.ConditionReady, metav1.ConditionFalse, "Building", t.Status.Message)
		if err := r.writeStatus(ctx, t, old); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	setCond(t, v1alpha1.ConditionWorkersReady, metav1.ConditionTrue, "PodsRunning", fmt.Sprintf("%d worker pods running", n))

	s := r.session(req.NamespacedName)
	if s == nil {
		r.startSession(ctx, t, pods)
		t.Status.Phase = v1alpha1.PhaseLinking
		t.Status.Message = fmt.Sprintf("building %d parts (%v nodes), then %d cut links", n, res.Sizes(), res.CutSize())
		setCond(t, v1alpha1.ConditionLinked, metav1.ConditionFalse, "Building", t.Status.Message)
		setCond(t, v1alpha1.ConditionReady, metav1.ConditionFalse, "Linking", t.Status.Message)
		return ctrl.Result{}, r.writeStatus(ctx, t, old)
	}
	// Still linking: its end triggers a reconcile.
	return ctrl.Result{}, r.writeStatus(ctx, t, old)
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// maintain keeps a started Topology running: every worker pod running is
// Running; a worker pod that failed or was deleted is replaced — the old
// pod deleted if still there, a new one created under its name, and once
// it runs cluster.Replace builds its part and relinks the cut links —
// Restoring meanwhile, Running again after, with status.restarts counted.
// A part that fails to come back, or a loss beyond the restart budget,
// fails the Topology.
func (r *Reconciler) maintain(ctx context.Context, t *v1alpha1.Topology, old *v1alpha1.TopologyStatus, s *session, specs []*cluster.Spec, needs []partNeeds, pods []*corev1.Pod) (ctrl.Result, error) {
	n := len(specs)
	if rs := s.restore; rs != nil && rs.done != nil {
		if !closed(rs.done) {
			return ctrl.Result{}, r.writeStatus(ctx, t, old) // its end triggers a reconcile
		}
		if rs.err != nil {
			return ctrl.Result{}, r.fail(ctx, t, old, fmt.Sprintf("worker %d could not be restored (%s): %v", rs.worker, rs.why, rs.err))
		}
		s.restore = nil
		s.restarts = append(s.restarts, time.Now())
		t.Status.Restarts++
		msg := fmt.Sprintf("worker %d restored (%s)", rs.worker, rs.why)
		setCond(t, v1alpha1.ConditionRestored, metav1.ConditionTrue, "WorkerRestored", msg)
		r.event(t, corev1.EventTypeNormal, "WorkerRestored", "Restore", msg)
		log.FromContext(ctx).Info(msg)
	}
	if s.restore == nil {
		for i, p := range pods {
			why := lost(t, i, p)
			if why == "" {
				continue
			}
			recent := 0
			for _, at := range s.restarts {
				if time.Since(at) < r.restartWindow() {
					recent++
				}
			}
			if max := r.maxRestarts(); recent >= max {
				msg := fmt.Sprintf("worker %d lost: %s", i, why)
				if max == 0 {
					msg += " (restoring workers is off)"
				} else {
					msg += fmt.Sprintf(" (restored %d times within %v already: giving up)", recent, r.restartWindow())
				}
				return ctrl.Result{}, r.fail(ctx, t, old, msg)
			}
			s.restore = &restoration{worker: i, why: why}
			if p != nil {
				s.restore.oldUID = p.UID
			}
			r.event(t, corev1.EventTypeWarning, "WorkerLost", "Restore", fmt.Sprintf("worker %d lost (%s): restoring it", i, why))
			break
		}
	}
	if rs := s.restore; rs != nil {
		t.Status.Phase = v1alpha1.PhaseRestoring
		t.Status.WorkersReady = int32(n - 1)
		setCond(t, v1alpha1.ConditionReady, metav1.ConditionFalse, "Restoring", fmt.Sprintf("restoring worker %d (%s)", rs.worker, rs.why))
		setCond(t, v1alpha1.ConditionWorkersReady, metav1.ConditionFalse, "Restoring", fmt.Sprintf("worker %d's pod is being replaced", rs.worker))
		say := func(format string, a ...any) {
			t.Status.Message = fmt.Sprintf("restoring worker %d (%s): ", rs.worker, rs.why) + fmt.Sprintf(format, a...)
		}
		name := PodName(t, rs.worker)
		p := pods[rs.worker]
		switch {
		case p != nil && rs.oldUID != "" && p.UID == rs.oldUID:
			// The lost pod first goes (its name is the new one's).
			if p.DeletionTimestamp.IsZero() {
				err := r.Client.Delete(ctx, p, client.Preconditions{UID: &rs.oldUID})
				if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
					return ctrl.Result{}, err
				}
			}
			say("waiting for pod %s to go", name)
			return ctrl.Result{RequeueAfter: 2 * time.Second}, r.writeStatus(ctx, t, old)
		case p == nil:
			if err := r.createWorker(ctx, t, rs.worker, specs[rs.worker], needs[rs.worker]); err != nil {
				return ctrl.Result{}, err
			}
			say("pod %s created", name)
			return ctrl.Result{RequeueAfter: r.podTimeout()}, r.writeStatus(ctx, t, old)
		case !p.DeletionTimestamp.IsZero() || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
			return ctrl.Result{}, r.fail(ctx, t, old, fmt.Sprintf("worker %d could not be restored (%s): its new pod %s: %s", rs.worker, rs.why, p.Name, orDeleted(p)))
		case p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "":
			if verdict := schedulerVerdict(p); verdict != "" {
				return ctrl.Result{}, r.fail(ctx, t, old, fmt.Sprintf("worker %d could not be restored (%s): its new pod %s cannot be scheduled: %s%s", rs.worker, rs.why, p.Name, verdict, requested(p)))
			}
			d := time.Until(p.CreationTimestamp.Add(r.podTimeout()))
			if d <= 0 {
				return ctrl.Result{}, r.fail(ctx, t, old, fmt.Sprintf("worker %d could not be restored (%s): its new pod %s did not run within %v: %s", rs.worker, rs.why, p.Name, r.podTimeout(), podReason(p)))
			}
			say("waiting for pod %s to run", name)
			return ctrl.Result{RequeueAfter: d + 100*time.Millisecond}, r.writeStatus(ctx, t, old)
		}
		// The new pod runs: build its part and relink.
		s.tr.setPod(rs.worker, p.DeepCopy())
		rs.done = make(chan struct{})
		ping := &v1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: t.Name, Namespace: t.Namespace}}
		go func() {
			rs.err = s.cl.Replace(s.ctx, rs.worker)
			close(rs.done)
			select {
			case r.events <- event.GenericEvent{Object: ping}:
			case <-r.quit:
			}
		}()
		say("pod %s runs at %s: building its part and relinking its cut links", name, p.Status.PodIP)
		return ctrl.Result{}, r.writeStatus(ctx, t, old)
	}
	nodes := 0
	for _, e := range s.cl.Ready {
		nodes += len(e.Nodes)
	}
	t.Status.Phase = v1alpha1.PhaseRunning
	t.Status.WorkersReady = int32(n)
	t.Status.NodesReady = int32(nodes)
	t.Status.LinksUp = int32(s.cl.Split.CutSize())
	t.Status.Message = fmt.Sprintf("%d nodes on %d workers, %d cut links up (build %v, link %v)", nodes, n,
		s.cl.Split.CutSize(), s.cl.BuildTime.Round(time.Millisecond), s.cl.LinkTime.Round(time.Millisecond))
	if c := meta.FindStatusCondition(t.Status.Conditions, v1alpha1.ConditionRestored); c != nil {
		t.Status.Message += "; " + c.Message
	}
	setCond(t, v1alpha1.ConditionWorkersReady, metav1.ConditionTrue, "PodsRunning", fmt.Sprintf("%d worker pods running", n))
	setCond(t, v1alpha1.ConditionLinked, metav1.ConditionTrue, "Linked", fmt.Sprintf("%d cut links up", t.Status.LinksUp))
	setCond(t, v1alpha1.ConditionReady, metav1.ConditionTrue, "Running", t.Status.Message)
	return ctrl.Result{}, r.writeStatus(ctx, t, old)
}

// lost says why worker i's pod is lost ("" if it is not): gone, being
// deleted, or ended.
func lost(t *v1alpha1.Topology, i int, p *corev1.Pod) string {
	switch {
	case p == nil:
		return fmt.Sprintf("pod %s was deleted", PodName(t, i))
	case !p.DeletionTimestamp.IsZero():
		return fmt.Sprintf("pod %s was deleted", p.Name)
	case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
		return fmt.Sprintf("pod %s %s: %s", p.Name, strings.ToLower(string(p.Status.Phase)), podReason(p))
	}
	return ""
}

func orDeleted(p *corev1.Pod) string {
	if !p.DeletionTimestamp.IsZero() {
		return "it is being deleted"
	}
	return strings.ToLower(string(p.Status.Phase)) + ": " + podReason(p)
}

// event records an event on the Topology, if there is a recorder.
func (r *Reconciler) event(t *v1alpha1.Topology, typ, reason, action, msg string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(t, nil, typ, reason, action, "%s", msg)
	}
}

// vniKeyFor is a Topology's VNI key (cluster.Spec.VNIKey), stable across
// reconciles. It keeps VNIs from being guessed from the topology alone;
// whoever can read the Topology can derive them (docs/cluster.md: the
// tunnels' filter, not the VNI, keeps strangers out).
func vniKeyFor(uid types.UID) string {
	sum := sha256.Sum256([]byte("hymn cut-link VNIs " + string(uid)))
	return hex.EncodeToString(sum[:cluster.VNIKeyLen])
}

// validate checks the spec and splits the topology as the workers will,
// with what each part needs of a node.
func (r *Reconciler) validate(t *v1alpha1.Topology) ([]*cluster.Spec, []partNeeds, *partition.Result, error) {
	sp := t.Spec
	if len(t.Name) > maxName {
		return nil, nil, nil, fmt.Errorf("name is %d characters long; at most %d (the worker pods are named after it)", len(t.Name), maxName)
	}
	if (sp.Topology == "") == (sp.File == "") {
		return nil, nil, nil, errors.New("exactly one of spec.topology (a spec string like linear,4) and spec.file (a topology file's text) must be set")
	}
	n := t.WorkerCount()
	if n < 1 || n > v1alpha1.MaxWorkers {
		return nil, nil, nil, fmt.Errorf("spec.workers is %d; it must be 1-%d", n, v1alpha1.MaxWorkers)
	}
	switch corev1.PullPolicy(sp.ImagePullPolicy) {
	case "", corev1.PullNever, corev1.PullIfNotPresent, corev1.PullAlways:
	default:
		return nil, nil, nil, fmt.Errorf("spec.imagePullPolicy %q: use Never, IfNotPresent or Always", sp.ImagePullPolicy)
	}
	if r.image(t) == "" {
		return nil, nil, nil, errors.New("no worker image: set spec.image or the controller's --image")
	}
	if err := r.checkImage(t); err != nil {
		return nil, nil, nil, err
	}
	topology, file := sp.Topology, ""
	if sp.File != "" {
		topology, file = sp.File, "spec.file"
	}
	specs, res, err := cluster.NewSpecFrom(TopologySource, topology, file, sp.IPBase, false, n, partition.Options{})
	if err != nil {
		return nil, nil, nil, err
	}
	// Every reconcile splits again, and NewSpec draws a new VNI key each
	// time: workers whose ConfigMaps were written by two reconciles (a
	// creation that failed half way) would disagree on their tunnels'
	// VNIs. The key is derived from the Topology's UID instead, the same
	// for every reconcile of one Topology and new for a re-created one.
	for _, s := range specs {
		s.VNIKey = vniKeyFor(t.UID)
	}
	needs := make([]partNeeds, len(specs))
	for i, s := range specs {
		rs, err := s.Resolve()
		if err != nil {
			return nil, nil, nil, err
		}
		if needs[i], err = estimatePart(rs); err != nil {
			return nil, nil, nil, err
		}
	}
	return specs, needs, res, nil
}

func (r *Reconciler) image(t *v1alpha1.Topology) string {
	if t.Spec.Image != "" {
		return t.Spec.Image
	}
	return r.defaultImage()
}

func (r *Reconciler) defaultImage() string {
	if r.Image != "" {
		return r.Image
	}
	return DefaultImage
}

// reasonImageNotAllowed is the Ready condition's reason (and the event's)
// when spec.image is not on the allow-list.
const reasonImageNotAllowed = "ImageNotAllowed"

// imageNotAllowed is validate's error for an image off the allow-list.
type imageNotAllowed struct{ image, allowed string }

func (e *imageNotAllowed) Error() string {
	return fmt.Sprintf("spec.image %q is not on the controller's allow-list (%s): worker pods administer their node's networking, so they run only the images the operator allows (hymn-kube controller --allow-image)", e.image, e.allowed)
}

// checkImage refuses a spec.image that is neither the default image nor
// on the allow-list.
func (r *Reconciler) checkImage(t *v1alpha1.Topology) error {
	img := r.image(t)
	if img == r.defaultImage() || ImageAllowed(img, r.AllowedImages) {
		return nil
	}
	allowed := append([]string{r.defaultImage()}, r.AllowedImages...)
	return &imageNotAllowed{image: clip(img, 200), allowed: clip(strings.Join(allowed, ", "), 1000)}
}

// ImageAllowed reports whether image matches an entry of allowed: equal to
// it, or, for an entry "NAME:*", NAME followed by a tag (":...") or a
// digest ("@..."), never a longer name.
func ImageAllowed(image string, allowed []string) bool {
	for _, a := range allowed {
		if name, ok := strings.CutSuffix(a, ":*"); ok {
			if rest, ok := strings.CutPrefix(image, name); ok && len(rest) > 1 && (rest[0] == ':' || rest[0] == '@') &&
				!strings.ContainsAny(rest[1:], "/") {
				return true
			}
			continue
		}
		if image == a {
			return true
		}
	}
	return false
}

// CheckAllowList refuses malformed allow-list entries: empty, with spaces,
// or a wildcard anywhere but a final ":*".
func CheckAllowList(allowed []string) error {
	for _, a := range allowed {
		name, wild := strings.CutSuffix(a, ":*")
		switch {
		case a == "" || name == "":
			return errors.New("an empty image name")
		case strings.ContainsAny(a, " \t\n"):
			return fmt.Errorf("image %q has white space", a)
		case strings.Contains(name, "*") || (!wild && strings.Contains(a, "*")):
			return fmt.Errorf("image %q: a wildcard is only allowed as a final \":*\" (any tag or digest of that name)", a)
		}
	}
	return nil
}

// PodName is worker i's pod (and ConfigMap) name.
func PodName(t *v1alpha1.Topology, i int) string { return fmt.Sprintf("%s-w%d", t.Name, i) }

// ensureWorkers creates the ConfigMaps and pods that are missing and
// returns the Topology's worker pods by worker number (nil: not seen yet).
func (r *Reconciler) ensureWorkers(ctx context.Context, t *v1alpha1.Topology, specs []*cluster.Spec, needs []partNeeds) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, client.InNamespace(t.Namespace), client.MatchingLabels{LabelTopology: string(t.UID)}); err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, len(specs))
	for i := range list.Items {
		p := &list.Items[i]
		if w, err := strconv.Atoi(p.Labels[LabelWorker]); err == nil && w >= 0 && w < len(pods) && metav1.IsControlledBy(p, t) {
			pods[w] = p
		}
	}
	if t.Status.Phase != v1alpha1.PhasePending && t.Status.Phase != v1alpha1.PhaseBuilding {
		return pods, nil // made already; a lost one is restored (maintain)
	}
	for i, s := range specs {
		if pods[i] != nil {
			continue
		}
		if err := r.createWorker(ctx, t, i, s, needs[i]); err != nil {
			return nil, err
		}
	}
	return pods, nil
}

// createWorker creates worker i's ConfigMap (its part) and pod, the pod
// requesting what the part needs; ones that exist already are kept.
func (r *Reconciler) createWorker(ctx context.Context, t *v1alpha1.Topology, i int, s *cluster.Spec, need partNeeds) error {
	pull := corev1.PullPolicy(t.Spec.ImagePullPolicy)
	if pull == "" {
		pull = r.PullPolicy
	}
	if pull == "" {
		pull = DefaultPullPolicy
	}
	data, err := s.JSON()
	if err != nil {
		return err
	}
	name := PodName(t, i)
	labels := map[string]string{LabelApp: AppWorker, LabelTopology: string(t.UID), LabelWorker: strconv.Itoa(i)}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.Namespace, Labels: labels},
		Data:       map[string]string{specKey: string(data)},
	}
	automount, grace := false, int64(30)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.Namespace, Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &automount,
			Containers: []corev1.Container{{
				Name: workerContainer, Image: r.image(t), ImagePullPolicy: pull,
				Args:  []string{"worker", "--spec", "/spec/" + specKey},
				Stdin: true, StdinOnce: true,
				SecurityContext: WorkerSecurityContext(),
				Resources:       corev1.ResourceRequirements{Requests: need.requests()},
				VolumeMounts:    []corev1.VolumeMount{{Name: "spec", MountPath: "/spec", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "spec", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}},
			}}},
		},
	}
	for _, o := range []client.Object{cm, pod} {
		if err := controllerutil.SetControllerReference(t, o, r.Scheme); err != nil {
			return err
		}
		if err := r.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s: %w", name, err)
		}
	}
	return nil
}

// judgePods counts the running worker pods; a failed pod, one the
// scheduler found no node for, or one not running within PodTimeout, is a
// failure message naming it. wait is when to look again if some are not
// running yet.
func (r *Reconciler) judgePods(t *v1alpha1.Topology, pods []*corev1.Pod, n int) (ready int, wait time.Duration, fail string) {
	wait = r.podTimeout()
	now := time.Now()
	started := t.Status.Phase == v1alpha1.PhaseLinking || t.Status.Phase == v1alpha1.PhaseRunning
	for i, p := range pods {
		if p == nil {
			if started {
				return 0, 0, fmt.Sprintf("worker pod %s is gone", PodName(t, i))
			}
			if d := t.CreationTimestamp.Add(r.podTimeout()).Sub(now); d <= 0 {
				return 0, 0, fmt.Sprintf("worker pod %s was not created within %v", PodName(t, i), r.podTimeout())
			} else if d < wait {
				wait = d
			}
			continue
		}
		switch {
		case !p.DeletionTimestamp.IsZero():
			return 0, 0, fmt.Sprintf("worker pod %s is being deleted", p.Name)
		case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
			return 0, 0, fmt.Sprintf("worker pod %s %s: %s", p.Name, strings.ToLower(string(p.Status.Phase)), podReason(p))
		case p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "":
			ready++
			continue
		}
		// The scheduler found no node: it would try again as the cluster
		// changes, but a topology too large for it is the usual cause,
		// and a clear failure now beats waiting out PodTimeout for it.
		if verdict := schedulerVerdict(p); verdict != "" {
			return 0, 0, fmt.Sprintf("worker pod %s cannot be scheduled: %s%s", p.Name, verdict, requested(p))
		}
		d := p.CreationTimestamp.Add(r.podTimeout()).Sub(now)
		if d <= 0 {
			return 0, 0, fmt.Sprintf("worker pod %s did not run within %v: %s", p.Name, r.podTimeout(), podReason(p))
		}
		if d < wait {
			wait = d
		}
	}
	return ready, wait + 100*time.Millisecond, ""
}

// podReason says why a pod is where it is, from its container's state.
func podReason(p *corev1.Pod) string {
	var parts []string
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Terminated != nil:
			x := cs.State.Terminated
			parts = append(parts, strings.TrimSpace(fmt.Sprintf("container %s exited with code %d (%s) %s", cs.Name, x.ExitCode, x.Reason, strings.TrimSpace(x.Message))))
		case cs.State.Waiting != nil:
			x := cs.State.Waiting
			parts = append(parts, strings.TrimSpace(fmt.Sprintf("container %s waiting: %s %s", cs.Name, x.Reason, strings.TrimSpace(x.Message))))
		}
	}
	if p.Status.Reason != "" || p.Status.Message != "" {
		parts = append(parts, strings.TrimSpace(p.Status.Reason+" "+p.Status.Message))
	}
	if len(parts) == 0 {
		phase := string(p.Status.Phase)
		if phase == "" {
			phase = "Pending"
		}
		if p.Spec.NodeName == "" {
			return phase + ", not scheduled to a node"
		}
		return phase + " on node " + p.Spec.NodeName
	}
	return strings.Join(parts, "; ")
}

// startSession runs cluster.Start over the pods' attach streams in the
// background; its end triggers a reconcile.
func (r *Reconciler) startSession(ctx context.Context, t *v1alpha1.Topology, pods []*corev1.Pod) {
	key := types.NamespacedName{Namespace: t.Namespace, Name: t.Name}
	sctx, cancel := context.WithCancel(context.Background())
	tr := &podTransport{pods: append([]*corev1.Pod(nil), pods...), attach: r.Attach}
	s := &session{uid: t.UID, ctx: sctx, cancel: cancel, done: make(chan struct{}), tr: tr}
	r.mu.Lock()
	r.sessions[key] = s
	r.mu.Unlock()
	logger := log.FromContext(ctx).WithValues("topology", key.String())
	sp := t.Spec
	topology, file := sp.Topology, ""
	if sp.File != "" {
		topology, file = sp.File, "spec.file"
	}
	opts := cluster.Options{
		Source:       TopologySource,
		Partition:    partition.Options{Parts: t.WorkerCount()},
		ReadyTimeout: r.linkTimeout(),
		Log:          func(format string, a ...any) { logger.Info(strings.TrimSpace(fmt.Sprintf(format, a...))) },
	}
	ping := &v1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: t.Name, Namespace: t.Namespace}}
	go func() {
		s.cl, s.err = cluster.Start(sctx, tr, topology, file, sp.IPBase, false, opts)
		if s.err != nil {
			if why := tr.streamErrors(); why != "" && !strings.Contains(s.err.Error(), strings.SplitN(why, "; ", 2)[0][strings.Index(why, ": ")+2:]) {
				s.err = fmt.Errorf("%w (%s)", s.err, why)
			}
		}
		close(s.done)
		select {
		case r.events <- event.GenericEvent{Object: ping}:
		case <-r.quit:
		}
	}()
}

func (r *Reconciler) session(key types.NamespacedName) *session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[key]
}

// stopSession stops a Topology's workers (if its coordinator got them
// running) and forgets the coordinator.
func (r *Reconciler) stopSession(key types.NamespacedName, timeout time.Duration) {
	r.mu.Lock()
	s := r.sessions[key]
	delete(r.sessions, key)
	r.mu.Unlock()
	if s == nil {
		return
	}
	s.cancel() // a Start still running stops its workers itself
	<-s.done
	if s.cl != nil {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		// Best effort: the pods go with the Topology (owner references)
		// or its failure whatever the workers answer.
		_ = s.cl.Stop(ctx)
		cancel()
	}
}

// fail records phase Failed with msg, then stops and removes the workers.
// The record comes first: if writing it fails (a conflict), the next
// reconcile finds the same failure again (the failed pod, the
// coordinator's error) rather than a Topology without pods to recreate.
func (r *Reconciler) fail(ctx context.Context, t *v1alpha1.Topology, old *v1alpha1.TopologyStatus, msg string) error {
	return r.failReason(ctx, t, old, "Failed", msg)
}

// failReason is fail with reason as the Ready condition's.
func (r *Reconciler) failReason(ctx context.Context, t *v1alpha1.Topology, old *v1alpha1.TopologyStatus, reason, msg string) error {
	t.Status.Phase = v1alpha1.PhaseFailed
	msg = strings.ReplaceAll(strings.TrimSpace(msg), "\n", "; ") // joined errors: one line for kubectl's column
	t.Status.Message = clip(msg, 4000)
	t.Status.ObservedGeneration = t.Generation
	t.Status.WorkersReady, t.Status.NodesReady, t.Status.LinksUp = 0, 0, 0
	if meta.FindStatusCondition(t.Status.Conditions, v1alpha1.ConditionWorkersReady) != nil {
		setCond(t, v1alpha1.ConditionWorkersReady, metav1.ConditionFalse, "Removed", "the worker pods are removed")
	}
	setCond(t, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	if err := r.writeStatus(ctx, t, old); err != nil {
		return err
	}
	key := types.NamespacedName{Namespace: t.Namespace, Name: t.Name}
	go r.stopSession(key, 10*time.Second) // the pods go below in any case
	return r.removeWorkers(ctx, t)
}

// removeWorkers deletes the Topology's pods and ConfigMaps.
func (r *Reconciler) removeWorkers(ctx context.Context, t *v1alpha1.Topology) error {
	sel := []client.DeleteAllOfOption{client.InNamespace(t.Namespace), client.MatchingLabels{LabelTopology: string(t.UID)}}
	var errs []error
	for _, o := range []client.Object{&corev1.Pod{}, &corev1.ConfigMap{}} {
		if err := r.Client.DeleteAllOf(ctx, o, sel...); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r *Reconciler) writeStatus(ctx context.Context, t *v1alpha1.Topology, old *v1alpha1.TopologyStatus) error {
	if equality.Semantic.DeepEqual(old, &t.Status) {
		return nil
	}
	sort.SliceStable(t.Status.Conditions, func(i, j int) bool { return t.Status.Conditions[i].Type < t.Status.Conditions[j].Type })
	return r.Client.Status().Update(ctx, t)
}

func setCond(t *v1alpha1.Topology, typ string, st metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&t.Status.Conditions, metav1.Condition{
		Type: typ, Status: st, Reason: reason, Message: clip(msg, 32000), ObservedGeneration: t.Generation,
	})
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
