// Package controller reconciles Topology resources in the namespaces it is
// given, and nowhere else: it validates and splits a Topology with package
// cluster (a bad spec, or a spec.image off the operator's allow-list, ends
// in phase Failed with the reason, no pods), creates one worker pod per
// part (not privileged: the capabilities cluster.WorkerCapabilities lists,
// no service-account token; its part in a ConfigMap, both owned by the
// Topology, so deleting the resource deletes them), and once every pod
// runs drives the workers with cluster.Start over the pods' attach streams
// (client-go's remotecommand): build, then link the cut links as VXLAN
// tunnels. It reports the phase, counts and conditions in the status,
// fails the Topology (and removes its pods) when a worker pod fails or
// does not run in time, and stops the workers through a finalizer when the
// Topology is deleted.
package controller
