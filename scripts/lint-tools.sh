#!/usr/bin/env bash
# lint-tools.sh: builds golangci-lint (v2, from the Go module proxy) once
# into a cache directory and prints the binary's path (the only line on
# stdout):
#
#   lint=$(scripts/lint-tools.sh) && "$lint" run ./...
#
# The binary is cached per version in $HYMN_TOOLS/golangci-lint-$VERSION
# (default /var/lib/hymn-tools, root's like the Kubernetes cache of
# scripts/k8s-check.sh), so every checkout on the machine shares it. Cold,
# the build takes a couple of minutes on a 2-core machine; cached, this
# script takes well under a second. It is built with the Go in PATH, which
# must be at least the go line of go.mod (a linter built with an older Go
# refuses to load the module's packages).
#
#   scripts/lint-tools.sh           build if needed, print the path
#   scripts/lint-tools.sh --check   only check: exit 1 if it is missing
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=v2.15.0
TOOLS=${HYMN_TOOLS:-/var/lib/hymn-tools}
BIN=$TOOLS/golangci-lint-$VERSION
export PATH="$PATH:/usr/local/go/bin"

check=false
case "${1:-}" in
  "") ;;
  --check) check=true ;;
  *) echo "lint-tools: unknown argument ${1} (use --check or nothing)" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "lint-tools: at most one argument" >&2; exit 2; }

# A binary built by an older Go than the one in PATH may not read the
# module's packages: rebuild then (the Go version is part of the name).
gov=$(go env GOVERSION)
BIN=$BIN-$gov
if [ -x "$BIN" ]; then
  echo "$BIN"
  exit 0
fi
if $check; then
  echo "lint-tools: $BIN is missing: run scripts/lint-tools.sh" >&2
  exit 1
fi
# Progress to stderr: stdout is the path only.
echo "*** lint-tools: building golangci-lint $VERSION with $gov into $TOOLS (not cached yet; once per version, a few minutes)" >&2
t0=$SECONDS
mkdir -p "$TOOLS"
tmp=$(mktemp -d "$TOOLS/build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# GOFLAGS from the environment (for example -mod=vendor) would apply to the
# linter's own module; go install @version ignores go.mod, so clear them.
GOFLAGS= GOBIN=$tmp go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$VERSION" >&2
mv "$tmp/golangci-lint" "$BIN"
echo "*** lint-tools: built $BIN in $((SECONDS - t0)) s" >&2
echo "$BIN"
