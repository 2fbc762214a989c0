package controller

import (
	"context"
	"fmt"
	"strings"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/cluster"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/topo"
	"github.com/hymn-net/hymn/vm"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// What a worker pod requests. Requests, not limits: the scheduler places
// the pods by them, and a worker killed for passing an estimate would take
// its whole part down.
const (
	// workerBaseMemory is the hymn worker process itself: a single-machine
	// hymn building linear,1000 peaked at 17-20 MiB RSS (docs/scale-out.md);
	// the worker adds the protocol and the plan of the whole topology. Its
	// part's nodes are counted apart (topo.NodeMemory each).
	workerBaseMemory = 64 << 20
	// workerBaseCPU (millicores): once its part is built the worker only
	// answers the protocol, and building is a burst the kernel mostly pays
	// for (docs/scale-out.md).
	workerBaseCPU = 100
	// emulatedLinkMemory: a forwarder holds two AF_PACKET ports whose rings
	// the kernel allocates up front (2048 RX and 512 TX slots of 2 KiB at
	// a 1500-byte MTU: 5 MiB a port) and one 512 KiB frame-queue chunk per
	// direction.
	emulatedLinkMemory = 2*5<<20 + 2*512<<10
	// emulatedLinkCPU (millicores): a forwarder's thread sleeps while
	// the link is idle; 99 idle emulated links took 0.3 of a core
	// (docs/scale-out.md), 3m each, and 10m leaves room for light traffic.
	// A busy direction takes up to a core, which no request made before
	// the traffic is known can promise.
	emulatedLinkCPU = 10
)

// partNeeds is what one worker's part asks of a node, and what it is
// made of, for the messages.
type partNeeds struct {
	Worker int
	Memory int64 // bytes
	CPU    int64 // millicores
	Nodes  int   // namespace and VM nodes
	VMs    int
	// VMMemory is the part's guests' memory in all; VMMin and VMMax the
	// smallest and largest guest's.
	VMMemory, VMMin, VMMax int64
	// EmulatedLinks are the links the worker runs a forwarder for: its
	// internal emulated links and its side of each emulated cut link.
	EmulatedLinks int
}

// estimatePart says what worker r.Spec.Worker's part needs: the worker
// itself, topo.NodeMemory per node, a VM node's guest memory (memory= or
// mem=, vm.DefaultMemory without), and per emulated link its forwarder's
// rings and threads. The VMs' vCPUs are not requested: an idle guest takes
// little, and a core per vCPU would refuse topologies that run well.
func estimatePart(r *cluster.Resolved) (partNeeds, error) {
	me := r.Spec.Worker
	n := partNeeds{Worker: me}
	for _, pn := range r.LocalNodes() {
		n.Nodes++
		// The pods run `hymn worker` without --nodes: only the nodes that
		// say so are VMs.
		if pn.Params["backend"] != string(hymn.BackendVM) {
			continue
		}
		cfg := vm.Config{Name: pn.Name}
		if err := vm.ParseParams(&cfg, pn.Params); err != nil {
			return n, err
		}
		mib, err := vm.MemoryMiB(cfg.Memory)
		if err != nil {
			return n, fmt.Errorf("vm %s: %w", pn.Name, err)
		}
		b := mib << 20
		if n.VMs == 0 || b < n.VMMin {
			n.VMMin = b
		}
		n.VMMax = max(n.VMMax, b)
		n.VMs++
		n.VMMemory += b
	}
	for _, l := range r.Plan.Links {
		if r.Spec.Assign[l.Intf1.Node] == me && r.Spec.Assign[l.Intf2.Node] == me && linkparams.NeedsEmulator(l.Params) {
			n.EmulatedLinks++
		}
	}
	for _, c := range r.Cut {
		if linkparams.NeedsEmulator(c.Link.Params) {
			n.EmulatedLinks++
		}
	}
	n.Memory = workerBaseMemory + int64(n.Nodes)*topo.NodeMemory + n.VMMemory + int64(n.EmulatedLinks)*emulatedLinkMemory
	n.CPU = workerBaseCPU + int64(n.EmulatedLinks)*emulatedLinkCPU
	return n, nil
}

// requests are the worker pod's resource requests.
func (n partNeeds) requests() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceMemory: *resource.NewQuantity(n.Memory, resource.BinarySI),
		corev1.ResourceCPU:    *resource.NewMilliQuantity(n.CPU, resource.DecimalSI),
	}
}

// add sums two parts' needs (for the whole topology).
func (n partNeeds) add(o partNeeds) partNeeds {
	s := partNeeds{
		Memory: n.Memory + o.Memory, CPU: n.CPU + o.CPU, Nodes: n.Nodes + o.Nodes,
		VMs: n.VMs + o.VMs, VMMemory: n.VMMemory + o.VMMemory, EmulatedLinks: n.EmulatedLinks + o.EmulatedLinks,
		VMMin: n.VMMin, VMMax: max(n.VMMax, o.VMMax),
	}
	if n.VMs == 0 || (o.VMs > 0 && o.VMMin < s.VMMin) {
		s.VMMin = o.VMMin
	}
	return s
}

// memoryMadeOf says what the memory is for: "(40 nodes, 2 VMs of 1.0 GiB,
// 3 emulated links)".
func (n partNeeds) memoryMadeOf() string {
	parts := []string{plural(n.Nodes, "node")}
	switch {
	case n.VMs == 0:
	case n.VMMin == n.VMMax:
		parts = append(parts, fmt.Sprintf("%s of %s", plural(n.VMs, "VM"), memoryString(n.VMMin)))
	default:
		parts = append(parts, fmt.Sprintf("%s with %s in all", plural(n.VMs, "VM"), memoryString(n.VMMemory)))
	}
	if n.EmulatedLinks > 0 {
		parts = append(parts, plural(n.EmulatedLinks, "emulated link"))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// cpuMadeOf says what the cpu is for: "(100m a worker, 10m for each of 25
// emulated links)".
func (n partNeeds) cpuMadeOf() string {
	if n.EmulatedLinks == 0 {
		return fmt.Sprintf("(%dm a worker)", workerBaseCPU)
	}
	return fmt.Sprintf("(%dm a worker, %dm for each of %s)", workerBaseCPU, emulatedLinkCPU, plural(n.EmulatedLinks, "emulated link"))
}

// nodeRoom is what one schedulable node has allocatable.
type nodeRoom struct {
	name              string
	memory, cpu, pods int64 // bytes, millicores, pods
}

// takesWorkers reports whether the scheduler may put a worker pod on the
// node: not cordoned, and no taint that keeps pods off (the worker pods
// tolerate none; a node not ready yet has one too).
func takesWorkers(nd *corev1.Node) bool {
	if nd.Spec.Unschedulable {
		return false
	}
	for _, t := range nd.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	return true
}

// tooLarge judges a topology's parts against the cluster's nodes, before
// any pod exists: "" if it may fit, else why it cannot ("too large for the
// cluster: ..."). It compares with what the nodes have allocatable, not
// what other pods left free (that is the scheduler's to judge, and its
// Unschedulable verdict fails the Topology too: judgePods); without a
// schedulable node it says nothing, for the same reason.
func tooLarge(parts []partNeeds, nodes []corev1.Node) string {
	var rooms []nodeRoom
	var all nodeRoom
	for i := range nodes {
		nd := &nodes[i]
		if !takesWorkers(nd) {
			continue
		}
		a := nd.Status.Allocatable
		room := nodeRoom{name: nd.Name, memory: a.Memory().Value(), cpu: a.Cpu().MilliValue(), pods: a.Pods().Value()}
		rooms = append(rooms, room)
		all.memory += room.memory
		all.cpu += room.cpu
		all.pods += room.pods
	}
	if len(rooms) == 0 {
		return ""
	}
	mostMemory, mostCPU := rooms[0], rooms[0]
	for _, room := range rooms[1:] {
		if room.memory > mostMemory.memory {
			mostMemory = room
		}
		if room.cpu > mostCPU.cpu {
			mostCPU = room
		}
	}
	const prefix = "too large for the cluster: "
	var sum partNeeds
	for _, p := range parts {
		sum = sum.add(p)
		if fitsOne(p, rooms) {
			continue
		}
		switch {
		case p.Memory > mostMemory.memory:
			need, have := memoryStrings(p.Memory, mostMemory.memory)
			return prefix + fmt.Sprintf("worker %d's part needs %s memory %s, the largest node (%s) has %s allocatable",
				p.Worker, need, p.memoryMadeOf(), mostMemory.name, have)
		case p.CPU > mostCPU.cpu:
			return prefix + fmt.Sprintf("worker %d's part needs %dm cpu %s, the largest node (%s) has %dm allocatable",
				p.Worker, p.CPU, p.cpuMadeOf(), mostCPU.name, mostCPU.cpu)
		default:
			return prefix + fmt.Sprintf("worker %d's part needs %s memory and %dm cpu, and no node has both allocatable (the most memory: %s, %s and %dm cpu; the most cpu: %s, %dm and %s memory)",
				p.Worker, memoryString(p.Memory), p.CPU, mostMemory.name, memoryString(mostMemory.memory), mostMemory.cpu,
				mostCPU.name, mostCPU.cpu, memoryString(mostCPU.memory))
		}
	}
	schedulable := plural(len(rooms), "schedulable node")
	switch {
	case sum.Memory > all.memory:
		need, have := memoryStrings(sum.Memory, all.memory)
		return prefix + fmt.Sprintf("the %d workers' parts need %s memory in all %s, the cluster's %s %s %s allocatable in all",
			len(parts), need, sum.memoryMadeOf(), schedulable, has(len(rooms)), have)
	case sum.CPU > all.cpu:
		return prefix + fmt.Sprintf("the %d workers' parts need %dm cpu in all %s, the cluster's %s %s %dm allocatable in all",
			len(parts), sum.CPU, sum.cpuMadeOf(), schedulable, has(len(rooms)), all.cpu)
	case int64(len(parts)) > all.pods:
		return prefix + fmt.Sprintf("%d worker pods, and the cluster's %s %s room for %s in all (allocatable pods)",
			len(parts), schedulable, has(len(rooms)), plural(int(all.pods), "pod"))
	}
	return ""
}

// fitsOne reports whether one node alone has the room for part p.
func fitsOne(p partNeeds, rooms []nodeRoom) bool {
	for _, room := range rooms {
		if p.Memory <= room.memory && p.CPU <= room.cpu && room.pods >= 1 {
			return true
		}
	}
	return false
}

// clusterNodes lists the cluster's Nodes, uncached: it is read once per
// Topology, and a cached read the controller may not make would block
// instead of failing. Not allowed to (RBAC), it logs that once and returns
// none: the scheduler's verdict then judges the pods alone.
func (r *Reconciler) clusterNodes(ctx context.Context) ([]corev1.Node, error) {
	l := &corev1.NodeList{}
	if err := r.APIReader.List(ctx, l); err != nil {
		if apierrors.IsForbidden(err) {
			r.nodesForbidden.Do(func() {
				log.FromContext(ctx).Info("not allowed to list the cluster's nodes (RBAC: nodes get, list, watch): a Topology too large for the cluster fails on the scheduler's verdict only", "error", err.Error())
			})
			return nil, nil
		}
		return nil, fmt.Errorf("listing the cluster's nodes: %w", err)
	}
	return l.Items, nil
}

// schedulerVerdict is the scheduler's message when it found no node for
// the pod (condition PodScheduled False, reason Unschedulable), else "".
func schedulerVerdict(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			if m := strings.TrimSpace(c.Message); m != "" {
				return m
			}
			return "the scheduler found no node for it"
		}
	}
	return ""
}

// requested says what a worker pod requests, for messages: " (it requests
// 68 MiB memory and 100m cpu)", or "" for a pod without requests.
func requested(p *corev1.Pod) string {
	if len(p.Spec.Containers) == 0 {
		return ""
	}
	req := p.Spec.Containers[0].Resources.Requests
	mem, cpu := req[corev1.ResourceMemory], req[corev1.ResourceCPU]
	if mem.IsZero() && cpu.IsZero() {
		return ""
	}
	return fmt.Sprintf(" (it requests %s memory and %dm cpu)", memoryString(mem.Value()), cpu.MilliValue())
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func has(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

// memoryString is a size as people read it: MiB, or GiB with a decimal
// from 1 GiB on.
func memoryString(b int64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", b>>20)
}

// memoryStrings formats a need and a room that differ so they read
// differently too, with as much precision as that takes.
func memoryStrings(need, have int64) (string, string) {
	if a, b := memoryString(need), memoryString(have); a != b {
		return a, b
	}
	if a, b := fmt.Sprintf("%.2f MiB", float64(need)/(1<<20)), fmt.Sprintf("%.2f MiB", float64(have)/(1<<20)); a != b {
		return a, b
	}
	return fmt.Sprintf("%d bytes", need), fmt.Sprintf("%d bytes", have)
}
