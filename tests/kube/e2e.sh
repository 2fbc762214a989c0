#!/usr/bin/env bash
# tests/kube/e2e.sh: hymn on a real single-node Kubernetes, end to end.
# Not part of CI's default run (it builds Kubernetes from the Go module proxy
# the first time, several minutes per binary, then caches them); run it as
# root before a change to the cluster mode lands:
#
#   sudo tests/kube/e2e.sh
#
# It brings the cluster up as ../shared/notes/kubernetes.md does, runs
# linear,4 over 2 worker pods (pingall), prints the worker pods' security
# context (capabilities listed, not privileged, no service-account token)
# and the worker process's capability sets, measures an emulated cut link
# (delay=5ms) against a 1 ms emulated one and a plain one (round trips
# to the ns), checks the controller's RBAC (kubectl auth can-i: pods in
# the watched namespace, none elsewhere) and runs the controller as its
# service account, drives hymn run --kube's mininet> shell, deletes a
# worker pod and checks the controller restores it, refuses hostile
# Topologies (a foreign image; a trace: naming a token, whose content the
# status never holds; one in an unwatched namespace, left alone), tears the
# cluster down, checks that nothing is left on the machine, and ends with a
# summary of those lines. The steps live in scripts/k8s-check.sh, which
# scripts/envtest-assets.sh also uses to build kube-apiserver.
exec "$(dirname "$0")/../../scripts/k8s-check.sh" "$@"
