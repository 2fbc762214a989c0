#!/usr/bin/env bash
# envtest-assets.sh: makes the directory the kube module's envtest tests use
# as KUBEBUILDER_ASSETS and prints its path (the only line on stdout):
#
#   export KUBEBUILDER_ASSETS=$(scripts/envtest-assets.sh)
#
# It holds symlinks to etcd (Debian's etcd-server package), and to
# kube-apiserver and kubectl v1.37.2, built from the Go module proxy into
# $K8S/bin by scripts/k8s-check.sh's build step (the same code, so the
# single-node cluster and envtest share one cache) when they are missing.
# Cold, that build takes about 5 minutes and 2.8 GB of memory at its peak
# on a 2-core machine (kube-apiserver 5m11s; kubectl adds about a minute);
# cached, this script takes under a second.
#
#   scripts/envtest-assets.sh           build if needed, make the directory
#   scripts/envtest-assets.sh --check   only check: exit 1 if something is missing
#
# The tests find the same binaries without KUBEBUILDER_ASSETS (they look in
# $K8S/bin and for etcd on PATH), so CI needs only this script's build.
set -euo pipefail
cd "$(dirname "$0")/.."
K8S=${K8S:-/var/lib/hymn-k8s}
B=$K8S/bin
ASSETS=$K8S/envtest
export PATH="$PATH:/usr/local/go/bin"

check=false
case "${1:-}" in
  "") ;;
  --check) check=true ;;
  *) echo "envtest-assets: unknown argument ${1} (use --check or nothing)" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "envtest-assets: at most one argument" >&2; exit 2; }

etcd=$(command -v etcd || true)
if [ -z "$etcd" ]; then
  echo "envtest-assets: etcd is missing: apt-get install etcd-server (scripts/setup.sh installs it)" >&2
  exit 1
fi
if $check; then
  for b in kube-apiserver kubectl; do
    [ -x "$B/$b" ] || { echo "envtest-assets: $B/$b is missing: run scripts/envtest-assets.sh" >&2; exit 1; }
  done
else
  # Progress to stderr: stdout is the directory only.
  K8S=$K8S scripts/k8s-check.sh build kube-apiserver kubectl >&2
fi
mkdir -p "$ASSETS"
ln -sfn "$etcd" "$ASSETS/etcd"
ln -sfn "$B/kube-apiserver" "$ASSETS/kube-apiserver"
ln -sfn "$B/kubectl" "$ASSETS/kubectl"
echo "$ASSETS"
