#!/usr/bin/env bash
# lint.sh: golangci-lint (.golangci.yml; built once by scripts/lint-tools.sh)
# on the whole module, again with -tags dpdk (the cgo DPDK port and the
# tests that use it), and on kube/ (its own go.mod; it reads the same
# .golangci.yml from the parent directory). Exits non-zero on any finding.
#
#   scripts/lint.sh            all three
#   scripts/lint.sh ./topo/... only these packages of the main module
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
if ! scripts/lint-tools.sh --check >/dev/null 2>&1; then
  echo "*** lint: golangci-lint is not built yet: building it (once, a few minutes; cached in /var/lib/hymn-tools)" >&2
fi
lint=$(scripts/lint-tools.sh)
# Another golangci-lint on the machine (another checkout, a developer's
# editor) holds a lock: wait for it rather than fail.
lint() { "$lint" run --allow-serial-runners "$@"; }
if [ $# -gt 0 ]; then
  lint "$@"
  exit
fi
rc=0
echo "*** golangci-lint run ./..."
lint ./... || rc=1
echo "*** golangci-lint run --build-tags dpdk ./..."
lint --build-tags dpdk ./... || rc=1
echo "*** (cd kube && golangci-lint run ./...)"
(cd kube && lint ./...) || rc=1
exit $rc
