#!/usr/bin/env bash
# Runs every test: vet, then unit and integration tests with the race
# detector. Integration tests need root and skip (saying why) without it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "test.sh: gofmt would change: $unformatted" >&2
  exit 1
fi
go vet ./...
go vet -tags dpdk ./...
# -p 1: one package at a time. Several tests measure real time (delay through
# an emulated link, VM boots under TCG); on a 2-core machine packages
# running side by side would make them measure each other.
go test -race -p 1 -count=1 -timeout 40m ./...
# The DPDK port (cgo over Debian's libdpdk) against DPDK's virtual devices.
go test -tags dpdk -count=1 ./emulator/dpdk/
