// Package kubetest starts what the kube module's tests need: a real
// kube-apiserver with etcd (envtest) with the Topology CRD installed, the
// controller running as a user that holds only config/rbac.yaml's
// ClusterRole, and in-process fake workers that speak hymn worker's
// protocol; plus the check that no test process outlives the tests.
package kubetest
