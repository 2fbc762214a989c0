package controller

import (
	"context"
	"fmt"

	"github.com/hymn-net/hymn/cluster"
	"github.com/hymn-net/hymn/kube/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WorkerSpec reads worker i's part specification from the ConfigMap the
// controller made for it: the whole topology and the node-to-worker split,
// which is what a client (hymn-kube run's shell) needs to route a node's
// commands to the pod that holds it.
func WorkerSpec(ctx context.Context, c client.Reader, t *v1alpha1.Topology, i int) (*cluster.Spec, error) {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: PodName(t, i)}, cm); err != nil {
		return nil, err
	}
	data, ok := cm.Data[specKey]
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s/%s has no %s", cm.Namespace, cm.Name, specKey)
	}
	s, err := cluster.LoadSpec([]byte(data))
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return s, nil
}
