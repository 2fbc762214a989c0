package owner

import (
	"errors"
	"fmt"
	"github.com/vishvananda/netlink"
	"os"
	"path/filepath"
	"strings"

	"github.com/hymn-net/hymn/internal/netnsx"
)

// Report says what Clean removed.
type Report struct {
	Runs       []string
	Namespaces int
	Processes  int
	Skipped    []string // live runs left alone
}

// Empty reports whether there was nothing to clean.
func (r Report) Empty() bool { return len(r.Runs) == 0 }

// Clean removes every stale run (owner gone): first the processes inside
// its namespaces, then the namespaces, then the state file. With all set,
// live runs are removed too. A run is only ever found through hymn's own
// names, so nothing else on the machine is touched.
func Clean(all bool) (Report, error) {
	var rep Report
	runs, err := Runs()
	if err != nil {
		return rep, err
	}
	var errs []error
	for _, run := range runs {
		if !all && Alive(run) {
			rep.Skipped = append(rep.Skipped, run)
			continue
		}
		n, p, err := RemoveRun(run)
		rep.Namespaces += n
		rep.Processes += p
		rep.Runs = append(rep.Runs, run)
		if err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", run, err))
		}
	}
	return rep, errors.Join(errs...)
}

// RemoveRun removes everything of one run and returns how many namespaces
// and processes it removed.
func RemoveRun(run string) (namespaces, processes int, err error) {
	names, err := Namespaces(run)
	if err != nil {
		return 0, 0, err
	}
	inodes := map[uint64]bool{}
	for _, n := range names {
		if ino, err := netnsx.Inode(n); err == nil && netnsx.IsMounted(n) {
			inodes[ino] = true
		}
	}
	pids := ProcessesIn(inodes)
	KillAll(pids)
	var errs []error
	for _, n := range names {
		if err := netnsx.Delete(n); err != nil {
			errs = append(errs, err)
		}
	}
	removeCgroups(Prefix + run + "-")
	removeDirs("/run/hymn/ovs", Prefix+run+"-")
	removeRootLinks("hymn" + run)
	if err := Release(run); err != nil {
		errs = append(errs, err)
	}
	return len(names), len(pids), errors.Join(errs...)
}

// removeCgroups deletes the cgroup directories of CPU-limited nodes (named
// like their namespaces) on cgroup v2 and on v1's cpu and cpuset trees.
func removeCgroups(prefix string) {
	for _, base := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuset"} {
		entries, _ := os.ReadDir(base)
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
				os.Remove(filepath.Join(base, e.Name()))
			}
		}
	}
}

// removeRootLinks deletes root-namespace interfaces named with the run's
// prefix (the NAT node's outer end), in case their namespace is gone but
// they are not.
func removeRootLinks(prefix string) {
	list, err := netlink.LinkList()
	if err != nil {
		return
	}
	for _, l := range list {
		if strings.HasPrefix(l.Attrs().Name, prefix) {
			netlink.LinkDel(l)
		}
	}
}

// removeDirs deletes the directories under base named with prefix (the
// Open vSwitch switches' databases and sockets).
func removeDirs(base, prefix string) {
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			os.RemoveAll(filepath.Join(base, e.Name()))
		}
	}
}
