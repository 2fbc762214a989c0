#!/usr/bin/env bash
# tests/kube/e2e.sh: hymn on a real single-node Kubernetes, end to end.
# Not part of CI's default run (it builds Kubernetes from the Go module proxy
# the first time, several minutes per binary, then caches them); run it as
# root before a change to the cluster mode lands:
#
#   sudo tests/kube/e2e.sh
#
# It brings the cluster up as ../shared/notes/kubernetes.md does, runs
# linear,4 over 2 worker pods (pingall), measures an emulated cut link
# (delay=5ms) against a 1 ms emulated one and a plain one (round trips
# to the ns), drives hymn run --kube's mininet> shell,
# deletes a worker pod and checks the controller restores it, tears the
# cluster down, checks that nothing is left on the machine, and ends with a
# summary of those numbers. The steps live in scripts/k8s-check.sh, which
# scripts/envtest-assets.sh also uses to build kube-apiserver.
exec "$(dirname "$0")/../../scripts/k8s-check.sh" "$@"
