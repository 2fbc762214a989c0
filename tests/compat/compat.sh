#!/usr/bin/env bash
# Feeds the same mininet> command script to Mininet 2.3 (Debian's mininet
# package, --switch lxbr --controller none) and to hymn, normalises what
# legitimately varies (pids, MACs, timings, rtts) and diffs the two.
# Usage (as root): tests/compat/compat.sh [TOPO]   (default: minimal)
# Exit status: 0 when the outputs match apart from the differences listed
# as expected in tests/compat/expected.diff, 1 otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
topo=${1:-minimal}

[ "$(id -u)" -eq 0 ] || { echo "compat.sh: run as root" >&2; exit 2; }
command -v mn >/dev/null || { echo "compat.sh: Mininet is not installed (apt-get install mininet)" >&2; exit 2; }
export PATH="$PATH:/usr/local/go/bin"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
hymn=${HYMN:-$work/hymn}
[ -x "$hymn" ] || (cd "$top" && go build -o "$hymn" ./cmd/hymn)

# Both run the script as --post: after start, before stop. (Piping the
# script into mn does not work: Mininet relays stdin to node commands.)
# No "mn -c" here: it kills every ping on the machine, tests running beside
# this one included. If Mininet crashed, run mn -c by hand.
# Each side gets two minutes: a Mininet that waits forever (it needs working
# ptys) must fail the comparison, not hang the test suite.
status=0
# PYTHONUNBUFFERED: Mininet writes some lines (`time`'s "Elapsed time") to
# stdout and others to stderr; into a file, Python would buffer the stdout
# ones to the end, where a user at a terminal sees them in order.
PYTHONUNBUFFERED=1 timeout --kill-after=5 120 mn --switch lxbr --controller none --topo "$topo" --test none \
  --post "$here/commands.txt" >"$work/mn.raw" 2>&1 </dev/null || status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  echo "compat: Mininet did not finish $topo within 120 s; its output:" >&2
  cat "$work/mn.raw" >&2
  exit 1
fi
status=0
# hymn gets Mininet's switch too: its own default (an eBPF switch for a
# loop-free topology) adds a "*** Switches:" line and a BPFSwitch repr.
timeout --kill-after=5 120 "$hymn" --switch lxbr --topo "$topo" --test none --post "$here/commands.txt" \
  >"$work/hymn.raw" 2>&1 </dev/null || status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  echo "compat: hymn did not finish $topo within 120 s; its output:" >&2
  cat "$work/hymn.raw" >&2
  exit 1
fi

normalise() {
  tr -d '\r' |
    grep -v '^Warning: Linux bridge may not work' |
    sed -E \
      -e 's/pid=[0-9]+/pid=N/g' \
      -e 's/([0-9a-f]{2}:){5}[0-9a-f]{2}/MAC/g' \
      -e 's/[0-9]+\.[0-9]+\/[0-9]+\.[0-9]+\/[0-9]+\.[0-9]+\/[0-9]+\.[0-9]+ ms/RTT ms/g' \
      -e 's/time=[0-9.]+ ms/time=T ms/g' \
      -e 's/time [0-9]+ms/time Tms/g' \
      -e 's/[0-9.]+ [KMGT]?bits\/sec/RATE/g' \
      -e 's/Elapsed time: [0-9.]+ secs/Elapsed time: T secs/' \
      -e 's/completed in [0-9.]+ seconds/completed in T seconds/' \
      -e 's/^(hymn|mn): .*//'
}
normalise <"$work/mn.raw" >"$work/mn.txt"
normalise <"$work/hymn.raw" >"$work/hymn.txt"
diff -u --label mininet --label hymn "$work/mn.txt" "$work/hymn.txt" >"$work/diff" || true
if [ ! -s "$work/diff" ]; then
  echo "compat: hymn and Mininet print the same lines for $topo"
  exit 0
fi
# Compare only the changed lines, so context shifts do not matter.
grep -E '^[-+][^-+]' "$work/diff" >"$work/changes" || true
if diff -q "$work/changes" "$here/expected.diff" >/dev/null 2>&1; then
  echo "compat: outputs differ only as documented in tests/compat/expected.diff"
  exit 0
fi
echo "compat: unexpected differences (- mininet, + hymn):"
diff "$here/expected.diff" "$work/changes" || true
cat "$work/diff"
exit 1
