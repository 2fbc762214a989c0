package controller

import (
	"context"
	"errors"
	"fmt"
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
	ctrl "sigs.k8s.io/controller-runtime"
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
	// PodTimeout bounds the wait for a worker pod to run with an address;
	// LinkTimeout the build and linking of the parts once they all run;
	// StopTimeout the workers' teardown on deletion.
	PodTimeout, LinkTimeout, StopTimeout time.Duration

	mu       sync.Mutex
	sessions map[types.NamespacedName]*session
	events   chan event.GenericEvent
	quit     chan struct{}
}

// session is the coordinator of one Topology's workers.
type session struct {
	uid    types.UID
	cancel context.CancelFunc
	done   chan struct{} // closed when Start returned
	cl     *cluster.Cluster
	err    error
}

// SetupWithManager registers the controller: Topologies, the pods they
// own, and the coordinators' completions.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Scheme == nil {
		r.Scheme = mgr.GetScheme()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
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

func or(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Reconcile moves one Topology a step toward Running (or Failed).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
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

	specs, res, err := r.validate(t)
	if err != nil {
		return ctrl.Result{}, r.fail(ctx, t, old, err.Error())
	}
	n := len(specs)

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
	} else if t.Status.Phase == v1alpha1.PhaseLinking || t.Status.Phase == v1alpha1.PhaseRunning {
		return ctrl.Result{}, r.fail(ctx, t, old, "the controller lost its streams to the workers (it restarted); delete and recreate the Topology")
	}

	pods, err := r.ensureWorkers(ctx, t, specs)
	if err != nil {
		return ctrl.Result{}, err
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
	select {
	case <-s.done:
	default:
		return ctrl.Result{}, r.writeStatus(ctx, t, old) // still linking; its end triggers a reconcile
	}
	nodes := 0
	for _, e := range s.cl.Ready {
		nodes += len(e.Nodes)
	}
	t.Status.Phase = v1alpha1.PhaseRunning
	t.Status.NodesReady = int32(nodes)
	t.Status.LinksUp = int32(s.cl.Split.CutSize())
	t.Status.Message = fmt.Sprintf("%d nodes on %d workers, %d cut links up (build %v, link %v)", nodes, n,
		s.cl.Split.CutSize(), s.cl.BuildTime.Round(time.Millisecond), s.cl.LinkTime.Round(time.Millisecond))
	setCond(t, v1alpha1.ConditionLinked, metav1.ConditionTrue, "Linked", fmt.Sprintf("%d cut links up", t.Status.LinksUp))
	setCond(t, v1alpha1.ConditionReady, metav1.ConditionTrue, "Running", t.Status.Message)
	return ctrl.Result{}, r.writeStatus(ctx, t, old)
}

// validate checks the spec and splits the topology as the workers will.
func (r *Reconciler) validate(t *v1alpha1.Topology) ([]*cluster.Spec, *partition.Result, error) {
	sp := t.Spec
	if len(t.Name) > maxName {
		return nil, nil, fmt.Errorf("name is %d characters long; at most %d (the worker pods are named after it)", len(t.Name), maxName)
	}
	if (sp.Topology == "") == (sp.File == "") {
		return nil, nil, errors.New("exactly one of spec.topology (a spec string like linear,4) and spec.file (a topology file's text) must be set")
	}
	n := t.WorkerCount()
	if n < 1 || n > v1alpha1.MaxWorkers {
		return nil, nil, fmt.Errorf("spec.workers is %d; it must be 1-%d", n, v1alpha1.MaxWorkers)
	}
	switch corev1.PullPolicy(sp.ImagePullPolicy) {
	case "", corev1.PullNever, corev1.PullIfNotPresent, corev1.PullAlways:
	default:
		return nil, nil, fmt.Errorf("spec.imagePullPolicy %q: use Never, IfNotPresent or Always", sp.ImagePullPolicy)
	}
	if r.image(t) == "" {
		return nil, nil, errors.New("no worker image: set spec.image or the controller's --image")
	}
	topology, file := sp.Topology, ""
	if sp.File != "" {
		topology, file = sp.File, "spec.file"
	}
	specs, res, err := cluster.NewSpec(topology, file, sp.IPBase, false, n, partition.Options{})
	if err != nil {
		return nil, nil, err
	}
	for _, s := range specs {
		if _, err := s.Resolve(); err != nil {
			return nil, nil, err
		}
	}
	return specs, res, nil
}

func (r *Reconciler) image(t *v1alpha1.Topology) string {
	if t.Spec.Image != "" {
		return t.Spec.Image
	}
	if r.Image != "" {
		return r.Image
	}
	return DefaultImage
}

// PodName is worker i's pod (and ConfigMap) name.
func PodName(t *v1alpha1.Topology, i int) string { return fmt.Sprintf("%s-w%d", t.Name, i) }

// ensureWorkers creates the ConfigMaps and pods that are missing and
// returns the Topology's worker pods by worker number (nil: not seen yet).
func (r *Reconciler) ensureWorkers(ctx context.Context, t *v1alpha1.Topology, specs []*cluster.Spec) ([]*corev1.Pod, error) {
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
		return pods, nil // made already; a missing one is judged, not recreated
	}
	pull := corev1.PullPolicy(t.Spec.ImagePullPolicy)
	if pull == "" {
		pull = r.PullPolicy
	}
	if pull == "" {
		pull = DefaultPullPolicy
	}
	for i, s := range specs {
		if pods[i] != nil {
			continue
		}
		data, err := s.JSON()
		if err != nil {
			return nil, err
		}
		name := PodName(t, i)
		labels := map[string]string{LabelApp: AppWorker, LabelTopology: string(t.UID), LabelWorker: strconv.Itoa(i)}
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.Namespace, Labels: labels},
			Data:       map[string]string{specKey: string(data)},
		}
		privileged, automount, grace := true, false, int64(30)
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
					// Namespaces, veth pairs, bridges, VXLAN devices and
					// packet sockets need the pod privileged.
					SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
					VolumeMounts:    []corev1.VolumeMount{{Name: "spec", MountPath: "/spec", ReadOnly: true}},
				}},
				Volumes: []corev1.Volume{{Name: "spec", VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}},
				}}},
			},
		}
		for _, o := range []client.Object{cm, pod} {
			if err := controllerutil.SetControllerReference(t, o, r.Scheme); err != nil {
				return nil, err
			}
			if err := r.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("creating %s: %w", name, err)
			}
		}
	}
	return pods, nil
}

// judgePods counts the running worker pods; a failed pod, or one not
// running within PodTimeout, is a failure message naming it. wait is when
// to look again if some are not running yet.
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
			parts = append(parts, fmt.Sprintf("container %s exited with code %d (%s) %s", cs.Name, x.ExitCode, x.Reason, strings.TrimSpace(x.Message)))
		case cs.State.Waiting != nil:
			x := cs.State.Waiting
			parts = append(parts, fmt.Sprintf("container %s waiting: %s %s", cs.Name, x.Reason, strings.TrimSpace(x.Message)))
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
	s := &session{uid: t.UID, cancel: cancel, done: make(chan struct{})}
	r.mu.Lock()
	r.sessions[key] = s
	r.mu.Unlock()
	logger := log.FromContext(ctx).WithValues("topology", key.String())
	tr := &podTransport{pods: append([]*corev1.Pod(nil), pods...), attach: r.Attach}
	sp := t.Spec
	topology, file := sp.Topology, ""
	if sp.File != "" {
		topology, file = sp.File, "spec.file"
	}
	opts := cluster.Options{
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
		s.cl.Stop(ctx)
		cancel()
	}
}

// fail records phase Failed with msg, then stops and removes the workers.
// The record comes first: if writing it fails (a conflict), the next
// reconcile finds the same failure again (the failed pod, the
// coordinator's error) rather than a Topology without pods to recreate.
func (r *Reconciler) fail(ctx context.Context, t *v1alpha1.Topology, old *v1alpha1.TopologyStatus, msg string) error {
	t.Status.Phase = v1alpha1.PhaseFailed
	msg = strings.ReplaceAll(strings.TrimSpace(msg), "\n", "; ") // joined errors: one line for kubectl's column
	t.Status.Message = clip(msg, 4000)
	t.Status.ObservedGeneration = t.Generation
	t.Status.WorkersReady, t.Status.NodesReady, t.Status.LinksUp = 0, 0, 0
	if meta.FindStatusCondition(t.Status.Conditions, v1alpha1.ConditionWorkersReady) != nil {
		setCond(t, v1alpha1.ConditionWorkersReady, metav1.ConditionFalse, "Removed", "the worker pods are removed")
	}
	setCond(t, v1alpha1.ConditionReady, metav1.ConditionFalse, "Failed", msg)
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
