#!/usr/bin/env bash
# dpdktopo.sh - emulated VF links on AF_PACKET ports vs DPDK ports, side by
# side: the same topology (linear,2 on the simulated SR-IOV NIC, every link
# emulated: h1 ─ s1 ─ s2 ─ h2, three emulated VF links), once per port kind,
# taking turns. In each network, through its mininet> shell:
#   1. `measure h1 h2 --rate 1k --duration 3s --json` with no delay: the
#      path's own one-way latency (probes, kernel receive stamps);
#   2. `emu ... delay 5ms` on all three links, and the same measurement;
#   3. the forwarder statistics of h1-s1 (lateness: send time minus due time);
#   4. pingall and iperf.
# "added" is (mean with delay) - (mean without) - 15 ms, i.e. what the
# emulation adds beyond its configured delay and the path measured in the
# same network a moment before; the same for the median.
#
# Usage: sudo bench/dpdktopo.sh [RUNS]
# Environment: HYMN (default: build ./cmd/hymn with -tags dpdk into $OUT),
#   OUT (default /root/hymnlogs/dpdktopo: logs, one per network).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1}
out=${OUT:-/root/hymnlogs/dpdktopo}
mkdir -p "$out"
hymn=${HYMN:-}
if [ -z "$hymn" ]; then
  hymn=$out/hymn-dpdk
  go build -tags dpdk -o "$hymn" ./cmd/hymn
fi
script=$out/dpdktopo.script
cat >"$script" <<'EOF'
measure h1 h2 --rate 1k --duration 3s --json
emu h1 s1 delay 5ms
emu s1 s2 delay 5ms
emu s2 h2 delay 5ms
measure h1 h2 --rate 1k --duration 3s --json
stats h1 s1
pingall
iperf h1 h2
EOF
for run in $(seq 1 "$runs"); do
  for ports in afpacket dpdk; do
    log=$out/dpdktopo-$ports-$run.log
    echo "=== run $run $(date -u +%H:%M:%S) UTC, loadavg $(cut -d' ' -f1-3 /proc/loadavg): --links sriov,sim=on,emulator=$ports --link emu"
    rc=0
    timeout 300 "$hymn" --topo linear,2 --links "sriov,sim=on,emulator=$ports" --link emu <"$script" >"$log" 2>&1 || rc=$?
    [ "$rc" = 0 ] || echo "  hymn exited $rc (log: $log)"
    python3 - "$log" <<'PY'
import json, re, sys
txt = open(sys.argv[1]).read()
dec, objs, i = json.JSONDecoder(), [], 0
while (j := txt.find('{\n  "from"', i)) >= 0:
    o, e = dec.raw_decode(txt[j:])
    objs.append(o["results"][0])
    i = j + e
if len(objs) < 2:
    print("  (no measurement)"); sys.exit()
for name, r in (("no delay", objs[0]), ("5 ms x 3", objs[1])):
    l = r["latency_us"]
    print(f"  {name:9s} one-way mean {l['mean']:8.1f} p50 {l['p50']:8.1f} p99 {l['p99']:9.1f} max {l['max']:9.1f} us, lost {r['lost']}/{r['sent']}")
b, d = objs[0]["latency_us"], objs[1]["latency_us"]
add, addp = d["mean"] - b["mean"] - 15000, d["p50"] - b["p50"] - 15000
print(f"  added beyond 15 ms and the path's own: mean {add:+.1f} us ({add / 150:+.2f} %), p50 {addp:+.1f} us ({addp / 150:+.2f} %)")
for dirn, m in zip(("h1>s1", "s1>h1"), re.finditer(r"lateness p50 (\S+) p99 (\S+) max (\S+)", txt)):
    print(f"  forwarder lateness {dirn}: p50 {m.group(1)} p99 {m.group(2)} max {m.group(3)}")
for m in re.finditer(r"\*\*\* Results: (.*)", txt):
    print("  " + m.group(1))
PY
  done
done
echo "=== end $(date -u +%H:%M:%S) UTC, loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
