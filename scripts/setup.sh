#!/usr/bin/env bash
# Installs what hymn needs on a Debian machine, builds hymn into ./bin and
# runs the main job: a four-switch line of namespaces, pinged all to all.
# Run it as root from anywhere: ./scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "setup.sh: run as root (hymn creates network namespaces): sudo ./scripts/setup.sh" >&2
  exit 2
fi

# Go 1.26 is expected at /usr/local/go (Debian's golang package is too old).
export PATH="$PATH:/usr/local/go/bin"
if ! command -v go >/dev/null; then
  echo "setup.sh: Go 1.26 or newer is needed; install it to /usr/local/go (https://go.dev/doc/install)" >&2
  exit 2
fi

export DEBIAN_FRONTEND=noninteractive
start=$SECONDS

# install_missing [--no-install-recommends] PACKAGE...: apt-get install
# what is not installed yet (apt-get update once, the first time something
# is missing).
updated=false
install_missing() {
  local missing=() p opts=()
  if [ "${1:-}" = --no-install-recommends ]; then
    opts=(--no-install-recommends)
    shift
  fi
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  if ! $updated; then
    apt-get update -q
    updated=true
  fi
  apt-get install -y -q "${opts[@]}" "${missing[@]}"
}

# Phase 1: what building hymn and its main job need, so a newcomer sees a
# network pinged within minutes. Everything else comes after the main job.
echo "*** Installing the Debian packages hymn itself needs"
install_missing --no-install-recommends \
  ca-certificates `# the Go module proxy over HTTPS (go mod download)` \
  iproute2        `# ip, tc, bridge: nodes, links` \
  iputils-ping    `# ping from nodes` \
  procps util-linux bash `# sysctl, nsenter, node shells` \
  git             `# the revision stamped into the binary (hymn version)`

echo "*** Fetching Go modules and building hymn"
go mod download
mkdir -p bin
# -buildvcs=auto: stamp the git revision into the binary (hymn version shows
# it) even where GOFLAGS says -buildvcs=false, without failing outside git.
# CGO_ENABLED=0: hymn is pure Go (only the DPDK port, build tag dpdk, uses
# cgo), so the binary is the same whether gcc is installed yet or not.
CGO_ENABLED=0 go build -buildvcs=auto -o bin/hymn ./cmd/hymn
# The VM guest agent, static, next to hymn: VM boot images pick it up there.
CGO_ENABLED=0 go build -o bin/hymn-agent ./vm/agent/cmd/hymn-agent

echo "*** Running: bin/hymn --topo linear,4 --test pingall"
bin/hymn --topo linear,4 --test pingall
echo "*** hymn is ready after $((SECONDS - start)) s; installing what the tests, bench scripts and other backends use"

# Phase 2: every Debian package that a hymn feature, a test or a bench
# script uses; one per line with what needs it. A test that finds one of
# these missing fails under HYMN_REQUIRE=all (CI) instead of skipping.
# Test-only assets that take long to build (the envtest kube-apiserver,
# golangci-lint) are built by scripts/test.sh when missing, not here.
packages=(
  ca-certificates           # the Go module proxy over HTTPS (go mod download)
  iproute2                  # ip, tc, bridge: nodes, links, checks in tests
  iputils-ping              # ping from nodes (VM guests, pingallfull, tests)
  iperf3                    # --test iperf, iperf in the shell, TCP tests
  ethtool                   # offload settings on emulated links' ends
  net-tools                 # ifconfig/route inside nodes (Mininet's walkthrough)
  iptables                  # --nat (masquerade)
  nftables                  # nft: a split network's tunnel filter (cluster/filter.go)
  procps                    # ps/sysctl in tests and nodes
  util-linux                # setpriv (non-root test), nsenter, unshare
  bash                      # node shells
  mininet                   # the side-by-side compatibility test and bench/compare.sh
  bridge-utils              # brctl: Mininet's --switch lxbr (Debian's mininet does not pull it in)
  openvswitch-switch        # --switch ovsbr/ovsk/user (userspace datapath)
  openvswitch-testcontroller # ovs-testcontroller: --controller ovsc/default
  qemu-system-x86           # VM nodes (--nodes vm) and the VM boot test
  linux-image-amd64         # the guest kernel of VM nodes
  busybox-static            # the guest's userland in the VM boot image
  xz-utils                  # unpacking kernel modules into the VM initramfs
  libdpdk-dev dpdk-dev pkg-config libnuma-dev # the DPDK port (build tag dpdk)
  graphviz                  # dot: hymn graph --format svg and its test
  librsvg2-bin              # rsvg-convert: the measure test checks that its SVG plots render
  python3                   # Mininet custom topologies (--custom FILE.py)
  python3-pexpect openssh-server # Mininet's upstream examples/test (docs/python.md: sshd, baresshd)
  python3-jsonschema python3-yaml # the schema test (schema/topology.schema.json)
  tcpdump tshark            # packet captures; OpenFlow dissection in the SDN tests
  tmux                      # xterm/x/gterm in the shell
  chromium                  # the live view's browser tests (ui/browser_test.go, driven by chromedp)
  gcc                       # cgo: the race detector and the DPDK port
  git                       # test.sh lists the tracked Go files with git ls-files
  time                      # /usr/bin/time in bench/compare.sh
  debootstrap               # scripts/fresh-check.sh (not run by CI)
  etcd-server               # the kube module's envtest tests (CI) and scripts/k8s-check.sh's cluster
  containerd runc containernetworking-plugins # scripts/k8s-check.sh's single-node Kubernetes (not run by CI)
  openssl                   # scripts/k8s-check.sh's cluster certificates
)
install_missing "${packages[@]}"
echo "*** Setup done in $((SECONDS - start)) s. Run the tests with ./scripts/test.sh"
