// Package kube is hymn's Kubernetes-native orchestration, a Go module of its
// own so the plain hymn binary (and the root module's tests) never compile
// Kubernetes libraries: a Topology custom resource (api/v1alpha1), its CRD
// and RBAC manifests (config), the controller that turns a Topology into
// worker pods joined by VXLAN (controller) and the hymn-kube command
// (cmd/hymn-kube). The workers are the same `hymn worker` processes that
// `hymn cluster run` drives; the controller speaks the same JSON-lines
// protocol to them (package cluster), over the pods' attach streams.
package kube
