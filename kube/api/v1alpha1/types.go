package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group and Version of the hymn API.
const (
	Group   = "hymn.hymn-net.io"
	Version = "v1alpha1"
)

// GroupVersion is the API's group and version.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// Limits and defaults of a Topology's spec; the CRD's schema says the same.
const (
	DefaultWorkers = 2
	MaxWorkers     = 64
)

// Phase is where a Topology is in its life.
type Phase string

// The phases, in order; Failed and Terminating may follow any other, and
// Restoring goes back to Running (or to Failed).
const (
	PhasePending     Phase = "Pending"     // accepted, nothing created yet
	PhaseBuilding    Phase = "Building"    // worker pods created, parts being built
	PhaseLinking     Phase = "Linking"     // every pod runs; the coordinator builds and links the parts
	PhaseRunning     Phase = "Running"     // every part built, every cut link up
	PhaseRestoring   Phase = "Restoring"   // a worker pod died; a new one is being made and linked in
	PhaseFailed      Phase = "Failed"      // see status.message; the pods are removed
	PhaseTerminating Phase = "Terminating" // deleted; the workers are being stopped
)

// Condition types a Topology reports.
const (
	ConditionWorkersReady = "WorkersReady" // every worker pod runs and has an address
	ConditionLinked       = "Linked"       // every part built and every cut link up
	ConditionReady        = "Ready"        // the topology runs
	ConditionRestored     = "Restored"     // the last worker restored (set once one was)
)

// TopologySpec is what to run: a topology (exactly one of Topology, File)
// split over Workers worker pods. The spec is immutable: delete and
// recreate the resource to change it.
type TopologySpec struct {
	// Topology is a built-in topology spec, as hymn --topo takes it
	// ("linear,4", "tree,depth=2").
	Topology string `json:"topology,omitempty"`
	// File is the text of a hymn topology file (YAML or JSON).
	File string `json:"file,omitempty"`
	// Workers is how many worker pods the topology is split over (1-64;
	// default 2).
	Workers int32 `json:"workers,omitempty"`
	// Image is the worker image (hymn's binary as its entrypoint, bash, ip,
	// ping); the controller's default when empty. The controller runs only
	// images on its allow-list: another fails the Topology.
	Image string `json:"image,omitempty"`
	// ImagePullPolicy of the worker pods (Never, IfNotPresent, Always);
	// the controller's default when empty.
	ImagePullPolicy string `json:"imagePullPolicy,omitempty"`
	// IPBase is the hosts' address range, as hymn --ipbase (default
	// 10.0.0.0/8).
	IPBase string `json:"ipBase,omitempty"`
}

// TopologyStatus is what the controller saw last.
type TopologyStatus struct {
	Phase        Phase `json:"phase,omitempty"`
	WorkersReady int32 `json:"workersReady"`
	NodesReady   int32 `json:"nodesReady"`
	LinksUp      int32 `json:"linksUp"`
	// Restarts counts the workers restored after their pod failed or was
	// deleted while the topology ran.
	Restarts int32  `json:"restarts,omitempty"`
	Message  string `json:"message,omitempty"`
	// ObservedGeneration is the spec generation the status describes.
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// Topology is one hymn topology running on worker pods.
type Topology struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TopologySpec   `json:"spec"`
	Status TopologyStatus `json:"status,omitempty"`
}

// TopologyList is a list of Topologies.
type TopologyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Topology `json:"items"`
}

// WorkerCount is Spec.Workers with its default.
func (t *Topology) WorkerCount() int {
	if t.Spec.Workers == 0 {
		return DefaultWorkers
	}
	return int(t.Spec.Workers)
}

// DeepCopyInto copies the spec into out.
func (in *TopologySpec) DeepCopyInto(out *TopologySpec) { *out = *in }

// DeepCopyInto copies the status into out.
func (in *TopologyStatus) DeepCopyInto(out *TopologyStatus) {
	*out = *in
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopyInto copies the Topology into out.
func (in *Topology) DeepCopyInto(out *Topology) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a deep copy of the Topology.
func (in *Topology) DeepCopy() *Topology {
	if in == nil {
		return nil
	}
	out := new(Topology)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *Topology) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the list into out.
func (in *TopologyList) DeepCopyInto(out *TopologyList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Topology, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy of the list.
func (in *TopologyList) DeepCopy() *TopologyList {
	if in == nil {
		return nil
	}
	out := new(TopologyList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *TopologyList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopy returns a deep copy of the status.
func (in *TopologyStatus) DeepCopy() *TopologyStatus {
	if in == nil {
		return nil
	}
	out := new(TopologyStatus)
	in.DeepCopyInto(out)
	return out
}

// DeepCopy returns a copy of the spec.
func (in *TopologySpec) DeepCopy() *TopologySpec {
	if in == nil {
		return nil
	}
	out := new(TopologySpec)
	in.DeepCopyInto(out)
	return out
}
