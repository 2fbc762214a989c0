package kubecli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/hymn-net/hymn/kube/api/v1alpha1"
	"github.com/hymn-net/hymn/kube/controller"
	"github.com/hymn-net/hymn/topo"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// podNet is a Running Topology as the mininet> shell sees it (it is a
// cli.RemoteNetwork): the plan from worker 0's ConfigMap, and each node
// command run in the worker pod that holds the node through pods/exec, as
// kubectl exec POD -- hymn exec -c LINE NODE (the line run by bash, else sh). The controller's attach
// streams stay its own: a second client on them would interleave with it.
type podNet struct {
	cfg    *rest.Config
	cs     kubernetes.Interface
	t      *v1alpha1.Topology
	plan   *topo.Plan
	assign map[string]int
}

func newPodNet(ctx context.Context, c client.Reader, cfg *rest.Config, t *v1alpha1.Topology) (*podNet, error) {
	spec, err := controller.WorkerSpec(ctx, c, t, 0)
	if err != nil {
		return nil, fmt.Errorf("reading the topology's split: %w", err)
	}
	r, err := spec.Resolve()
	if err != nil {
		return nil, fmt.Errorf("the topology's split: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &podNet{cfg: cfg, cs: cs, t: t, plan: r.Plan, assign: spec.Assign}, nil
}

func (p *podNet) Plan() *topo.Plan { return p.plan }

// hymnInPod is the worker's own binary: the pod's first process is hymn
// worker, whatever path the image gives it.
const hymnInPod = "/proc/1/exe"

func (p *podNet) Run(ctx context.Context, node, cmdline string, out io.Writer) (int, error) {
	w, ok := p.assign[node]
	if !ok {
		return -1, fmt.Errorf("no node %s in the topology", node)
	}
	pod := controller.PodName(p.t, w)
	req := p.cs.CoreV1().RESTClient().Post().Namespace(p.t.Namespace).Resource("pods").Name(pod).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Command: []string{hymnInPod, "exec", "-c", cmdline, node},
		Stdout:  true, Stderr: true,
	}, clientgoscheme.ParameterCodec)
	exec, err := controller.StreamExecutor(p.cfg, req.URL())
	if err != nil {
		return -1, err
	}
	// stdout and stderr are copied by goroutines of their own.
	w2 := &lockedWriter{w: out}
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: w2, Stderr: w2})
	var code utilexec.CodeExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &code):
		return code.Code, nil
	case ctx.Err() != nil:
		return -1, ctx.Err()
	}
	return -1, fmt.Errorf("%s on pod %s: %v", node, pod, err)
}
