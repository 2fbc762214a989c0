// Package v1alpha1 holds the Topology custom resource's Go types
// (group hymn.hymn-net.io, version v1alpha1) with hand-written DeepCopy
// methods, and registers them in a runtime.Scheme.
package v1alpha1
