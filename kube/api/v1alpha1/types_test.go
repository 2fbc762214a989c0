package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// A deep copy shares nothing that a change through the copy could reach.
func TestDeepCopy(t *testing.T) {
	in := &Topology{
		ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"a": "b"}, Finalizers: []string{"f"}},
		Spec:       TopologySpec{Topology: "linear,4", Workers: 3},
		Status:     TopologyStatus{Phase: PhaseRunning, Restarts: 2, Conditions: []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionTrue}}},
	}
	out := in.DeepCopyObject().(*Topology)
	out.Labels["a"] = "c"
	out.Finalizers[0] = "g"
	out.Status.Conditions[0].Status = metav1.ConditionFalse
	out.Spec.Workers = 5
	if out.Status.Restarts != 2 {
		t.Fatalf("restarts not copied: %+v", out.Status)
	}
	if in.Labels["a"] != "b" || in.Finalizers[0] != "f" || in.Status.Conditions[0].Status != metav1.ConditionTrue || in.Spec.Workers != 3 {
		t.Fatalf("the copy shares state with the original: %+v", in)
	}
	l := &TopologyList{Items: []Topology{*in}}
	lc := l.DeepCopyObject().(*TopologyList)
	lc.Items[0].Status.Conditions[0].Reason = "changed"
	if l.Items[0].Status.Conditions[0].Reason != "" {
		t.Fatal("the list copy shares conditions")
	}
	var nilT *Topology
	if nilT.DeepCopy() != nil {
		t.Fatal("nil copy")
	}
}

func TestWorkerCountAndScheme(t *testing.T) {
	if (&Topology{}).WorkerCount() != DefaultWorkers || (&Topology{Spec: TopologySpec{Workers: 7}}).WorkerCount() != 7 {
		t.Fatal("WorkerCount")
	}
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	gvks, _, err := s.ObjectKinds(&Topology{})
	if err != nil || len(gvks) != 1 || gvks[0].Group != Group || gvks[0].Version != Version || gvks[0].Kind != "Topology" {
		t.Fatalf("scheme: %v %v", gvks, err)
	}
}
