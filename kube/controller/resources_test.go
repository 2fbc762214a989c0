package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/cluster"
	"github.com/hymn-net/hymn/partition"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const mebi = 1 << 20

// estimate splits a topology as the controller does and estimates every
// part.
func estimate(t *testing.T, topology, file string, workers int) []partNeeds {
	t.Helper()
	specs, _, err := cluster.NewSpec(topology, file, "", false, workers, partition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out []partNeeds
	for _, s := range specs {
		r, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		n, err := estimatePart(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// A part needs the worker's base, 1 MiB per node, its VMs' memory and a
// forwarder per emulated link it runs (its side of an emulated cut link
// too).
func TestEstimatePart(t *testing.T) {
	nodes := 0
	for _, n := range estimate(t, "linear,4", "", 2) {
		nodes += n.Nodes
		if want := int64(workerBaseMemory + n.Nodes*mebi); n.Memory != want || n.CPU != workerBaseCPU || n.VMs != 0 || n.EmulatedLinks != 0 {
			t.Errorf("linear,4 worker %d: %+v, want %d bytes and %dm", n.Worker, n, want, workerBaseCPU)
		}
	}
	if nodes != 8 {
		t.Errorf("linear,4: %d nodes in the parts, want 8", nodes)
	}
	if n := estimate(t, "tree,2,3", "", 1)[0]; n.Nodes != 13 || n.Memory != workerBaseMemory+13*mebi {
		t.Errorf("tree,2,3 on one worker: %+v", n)
	}

	// Worker 0: two VMs (1 GiB and the default 256 MiB), an emulated link
	// inside and its side of the emulated cut link; worker 1 the other
	// side.
	file := `
nodes:
  - {name: h1, backend: vm, params: {memory: 1G}, placement: 0}
  - {name: h2, backend: vm, placement: 0}
  - {name: s1, kind: switch, placement: 0}
  - {name: h3, placement: 1}
  - {name: s2, kind: switch, placement: 1}
links:
  - endpoints: [h1, s1]
    params: {delay: 5ms}
  - endpoints: [h2, s1]
  - endpoints: [s1, s2]
    params: {delay: 10ms}
  - endpoints: [h3, s2]
`
	parts := estimate(t, file, "vms.yaml", 2)
	w0, w1 := parts[0], parts[1]
	if w0.Nodes != 3 || w0.VMs != 2 || w0.VMMemory != 1280*mebi || w0.VMMin != 256*mebi || w0.VMMax != 1024*mebi || w0.EmulatedLinks != 2 {
		t.Fatalf("worker 0: %+v", w0)
	}
	if want := int64(workerBaseMemory + 3*mebi + 1280*mebi + 2*emulatedLinkMemory); w0.Memory != want || w0.CPU != workerBaseCPU+2*emulatedLinkCPU {
		t.Errorf("worker 0 needs %d bytes, %dm; want %d, %dm", w0.Memory, w0.CPU, want, workerBaseCPU+2*emulatedLinkCPU)
	}
	if w1.Nodes != 2 || w1.VMs != 0 || w1.EmulatedLinks != 1 || w1.Memory != workerBaseMemory+2*mebi+emulatedLinkMemory {
		t.Errorf("worker 1: %+v", w1)
	}
	if got := w0.memoryMadeOf(); got != "(3 nodes, 2 VMs with 1.2 GiB in all, 2 emulated links)" {
		t.Errorf("worker 0's memory is made of %q", got)
	}
	if got := w0.add(w1).memoryMadeOf(); got != "(5 nodes, 2 VMs with 1.2 GiB in all, 3 emulated links)" {
		t.Errorf("the sum is made of %q", got)
	}
	req := w0.requests()
	if m, c := req[corev1.ResourceMemory], req[corev1.ResourceCPU]; m.Value() != w0.Memory || c.MilliValue() != w0.CPU {
		t.Errorf("requests %v for %+v", req, w0)
	}
}

func testNode(name, memory, cpu string, pods int64) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceMemory: resource.MustParse(memory),
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourcePods:   *resource.NewQuantity(pods, resource.DecimalSI),
	}}}
}

// tooLarge: a part beyond the largest schedulable node, the parts beyond
// the schedulable nodes' sum, more workers than pods allowed; cordoned and
// tainted nodes do not count, and with no schedulable node (or none at
// all) it leaves the verdict to the scheduler.
func TestTooLarge(t *testing.T) {
	part := func(w int, memMiB, cpu int64, nodes int) partNeeds {
		return partNeeds{Worker: w, Memory: memMiB * mebi, CPU: cpu, Nodes: nodes}
	}
	cordoned := testNode("cordoned", "64Gi", "64", 110)
	cordoned.Spec.Unschedulable = true
	tainted := testNode("control", "64Gi", "64", 110)
	tainted.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
	vms := partNeeds{Worker: 1, Memory: 3174 * mebi, CPU: 100, Nodes: 40, VMs: 2, VMMemory: 2048 * mebi, VMMin: 1024 * mebi, VMMax: 1024 * mebi}
	cases := []struct {
		name  string
		parts []partNeeds
		nodes []corev1.Node
		want  string // "" fits
	}{
		{"no nodes", []partNeeds{part(0, 1<<20, 100, 1)}, nil, ""},
		{"none schedulable", []partNeeds{part(0, 1<<20, 100, 1)}, []corev1.Node{cordoned, tainted}, ""},
		{"fits", []partNeeds{part(0, 100, 100, 4), part(1, 100, 100, 4)}, []corev1.Node{testNode("a", "1Gi", "1", 110)}, ""},
		{"memory of a part", []partNeeds{part(0, 100, 100, 4), vms}, []corev1.Node{testNode("small", "2Gi", "4", 110), cordoned, tainted},
			"too large for the cluster: worker 1's part needs 3.1 GiB memory (40 nodes, 2 VMs of 1.0 GiB), the largest node (small) has 2.0 GiB allocatable"},
		{"memory read apart", []partNeeds{{Worker: 0, Memory: 128*mebi + 400<<10, CPU: 100, Nodes: 64}}, []corev1.Node{testNode("n", "131277Ki", "4", 110)},
			"too large for the cluster: worker 0's part needs 128.39 MiB memory (64 nodes), the largest node (n) has 128.20 MiB allocatable"},
		{"cpu of a part", []partNeeds{{Worker: 0, Memory: 80 * mebi, CPU: 350, Nodes: 4, EmulatedLinks: 25}}, []corev1.Node{testNode("a", "1Gi", "200m", 110)},
			"too large for the cluster: worker 0's part needs 350m cpu (100m a worker, 10m for each of 25 emulated links), the largest node (a) has 200m allocatable"},
		{"no node has both", []partNeeds{part(0, 1500, 1500, 4)}, []corev1.Node{testNode("mem", "2Gi", "1", 110), testNode("cpu", "1Gi", "2", 110)},
			"too large for the cluster: worker 0's part needs 1.5 GiB memory and 1500m cpu, and no node has both allocatable (the most memory: mem, 2.0 GiB and 1000m cpu; the most cpu: cpu, 2000m and 1.0 GiB memory)"},
		{"memory in all", []partNeeds{part(0, 600, 100, 300), part(1, 600, 100, 300)}, []corev1.Node{testNode("a", "1Gi", "4", 110), cordoned},
			"too large for the cluster: the 2 workers' parts need 1.2 GiB memory in all (600 nodes), the cluster's 1 schedulable node has 1.0 GiB allocatable in all"},
		{"cpu in all", []partNeeds{part(0, 100, 100, 4), part(1, 100, 100, 4)}, []corev1.Node{testNode("a", "1Gi", "150m", 110)},
			"too large for the cluster: the 2 workers' parts need 200m cpu in all (100m a worker), the cluster's 1 schedulable node has 150m allocatable in all"},
		{"pods", []partNeeds{part(0, 100, 100, 4), part(1, 100, 100, 4), part(2, 100, 100, 4)}, []corev1.Node{testNode("a", "1Gi", "4", 1), testNode("b", "1Gi", "4", 1)},
			"too large for the cluster: 3 worker pods, and the cluster's 2 schedulable nodes have room for 2 pods in all (allocatable pods)"},
	}
	for _, c := range cases {
		if got := tooLarge(c.parts, c.nodes); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// forbiddenReader refuses every read, as the API server does a user
// without the permission.
type forbiddenReader struct{ client.Reader }

func (forbiddenReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New(`User "hymn-kube-controller" cannot list resource "nodes"`))
}

// Without the permission to list Nodes the check is skipped (no Nodes, no
// error): the scheduler's verdict still fails a Topology too large.
func TestClusterNodesForbidden(t *testing.T) {
	r := &Reconciler{APIReader: forbiddenReader{}}
	for range 2 {
		nodes, err := r.clusterNodes(t.Context())
		if err != nil || nodes != nil {
			t.Fatalf("forbidden: %v, %v", nodes, err)
		}
	}
}

// The scheduler's verdict is read from the PodScheduled condition.
func TestSchedulerVerdict(t *testing.T) {
	p := &corev1.Pod{}
	if v := schedulerVerdict(p); v != "" {
		t.Errorf("a pod not judged yet: %q", v)
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/1 nodes are available: 1 Insufficient memory."}}
	if v := schedulerVerdict(p); v != "0/1 nodes are available: 1 Insufficient memory." {
		t.Errorf("unschedulable: %q", v)
	}
	p.Status.Conditions[0].Reason = "SchedulingGated"
	if v := schedulerVerdict(p); v != "" {
		t.Errorf("gated: %q", v)
	}
	p.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: partNeeds{Memory: 68 * mebi, CPU: 100}.requests()}}}
	if got := requested(p); !strings.Contains(got, "68 MiB memory and 100m cpu") {
		t.Errorf("requested: %q", got)
	}
}
