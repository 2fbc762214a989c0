// Package controller reconciles Topology resources: it validates and
// splits a Topology with package cluster (a bad spec ends in phase Failed
// with the parser's message, no pods), creates one privileged worker pod
// per part (its part in a ConfigMap, both owned by the Topology, so
// deleting the resource deletes them), and once every pod runs drives the
// workers with cluster.Start over the pods' attach streams (client-go's
// remotecommand): build, then link the cut links as VXLAN tunnels. It
// reports the phase, counts and conditions in the status, fails the
// Topology (and removes its pods) when a worker pod fails or does not run
// in time, and stops the workers through a finalizer when the Topology is
// deleted.
package controller
