#!/usr/bin/env bash
# Runs Mininet's own example tests (examples/test/ of a mininet/mininet
# checkout) against hymn python and prints one row per file: verdict,
# seconds, and the first failure. Nothing is fetched: the checkout is
# given, and its examples/ are the ones the tests start
# (python -m mininet.examples.X), first on mininet.examples' path
# (HYMN_PY_EXAMPLES), ahead of Debian's older copies.
#
# Usage (as root): tests/compat/upstream.sh MININET_CHECKOUT [test_X ...]
#   MININET_CHECKOUT  a clone of https://github.com/mininet/mininet
#   test_X            run only these files (default: every test_*.py)
# Environment:
#   HYMN   a built hymn binary (default: built from this tree)
#   LIMIT  seconds each file may take (default 900)
#   LOGS   directory for each file's output (default: a new one, kept)
#   QUICK  1: pass -quick, which the files read to skip their long tests
# Exit status: 0 when every file passed, 1 when one failed, 2 on bad use.
#
# What the files need besides hymn: python3-pexpect, openssh-server and
# openssh-client (sshd, baresshd), telnet, iperf (scripts/setup.sh
# installs them). sshd needs /run/sshd, which systemd makes at boot and a
# machine without it lacks: this script makes it.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

usage() { echo "usage: $0 MININET_CHECKOUT [test_X ...]" >&2; exit 2; }
[ $# -ge 1 ] || usage
src=$(cd "$1" 2>/dev/null && pwd) || { echo "upstream.sh: $1: no such directory" >&2; exit 2; }
shift
tests="$src/examples/test"
[ -d "$tests" ] || { echo "upstream.sh: $src has no examples/test (give a mininet/mininet checkout)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "upstream.sh: run as root (Mininet's tests do)" >&2; exit 2; }
missing=
python3 -c 'import pexpect' 2>/dev/null || missing="$missing python3-pexpect"
for tool in ssh sshd:/usr/sbin/sshd telnet iperf; do
  name=${tool%%:*} path=${tool#*:}
  [ "$name" = "$tool" ] && path=$name
  command -v "$path" >/dev/null || missing="$missing $name"
done
[ -z "$missing" ] || { echo "upstream.sh: missing:$missing (scripts/setup.sh installs them)" >&2; exit 2; }
export PATH="$PATH:/usr/local/go/bin"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
hymn=${HYMN:-}
if [ -z "$hymn" ]; then
  hymn="$work/hymn"
  (cd "$top" && CGO_ENABLED=0 go build -o "$hymn" ./cmd/hymn) || { echo "upstream.sh: building hymn failed" >&2; exit 2; }
fi
[ -x "$hymn" ] || { echo "upstream.sh: HYMN=$hymn is not executable" >&2; exit 2; }
logs=${LOGS:-$(mktemp -d /var/tmp/hymn-upstream.XXXXXX)}
mkdir -p "$logs"

# The tests start "python -m mininet.examples.X" and "python" itself:
# both are hymn python here.
mkdir "$work/bin"
printf '#!/bin/sh\nexec "%s" python "$@"\n' "$hymn" >"$work/bin/python"
chmod +x "$work/bin/python"
export PATH="$work/bin:$PATH"
export HYMN_PY_EXAMPLES="$src/examples"
mkdir -p /run/sshd

if [ $# -gt 0 ]; then
  files=()
  for t in "$@"; do files+=("$tests/${t%.py}.py"); done
else
  files=("$tests"/test_*.py)
fi
quick=()
[ "${QUICK:-}" = 1 ] && quick=(-quick)

printf '%-22s %-7s %6s  %s\n' file verdict seconds 'first failure'
passed=0 total=0
for f in "${files[@]}"; do
  n=$(basename "$f" .py)
  total=$((total + 1))
  if [ ! -f "$f" ]; then
    printf '%-22s %-7s %6s  %s\n' "$n" fails 0 "no such file"
    continue
  fi
  start=$(date +%s)
  (cd "$tests" && timeout -k 10 "${LIMIT:-900}" "$hymn" python "$f" -v "${quick[@]}") >"$logs/$n.log" 2>&1 </dev/null
  rc=$?
  secs=$(( $(date +%s) - start ))
  summary=$(grep -E '^(OK|FAILED)' "$logs/$n.log" | tail -1)
  if [ $rc -eq 0 ] && [[ $summary == OK* ]]; then
    verdict=passes why=${summary#OK}
    passed=$((passed + 1))
  else
    verdict=fails
    why=$(grep -m1 -E '^(FAIL|ERROR):|^[A-Za-z.]*(Error|Exception|TIMEOUT|EOF)[:(]' "$logs/$n.log")
    [ $rc -eq 124 ] && why="no end within ${LIMIT:-900} s"
    [ -n "$why" ] || why="exit status $rc"
  fi
  printf '%-22s %-7s %6s  %s\n' "$n" "$verdict" "$secs" "${why# }"
  # What a file that crashed left (dead runs only; live ones are others').
  "$hymn" clean >/dev/null 2>&1
done
echo "$passed of $total pass; each file's output is in $logs"
[ "$passed" -eq "$total" ]
