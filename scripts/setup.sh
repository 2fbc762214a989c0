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

echo "*** Installing Debian packages"
export DEBIAN_FRONTEND=noninteractive
# mininet: the compatibility check runs the real Mininet beside hymn;
# qemu-system-x86, linux-image-amd64, busybox-static, xz-utils: VM nodes;
# libdpdk-dev, dpdk-dev, pkg-config, libnuma-dev: the DPDK port (build tag dpdk);
# openvswitch-switch: --switch ovsbr.
packages=(iproute2 iputils-ping iperf3 ethtool net-tools iptables procps util-linux bash mininet
  qemu-system-x86 linux-image-amd64 busybox-static xz-utils
  libdpdk-dev dpdk-dev pkg-config libnuma-dev openvswitch-switch)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -q
  apt-get install -y -q "${missing[@]}"
fi

echo "*** Fetching Go modules and building hymn"
go mod download
mkdir -p bin
go build -o bin/hymn ./cmd/hymn
# The VM guest agent, static, next to hymn: VM boot images pick it up there.
CGO_ENABLED=0 go build -o bin/hymn-agent ./vm/agent/cmd/hymn-agent

echo "*** Running: bin/hymn --topo linear,4 --test pingall"
bin/hymn --topo linear,4 --test pingall
