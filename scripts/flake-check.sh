#!/usr/bin/env bash
# scripts/flake-check.sh: runs every test that judges a time, a rate or a
# ratio of them (delays, RTTs, throughput, pps, wall-clock bounds, schedule
# steps) many times under the race detector, beside scripts/stall-inject.py
# (which takes every CPU away for 10-25 ms every 2-6 s, as a shared host
# does), and prints how many runs of each passed. Exit status 1 when any row
# is below its count, 2 on a usage error. Needs root (the tests build
# namespaces; stall-inject runs at SCHED_FIFO 99).
#
#   sudo scripts/flake-check.sh                 # every row, -count=10
pause=false
#   sudo scripts/flake-check.sh --pause --run TestTraceOutage
#                        # also SIGSTOP the test process itself for 20-50 ms
#                        # every 1-3 s, wherever it is between its reads
#   sudo scripts/flake-check.sh --count 2 --run 'emulator|Schedule'
#   scripts/flake-check.sh --list               # the rows, nothing run
#
# One `go test -race -p 1 -count=N -run '^Test$'` per row, one row at a
# time, so that no two tests (or packages) measure each other. The DPDK
# rows run as scripts/test.sh runs them: -tags dpdk, without -race; so does
# TestGeneratorOutrunsVeth, a property of the generator, which is measured
# without the race detector (its file is built with !race). A run
# that skips counts as not passed (a skip proves nothing about stability):
# it is shown in the table and makes the exit status 1. The -json output of
# every row is kept in the log directory (printed at the start;
# FLAKE_LOGDIR sets it).
#
# The rows come from the source (go run ./internal/testenv/timingtests):
# every test that judges time through testenv.Judge, and those still
# listed as pending in internal/testenv/timing-audit.txt. A test that
# starts judging time joins the list without an edit here; scripts/test.sh
# runs the same tests alone, one package at a time. Tests that judge time
# only on a virtual clock (emulator/schedule_test.go, sim_test.go, ...) are
# deterministic and not listed; nor is the kube module (kube/), whose
# tests judge no time (only timeouts that end a hung wait).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

TESTS=$(go run ./internal/testenv/timingtests) || { echo "flake-check: internal/testenv/timingtests failed" >&2; exit 1; }

usage() {
  cat <<'EOF'
usage: scripts/flake-check.sh [--count N] [--run REGEXP] [--list]
  --count N     runs per test (default 10)
  --run REGEXP  only the rows whose "package test" line matches REGEXP (grep -E)
  --pause       also stop the test process (SIGSTOP) for 20-50 ms every 1-3 s
  --list        print the rows and exit
EOF
}

count=10
filter=""
list=false
while [ $# -gt 0 ]; do
  case "$1" in
    --count) [ $# -ge 2 ] || { usage >&2; exit 2; }; count=$2; shift 2 ;;
    --count=*) count=${1#--count=}; shift ;;
    --run) [ $# -ge 2 ] || { usage >&2; exit 2; }; filter=$2; shift 2 ;;
    --run=*) filter=${1#--run=}; shift ;;
    --list) list=true; shift ;;
    --pause) pause=true; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "flake-check: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
case "$count" in
  '' | *[!0-9]* | 0) echo "flake-check: --count wants a positive number, not '$count'" >&2; exit 2 ;;
esac

rows=$(printf '%s\n' "$TESTS" | grep -v '^#' | grep -v '^[[:space:]]*$')
if [ -n "$filter" ]; then
  # The filter sees "package test", with the package as listed.
  rows=$(printf '%s\n' "$rows" | awk '{print $1" "$2"\t"$0}' | { grep -E -- "$(printf '%s' "$filter" | sed 's/\t/ /g')" || true; } | cut -f2-)
  if [ -z "$rows" ]; then
    echo "flake-check: no row matches '$filter' (see --list)" >&2
    exit 2
  fi
fi
if $list; then
  printf '%s\n' "$rows"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "flake-check: needs root (the tests build namespaces; stall-inject runs at SCHED_FIFO 99)" >&2
  exit 2
fi

logdir=${FLAKE_LOGDIR:-/var/tmp/hymn-flake-check.$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$logdir"
echo "*** flake-check: $(printf '%s\n' "$rows" | wc -l) tests, -count=$count each, beside scripts/stall-inject.py; logs in $logdir"

inject=""
stop_inject() {
  if [ -n "$inject" ]; then
    # stall-inject's SIGTERM handler stops its per-CPU children.
    kill -TERM "$inject" 2>/dev/null || true
    wait "$inject" 2>/dev/null || true
    inject=""
  fi
}
trap stop_inject EXIT
trap 'stop_inject; exit 130' INT
trap 'stop_inject; exit 143' TERM
python3 scripts/stall-inject.py -v 2>>"$logdir/stall-inject.txt" &
inject=$!
sleep 0.5
if ! kill -0 "$inject" 2>/dev/null; then
  echo "flake-check: scripts/stall-inject.py did not start:" >&2
  cat "$logdir/stall-inject.txt" >&2
  exit 1
fi

# count_runs FILE TEST prints "passed failed skipped" for the top-level
# test TEST in a go test -json stream.
count_runs() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
path, name = sys.argv[1], sys.argv[2]
n = {"pass": 0, "fail": 0, "skip": 0}
with open(path, errors="replace") as f:
    for line in f:
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        test = ev.get("Test", "")
        if test == name and ev.get("Action") in n:
            n[ev["Action"]] += 1
print(n["pass"], n["fail"], n["skip"])
EOF
}

# pause_children PID LOG: until PID ends, every 1-3 s stops each child
# of PID (go test's test binaries) for 20-50 ms, as a host that stops this
# process alone would, and logs each pause.
pause_children() {
  local parent=$1 log=$2 kids=""
  # Never leave a test stopped.
  trap 'kill -CONT $kids 2>/dev/null; exit 0' TERM
  while kill -0 "$parent" 2>/dev/null; do
    sleep "$(awk -v r="$RANDOM" 'BEGIN{printf "%.3f", 1 + 2*r/32767}')"
    kids=$(cat /proc/"$parent"/task/*/children 2>/dev/null) || true
    [ -n "$kids" ] || continue
    ms=$(awk -v r="$RANDOM" 'BEGIN{printf "%d", 20 + 30*r/32767}')
    kill -STOP $kids 2>/dev/null || continue
    sleep "0.0$ms"
    kill -CONT $kids 2>/dev/null || true
    echo "paused $kids for $ms ms" >>"$log"
  done
}

table=()
bad=0
start=$(date +%s)
while read -r pkg name flags; do
  args=(-json -p 1 -count="$count" -timeout 60m -run "^${name}\$")
  race=(-race)
  for f in $flags; do
    case "$f" in
      norace) race=() ;;
      *) args+=("$f") ;;
    esac
  done
  out="$logdir/$(printf '%s' "${pkg#./}" | tr '/.' '__')-$name.json"
  t0=$(date +%s)
  go test "${race[@]}" "${args[@]}" "$pkg" >"$out" 2>&1 &
  gotest=$!
  if $pause; then
    pause_children "$gotest" "$logdir/pauses.txt" &
    pauser=$!
  fi
  wait "$gotest" || true
  if $pause; then
    kill "$pauser" 2>/dev/null || true
    wait "$pauser" 2>/dev/null || true
  fi
  read -r passed failed skipped < <(count_runs "$out" "$name")
  note=""
  [ "$failed" -gt 0 ] && note+=" $failed failed"
  [ "$skipped" -gt 0 ] && note+=" $skipped skipped"
  if [ "$passed" -lt "$count" ]; then
    bad=1
    [ "$((passed + failed + skipped))" -lt "$count" ] && note+=" $((count - passed - failed - skipped)) not run (build error, panic or timeout: see the log)"
  fi
  line=$(printf '%3d/%-3d %-22s %s%s' "$passed" "$count" "$pkg" "$name" "${note:+  (${note# })}")
  table+=("$line")
  echo "$line  [$(($(date +%s) - t0)) s]"
  if [ "$passed" -lt "$count" ]; then echo "        log: $out"; fi
done <<<"$rows"
stop_inject
# One line per CPU per stall; the CPUs stall together.
stalls=$(grep -c 'cpu 0 stalled' "$logdir/stall-inject.txt" 2>/dev/null || true)

echo
echo "*** flake-check: passes per test, -race -count=$count beside stall-inject ($stalls stalls injected in $(($(date +%s) - start)) s)"
if $pause; then echo "*** flake-check: the test processes were also paused $(wc -l <"$logdir/pauses.txt" 2>/dev/null || echo 0) times (SIGSTOP, 20-50 ms)"; fi
printf '%s\n' "${table[@]}"
if [ "$bad" -ne 0 ]; then
  echo "*** flake-check: some tests passed fewer than $count of $count runs; their go test -json output is in $logdir"
  exit 1
fi
echo "*** flake-check: every test passed $count of $count"
