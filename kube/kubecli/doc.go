// Package kubecli is the hymn-kube command: run the Topology controller,
// install its CRD and ClusterRole, and create, watch, list and delete
// Topologies. Bad input (flags, arguments, a missing kubeconfig) exits 2
// with one line saying what is wrong; a failure on the cluster exits 1.
package kubecli
