// Command hymn-kube runs hymn topologies on Kubernetes through the
// Topology resource and its controller; see package kubecli.
package main
