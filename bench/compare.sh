#!/usr/bin/env bash
# compare.sh - hymn vs Mininet 2.3, side by side, in one run.
#
# Measures, with the wall clock of this script (bash's $EPOCHREALTIME):
#   1. build + teardown of $TOPO (default linear,100): hymn $HYMN_REPS times,
#      Mininet $MN_REPS times; medians and the ratio Mininet/hymn;
#   2. pingall on $PING_TOPO (default linear,10, 90 pings): whole run and the
#      ping phase (from the "*** Ping: testing ping reachability" line to the
#      "*** Results:" line, each output line being timestamped as it comes),
#      both tools' Results lines, and the ratios;
#   4. OpenFlow: build + pingall + teardown on each of $SDN_TOPOS (default
#      "linear,10 linear,20"), hymn --switch ovsk --controller default
#      ($SDN_REPS times) against Mininet --switch ovs,datapath=user
#      --controller ovsc ($SDN_MN_REPS times, each killed after
#      $SDN_MN_TIMEOUT s: Mininet's ovs-testcontroller takes 16 switches,
#      so linear,20 hangs), with hymn's memory per switch (RSS of its Open
#      vSwitch daemons and controller processes / switches). Needs Open
#      vSwitch; the system's (Mininet's) is started with ovs-ctl if it is
#      not running, and stopped again at the end. SDN_TOPOS= skips it.
#   3. hymn alone: pingpair on $BIG_TOPO (default linear,1000, 2000 nodes):
#      wall time and peak memory (GNU time's "Maximum resident set size").
#
# Usage: sudo bench/compare.sh [--json] [--topo SPEC] [--keep-logs DIR]
#   --json        print a machine-readable summary on stdout (everything else
#                 then goes to stderr)
#   --topo SPEC   topology of the build test (same as TOPO=SPEC)
#   --keep-logs D keep every run's timestamped output in directory D
#   --no-big      skip the hymn-only linear,1000 test (same as BIG_TOPO=)
# Environment: HYMN=/path/to/hymn (default: build ./cmd/hymn into a temp dir),
#   MN=mn, TOPO, PING_TOPO, BIG_TOPO, HYMN_REPS (3), MN_REPS (1),
#   PING_REPS (3: pingall runs per tool), SETTLE_MAX (300: at most so many
#   seconds of waiting for the kernel's netns cleanup after each run),
#   HYMN_SWITCH (unset: no --switch, hymn's own default, which picks the
#   eBPF switch for loop-free topologies; set, e.g. lxbr or bpf: hymn's
#   --switch in tests 1-3; Mininet always runs --switch lxbr),
#   MN_TIMEOUT (300: a Mininet run of tests 1-2 still going after so many
#   seconds is killed and marked hung).
#
# A Mininet run that hangs or fails is marked (in the report, the summary and
# the JSON: "mininet_failed") and the script goes on: it prints its summary
# (and --json its JSON) and exits 0. It exits 1 only when hymn failed.
#
# Every run starts on a quiet kernel: the script waits until no kworker runs
# network-namespace cleanup. How long that cleanup goes on after a tool has
# exited is reported too ("kernel tail"): deleting a namespace returns before
# the kernel has finished tearing it down.
#
# Needs root, Mininet's mn (Debian package "mininet") and GNU time
# (/usr/bin/time, Debian package "time").
set -euo pipefail
export LC_ALL=C # "." as the decimal separator of $EPOCHREALTIME and awk

TOPO=${TOPO:-linear,100}
SDN_TOPOS=${SDN_TOPOS-linear,10 linear,20}
SDN_REPS=${SDN_REPS:-3}
SDN_MN_REPS=${SDN_MN_REPS:-1}
SDN_MN_TIMEOUT=${SDN_MN_TIMEOUT:-120}
OVS_CTL=${OVS_CTL:-/usr/share/openvswitch/scripts/ovs-ctl}
PING_TOPO=${PING_TOPO:-linear,10}
BIG_TOPO=${BIG_TOPO-linear,1000}
HYMN_REPS=${HYMN_REPS:-3}
MN_REPS=${MN_REPS:-1}
PING_REPS=${PING_REPS:-3}
SETTLE_MAX=${SETTLE_MAX:-300}
MN=${MN:-mn}
HYMN=${HYMN:-}
HYMN_SWITCH=${HYMN_SWITCH:-}
MN_TIMEOUT=${MN_TIMEOUT:-300}
JSON=0
LOGDIR=

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() {
	echo "compare.sh: $*" >&2
	exit 1
}

while (($#)); do
	case $1 in
	--json) JSON=1 ;;
	--topo)
		[[ $# -ge 2 ]] || die "--topo needs a topology"
		TOPO=$2
		shift
		;;
	--topo=*) TOPO=${1#--topo=} ;;
	--keep-logs)
		[[ $# -ge 2 ]] || die "--keep-logs needs a directory"
		LOGDIR=$2
		shift
		;;
	--no-big) BIG_TOPO= ;;
	-h | --help)
		usage
		exit 0
		;;
	*) die "unknown argument: $1 (see --help)" ;;
	esac
	shift
done

for n in HYMN_REPS MN_REPS PING_REPS; do
	[[ ${!n} =~ ^[1-9][0-9]*$ ]] || die "$n must be a positive integer, not '${!n}'"
done

# With --json, stdout carries only the JSON; the report goes to stderr.
exec 3>&1
if ((JSON)); then exec 1>&2; fi

# --- checks ---------------------------------------------------------------
((EUID == 0)) || die "must run as root (both hymn and Mininet need it)"
command -v "$MN" >/dev/null || die "Mininet's '$MN' not found: apt-get install mininet"
if [[ -n $BIG_TOPO ]]; then
	if ! { [[ -x /usr/bin/time ]] && /usr/bin/time -v true >/dev/null 2>&1; }; then
		die "GNU time (/usr/bin/time -v) not found: apt-get install time (or run with --no-big)"
	fi
fi
command -v ip >/dev/null || die "'ip' not found: apt-get install iproute2"

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TMP=$(mktemp -d /tmp/hymn-compare.XXXXXX)
if [[ -z $LOGDIR ]]; then LOGDIR=$TMP/logs; fi
mkdir -p "$LOGDIR"

MN_DIRTY=0
OVS_STARTED=0
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if ((MN_DIRTY)); then "$MN" -c >>"$LOGDIR/mn-clean.log" 2>&1 || true; fi
	if [[ -n $HYMN && -x $HYMN ]]; then "$HYMN" clean >>"$LOGDIR/hymn-clean.log" 2>&1 || true; fi
	if ((OVS_STARTED)); then "$OVS_CTL" stop >>"$LOGDIR/ovs-ctl.log" 2>&1 || true; fi
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -z $HYMN ]]; then
	command -v go >/dev/null || die "no HYMN=/path/to/hymn given and no go to build it"
	echo "*** building hymn from $REPO into $TMP"
	(cd "$REPO" && go build -o "$TMP/hymn" ./cmd/hymn) || die "go build ./cmd/hymn failed"
	HYMN=$TMP/hymn
fi
[[ -x $HYMN ]] || die "hymn binary '$HYMN' not found or not executable"

# --- helpers --------------------------------------------------------------
# stamp: prefix every line of stdin with the time it was read.
stamp() {
	local line
	while IFS= read -r line || [[ -n $line ]]; do
		printf '%s %s\n' "$EPOCHREALTIME" "$line"
	done
}

# timed LOG CMD...: run CMD with stdout+stderr timestamped into LOG; the wall
# time in seconds goes to $ELAPSED; returns CMD's status.
ELAPSED=0
timed() {
	local log=$1 t0 t1 rc=0
	shift
	t0=$EPOCHREALTIME
	"$@" 2>&1 | stamp >"$log" || rc=$?
	t1=$EPOCHREALTIME
	ELAPSED=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
	return "$rc"
}

# fail LOG WHAT: report a failed run with the end of its output, and stop.
fail() {
	echo "!!! $2 failed; last lines of its output ($1):" >&2
	tail -n 15 "$1" | cut -d' ' -f2- >&2
	exit 1
}

# ping_phase LOG: seconds from the "*** Ping: testing ping reachability" line
# to the "*** Results:" line, or "-" if either is missing.
ping_phase() {
	awk '/^[0-9.]+ \*\*\* Ping: testing ping reachability/ && !p { p = $1 }
	     /^[0-9.]+ \*\*\* Results:/ && p && !r { r = $1 }
	     END { if (p && r) printf "%.4f", r - p; else printf "-" }' "$1"
}

# results LOG: the "*** Results: ..." line, without timestamp and blanks.
results() {
	sed -n 's/^[0-9.]* \(\*\*\* Results:.*[^ ]\) *$/\1/p' "$1" | head -n 1
}

# completed LOG: the seconds of the tool's own "completed in X seconds" line.
completed() {
	sed -n 's/^[0-9.]* completed in \([0-9.]*\) seconds.*/\1/p' "$1" | head -n 1
}

median() {
	# grep finds nothing when every run failed ("-"): not an error here.
	printf '%s\n' "$@" | { grep -v '^-$' || true; } | sort -g | awk '{ a[NR] = $1 }
		END { if (NR == 0) printf "-"
		      else if (NR % 2) printf "%.4f", a[(NR + 1) / 2]
		      else printf "%.4f", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# secs S: "S s", or "-" for a value no run gave.
secs() { if [[ $1 == - || -z $1 ]]; then printf -- -; else printf '%s s' "$1"; fi; }

# ratio A B: A/B with one decimal, or "-".
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) printf "-"; else printf "%.1f", a / b }'
}

joined() {
	local IFS=' '
	echo "$*"
}

# what is in the root namespace and the named namespaces right now
snapshot() {
	{
		ip netns list 2>/dev/null | awk '{ print "netns " $1 }'
		ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print "link " $2 }'
		find /run/hymn -maxdepth 1 -name '*.json' -printf 'state %f\n' 2>/dev/null || true
	} | sort
}

# settle: wait until the kernel runs no network-namespace cleanup (a kworker
# named ...+netns: a namespace's teardown goes on in the kernel after the
# process that deleted it has exited), seen 3 polls in a row 0.1 s apart, for
# at most $SETTLE_MAX s. $TAIL gets the seconds from the call to the last poll
# that saw the cleanup running (0 if none did).
TAIL=0
settle() {
	local t0 last quiet=0
	t0=$EPOCHREALTIME last=$t0
	while ((quiet < 3)); do
		# shellcheck disable=SC2009 # pgrep sees 15 characters of a kworker's name
		if ps -eo comm= | grep -q -- '+netns'; then
			quiet=0 last=$EPOCHREALTIME
		else
			quiet=$((quiet + 1))
		fi
		if awk -v a="$t0" -v b="$EPOCHREALTIME" -v m="$SETTLE_MAX" 'BEGIN { exit !(b - a > m) }'; then
			echo "!!! the kernel's netns cleanup still runs after ${SETTLE_MAX} s; going on" >&2
			break
		fi
		sleep 0.1
	done
	TAIL=$(awk -v a="$t0" -v b="$last" 'BEGIN { printf "%.4f", b - a }')
}

plus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", a + b }'; }
num_() { if [[ $1 == - || -z $1 ]]; then printf null; else printf '%s' "$1"; fi; }
arr_() {
	local out='' v
	for v in "$@"; do out+=${out:+,}$(num_ "$v"); done
	printf '[%s]' "$out"
}

# run_mn LOG TOPO TEST / run_hymn LOG TOPO [TEST [WRAPPER...]]: settle, run
# timed, measure the kernel's cleanup tail; $ELAPSED and $TAIL as above.
# A Mininet run that fails or hangs (killed after $MN_TIMEOUT s) is the
# peer's failure, not the script's: run_mn prints why, sets $MN_FAILED to
# "hung" or "failed" (empty when it worked), counts it in $MN_FAILURES and
# returns 0, so the caller records "-" and the report goes on.
MN_FAILED='' MN_FAILURES=0
run_mn() {
	local rc=0
	settle
	MN_DIRTY=1 MN_FAILED=''
	timed "$1" timeout -k 5 "$MN_TIMEOUT" "$MN" --switch lxbr --controller none --topo "$2" --test "$3" || rc=$?
	if ((rc != 0)); then
		MN_FAILED=failed
		if ((rc == 124 || rc == 137)); then MN_FAILED=hung; fi
		MN_FAILURES=$((MN_FAILURES + 1))
		echo "!!! Mininet's mn --topo $2 --test $3 $MN_FAILED (exit $rc after $ELAPSED s); last lines of its output ($1):" >&2
		tail -n 5 "$1" | cut -d' ' -f2- >&2
	fi
	settle
	"$MN" -c >>"$LOGDIR/mn-clean.log" 2>&1 || true
	MN_DIRTY=0
}

# HYMN_ARGS: hymn's --switch when HYMN_SWITCH asks for one; none otherwise,
# so hymn picks its own default (and says which in its build lines).
HYMN_ARGS=()
if [[ -n $HYMN_SWITCH ]]; then HYMN_ARGS=(--switch "$HYMN_SWITCH"); fi
run_hymn() {
	local log=$1 topo=$2 test=$3
	shift 3
	settle
	timed "$log" "$@" "$HYMN" "${HYMN_ARGS[@]}" --topo "$topo" --test "$test" || fail "$log" "hymn ${HYMN_ARGS[*]} --topo $topo --test $test"
	settle
}

# hymn_switch LOG: the switch hymn says it chose ("*** Switches: bpf ..."),
# or HYMN_SWITCH, or "-".
hymn_switch() {
	local s
	s=$(sed -n 's/^[0-9.]* \*\*\* Switches: \([a-z]*\).*/\1/p' "$1" | head -n 1)
	printf '%s' "${s:-${HYMN_SWITCH:--}}"
}

# --- the machine ------------------------------------------------------------
BEFORE=$(snapshot)
"$MN" -c >>"$LOGDIR/mn-clean.log" 2>&1 || true # start from a clean machine

CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
NCPU=$(nproc)
KERNEL=$(uname -r)
MEM=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
MN_VERSION=$("$MN" --version 2>&1 | tail -n 1)
HYMN_VERSION=$("$HYMN" version 2>/dev/null | head -n 1 || true)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

echo "*** machine: $NCPU cores ($CPU), $MEM, kernel $KERNEL, load $LOAD0"
echo "*** hymn: $HYMN ($HYMN_VERSION), --switch ${HYMN_SWITCH:-"(hymn's default)"}; Mininet: $(command -v "$MN") $MN_VERSION, --switch lxbr"

# --- 1. build + teardown ------------------------------------------------------
echo "*** 1. build + teardown of $TOPO: hymn x$HYMN_REPS, Mininet x$MN_REPS"
B_HYMN=() B_MN=() BT_HYMN=() BT_MN=() B_MN_FAILED=() B_SWITCH=-
max=$((HYMN_REPS > MN_REPS ? HYMN_REPS : MN_REPS))
for ((i = 1; i <= max; i++)); do # interleaved, so load changes hit both
	if ((i <= HYMN_REPS)); then
		run_hymn "$LOGDIR/build-hymn-$i.log" "$TOPO" build
		B_HYMN+=("$ELAPSED") BT_HYMN+=("$(plus "$ELAPSED" "$TAIL")")
		B_SWITCH=$(hymn_switch "$LOGDIR/build-hymn-$i.log")
		echo "    hymn    #$i: $ELAPSED s (hymn says $(completed "$LOGDIR/build-hymn-$i.log") s, switch $B_SWITCH), kernel tail $TAIL s"
	fi
	if ((i <= MN_REPS)); then
		run_mn "$LOGDIR/build-mn-$i.log" "$TOPO" build
		if [[ -n $MN_FAILED ]]; then
			B_MN+=(-) BT_MN+=(-) B_MN_FAILED+=("$MN_FAILED")
			echo "    Mininet #$i: $MN_FAILED after $ELAPSED s"
		else
			B_MN+=("$ELAPSED") BT_MN+=("$(plus "$ELAPSED" "$TAIL")")
			echo "    Mininet #$i: $ELAPSED s (Mininet says $(completed "$LOGDIR/build-mn-$i.log") s), kernel tail $TAIL s"
		fi
	fi
done
B_HYMN_MED=$(median "${B_HYMN[@]}")
B_MN_MED=$(median "${B_MN[@]}")
B_RATIO=$(ratio "$B_MN_MED" "$B_HYMN_MED")
BT_HYMN_MED=$(median "${BT_HYMN[@]}")
BT_MN_MED=$(median "${BT_MN[@]}")
BT_RATIO=$(ratio "$BT_MN_MED" "$BT_HYMN_MED")

# --- 2. pingall -----------------------------------------------------------------
echo "*** 2. pingall on $PING_TOPO: x$PING_REPS each"
P_HYMN=() P_MN=() PP_HYMN=() PP_MN=() P_MN_FAILED=()
R_HYMN='' R_MN=''
for ((i = 1; i <= PING_REPS; i++)); do
	log=$LOGDIR/pingall-hymn-$i.log
	run_hymn "$log" "$PING_TOPO" pingall
	P_HYMN+=("$ELAPSED")
	PP_HYMN+=("$(ping_phase "$log")")
	r=$(results "$log")
	[[ -z $R_HYMN || $r == "$R_HYMN" ]] || echo "!!! hymn's Results line changed: '$R_HYMN' then '$r'" >&2
	R_HYMN=${R_HYMN:-$r}
	echo "    hymn    #$i: $ELAPSED s, ping phase ${PP_HYMN[-1]} s, switch $(hymn_switch "$log"): $r"

	log=$LOGDIR/pingall-mn-$i.log
	run_mn "$log" "$PING_TOPO" pingall
	if [[ -n $MN_FAILED ]]; then
		P_MN+=(-) PP_MN+=(-) P_MN_FAILED+=("$MN_FAILED")
		echo "    Mininet #$i: $MN_FAILED after $ELAPSED s"
		continue
	fi
	P_MN+=("$ELAPSED")
	PP_MN+=("$(ping_phase "$log")")
	r=$(results "$log")
	[[ -z $R_MN || $r == "$R_MN" ]] || echo "!!! Mininet's Results line changed: '$R_MN' then '$r'" >&2
	R_MN=${R_MN:-$r}
	echo "    Mininet #$i: $ELAPSED s, ping phase ${PP_MN[-1]} s: $r"
done
P_HYMN_MED=$(median "${P_HYMN[@]}")
P_MN_MED=$(median "${P_MN[@]}")
PP_HYMN_MED=$(median "${PP_HYMN[@]}")
PP_MN_MED=$(median "${PP_MN[@]}")
P_RATIO=$(ratio "$P_MN_MED" "$P_HYMN_MED")
PP_RATIO=$(ratio "$PP_MN_MED" "$PP_HYMN_MED")
SAME=no
if [[ -n $R_HYMN && $R_HYMN == "$R_MN" ]]; then SAME=yes; fi
if [[ $SAME == no ]]; then echo "!!! the Results lines differ: hymn '$R_HYMN', Mininet '$R_MN'" >&2; fi

# --- 3. hymn alone, big -----------------------------------------------------------
BIG_WALL=- BIG_TAIL=- BIG_GNU_WALL=- BIG_RSS_KB=- BIG_RESULTS=- BIG_NODES=- BIG_SWITCH=-
if [[ -n $BIG_TOPO ]]; then
	echo "*** 3. hymn alone: pingpair on $BIG_TOPO"
	log=$LOGDIR/pingpair-big-hymn.log
	run_hymn "$log" "$BIG_TOPO" pingpair /usr/bin/time -v -o "$LOGDIR/pingpair-big-hymn.time"
	BIG_WALL=$ELAPSED BIG_TAIL=$TAIL
	BIG_RSS_KB=$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$LOGDIR/pingpair-big-hymn.time")
	BIG_GNU_WALL=$(sed -n 's/^[[:space:]]*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$LOGDIR/pingpair-big-hymn.time" |
		awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.2f", s }')
	BIG_RESULTS=$(results "$log")
	BIG_SWITCH=$(hymn_switch "$log")
	# hosts + switches, from Mininet's "*** Adding hosts:" / "*** Adding switches:" lines
	BIG_NODES=$(cut -d' ' -f2- "$log" | awk '/^\*\*\* Adding (hosts|switches):/ { getline; n += NF } END { print n + 0 }')
	echo "    hymn: $BIG_WALL s, kernel tail $BIG_TAIL s, peak RSS $BIG_RSS_KB kB, $BIG_NODES nodes, switch $BIG_SWITCH: $BIG_RESULTS"
fi

# --- 4. OpenFlow ----------------------------------------------------------------------
SDN_ROWS=() SDN_JSON=()
if [[ -n $SDN_TOPOS ]]; then
	echo "*** 4. OpenFlow: build + pingall + teardown on $SDN_TOPOS: hymn x$SDN_REPS (--switch ovsk --controller default), Mininet x$SDN_MN_REPS (--switch ovs,datapath=user --controller ovsc, killed after $SDN_MN_TIMEOUT s)"
	command -v ovs-vsctl >/dev/null || die "Open vSwitch not found: apt-get install openvswitch-switch openvswitch-testcontroller (or SDN_TOPOS=)"
	if ! ovs-vsctl --timeout=2 show >/dev/null 2>&1; then
		"$OVS_CTL" start >>"$LOGDIR/ovs-ctl.log" 2>&1 || die "could not start Open vSwitch with $OVS_CTL (see $LOGDIR/ovs-ctl.log)"
		OVS_STARTED=1
	fi
	# sdn_rss: run once more with a --post script reading the RSS of
	# hymn's Open vSwitch daemons and controllers (its children).
	echo 'sh ps -o rss=,comm= --ppid $PPID | awk '"'"'/ovs-/ { s += $1 } END { print "SDN_RSS_KB", s }'"'" >"$TMP/sdn-rss.cli"
	for st in $SDN_TOPOS; do
		T_HYMN=() T_MN=() r_h='' r_m='' hung=0 mnfail=0
		for ((i = 1; i <= SDN_REPS; i++)); do
			log=$LOGDIR/sdn-hymn-$st-$i.log
			settle
			timed "$log" "$HYMN" --switch ovsk --controller default --topo "$st" --test pingall || fail "$log" "hymn --switch ovsk --topo $st --test pingall"
			settle
			T_HYMN+=("$ELAPSED")
			r_h=$(results "$log")
			echo "    hymn    $st #$i: $ELAPSED s: $r_h"
			if ((i <= SDN_MN_REPS)); then
				log=$LOGDIR/sdn-mn-$st-$i.log
				settle
				MN_DIRTY=1
				rc=0
				timed "$log" timeout -k 5 "$SDN_MN_TIMEOUT" "$MN" --switch ovs,datapath=user --controller ovsc --topo "$st" --test pingall || rc=$?
				"$MN" -c >>"$LOGDIR/mn-clean.log" 2>&1 || true
				MN_DIRTY=0
				if ((rc == 124 || rc == 137)); then
					hung=$((hung + 1))
					T_MN+=(-)
					echo "    Mininet $st #$i: hung, killed after $ELAPSED s"
				elif ((rc != 0)); then
					mnfail=$((mnfail + 1))
					T_MN+=(-)
					echo "    Mininet $st #$i: failed (exit $rc) after $ELAPSED s"
				else
					T_MN+=("$ELAPSED")
					r_m=$(results "$log")
					echo "    Mininet $st #$i: $ELAPSED s: $r_m"
				fi
			fi
		done
		log=$LOGDIR/sdn-hymn-$st-rss.log
		settle
		timed "$log" "$HYMN" --switch ovsk --controller default --topo "$st" --test pingall --post "$TMP/sdn-rss.cli" || true
		rss=$(sed -n 's/^[0-9.]* SDN_RSS_KB \([0-9]*\).*/\1/p' "$log" | head -n 1)
		nsw=$(cut -d' ' -f2- "$log" | awk '/^\*\*\* Adding switches:/ { getline; print NF; exit }')
		per=$(awk -v r="${rss:--}" -v n="${nsw:-0}" 'BEGIN { if (r == "-" || n == 0) printf "-"; else printf "%.0f", r / n }')
		mh=$(median "${T_HYMN[@]}")
		mm=$(median "${T_MN[@]}")
		rt=$(ratio "$mm" "$mh")
		mn_txt=$(secs "$mm")
		if ((hung > 0)); then mn_txt="$mn_txt, $hung hung (killed at $SDN_MN_TIMEOUT s)"; fi
		if ((mnfail > 0)); then mn_txt="$mn_txt, $mnfail failed"; fi
		MN_FAILURES=$((MN_FAILURES + hung + mnfail))
		echo "    hymn $st: median $mh s, memory ${per} kB per switch (Open vSwitch + controller RSS $rss kB / $nsw switches); Mininet: $mn_txt"
		SDN_ROWS+=("$st|$mh|$mn_txt|$rt|$per|$r_h|$r_m")
		SDN_JSON+=("$(printf '{"topo": "%s", "hymn_s": %s, "mininet_s": %s, "hymn_median_s": %s, "mininet_median_s": %s, "ratio": %s, "mininet_hung": %s, "mininet_failed": %s, "hymn_kb_per_switch": %s, "results_hymn": "%s", "results_mininet": "%s"}' \
			"$st" "$(arr_ "${T_HYMN[@]}")" "$(arr_ "${T_MN[@]}")" "$(num_ "$mh")" "$(num_ "$mm")" "$(num_ "$rt")" "$hung" "$mnfail" "$(num_ "$per")" "$r_h" "$r_m")")
	done
fi

# --- leftovers ------------------------------------------------------------------------
# Every run of ours has ended: what is new since the start is left behind,
# unless it belongs to a hymn run whose owner is still alive (another user's
# run on this machine). Looked at before "hymn clean", which would hide it.
live_run() { # RUN: is /run/hymn/RUN.json's owner alive?
	local pid
	pid=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "/run/hymn/$1.json" 2>/dev/null) || return 1
	[[ -n $pid && -d /proc/$pid ]]
}
still_there() { # ITEM (as snapshot prints it)
	case $1 in
	"state "*) [[ -e /run/hymn/${1#state } ]] ;;
	"netns "*) [[ -e /run/netns/${1#netns } ]] ;;
	"link "*) ip link show dev "${1#link }" >/dev/null 2>&1 ;;
	esac
}
AFTER=$(snapshot)
LEFT='' OTHERS=''
while IFS= read -r item; do
	[[ -n $item ]] || continue
	run=''
	case $item in
	"state "*) run=${item#state } run=${run%.json} ;;
	"netns hymn-"*) run=${item#netns hymn-} run=${run%%-*} ;;
	esac
	still_there "$item" || continue # a short-lived object of someone else
	if [[ -n $run ]] && live_run "$run"; then
		OTHERS+="$item"$'\n'
	else
		LEFT+="$item"$'\n'
	fi
done < <(comm -13 <(echo "$BEFORE") <(echo "$AFTER"))
LEFT=${LEFT%$'\n'}
if [[ -n $OTHERS ]]; then
	echo "*** ignored, as they belong to live hymn runs of another process: ${OTHERS//$'\n'/ }"
fi
if [[ -n $LEFT ]]; then
	echo "!!! left behind (new since the start, not of a live run):" >&2
	mapfile -t left <<<"$LEFT"
	printf '    %s\n' "${left[@]}" >&2
else
	echo "*** nothing left behind: no new namespace, root-namespace link or hymn state file"
fi
"$HYMN" clean >>"$LOGDIR/hymn-clean.log" 2>&1 || true

# --- summary ------------------------------------------------------------------------
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
mb() { awk -v k="$1" 'BEGIN { if (k == "-" || k == "") printf "-"; else printf "%.1f MiB", k / 1024 }'; }
row() { printf '%-46s %-24s %-24s %s\n' "$@"; }
echo
# marked TEXT FAILURES...: TEXT, and how many Mininet runs hung or failed.
marked() {
	local t=$1
	shift
	if (($#)); then t+=" ($# of the runs: $(joined "$@"))"; fi
	printf '%s' "$t"
}
echo "Summary ($NCPU cores, kernel $KERNEL, load $LOAD0 -> $LOAD1; hymn --switch ${HYMN_SWITCH:-"(default: $B_SWITCH)"}, Mininet --switch lxbr)"
if ((MN_FAILURES)); then echo "!!! $MN_FAILURES Mininet run(s) hung or failed: their medians are of the runs that finished, '-' if none did"; fi
row "measure" "hymn" "Mininet" "Mininet/hymn"
row "build+teardown $TOPO (median of $HYMN_REPS/$MN_REPS)" "$B_HYMN_MED s" "$(marked "$(secs "$B_MN_MED")" "${B_MN_FAILED[@]}")" "${B_RATIO}x"
row "  all runs" "$(joined "${B_HYMN[@]}")" "$(joined "${B_MN[@]}")" ""
row "  + kernel netns cleanup tail (median)" "$BT_HYMN_MED s" "$(secs "$BT_MN_MED")" "${BT_RATIO}x"
row "pingall $PING_TOPO, whole run (median of $PING_REPS)" "$P_HYMN_MED s" "$(marked "$(secs "$P_MN_MED")" "${P_MN_FAILED[@]}")" "${P_RATIO}x"
row "pingall $PING_TOPO, ping phase (median of $PING_REPS)" "$PP_HYMN_MED s" "$(secs "$PP_MN_MED")" "${PP_RATIO}x"
row "  all runs, whole" "$(joined "${P_HYMN[@]}")" "$(joined "${P_MN[@]}")" ""
row "  all runs, ping phase" "$(joined "${PP_HYMN[@]}")" "$(joined "${PP_MN[@]}")" ""
echo "pingall Results: hymn '$R_HYMN', Mininet '$R_MN' (same: $SAME)"
if [[ -n $BIG_TOPO ]]; then
	row "pingpair $BIG_TOPO ($BIG_NODES nodes, $BIG_SWITCH), wall" "$BIG_WALL s" "-" ""
	row "  + kernel netns cleanup tail" "$(plus "$BIG_WALL" "$BIG_TAIL") s" "-" ""
	row "pingpair $BIG_TOPO, peak RSS" "$(mb "$BIG_RSS_KB")" "-" ""
	echo "pingpair Results: hymn '$BIG_RESULTS'"
fi

for r in "${SDN_ROWS[@]}"; do
	IFS='|' read -r st mh mt rt per rh rm <<<"$r"
	row "OpenFlow $st build+pingall+teardown (median)" "$mh s" "$mt" "${rt}x"
	row "  hymn memory per switch (OVS + controller RSS)" "$per kB" "-" ""
	echo "  Results: hymn '$rh', Mininet '${rm:-none (hung)}'"
done

if ((JSON)); then
	num() { if [[ $1 == - || -z $1 ]]; then printf null; else printf '%s' "$1"; fi; }
	arr() {
		local out='' v
		for v in "$@"; do out+=${out:+,}$(num "$v"); done
		printf '[%s]' "$out"
	}
	str() { printf '"%s"' "$(sed 's/\\/\\\\/g; s/"/\\"/g' <<<"$1")"; }
	strs() { # a JSON array of strings
		local out='' v
		for v in "$@"; do out+=${out:+,}$(str "$v"); done
		printf '[%s]' "$out"
	}
	leftjson=()
	while IFS= read -r l; do
		if [[ -n $l ]]; then leftjson+=("$(str "$l")"); fi
	done <<<"$LEFT"
	{
		printf '{\n'
		printf '  "machine": {"cores": %s, "cpu": %s, "kernel": %s, "memory": %s, "load_before": %s, "load_after": %s},\n' \
			"$NCPU" "$(str "$CPU")" "$(str "$KERNEL")" "$(str "$MEM")" "$(str "$LOAD0")" "$(str "$LOAD1")"
		printf '  "versions": {"hymn": %s, "mininet": %s},\n' "$(str "$HYMN_VERSION")" "$(str "$MN_VERSION")"
		printf '  "hymn_switch": %s, "hymn_switch_chosen": %s, "mininet_failures": %s,\n' "$(if [[ -n $HYMN_SWITCH ]]; then str "$HYMN_SWITCH"; else printf null; fi)" "$(str "$B_SWITCH")" "$MN_FAILURES"
		printf '  "build": {"topo": %s, "hymn_s": %s, "mininet_s": %s, "hymn_median_s": %s, "mininet_median_s": %s, "ratio": %s,\n' \
			"$(str "$TOPO")" "$(arr "${B_HYMN[@]}")" "$(arr "${B_MN[@]}")" "$(num "$B_HYMN_MED")" "$(num "$B_MN_MED")" "$(num "$B_RATIO")"
		printf '    "with_kernel_tail_hymn_s": %s, "with_kernel_tail_mininet_s": %s, "with_kernel_tail_ratio": %s,\n' \
			"$(arr "${BT_HYMN[@]}")" "$(arr "${BT_MN[@]}")" "$(num "$BT_RATIO")"
		printf '    "mininet_failed": %s},\n' "$(strs "${B_MN_FAILED[@]}")"
		printf '  "pingall": {"topo": %s, "hymn_s": %s, "mininet_s": %s, "hymn_median_s": %s, "mininet_median_s": %s, "ratio": %s,\n' \
			"$(str "$PING_TOPO")" "$(arr "${P_HYMN[@]}")" "$(arr "${P_MN[@]}")" "$(num "$P_HYMN_MED")" "$(num "$P_MN_MED")" "$(num "$P_RATIO")"
		printf '    "ping_phase_hymn_s": %s, "ping_phase_mininet_s": %s, "ping_phase_hymn_median_s": %s, "ping_phase_mininet_median_s": %s, "ping_phase_ratio": %s,\n' \
			"$(arr "${PP_HYMN[@]}")" "$(arr "${PP_MN[@]}")" "$(num "$PP_HYMN_MED")" "$(num "$PP_MN_MED")" "$(num "$PP_RATIO")"
		printf '    "results_hymn": %s, "results_mininet": %s, "results_same": %s, "mininet_failed": %s},\n' \
			"$(str "$R_HYMN")" "$(str "$R_MN")" "$([[ $SAME == yes ]] && echo true || echo false)" "$(strs "${P_MN_FAILED[@]}")"
		if [[ -n $BIG_TOPO ]]; then
			printf '  "big": {"topo": %s, "nodes": %s, "hymn_wall_s": %s, "kernel_tail_s": %s, "gnu_time_wall_s": %s, "hymn_max_rss_kb": %s, "results": %s, "switch": %s},\n' \
				"$(str "$BIG_TOPO")" "$(num "$BIG_NODES")" "$(num "$BIG_WALL")" "$(num "$BIG_TAIL")" "$(num "$BIG_GNU_WALL")" "$(num "$BIG_RSS_KB")" "$(str "$BIG_RESULTS")" "$(str "$BIG_SWITCH")"
		else
			printf '  "big": null,\n'
		fi
		printf '  "openflow": [%s],\n' "$(
			IFS=,
			echo "${SDN_JSON[*]}"
		)"
		printf '  "left_behind": [%s]\n' "$(
			IFS=,
			echo "${leftjson[*]}"
		)"
		printf '}\n'
	} >&3
fi
