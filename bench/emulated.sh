#!/usr/bin/env bash
# emulated.sh - a link with hymn's emulator (zero delay) vs the same link
# without it, side by side in one run.
#
# Builds two-namespace links with ip(8):
#   plain          A ─veth─ B                    offloads as the kernel sets them
#   plain-nooff    A ─veth─ B                    TX checksum, TSO, GSO off (what an
#                                                emulated link needed on its ends)
#   emulated       A ─veth─ [emulator ns: hymn emulate link --offloads] ─veth─ B
#                                                offloads on everywhere, carried
#                                                through the emulator (hymn's default)
#   emulated-nooff the same without --offloads, ends with offloads off
#   emulated-2t    emulated with --thread-per-direction (not in the default
#                  LINKS): a forwarding thread per direction instead of
#                  one for the link, which is hymn's default
#   emulated-10ms  emulated with `delay 10ms` (TCP only): a single stream is
#                  window-limited; the window (ss -tin at the sender) and the
#                  rate it allows, window / RTT, are printed beside it
#   emulated-b     emulated, run by a second binary $HYMN_B (added to LINKS
#                  when HYMN_B is set): an A/B of two builds in one run, the
#                  two links taking turns, so both see the same neighbours
# and measures on each:
#   1. 64-byte UDP packet rate (iperf3 -u -l 18 -b 0: 60-byte frames + FCS):
#      sent by iperf3, carried by the link (rx_packets of B's interface) and
#      read by the iperf3 server (which, on 2 shared cores, overflows its
#      socket buffer long before any link is full);
#   2. TCP throughput (iperf3, one stream);
#   3. one-way latency p50/p99 with hymn-probe (kernel RX timestamps) at
#      $PROBE_RATE probes/s; "added" is emulated minus plain-nooff.
# The packet-rate ratio emulated / plain-nooff is also printed per run
# (runs take turns, so each run's two links saw the same neighbours).
#
# Usage: sudo bench/emulated.sh [--json]
# Environment: HYMN (default: build ./cmd/hymn), PROBE (default: build
#   ./cmd/hymn-probe), SECONDS_PER_TEST (5), PROBE_RATE (1000), REPS (3:
#   runs per measurement, medians reported), LINKS (default: "plain
#   plain-nooff emulated emulated-nooff emulated-10ms"; plain-nooff and
#   emulated are always measured), WINDOW (4M: iperf3 -w for emulated-10ms),
#   PIN (unset; "C,S": run every iperf3 client on CPU C and server on CPU S,
#   the same for every link: on two cores an emulated link has three busy
#   threads for two CPUs, and where the scheduler puts the hosts' two
#   decides the rate more than the link does; see bench/README.md),
#   HYMN_B (unset: a second hymn binary for the emulated-b link).
# Each emulated link's forwarder CPU time over the whole run (user +
# system of its hymn process, /proc/PID/stat) is printed beside it.
# Needs root, iperf3, ethtool, python3.
set -euo pipefail
export LC_ALL=C

JSON=0
[[ ${1:-} == --json ]] && JSON=1
T=${SECONDS_PER_TEST:-5}
REPS=${REPS:-3}
PROBE_RATE=${PROBE_RATE:-1000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
P=hb$$ # namespace prefix, unique per run
EMU_PIDS=()

log() { if ((JSON)); then echo "$@" >&2; else echo "$@"; fi; }

cleanup() {
	for pid in "${EMU_PIDS[@]}"; do kill -INT "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
	for ns in $(ip netns list | awk '{print $1}' | grep "^$P-" || true); do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
		ip netns del "$ns" 2>/dev/null || true
	done
	[[ -n ${KEEP:-} ]] && cp -r "$TMP" /tmp/bench-keep; rm -rf "$TMP"
}
trap cleanup EXIT

for tool in iperf3 ethtool python3 ip; do
	command -v $tool >/dev/null || { echo "emulated.sh: $tool is not installed" >&2; exit 1; }
done
[[ $(id -u) == 0 ]] || { echo "emulated.sh: needs root" >&2; exit 1; }
if [[ -n ${PIN:-} && ! ${PIN} =~ ^[0-9]+,[0-9]+$ ]]; then
	echo "emulated.sh: PIN=$PIN: want CLIENT_CPU,SERVER_CPU, e.g. PIN=0,1" >&2
	exit 2
fi

cd "$ROOT"
HYMN=${HYMN:-}
if [[ -z $HYMN ]]; then
	go build -o "$TMP/hymn" ./cmd/hymn
	HYMN=$TMP/hymn
fi
# The host's own thread wake-up latency first (hymn calibrate): an
# emulated link's added latency is mostly wake-ups, so figures from two
# machines compare only beside it. Kept in the JSON as "host".
HOST_JSON=null
if "$HYMN" calibrate --help >/dev/null 2>&1; then
	HOST_JSON=$("$HYMN" calibrate --json --samples 5000 | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin),separators=(",",":")))')
	log "*** $(python3 -c 'import json,sys; h=json.loads(sys.argv[1]); t,e=h["timer_late_us"],h["event_wake_us"]; print("host: %d CPUs, kernel %s, idle %s; timer wake-up late p50 %.1f / p99 %.1f µs, event wake-up p50 %.1f / p99 %.1f µs" % (h["cpus"],h["kernel"],h["cpu_idle"],t["p50"],t["p99"],e["p50"],e["p99"]))' "$HOST_JSON")"
else
	log "*** $HYMN has no calibrate command: the host's wake-up latency is not measured"
fi
PROBE=${PROBE:-}
if [[ -z $PROBE ]]; then
	go build -o "$TMP/hymn-probe" ./cmd/hymn-probe
	PROBE=$TMP/hymn-probe
fi
# `hymn emulate link` runs the emulator between two interfaces. Until it
# is attached to the hymn command, build the same thing from the cli
# package.
EMU=("$HYMN" emulate link)
EMU_B=()
if [[ -n ${HYMN_B:-} ]]; then
	"$HYMN_B" emulate link --help 2>&1 | grep -q -- '--a IF' || { echo "emulated.sh: HYMN_B=$HYMN_B has no 'emulate link --a IF'" >&2; exit 2; }
	EMU_B=("$HYMN_B" emulate link)
fi
if ! "$HYMN" emulate link --help 2>&1 | grep -q -- '--a IF'; then
	mkdir -p "$TMP/emu"
	cat >"$TMP/emu/main.go" <<'EOF'
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/hymn-net/hymn/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cmd := cli.NewEmulateLinkCmd()
	cmd.SetArgs(os.Args[1:])
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
EOF
	go build -o "$TMP/emulate-link" "$TMP/emu/main.go"
	EMU=("$TMP/emulate-link")
fi

# pair NAME SUBNET OFFLOADS(on|off): namespaces NAME-a and NAME-b joined by
# one veth, 10.SUBNET.0.1 and .2.
pair() {
	local n=$P-$1
	ip netns add $n-a
	ip netns add $n-b
	ip link add a0 netns $n-a type veth peer name b0 netns $n-b
	ip -n $n-a addr add 10.$2.0.1/24 dev a0
	ip -n $n-b addr add 10.$2.0.2/24 dev b0
	for s in a b; do
		ip -n $n-$s link set lo up
		ip -n $n-$s link set ${s}0 up
		if [[ $3 == off ]]; then ip netns exec $n-$s ethtool -K ${s}0 tx off tso off gso off >/dev/null; fi
	done
}

# emulated NAME SUBNET OFFLOADS(on|off) [PARAMS...]: A ─ [NAME-e: e1 e2] ─ B;
# with offloads off, A and B get them turned off and the emulator runs
# without --offloads.
emulated() {
	local name=$1 off=$3
	local extra=("${@:4}")
	local n=$P-$1
	ip netns add $n-a
	ip netns add $n-b
	ip netns add $n-e
	ip link add a0 netns $n-a type veth peer name e1 netns $n-e
	ip link add b0 netns $n-b type veth peer name e2 netns $n-e
	ip -n $n-a addr add 10.$2.0.1/24 dev a0
	ip -n $n-b addr add 10.$2.0.2/24 dev b0
	ip netns exec $n-e sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	local l
	for l in "a a0" "b b0" "e e1" "e e2"; do
		set -- $l
		ip -n $n-$1 link set lo up
		ip -n $n-$1 link set $2 up
	done
	local flags=(--offloads)
	if [[ $off == off ]]; then
		ip netns exec $n-a ethtool -K a0 tx off tso off gso off >/dev/null
		ip netns exec $n-b ethtool -K b0 tx off tso off gso off >/dev/null
		flags=()
	fi
	local emu=("${EMU[@]}")
	[[ $name == emulated-b ]] && emu=("${EMU_B[@]}")
	ip netns exec $n-e "${emu[@]}" --a e1 --b e2 "${flags[@]}" "${extra[@]}" >"$TMP/emu-$name.log" 2>&1 &
	EMU_PIDS+=($!)
	EMU_OF[$name]=$!
}

# iperf NAME ARGS...: run iperf3 from NAME-a to NAME-b, print its JSON.
iperf() {
	local name=$1 n=$P-$1
	shift
	local cpu_c=() cpu_s=()
	if [[ -n ${PIN:-} ]]; then cpu_c=(taskset -c "${PIN%,*}") cpu_s=(taskset -c "${PIN#*,}"); fi
	ip netns exec $n-b "${cpu_s[@]}" iperf3 -s -1 -p 5201 >/dev/null 2>&1 &
	local srv=$!
	sleep 0.3
	ip netns exec $n-a "${cpu_c[@]}" iperf3 -J -c 10.${SUBNET[$name]}.0.2 -p 5201 -t "$T" "$@" || true
	wait $srv 2>/dev/null || true
}

declare -A SUBNET=([plain]=81 [plain-nooff]=82 [emulated]=83 [emulated-nooff]=84 [emulated-10ms]=85 [emulated-2t]=86 [emulated-b]=87)
declare -A EMU_OF # link -> pid of its `hymn emulate link`
LINKS=${LINKS:-plain plain-nooff emulated emulated-nooff emulated-10ms}
for lk in plain-nooff emulated; do [[ " $LINKS " == *" $lk "* ]] || LINKS+=" $lk"; done
if [[ -n ${HYMN_B:-} && " $LINKS " != *" emulated-b "* ]]; then LINKS+=" emulated-b"; fi
ALL=()
for lk in plain plain-nooff emulated emulated-b emulated-2t emulated-nooff emulated-10ms; do if [[ " $LINKS " == *" $lk "* ]]; then ALL+=($lk); fi; done
MEASURED=() # links with UDP, TCP and latency; emulated-10ms has TCP only
for lk in "${ALL[@]}"; do
	case $lk in
	plain) pair plain 81 on ;;
	plain-nooff) pair plain-nooff 82 off ;;
	emulated) emulated emulated 83 on ;;
	emulated-2t) emulated emulated-2t 86 on --thread-per-direction ;;
	emulated-b) emulated emulated-b 87 on ;;
	emulated-nooff) emulated emulated-nooff 84 off ;;
	emulated-10ms) emulated emulated-10ms 85 on delay 10ms ;;
	esac
	if [[ $lk != emulated-10ms ]]; then MEASURED+=($lk); fi
done
sleep 0.5
[[ -n ${PIN:-} ]] && log "*** iperf3 clients pinned to CPU ${PIN%,*}, servers to CPU ${PIN#*,}"

# Every measurement is repeated REPS times, the three links taking turns,
# and the median is reported: on a small machine shared with other work a
# single run says more about the neighbours than about the link.
declare -A PPS APP OFFERED MBPS P50 P99 WND RTT
RUN_RATIOS=
RUN_RATIOS_B=
median() { python3 -c 'import statistics,sys; print(round(statistics.median(float(x) for x in sys.argv[1:]),3))' "$@"; }
for name in "${ALL[@]}"; do
	ip netns exec $P-$name-a ping -c 2 -i 0.2 -q 10.${SUBNET[$name]}.0.2 >/dev/null
done
# tcp10 NAME: one TCP stream with socket buffers of $WINDOW (iperf3 -w;
# the first second, slow start, is omitted); samples the sender's window
# and RTT (ss) every 0.3 s while it runs, prints "Mbit/s mean_window_bytes
# mean_rtt_ms".
WINDOW=${WINDOW:-4M}
tcp10() {
	local name=$1 n=$P-$1
	: >"$TMP/ss-$name"
	(
		# From the end of the omitted second to shortly before the end.
		start=${EPOCHREALTIME/./}
		sleep 1.5
		while ((${EPOCHREALTIME/./} < start + (T + 1) * 1000000)); do
			ip netns exec $n-a ss -tin dst 10.${SUBNET[$name]}.0.2 >>"$TMP/ss-$name"
			echo "--" >>"$TMP/ss-$name"
			sleep 0.3
		done
	) &
	local ssp=$!
	local mbps
	mbps=$(iperf $name -w "$WINDOW" -O 1 | python3 -c '
import json,sys
j=json.load(sys.stdin); print(round(j["end"]["sum_received"]["bits_per_second"]/1e6,1))')
	wait $ssp
	python3 - "$mbps" "$TMP/ss-$name" <<'PY'
import re,sys
mbps=sys.argv[1]; txt=open(sys.argv[2]).read()
# Per sample the data stream's window (the largest, the iperf3 control
# connection is idle), then the means over the samples.
ws,rtts=[],[]
for sample in txt.split("--"):
    best=None
    for line in sample.splitlines():
        f=lambda k: re.search(r"\b"+k+r":([\d.]+)", line)
        if not (f("cwnd") and f("mss") and f("rtt")):
            continue
        mss,rtt,cwnd=int(f("mss")[1]),float(f("rtt")[1]),int(f("cwnd")[1])
        w=cwnd*mss
        if f("snd_wnd"): w=min(w,int(f("snd_wnd")[1]))
        if best is None or w>best[0]: best=(w,rtt)
    if best: ws.append(best[0]); rtts.append(best[1])
if ws: print(mbps, int(sum(ws)/len(ws)), round(sum(rtts)/len(rtts),3))
else: print(mbps, 0, 0)
PY
}
for ((rep = 1; rep <= REPS; rep++)); do
	for name in "${ALL[@]}"; do
		n=$P-$name
		if [[ $name == emulated-10ms ]]; then
			log "*** run $rep/$REPS, $name: TCP"
			read -r mbps w rtt < <(tcp10 $name)
			MBPS[$name]+=" $mbps"
			WND[$name]+=" $w"
			RTT[$name]+=" $rtt"
			continue
		fi
		log "*** run $rep/$REPS, $name: UDP 64 B, TCP, latency"
		rx0=$(ip netns exec $n-b cat /sys/class/net/b0/statistics/rx_packets)
		read -r app sent secs < <(iperf $name -u -l 18 -b 0 | python3 -c '
import json,sys
j=json.load(sys.stdin); s=j["end"]["sum"]
print(int((s["packets"]-s["lost_packets"])/s["seconds"]), int(s["packets"]/s["seconds"]), s["seconds"])')
		rx1=$(ip netns exec $n-b cat /sys/class/net/b0/statistics/rx_packets)
		PPS[$name]+=" $(python3 -c "print(int(($rx1-$rx0)/$secs))")"
		APP[$name]+=" $app"
		OFFERED[$name]+=" $sent"
		MBPS[$name]+=" $(iperf $name | python3 -c '
import json,sys
j=json.load(sys.stdin); print(round(j["end"]["sum_received"]["bits_per_second"]/1e6,1))')"
		read -r p50 p99 < <("$PROBE" --from $n-a --to $n-b --dst 10.${SUBNET[$name]}.0.2 --rate "$PROBE_RATE" --duration "${T}s" --drain 200ms --json | python3 -c '
import json,sys
j=json.load(sys.stdin); print(j["Delay"]["P50"]/1e3, j["Delay"]["P99"]/1e3)')
		P50[$name]+=" $p50"
		P99[$name]+=" $p99"
	done
	RUN_RATIOS+=" $(python3 -c "print(round(${PPS[emulated]##* }/${PPS[plain-nooff]##* },3))")"
	if [[ -n ${PPS[emulated-b]:-} ]]; then RUN_RATIOS_B+=" $(python3 -c "print(round(${PPS[emulated-b]##* }/${PPS[plain-nooff]##* },3))")"; fi
done
log "raw runs:"
for name in "${ALL[@]}"; do
	if [[ $name == emulated-10ms ]]; then
		log "  $name: TCP Mbit/s${MBPS[$name]} | window B${WND[$name]} | rtt ms${RTT[$name]}"
		for v in MBPS WND RTT; do
			declare -n arr=$v
			arr[$name]=$(median ${arr[$name]})
		done
		continue
	fi
	log "  $name: carried/s${PPS[$name]} | TCP Mbit/s${MBPS[$name]} | p50 µs${P50[$name]} | p99 µs${P99[$name]}"
	for v in PPS APP OFFERED MBPS P50 P99; do
		declare -n arr=$v
		arr[$name]=$(median ${arr[$name]})
	done
done
count09() { python3 -c "import sys; r=[float(x) for x in sys.argv[1:]]; print(sum(x>=0.9 for x in r),'of',len(r),'runs >= 0.9, min',min(r),'max',max(r))" "$@"; }
log "packet rate emulated / plain-nooff per run:$RUN_RATIOS ($(count09 $RUN_RATIOS))"
[[ -n $RUN_RATIOS_B ]] && log "packet rate emulated-b / plain-nooff per run:$RUN_RATIOS_B ($(count09 $RUN_RATIOS_B))"

# CPU seconds (user + system) of each emulator process over the run.
declare -A CPU_S
TICK=$(getconf CLK_TCK)
for name in "${!EMU_OF[@]}"; do
	CPU_S[$name]=$(awk -v t="$TICK" '{sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / t}' /proc/${EMU_OF[$name]}/stat 2>/dev/null || echo 0)
	log "emulator CPU over the run, $name: ${CPU_S[$name]} s"
done

for pid in "${EMU_PIDS[@]}"; do
	kill -INT "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
done
EMU_PIDS=()

ratio() { python3 -c "print(round($1/$2,3) if $2 else 0)"; }
diff_us() { python3 -c "print(round($1-$2,1))"; }
R_PPS=$(ratio "${PPS[emulated]}" "${PPS[plain-nooff]}")
R_PPS_PLAIN=$(ratio "${PPS[emulated]}" "${PPS[plain]:-0}")
R_TCP=$(ratio "${MBPS[emulated]}" "${MBPS[plain]:-0}")
R_TCP_NOOFF=$(ratio "${MBPS[emulated-nooff]:-0}" "${MBPS[plain]:-0}")
R_TCP_2T=$(ratio "${MBPS[emulated-2t]:-0}" "${MBPS[plain]:-0}")
if [[ -n ${MBPS[emulated-10ms]:-} ]]; then
	# Window-limited rate a plain link of the same RTT allows: window / RTT.
	WLIM=$(python3 -c "print(round(${WND[emulated-10ms]}*8/(${RTT[emulated-10ms]}/1e3)/1e6,1) if ${RTT[emulated-10ms]} else 0)")
	R_10=$(ratio "${MBPS[emulated-10ms]}" "$WLIM")
fi
ADD50=$(diff_us "${P50[emulated]}" "${P50[plain-nooff]}")
ADD99=$(diff_us "${P99[emulated]}" "${P99[plain-nooff]}")
B_JSON=null
if [[ -n ${MBPS[emulated-b]:-} ]]; then
	R_PPS_B=$(ratio "${PPS[emulated-b]}" "${PPS[plain-nooff]}")
	R_TCP_B=$(ratio "${MBPS[emulated-b]}" "${MBPS[plain]:-0}")
	ADD50_B=$(diff_us "${P50[emulated-b]}" "${P50[plain-nooff]}")
	ADD99_B=$(diff_us "${P99[emulated-b]}" "${P99[plain-nooff]}")
	B_JSON=$(printf '{"binary":"%s","udp64_pps":%s,"tcp_mbps":%s,"latency_us":{"p50":%s,"p99":%s,"added_p50":%s,"added_p99":%s},"pps_ratio":%s,"pps_ratio_runs":[%s],"tcp_ratio":%s,"cpu_s":%s}' \
		"$HYMN_B" "${PPS[emulated-b]}" "${MBPS[emulated-b]}" "${P50[emulated-b]}" "${P99[emulated-b]}" "$ADD50_B" "$ADD99_B" "$R_PPS_B" "$(echo $RUN_RATIOS_B | tr ' ' ,)" "$R_TCP_B" "${CPU_S[emulated-b]:-0}")
fi

if ((JSON)); then
	printf '{"host":%s,"seconds":%s,"udp64_pps":{"plain":%s,"plain_nooff":%s,"emulated":%s},"udp64_sent_pps":{"plain":%s,"plain_nooff":%s,"emulated":%s},"tcp_mbps":{"plain":%s,"plain_nooff":%s,"emulated":%s},' \
		"$HOST_JSON" "$T" "${PPS[plain]}" "${PPS[plain-nooff]}" "${PPS[emulated]}" "${OFFERED[plain]}" "${OFFERED[plain-nooff]}" "${OFFERED[emulated]}" "${MBPS[plain]}" "${MBPS[plain-nooff]}" "${MBPS[emulated]}"
	printf '"emulated_cpu_s":%s,"emulated_b":%s,' "${CPU_S[emulated]:-0}" "$B_JSON"
	printf '"reps":%s,"latency_us":{"plain_nooff":{"p50":%s,"p99":%s},"emulated":{"p50":%s,"p99":%s},"added":{"p50":%s,"p99":%s}},"pps_ratio":%s,"pps_ratio_runs":[%s],"tcp_ratio":%s,"tcp_ratio_nooff":%s,"tcp_ratio_2t":%s,"tcp_10ms":{"mbps":%s,"window_bytes":%s,"rtt_ms":%s,"window_limit_mbps":%s,"ratio":%s}}\n' \
		"$REPS" "${P50[plain-nooff]}" "${P99[plain-nooff]}" "${P50[emulated]}" "${P99[emulated]}" "$ADD50" "$ADD99" "$R_PPS" \
		"$(echo $RUN_RATIOS | tr ' ' ,)" "$R_TCP" "$R_TCP_NOOFF" "$R_TCP_2T" "${MBPS[emulated-10ms]:-0}" "${WND[emulated-10ms]:-0}" "${RTT[emulated-10ms]:-0}" "${WLIM:-0}" "${R_10:-0}"
else
	printf '\n%-15s %13s %13s %13s %11s %15s %15s\n' link "UDP64 sent/s" "carried/s" "app read/s" "TCP Mbit/s" "one-way p50 µs" "one-way p99 µs"
	for name in "${MEASURED[@]}"; do
		printf '%-15s %13s %13s %13s %11s %15s %15s\n' "$name" "${OFFERED[$name]}" "${PPS[$name]}" "${APP[$name]}" "${MBPS[$name]}" "${P50[$name]}" "${P99[$name]}"
	done
	echo
	echo "carried packet rate, emulated / plain-nooff: $R_PPS   (emulated / plain: $R_PPS_PLAIN); per run:$RUN_RATIOS"
	echo "added latency (emulated - plain-nooff): p50 ${ADD50} µs, p99 ${ADD99} µs"
	if [[ -n ${MBPS[plain]:-} ]]; then echo "TCP, emulated (offloads carried) / plain: $R_TCP   (emulated-nooff / plain: $R_TCP_NOOFF)"; fi
	if [[ -n ${MBPS[plain]:-} && -n ${MBPS[emulated-2t]:-} ]]; then echo "TCP, emulated-2t (a thread per direction) / plain: $R_TCP_2T"; fi
	if [[ -n ${MBPS[emulated-b]:-} ]]; then
		echo "emulated-b ($HYMN_B): packet rate / plain-nooff $R_PPS_B, per run:$RUN_RATIOS_B; added latency p50 ${ADD50_B} µs, p99 ${ADD99_B} µs; TCP / plain $R_TCP_B"
	fi
	if [[ -n ${MBPS[emulated-10ms]:-} ]]; then
		echo "TCP through delay 10ms: ${MBPS[emulated-10ms]} Mbit/s; window ${WND[emulated-10ms]} B (min of cwnd·mss and the receiver's window), RTT ${RTT[emulated-10ms]} ms: a plain link of that RTT allows ${WLIM} Mbit/s; ratio $R_10"
	fi
	echo "emulator's own statistics (emulated):"
	sed -n '/Final statistics/,$p' "$TMP/emu-emulated.log"
fi
