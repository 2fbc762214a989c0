// Package vm runs hymn nodes as QEMU virtual machines.
//
// A VM node (Node, created by New) is a QEMU guest plus a helper network
// namespace on the host. QEMU runs inside that namespace, so the taps it
// creates for hot-plugged NICs live there next to the host ends of the
// node's links; a small bridge per interface joins each link end to its tap.
// The rest of hymn therefore still sees "a node with interfaces in a
// namespace" (nodes.GuestNode). QEMU uses KVM when /dev/kvm is usable and
// TCG otherwise (with a one-line warning: a TCG boot takes 6-7 s), and is
// driven over QMP through github.com/digitalocean/go-qemu: NIC hot-plug
// (netdev_add + device_add virtio-net-pci), link state (set_link), vCPU
// pinning (query-cpus-fast), quit.
//
// VMs boot a few at a time (two per host core by default,
// SetBootConcurrency), and a boot's timeout does not count the time the
// host kept QEMU waiting for a CPU (its threads' run-queue wait in
// /proc/PID/task/*/schedstat): five TCG guests booting at once on two busy
// cores used to miss a fixed one-minute limit together. A failed boot
// names the guest and the phase (helper namespace, starting QEMU, boot)
// and leaves no QEMU, tap, namespace or run directory behind.
//
// Inside the guest runs hymn-agent (package vm/agent), a static Go program
// reached over a virtio-serial port. It gives VM nodes the same command
// semantics as namespace nodes (a persistent shell for Cmd, direct exec
// with exit status for Exec, cancellation through the context), renames
// hot-plugged interfaces by MAC to their topology names (h1-eth0) and sets
// their addresses, and copies files in and out.
//
// QEMU runs as an unprivileged user id of its own per VM (unless
// Config.ShareHostRoot): hymn opens everything QEMU needs as root and hands
// it over as inherited descriptors (the listening QMP and agent sockets in
// a 0700 run directory, the console log, the boot files, the disk image
// read-only), and makes the taps QEMU attaches to, owned by that user. The
// host directory shared over virtio-9p (read-only) is therefore seen with
// an ordinary user's rights: the guest runs the host's programs but cannot
// read what only root may read. Pdeathsig, set by Go after the user
// switch, still ends QEMU with hymn (QEMU's own -runas would clear it).
//
// BuildImage makes the default boot image from the host's Debian kernel,
// its virtio modules, busybox-static and the agent, cached by a hash of its
// inputs in a directory only root may write (/var/cache/hymn/vm or
// $HYMN_CACHE/vm, mode 0700); each image has a manifest of SHA-256 sums
// that is checked before the image is booted. Users may boot their own
// kernel, initrd and disk image instead, provided the agent runs in it.
package vm
