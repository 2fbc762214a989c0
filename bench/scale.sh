#!/usr/bin/env bash
# scale.sh - hymn at 2 000 to 20 000 nodes: one row per topology.
#
# For each topology in $TOPOS (default linear,1000 linear,2500 linear,5000
# tree,depth=4,fanout=10 linear,10000), with hymn's defaults:
#   hymn --topo T --test pingpair+pingsample -v debug under GNU time, then
#   the time until the run's namespaces are gone (the kernel's tail).
# Each row: nodes, build s, links s, wall s, tail s, hymn's system CPU,
# peak RSS, the Results lines, the lowest MemAvailable and highest Slab
# seen while it ran against before (kernel memory per node), open files
# per node at the end of the build, and the load average at the start.
#
# Usage: sudo bench/scale.sh [--json]   (HYMN=path, TOPOS="...", LOGDIR=dir)
set -euo pipefail
JSON=0
[[ ${1-} == --json ]] && JSON=1
((EUID == 0)) || { echo "scale.sh: must run as root" >&2; exit 1; }
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HYMN=${HYMN:-$REPO/bin/hymn}
TOPOS=${TOPOS:-linear,1000 linear,2500 linear,5000 tree,depth=4,fanout=10 linear,10000}
LOGDIR=${LOGDIR:-$(mktemp -d /var/tmp/hymn-scale.XXXXXX)}
mkdir -p "$LOGDIR"
meminfo() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }
rows=()
for t in $TOPOS; do
	log=$LOGDIR/${t//[,=]/_}.log tm=$LOGDIR/${t//[,=]/_}.time
	load=$(cut -d' ' -f1 /proc/loadavg)
	avail0=$(meminfo MemAvailable) slab0=$(meminfo Slab)
	/usr/bin/time -v -o "$tm" "$HYMN" --topo "$t" --test pingpair+pingsample -v debug >"$log" 2>&1 &
	tpid=$!
	minavail=$avail0 maxslab=$slab0 fds=-
	while kill -0 "$tpid" 2>/dev/null; do
		a=$(meminfo MemAvailable) s=$(meminfo Slab)
		((a < minavail)) && minavail=$a
		((s > maxslab)) && maxslab=$s
		if [[ $fds == - ]] && grep -q '^\*\*\* Configuring hosts' "$log"; then
			hp=$(pgrep -P "$tpid" -x hymn | head -1 || true)
			[[ -n $hp ]] && fds=$(ls "/proc/$hp/fd" 2>/dev/null | wc -l)
		fi
		sleep 0.5
	done
	wait "$tpid" && rc=0 || rc=$?
	run=$(sed -n 's/^\*\*\* run \([0-9a-f]*\): owner.*/\1/p' "$log" | head -1)
	t0=$EPOCHREALTIME
	while ip netns list | grep -q "^hymn-$run-"; do sleep 0.1; done
	tail=$(echo "$EPOCHREALTIME - $t0" | bc | awk '{ printf "%.2f", $1 }')
	nodes=$(sed -n 's/^\*\*\* Stopping \([0-9]*\) \(hosts\|switches\)$/\1/p' "$log" | awk '{ n += $1 } END { print n + 0 }')
	hostsdur=$(sed -n 's/^\*\*\* created [0-9]* host namespaces in //p' "$log")
	linksdur=$(sed -n 's/^\*\*\* created [0-9]* links in //p' "$log")
	wall=$(sed -n 's/^\tElapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tm" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.2f", s }')
	sys=$(sed -n 's/^\tSystem time (seconds): //p' "$tm")
	rss=$(sed -n 's/^\tMaximum resident set size (kbytes): //p' "$tm")
	results=$(grep '^\*\*\* Results:' "$log" | tr '\n' ';')
	kmem=$(((avail0 - minavail)))
	per=$((nodes > 0 ? kmem / nodes : 0))
	rows+=("$(printf '{"topo":"%s","nodes":%s,"rc":%s,"hosts":"%s","links":"%s","wall_s":%s,"tail_s":%s,"sys_s":%s,"max_rss_kb":%s,"mem_used_kb":%s,"mem_per_node_kb":%s,"slab_growth_kb":%s,"fds_after_build":"%s","load":%s,"results":"%s"}' \
		"$t" "$nodes" "$rc" "$hostsdur" "$linksdur" "${wall:-0}" "$tail" "${sys:-0}" "${rss:-0}" "$kmem" "$per" "$((maxslab - slab0))" "$fds" "$load" "$results")")
	printf '%-26s %6s nodes rc=%s wall %7ss tail %6ss sys %6ss RSS %6s kB mem %8s kB (%s kB/node) slab +%s kB fds %s load %s %s\n' \
		"$t" "$nodes" "$rc" "${wall:-?}" "$tail" "${sys:-?}" "${rss:-?}" "$kmem" "$per" "$((maxslab - slab0))" "$fds" "$load" "$results" >&2
done
if ((JSON)); then (IFS=,; echo "[${rows[*]}]"); fi
echo "logs in $LOGDIR" >&2
