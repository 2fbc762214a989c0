#!/usr/bin/env bash
# Proves the README's two commands on a machine that never saw this
# repository: builds a clean Debian root with debootstrap, copies the Go
# toolchain and a clean clone of the repository's HEAD into it, and runs
#
#   ./scripts/setup.sh && CI=true ./scripts/test.sh
#
# inside it (chroot, with /proc, /sys, /sys/fs/cgroup, /dev and a fresh /run
# mounted as a fresh machine has them), then tears everything down.
#
# Not part of CI (it takes 30-60 minutes); run it before claiming that
# the two commands work for someone else. Needs root, debootstrap and the
# Debian mirror. Only committed work is tested: the clone is of HEAD.
#
#   sudo ./scripts/fresh-check.sh            # keeps a log in /var/tmp
#   FRESH_KEEP=1 sudo ./scripts/fresh-check.sh   # leaves the root for a look
#   FRESH_SETUP_ONLY=1 sudo ./scripts/fresh-check.sh  # only setup.sh: how long
#                                            # a newcomer waits for the main job
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

if [ "$(id -u)" -ne 0 ]; then
  echo "fresh-check.sh: run as root (debootstrap, chroot, mounts)" >&2
  exit 2
fi
for tool in debootstrap git; do
  if ! command -v "$tool" >/dev/null; then
    echo "fresh-check.sh: $tool is not installed (apt-get install $tool)" >&2
    exit 2
  fi
done
goroot=${GOROOT_FOR_FRESH:-/usr/local/go}
if [ ! -x "$goroot/bin/go" ]; then
  echo "fresh-check.sh: no Go toolchain at $goroot (set GOROOT_FOR_FRESH)" >&2
  exit 2
fi

suite=${FRESH_SUITE:-bookworm}
mirror=${FRESH_MIRROR:-http://deb.debian.org/debian}
root=$(mktemp -d /var/tmp/hymn-fresh.XXXXXX)
log=${FRESH_LOG:-/var/tmp/hymn-fresh-$(date +%Y%m%d-%H%M%S).txt}
start=$(date +%s)
mounts=()

teardown() {
  local code=$?
  set +e
  # Anything still running inside goes first, or the unmounts fail: the
  # namespace's first process (its death ends every other one there), then
  # anything with its root in the fresh root.
  if [ -n "${outer:-}" ]; then
    for c in $(cat /proc/"$outer"/task/*/children 2>/dev/null); do kill -9 "$c" 2>/dev/null; done
    kill -9 "$outer" 2>/dev/null
  fi
  for p in /proc/[0-9]*; do
    if [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ]; then
      kill -9 "${p#/proc/}" 2>/dev/null
    fi
  done
  sleep 0.5
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount -l "${mounts[i]}" 2>/dev/null
  done
  if [ -z "${FRESH_KEEP:-}" ]; then
    rm -rf --one-file-system "$root"
  else
    echo "*** FRESH_KEEP: the root stays at $root (mounts removed)"
  fi
  echo "*** fresh-check: exit $code after $(($(date +%s) - start)) s; log: $log"
  exit "$code"
}
trap teardown EXIT
trap 'exit 130' INT TERM

mountin() { # type source target [options]
  mkdir -p "$root$3"
  mount -t "$1" ${4:+-o "$4"} "$2" "$root$3"
  mounts+=("$root$3")
}

exec > >(tee "$log") 2>&1

# debootstrap's result is the same fresh root every time: it is kept as a
# tarball (FRESH_CACHE) so a second check starts in seconds.
cache=${FRESH_CACHE:-/var/cache/hymn-fresh}/$suite-minbase.tar
t0=$(date +%s)
if [ -f "$cache" ]; then
  echo "*** Unpacking the debootstrapped $suite root from $cache"
  tar -C "$root" -xpf "$cache"
else
  echo "*** debootstrap $suite into $root"
  debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
    { tail -20 "$root.debootstrap.log"; exit 1; }
  rm -f "$root.debootstrap.log"
  mkdir -p "$(dirname "$cache")"
  tar -C "$root" -cpf "$cache.tmp" . && mv "$cache.tmp" "$cache"
fi
echo "    $(($(date +%s) - t0)) s"
# / is 0755 on a machine (mktemp made this 0700, and tar restores that):
# VM nodes' QEMU runs as an unprivileged user and must reach /usr/bin.
chmod 0755 "$root"

# What a fresh machine of this kind has besides Debian: Go in /usr/local/go,
# name resolution, the machine's own CA certificates (its egress to the Go
# module proxy is through a TLS-inspecting gateway; setup.sh's
# ca-certificates picks them up), the security and updates suites (a Debian
# install's default sources), and apt allowed to use an archive snapshot's
# dates.
cp -a "$goroot" "$root/usr/local/go"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root/usr/local/share/ca-certificates"
cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
cat >"$root/etc/apt/sources.list" <<SOURCES
deb $mirror $suite main
deb $mirror $suite-updates main
deb http://deb.debian.org/debian-security $suite-security main
SOURCES
[ -f /etc/apt/apt.conf.d/99artifact-registry ] && cp /etc/apt/apt.conf.d/99artifact-registry "$root/etc/apt/apt.conf.d/"
# Packages must not start their daemons in a chroot (no init there).
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"

echo "*** Cloning $(git -C "$repo" rev-parse --short HEAD) into the fresh root"
git clone -q --no-hardlinks "$repo" "$root/root/hymn"

# The fresh root is a mount point of its own, as / is on a real machine:
# tests that make private mount namespaces (unshare --propagation) need it.
mount --bind "$root" "$root"
mount --make-private "$root"
mounts+=("$root")
mountin proc proc /proc
mountin sysfs sysfs /sys
# The machine's own cgroup hierarchy (v1 controllers under a tmpfs here, v2
# elsewhere), as its init mounted it: a fresh sysfs does not carry it.
mkdir -p "$root/sys/fs/cgroup"
mount --rbind /sys/fs/cgroup "$root/sys/fs/cgroup"
mount --make-rslave "$root/sys/fs/cgroup"
mounts+=("$root/sys/fs/cgroup")
# The machine's /dev as it is, with its pty instance: a devpts instance of
# the chroot's own would not match /dev/ptmx, and pty users (Mininet's
# node shells) would wait forever for their terminals.
mkdir -p "$root/dev"
mount --rbind /dev "$root/dev"
mount --make-rslave "$root/dev"
mounts+=("$root/dev")
mountin tmpfs tmpfs /run mode=0755

echo "*** In the fresh root: ./scripts/setup.sh && CI=true ./scripts/test.sh"
# The fresh root becomes / of a mount and pid namespace of its own
# (pivot_root, not chroot: a tool that enters a namespace of one of its
# processes, as Mininet's mnexec does, would leave a chroot for the real /).
# In the background and waited for, so Ctrl-C or SIGTERM reach the trap at
# once; killing the namespace's first process ends everything inside.
inner='cd /root/hymn && time ./scripts/setup.sh && time env CI=true ./scripts/test.sh'
if [ -n "${FRESH_SETUP_ONLY:-}" ]; then
  inner='cd /root/hymn && time ./scripts/setup.sh'
fi
unshare --mount --pid --fork --propagation private -- /bin/bash -c '
  set -e
  cd "$1"
  mkdir -p .oldroot
  pivot_root . .oldroot
  cd /
  mount -t proc proc /proc # this pid namespace'"'"'s own
  umount -l /.oldroot
  rmdir /.oldroot
  exec /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c "$2"
' fresh "$root" "$inner" &
outer=$!
wait "$outer"
echo "*** fresh-check: the README's two commands passed on a fresh $suite root"
