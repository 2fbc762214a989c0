#!/usr/bin/env bash
# generator.sh - hymn measure's generator against the zero-loss rate of a
# plain veth link, RUNS times.
#
# Each run is one `hymn measure` on bench/pair.yaml (h1 -veth- h2, no
# switch): the report measures its generator alone first (300 ms into a
# sink veth in h1), then searches the link's zero-loss rate (64 B frames,
# 200 ms trials from 4 Mpps down, 10 % resolution), then, with
# --compare-generators, measures every generator alone side by side (5
# interleaved rounds of 200 ms each). One line per run: the generator the
# trials used, its rate before the search, the zero-loss rate, the ratio
# of the two (the headroom), whether the search was generator- or
# sender-core-limited, and each generator's median after it. The summary
# gives the ratios' range and how many runs reached 3x.
#
# Usage: sudo bench/generator.sh [--json]
# Environment: HYMN (default: build ./cmd/hymn), RUNS (10).
# Needs root and python3. The machine's other load moves both rates: they
# are measured minutes apart at most within a run, never across runs.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
JSON=0
[[ "${1:-}" == "--json" ]] && JSON=1
[[ $EUID -eq 0 ]] || { echo "generator.sh: needs root" >&2; exit 2; }
RUNS=${RUNS:-10}
work=$(mktemp -d /var/tmp/hymn-generator.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [[ -z "${HYMN:-}" ]]; then
	export PATH=$PATH:/usr/local/go/bin
	go build -buildvcs=auto -o "$work/hymn" ./cmd/hymn
	HYMN=$work/hymn
fi
for i in $(seq 1 "$RUNS"); do
	"$HYMN" measure --custom bench/pair.yaml --rate 100k --duration 200ms --warmup 50ms --drain 50ms \
		--zero-loss --zero-loss-max 4M --trial 200ms --resolution 0.1 --compare-generators --json \
		>"$work/run$i.json" 2>"$work/run$i.err" || { cat "$work/run$i.err" >&2; exit 1; }
done
python3 - "$work" "$RUNS" "$JSON" "$(cat /proc/loadavg)" <<'PY'
import json, sys
work, runs, as_json, load = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
rows = []
for i in range(1, runs + 1):
    r = json.load(open(f"{work}/run{i}.json"))
    z = r["zero_loss"]
    gens = {g["generator"]: g["pps"] for g in r.get("generators", [])}
    rows.append({"run": i, "generator": r["generator"], "generator_pps": r["generator_pps"], "zero_loss_pps": z["rate_pps"],
                 "ratio": r["generator_pps"] / z["rate_pps"] if z["rate_pps"] else 0,
                 "generator_limited": z["generator_limited"], "sender_core_limited": z["sender_core_limited"], "alone": gens})
if as_json:
    print(json.dumps({"runs": rows, "loadavg_end": load}, indent=2))
    sys.exit(0)
print("| run | generator | generator alone (Mpps) | veth zero-loss (kpps) | ratio | limited by | afxdp / afpacket / udp alone after (Mpps) |")
print("|---|---|---|---|---|---|---|")
for x in rows:
    lim = "generator" if x["generator_limited"] else ("sender core" if x["sender_core_limited"] else "loss")
    a = x["alone"]
    alone = " / ".join(f'{a[k]/1e6:.2f}' if k in a else "–" for k in ("afxdp", "afpacket", "udp"))
    print(f'| {x["run"]} | {x["generator"]} | {x["generator_pps"]/1e6:.2f} | {x["zero_loss_pps"]/1e3:.0f} | {x["ratio"]:.2f} | {lim} | {alone} |')
ratios = sorted(x["ratio"] for x in rows)
print(f"\nratio min {ratios[0]:.2f}, median {ratios[len(ratios)//2]:.2f}, max {ratios[-1]:.2f}; {sum(r >= 3 for r in ratios)} of {len(ratios)} runs >= 3; generator-limited searches: {sum(x['generator_limited'] for x in rows)}; /proc/loadavg at the end: {load}")
PY
