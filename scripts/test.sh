#!/usr/bin/env bash
# Runs every test: gofmt, go vet, the timing rule, golangci-lint, unit and
# integration tests with the race detector, the DPDK port's tests and the
# topologies whose emulated VF links use it, the generator's own speed and
# the kube module's envtest tests. Integration tests need root.
#
# Every step runs even when an earlier one failed; the end prints each
# step's verdict and time, and the exit status is 1 if any failed.
#
# Where the time goes, and why the steps are ordered so: only tests that
# judge a time, a rate or a ratio need the machine to themselves (the list
# is internal/testenv/timingtests, from the source). Everything else runs
# first, two packages at a time, while golangci-lint and (once per
# machine) the kube-apiserver build run beside it; then, with the machine
# quiet, the timing tests run one package at a time, then the DPDK and
# generator steps, which judge time too.
#
# On a developer's machine a test whose prerequisite is missing (root, a
# tool) skips and says why. Under CI (CI=true, or HYMN_REQUIRE=all) such a
# test fails instead: scripts/setup.sh installs everything, so a skip there
# would only hide a test that did not run. The only skips allowed then are
# for hardware this kind of machine cannot have (README: "What is not
# tested here"). Each go test step ends by counting its skips by reason.
#
#   HYMN_LINT=0 ./scripts/test.sh     leave golangci-lint out (a quick run)
#   HYMN_TEST_LOGS=DIR                where the background steps' logs go
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
if [ "${CI:-}" = "true" ] && [ -z "${HYMN_REQUIRE:-}" ]; then
  export HYMN_REQUIRE=all
fi
require=()
if [ "${HYMN_REQUIRE:-}" = "all" ]; then
  require=(-require)
  echo "*** HYMN_REQUIRE=all: a test that would skip for a missing prerequisite fails"
fi
logs=${HYMN_TEST_LOGS:-$(mktemp -d /var/tmp/hymn-test.XXXXXX)}
mkdir -p "$logs"
start=$SECONDS
names=() verdicts=() times=()

# step NAME COMMAND...: runs a step in the foreground and records it.
step() {
  local name=$1 t0=$SECONDS rc
  shift
  echo "*** $name"
  "$@"
  rc=$?
  record "$name" "$rc" "$((SECONDS - t0))"
}
record() {
  names+=("$1")
  if [ "$2" -eq 0 ]; then verdicts+=(ok); else verdicts+=("FAIL (exit $2)"); fi
  times+=("$3")
}

# bg NAME COMMAND...: starts a step in the background, its output in a log;
# wait_bg NAME prints the log and records it.
declare -A bg_pid bg_t0
bg() {
  local name=$1
  shift
  bg_t0[$name]=$SECONDS
  "$@" >"$logs/$name.txt" 2>&1 &
  bg_pid[$name]=$!
  echo "*** $name: started in the background (log: $logs/$name.txt)"
}
wait_bg() {
  local name=$1 rc
  wait "${bg_pid[$name]}"
  rc=$?
  echo "*** $name (background, finished $((SECONDS - bg_t0[$name])) s after it started):"
  cat "$logs/$name.txt"
  record "$name" "$rc" "$((SECONDS - bg_t0[$name]))"
}
# Nothing left running behind an interrupted run.
trap 'for p in "${bg_pid[@]}"; do kill "$p" 2>/dev/null; done' EXIT

gofmt_check() {
  local unformatted
  unformatted=$(gofmt -l $(git ls-files '*.go'))
  [ -z "$unformatted" ] || { echo "gofmt would change: $unformatted" >&2; return 1; }
}
report() { go run ./internal/testreport "${require[@]}"; }
gotest() { go test -json "$@" | report; }

# Built once here, before anything runs beside it.
go build -o /dev/null ./internal/testreport ./internal/testenv/timingtests || exit 1
timing_re=$(go run ./internal/testenv/timingtests -regexp)
timing_pkgs=$(go run ./internal/testenv/timingtests -packages)
# Packages whose tests judge the whole machine's state (no hymn namespace
# or process left anywhere, hymn clean of every run, signals to hymn):
# beside another package's networks they see those, so they run alone too.
module=$(go list -m)
alone_pkgs=(./tests/reliability ./cmd/hymn)
shared_pkgs=$(go list ./... | grep -v -x -e "$module/tests/reliability" -e "$module/cmd/hymn")

# The kube module's envtest binaries (kube-apiserver, kubectl: built from
# source once per machine, about 7 minutes on 2 cores, cached in
# /var/lib/hymn-k8s) and golangci-lint (scripts/lint.sh: the module, -tags
# dpdk and kube/ in one go; its first run on a machine builds the linter,
# about 4 minutes, cached in /var/lib/hymn-tools) build beside the tests
# that judge no time.
if ! scripts/envtest-assets.sh --check >/dev/null 2>&1; then
  echo "*** Building kube-apiserver and kubectl for the kube module's envtest tests (once per machine, cached in /var/lib/hymn-k8s)"
fi
bg envtest-assets scripts/envtest-assets.sh
if [ "${HYMN_LINT:-1}" != "0" ]; then
  bg golangci-lint scripts/lint.sh
fi

step gofmt gofmt_check
step "go vet" sh -c 'go vet ./... && go vet -tags dpdk ./...'
step "timing rule (internal/testenv/timingtests -check)" go run ./internal/testenv/timingtests -check

# Every test that judges no time, with the race detector, two packages at
# a time (their integration tests use namespaces named by run id, so they
# do not meet), but for the packages that must be alone.
step "go test -race -p 2 (tests that judge no time)" \
  gotest -race -p 2 -count=1 -timeout 45m -skip "$timing_re" $shared_pkgs

# The kube module (kube/, its own go.mod, so the Kubernetes libraries stay
# out of hymn's build): the Topology controller and hymn-kube against a
# real kube-apiserver and etcd (envtest: each test starts its own apiserver
# in about 3 s). Its tests judge no time. -race stays: it found a real race
# in the tests' logging.
wait_bg envtest-assets
kube_tests() {
  local assets
  assets=$(scripts/envtest-assets.sh) || { echo "kube: no envtest binaries (see the envtest-assets step)" >&2; return 1; }
  (cd kube && go vet ./... && KUBEBUILDER_ASSETS=$assets go test -json -race -count=1 -timeout 15m ./...) | report
}
step "kube: go vet and go test -race ./... (envtest)" kube_tests
if [ -n "${bg_pid[golangci-lint]:-}" ]; then
  wait_bg golangci-lint
fi

# From here the machine is quiet: the packages that judge the machine's
# state, then the tests that judge time, one package at a time so that no
# two measure each other.
step "go test -race -p 1 ${alone_pkgs[*]} (the machine's state, alone)" \
  gotest -race -p 1 -count=1 -timeout 45m -skip "$timing_re" "${alone_pkgs[@]}"
step "go test -race -p 1 (tests that judge time, alone)" \
  gotest -race -p 1 -count=1 -timeout 45m -run "$timing_re" $timing_pkgs
# The DPDK port (cgo over Debian's libdpdk) against DPDK's virtual devices.
step "go test -tags dpdk ./emulator/dpdk/" gotest -tags dpdk -p 1 -count=1 ./emulator/dpdk/
# Emulated VF links on DPDK ports in whole topologies (dpdklink*.go), side
# by side with AF_PACKET ports; the rest of the package ran above.
step "go test -tags dpdk -run DPDK ." gotest -tags dpdk -p 1 -count=1 -run DPDK .
# The measure generator's speed against a veth link's zero-loss rate, as a
# user runs it: without the race detector, which makes its send loop several
# times slower (measure_gen_test.go is built with !race).
step "go test -run TestGeneratorOutrunsVeth . (without -race)" \
  gotest -p 1 -count=1 -run '^TestGeneratorOutrunsVeth$' .

echo
echo "*** test.sh: each step, its verdict and time (total $((SECONDS - start)) s)"
failed=0
for i in "${!names[@]}"; do
  printf '%-60s %-14s %5d s\n' "${names[i]}" "${verdicts[i]}" "${times[i]}"
  [ "${verdicts[i]}" = ok ] || failed=1
done
if [ "$failed" -ne 0 ]; then
  echo "*** test.sh: FAILED (the steps marked FAIL above; background logs in $logs)"
  exit 1
fi
echo "*** test.sh: every step passed"
