package cluster

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// procSysNet holds the per-namespace sysctls a part writes (a router's
// ip_forward, IPv6 off on switch and emulator ports).
const procSysNet = "/proc/sys/net"

// PrepareContainer makes /proc/sys/net writable when it is mounted
// read-only, as container runtimes mount /proc/sys in an unprivileged
// container (a worker pod): a bind mount of /proc/sys/net onto itself,
// made read-write, in the worker's own mount namespace (the container's,
// so the node's mounts are untouched). Every file under it belongs to the
// network namespace of whoever opens it, so the rest of /proc/sys (kernel,
// vm: the whole node's settings) stays read-only. It needs SYS_ADMIN
// (WorkerCapabilities) and a mount the AppArmor profile allows; where
// /proc/sys/net is writable already (a machine, a privileged pod) it does
// nothing.
func PrepareContainer() error {
	var st unix.Statfs_t
	if err := unix.Statfs(procSysNet, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // no /proc mounted: nothing a part could write anyway
		}
		return fmt.Errorf("checking %s: %w", procSysNet, err)
	}
	if st.Flags&unix.ST_RDONLY == 0 {
		return nil
	}
	if err := unix.Mount(procSysNet, procSysNet, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("%s is read-only (an unprivileged container) and bind-mounting it failed (the worker needs SYS_ADMIN, and no AppArmor profile denying mounts): %w", procSysNet, err)
	}
	if err := unix.Mount("", procSysNet, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		_ = unix.Unmount(procSysNet, unix.MNT_DETACH) // back as it was; the remount's error is the one to report
		return fmt.Errorf("%s is read-only (an unprivileged container) and making it writable failed: %w", procSysNet, err)
	}
	return nil
}
