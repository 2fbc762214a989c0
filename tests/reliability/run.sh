#!/bin/sh
# hymn's reliability suite: bad inputs, kill -9 then hymn clean, build/
# teardown cycles, parallel runs beside a looping hymn clean.
#
#   sudo tests/reliability/run.sh                         # short (CI): a minute or two
#   sudo HYMN_RELIABILITY=full tests/reliability/run.sh   # full: the figures in README.md
#
# HYMN_RELIABILITY_SEED=N repeats the random kill points of an earlier run;
# HYMN_BIN=path tests that binary instead of one built from this checkout;
# HYMN_RELIABILITY_HANG=10s is how long a bad input may take;
# HYMN_RELIABILITY_LOG=FILE keeps the whole go test -v output.
# Extra arguments go to go test (e.g. -run TestBadInputs).
set -eu
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin"
if [ "$(id -u)" != 0 ]; then
	echo "run.sh: the reliability suite needs root (namespaces, links, hymn clean)" >&2
	exit 2
fi
work=$(mktemp -d "${TMPDIR:-/var/tmp}/hymn-reliability.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -z "${HYMN_BIN:-}" ]; then
	go build -o "$work/hymn" ./cmd/hymn
	HYMN_BIN="$work/hymn"
	export HYMN_BIN
fi
timeout=10m
[ "${HYMN_RELIABILITY:-}" = full ] && timeout=90m
status=0
go test -count=1 -v -timeout "$timeout" "$@" ./tests/reliability/ >"$work/out" 2>&1 || status=$?
# HYMN_RELIABILITY_LOG=FILE keeps go test's whole output.
[ -n "${HYMN_RELIABILITY_LOG:-}" ] && cp "$work/out" "$HYMN_RELIABILITY_LOG"
# Tests and their cases; the kill points (third level) only when they fail.
grep -E '^(--- |    --- |        --- FAIL|ok |FAIL|panic)' "$work/out" || true
echo
echo "Summary:"
grep '^reliability: ' "$work/out" || true
if [ "$status" != 0 ]; then
	echo
	echo "Failures in detail:"
	grep -E '_test\.go:[0-9]+:' "$work/out" | grep -v -E 'kill_test.go:[0-9]+: killed at|cycles_test.go:[0-9]+: (after|[0-9]+ cycles in)|badinput_test.go:[0-9]+: hymn' | head -200 || true
fi
exit "$status"
