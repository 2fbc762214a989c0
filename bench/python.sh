#!/usr/bin/env bash
# bench/python.sh: one Mininet Python script, run under hymn python and
# under real Mininet 2.3 (Debian's mininet package) alternately in one
# session, REPS times each: LinearTopo(N) with Linux bridges and no
# controller, built, started, pinged end to end and stopped
# (bench/python/linear100.py). Prints each run's times (the script's own
# and the whole command's wall time) and the median ratio of wall times. Needs root, Debian's mininet package, bridge-utils and a built
# hymn (HYMN, default bin/hymn).
#
#   sudo bench/python.sh                 # N=100, REPS=3
#   N=50 REPS=5 sudo bench/python.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-100}
REPS=${REPS:-3}
HYMN=${HYMN:-bin/hymn}
script=bench/python/linear100.py
if [ "$(id -u)" -ne 0 ]; then
  echo "bench/python.sh: run as root" >&2
  exit 2
fi
if [ ! -x "$HYMN" ]; then
  echo "bench/python.sh: no hymn binary at $HYMN (go build -o bin/hymn ./cmd/hymn, or set HYMN)" >&2
  exit 2
fi
if ! /usr/bin/python3 -c 'import mininet.net' 2>/dev/null; then
  echo "bench/python.sh: Debian's mininet package is not installed (apt-get install mininet bridge-utils)" >&2
  exit 2
fi
# The whole command's wall time (interpreter, hymn's server and cleanup
# included), which is what a user waits for.
total() { sed -n 's/.* wall \([0-9.]*\)$/\1/p'; }
hs=() ms=()
echo "*** LinearTopo($N), LinuxBridge, no controller: hymn python against Mininet 2.3, $REPS runs each, alternated"
for ((i = 1; i <= REPS; i++)); do
  t0=$(date +%s.%N)
  h=$("$HYMN" python "$script" "$N")
  t1=$(date +%s.%N)
  h="$h wall $(echo "$t1 - $t0" | bc)"
  echo "run $i hymn:    $h"
  # No mn -c between runs: it kills every process named mininet:* on the
  # machine, hymn's node shells of other networks included.
  t0=$(date +%s.%N)
  m=$(/usr/bin/python3 "$script" "$N" 2>/dev/null | tail -1)
  t1=$(date +%s.%N)
  m="$m wall $(echo "$t1 - $t0" | bc)"
  echo "run $i mininet: $m"
  hs+=("$(echo "$h" | total)") ms+=("$(echo "$m" | total)")
done
python3 - "${hs[*]}" "${ms[*]}" <<'PY'
import statistics, sys
h = [float(x) for x in sys.argv[1].split()]
m = [float(x) for x in sys.argv[2].split()]
print("*** median: hymn python %.2f s, Mininet %.2f s: %.1fx (per run: %s)" % (
    statistics.median(h), statistics.median(m), statistics.median(m) / statistics.median(h),
    ", ".join("%.1fx" % (b / a) for a, b in zip(h, m))))
PY
