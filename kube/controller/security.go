package controller

import (
	"github.com/hymn-net/hymn/cluster"
	corev1 "k8s.io/api/core/v1"
)

// WorkerSecurityContext is a worker container's security context: not
// privileged, every capability dropped but cluster.WorkerCapabilities,
// the runtime's default seccomp profile, AppArmor unconfined (its default
// container profile denies the mounts and /proc/sys/net writes a worker
// makes). The same as the kubectl transport's pods.
func WorkerSecurityContext() *corev1.SecurityContext {
	privileged := false
	add := make([]corev1.Capability, len(cluster.WorkerCapabilities))
	for i, c := range cluster.WorkerCapabilities {
		add[i] = corev1.Capability(c)
	}
	sc := &corev1.SecurityContext{
		Privileged:     &privileged,
		Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: add},
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileType(cluster.WorkerSeccompProfile)},
	}
	if cluster.WorkerAppArmorUnconfined {
		sc.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	}
	return sc
}
