#!/usr/bin/env bash
# Runs every test: gofmt, go vet, then unit and integration tests with the
# race detector, then the DPDK port's tests and the topologies whose emulated
# VF links use it. Integration tests need root.
#
# On a developer's machine a test whose prerequisite is missing (root, a
# tool) skips and says why. Under CI (CI=true, or HYMN_REQUIRE=all) such a
# test fails instead: scripts/setup.sh installs everything, so a skip there
# would only hide a test that did not run. The only skips allowed then are
# for hardware this kind of machine cannot have (README: "What is not
# tested here"). The end of the output counts the skips by reason.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
if [ "${CI:-}" = "true" ] && [ -z "${HYMN_REQUIRE:-}" ]; then
  export HYMN_REQUIRE=all
fi
require=()
if [ "${HYMN_REQUIRE:-}" = "all" ]; then
  require=(-require)
  echo "*** HYMN_REQUIRE=all: a test that would skip for a missing prerequisite fails"
fi

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "test.sh: gofmt would change: $unformatted" >&2
  exit 1
fi
go vet ./...
go vet -tags dpdk ./...
# golangci-lint (scripts/lint.sh: the module, -tags dpdk, kube/; the
# linters in .golangci.yml, findings fixed, none excluded). The first run
# on a machine builds the linter from the Go module proxy (scripts/lint-
# tools.sh, cached in /var/lib/hymn-tools: about 4 minutes, said before it
# starts); after that, lint takes about 40 s after a change and a few
# seconds with nothing changed. HYMN_LINT=0 leaves it out (a developer's
# quick run); CI runs it.
if [ "${HYMN_LINT:-1}" != "0" ]; then
  scripts/lint.sh
fi
go build -o /dev/null ./internal/testreport
report=(go run ./internal/testreport)

# -p 1: one package at a time. Several tests measure real time (delay through
# an emulated link, VM boots under TCG); on a 2-core machine packages
# running side by side would make them measure each other.
echo "*** go test -race ./..."
go test -json -race -p 1 -count=1 -timeout 45m ./... | "${report[@]}" "${require[@]}"
# The DPDK port (cgo over Debian's libdpdk) against DPDK's virtual devices.
echo "*** go test -tags dpdk ./emulator/dpdk/"
go test -json -tags dpdk -count=1 ./emulator/dpdk/ | "${report[@]}" "${require[@]}"
# Emulated VF links on DPDK ports in whole topologies (dpdklink*.go), side
# by side with AF_PACKET ports; the rest of the package ran above.
echo "*** go test -tags dpdk -run DPDK ."
go test -json -tags dpdk -count=1 -run DPDK . | "${report[@]}" "${require[@]}"
# The measure generator's speed against a veth link's zero-loss rate, as a
# user runs it: without the race detector, which makes its send loop several
# times slower. The file (measure_gen_test.go) is built with !race, so the
# -race run above does not have it.
echo "*** go test -run TestGeneratorOutrunsVeth . (without -race)"
go test -json -p 1 -count=1 -run 'TestGeneratorOutrunsVeth' . | "${report[@]}" "${require[@]}"
# The kube module (kube/, its own go.mod, so the Kubernetes libraries stay
# out of hymn's build): the Topology controller and hymn-kube against a real
# kube-apiserver and etcd (envtest; kube-apiserver is built just below by
# scripts/envtest-assets.sh when missing). Measured on the 2-core CI machine: this
# step adds about 50 s with a warm build cache (vet, then 12 tests; each
# envtest test starts its own apiserver in about 3 s), the same with or
# without -race; a cold cache adds about 30 s of compiling without -race
# and about 3 minutes with it. -race stays: it found a real race in the
# tests' logging.
if ! scripts/envtest-assets.sh --check >/dev/null 2>&1; then
  echo "*** Building kube-apiserver and kubectl v1.37.2 for the kube module's envtest tests (only those tests use them; once, about 10 minutes on 2 cores, then cached in /var/lib/hymn-k8s)"
fi
KUBEBUILDER_ASSETS=$(scripts/envtest-assets.sh)
export KUBEBUILDER_ASSETS
echo "*** (cd kube && go vet ./... && go test -race ./...)"
(cd kube && go vet ./... && go test -json -race -count=1 -timeout 15m ./...) | "${report[@]}" "${require[@]}"
