// Package netnsx creates, enters and removes named network namespaces
// without leaving OS threads in foreign namespaces.
//
// The vishvananda/netns helpers switch the calling thread into a new
// namespace and leave it there; hymn creates thousands of namespaces from a
// worker pool, so every switch here happens on a locked thread that is
// switched back before it is released, or discarded if switching back fails.
package netnsx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Dir is where named namespaces live, as for `ip netns`.
const Dir = "/run/netns"

// Path returns the bind-mount path of a named namespace.
func Path(name string) string { return filepath.Join(Dir, name) }

// ensureDir prepares Dir the way iproute2 does (a shared mount point), so
// namespaces hymn makes behave like those of `ip netns add`.
func ensureDir() error {
	if err := os.MkdirAll(Dir, 0o755); err != nil {
		return err
	}
	mountTmpfs()
	if err := unix.Mount("", Dir, "none", unix.MS_SHARED|unix.MS_REC, ""); err == nil {
		return nil
	}
	if err := unix.Mount(Dir, Dir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind-mounting %s: %w", Dir, err)
	}
	return unix.Mount("", Dir, "none", unix.MS_SHARED|unix.MS_REC, "")
}

// mountTmpfs puts an empty Dir on a tmpfs when it is on a disk file system
// (a /run that is not a tmpfs, as on some VM images): each namespace is a
// file there, and on ext4 creating thousands of files right after deleting
// thousands (the last run's teardown) makes every new inode scan for
// recently deleted ones; that scan was about 11 % of a 2000-node build's
// CPU samples, and its namespaces took twice as long to make. iproute2 works the same on
// either. A Dir that holds anything is left alone (mounting over it would
// hide those namespaces), and the tmpfs stays after hymn exits, as
// iproute2's own bind mount of Dir does. An unreadable Dir is left alone
// too, and where the mount fails Dir stays as it is.
func mountTmpfs() {
	var st unix.Statfs_t
	if unix.Statfs(Dir, &st) != nil || st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC {
		return
	}
	if entries, err := os.ReadDir(Dir); err != nil || len(entries) > 0 {
		return
	}
	_ = unix.Mount("tmpfs", Dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755")
}

var dirReady = make(chan struct{}, 1)

func init() { dirReady <- struct{}{} }

func prepareOnce() error {
	// A token channel instead of sync.Once, so a failure can be retried.
	_, ok := <-dirReady
	if !ok {
		return nil
	}
	if err := ensureDir(); err != nil {
		dirReady <- struct{}{}
		return err
	}
	close(dirReady)
	return nil
}

// onLockedThread runs fn on a fresh goroutine locked to its thread. If fn
// leaves the thread in a bad state it returns keep=false and the thread is
// thrown away with the goroutine, instead of going back to the scheduler.
func onLockedThread(fn func() (keep bool, err error)) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		keep, err := fn()
		if keep {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

// Create makes a new network namespace bound to Dir/name. It fails if the
// name is taken.
func Create(name string) error {
	if err := prepareOnce(); err != nil {
		return fmt.Errorf("preparing %s: %w", Dir, err)
	}
	path := Path(name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	_ = f.Close() // an empty file opened read-only, a mount point
	err = onLockedThread(func() (bool, error) {
		orig, err := netns.Get()
		if err != nil {
			return true, err
		}
		defer func() { _ = orig.Close() }() // our own descriptor of the thread's namespace
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return true, fmt.Errorf("unshare: %w", err)
		}
		mountErr := unix.Mount(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), path, "none", unix.MS_BIND, "")
		if err := netns.Set(orig); err != nil {
			return false, errors.Join(mountErr, fmt.Errorf("returning to the original namespace: %w", err))
		}
		return true, mountErr
	})
	if err != nil {
		_ = os.Remove(path) // best effort: err is the one to report
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// Delete unmounts and removes a named namespace. The kernel frees it (and
// every interface in it) once the last process inside has gone. A namespace
// that does not exist is not an error.
func Delete(name string) error {
	path := Path(name)
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("unmounting namespace %s: %w", name, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing namespace %s: %w", name, err)
	}
	return nil
}

// Open returns a handle to a named namespace; the caller closes it.
func Open(name string) (netns.NsHandle, error) {
	h, err := netns.GetFromPath(Path(name))
	if err != nil {
		return h, fmt.Errorf("opening namespace %s: %w", name, err)
	}
	return h, nil
}

// Do runs fn with the calling code inside the namespace ns. fn must not
// start goroutines that expect to be in ns: only its own thread is.
func Do(ns netns.NsHandle, fn func() error) error {
	return onLockedThread(func() (bool, error) {
		orig, err := netns.Get()
		if err != nil {
			return true, err
		}
		defer func() { _ = orig.Close() }() // our own descriptor of the thread's namespace
		if err := netns.Set(ns); err != nil {
			return true, fmt.Errorf("entering namespace: %w", err)
		}
		fnErr := fn()
		if err := netns.Set(orig); err != nil {
			return false, errors.Join(fnErr, fmt.Errorf("returning to the original namespace: %w", err))
		}
		return true, fnErr
	})
}

// List returns the names in Dir that start with prefix.
func List(prefix string) ([]string, error) {
	entries, err := os.ReadDir(Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Inode returns the namespace inode behind a named namespace, which is what
// /proc/<pid>/ns/net points to for the processes inside it.
func Inode(name string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(Path(name), &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// IsMounted tells a bound namespace file (on the nsfs filesystem) from a
// stale placeholder left by a crash between creating the file and binding it.
func IsMounted(name string) bool {
	var st, dir unix.Stat_t
	if unix.Stat(Path(name), &st) != nil || unix.Stat(Dir, &dir) != nil {
		return false
	}
	return st.Dev != dir.Dev
}
