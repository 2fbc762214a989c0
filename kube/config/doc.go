// Package config embeds the manifests hymn-kube installs: the Topology
// CRD (crd.yaml, with the schema that validates a spec and the columns
// kubectl get shows) and the controller's RBAC templates (rbac.yaml),
// renders the RBAC for the namespaces the controller watches (a Role and
// RoleBinding in each; cluster scope only to read the nodes) and applies
// them through the API server.
package config
