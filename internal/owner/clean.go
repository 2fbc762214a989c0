package owner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"

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

// CleanGrace is how long the processes of a stale run get between SIGTERM
// and SIGKILL when Clean stops them.
const CleanGrace = 500 * time.Millisecond

// Clean removes every stale run (owner gone) with RemoveRun. With all set,
// live runs are removed too. A run is only ever found through hymn's own
// names, so nothing else on the machine is touched. (hymn.Clean does this
// and also undoes what VMs, SR-IOV and DPDK leave outside the namespaces.)
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
		n, p, err := RemoveObjects(run, CleanGrace)
		if err == nil {
			err = Release(run)
		}
		rep.Namespaces += n
		rep.Processes += p
		rep.Runs = append(rep.Runs, run)
		if err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", run, err))
		}
	}
	SweepTemps()
	return rep, errors.Join(errs...)
}

// SweepTemps removes the temporary files of records whose writer died
// before linking them into place.
func SweepTemps() {
	removeStaleTemps(stateDir)
	removeStaleTemps(natDir())
}

// RemoveRun removes everything of one run, then its record, and returns
// how many namespaces and processes it removed. The processes get SIGKILL
// at once (a network stopping itself has already asked them nicely).
func RemoveRun(run string) (namespaces, processes int, err error) {
	namespaces, processes, err = RemoveObjects(run, 0)
	if err != nil {
		return namespaces, processes, err
	}
	return namespaces, processes, Release(run)
}

// RemoveObjects removes what a run made in the kernel and under /run/hymn
// except its record (which goes last, so that a run whose removal failed
// is found again): the processes in its namespaces, waiting until they
// have exited (SIGTERM, then SIGKILL after grace), its namespaces, cgroups,
// Open vSwitch directories, root-namespace links and NAT slots.
func RemoveObjects(run string, grace time.Duration) (namespaces, processes int, err error) {
	if !ValidRunID(run) {
		return 0, 0, fmt.Errorf("removing run %q: not a run id", run)
	}
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
	var errs []error
	processes, err = StopIn(inodes, grace, KillTimeout)
	errs = append(errs, err)
	// Processes of the run that were killed before we looked (QEMU dies
	// with hymn) may have left the namespaces already while they still
	// exit. Looked for after the namespace scan: a process missing from
	// that scan had left its namespace, which it does only while exiting,
	// so it is still exiting (or done) now.
	// Start times are compared in clock ticks since boot, immune to
	// changes of the wall clock.
	if st, err := ReadState(run); err == nil && st.StartTime > 0 {
		if exiting := ExitingSince(st.StartTime); len(exiting) > 0 {
			errs = append(errs, WaitExit(exiting, KillTimeout))
		}
	}
	for _, n := range names {
		errs = append(errs, netnsx.Delete(n))
	}
	errs = append(errs, removeCgroups(Prefix+run+"-"))
	removeDirs(filepath.Join(StateDir, "ovs"), Prefix+run+"-")
	errs = append(errs, removeRootLinks(run))
	for _, slot := range NATSlotsOf(run) {
		errs = append(errs, FreeNAT(run, slot))
	}
	return len(names), processes, errors.Join(errs...)
}

// removeCgroups deletes the cgroup directories of CPU-limited nodes (named
// like their namespaces) on cgroup v2 and on v1's cpu and cpuset trees. A
// cgroup is only removable once its last process has exited, which can
// lag the exit itself briefly.
func removeCgroups(prefix string) error {
	var errs []error
	for _, base := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuset"} {
		entries, _ := os.ReadDir(base)
		for _, e := range entries {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
				continue
			}
			dir := filepath.Join(base, e.Name())
			var err error
			for try := 0; try < 50; try++ {
				if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
					err = nil
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeRootLinks deletes root-namespace interfaces of the run: those whose
// alias names the run, those of its NAT slots, and (runs of earlier
// versions) those whose name starts with "hymn<run>". Normally they went
// with the namespace holding their peer.
func removeRootLinks(run string) error {
	list, err := netlink.LinkList()
	if err != nil {
		return err
	}
	slots := map[string]bool{}
	for _, s := range NATSlotsOf(run) {
		slots[NATLinkName(s)] = true
	}
	var errs []error
	for _, l := range list {
		a := l.Attrs()
		if a.Alias == LinkAlias(run) || slots[a.Name] || strings.HasPrefix(a.Name, "hymn"+run) {
			if err := netlink.LinkDel(l); err != nil {
				if _, gone := netlink.LinkByIndex(a.Index); gone == nil {
					errs = append(errs, fmt.Errorf("deleting %s: %w", a.Name, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// removeDirs deletes the directories under base named with prefix (the
// Open vSwitch switches' databases and sockets).
func removeDirs(base, prefix string) {
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			_ = os.RemoveAll(filepath.Join(base, e.Name())) // best effort, like the listing: what stays, the next clean finds
		}
	}
}
