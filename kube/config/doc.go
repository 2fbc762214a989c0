// Package config embeds the manifests hymn-kube installs: the Topology
// CRD (crd.yaml, with the schema that validates a spec and the columns
// kubectl get shows) and the controller's ClusterRole (rbac.yaml), and
// applies them through the API server.
package config
