package nodes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CPULimit is Mininet's CPULimitedHost: a share of the machine's CPU time
// (cpu=0.1 is 10 % of all cores together) under the CFS bandwidth
// controller, optionally pinned to cores.
type CPULimit struct {
	Fraction float64 // 0 means no bandwidth limit
	Cores    string  // cpuset list ("0", "0-1"); empty means no pinning
}

// cgroupRoot is where cgroups are mounted; a variable for tests.
var cgroupRoot = "/sys/fs/cgroup"

// cfsPeriodUs is the CFS period hymn uses (Mininet's default 100 ms).
const cfsPeriodUs = 100000

// cgroup is a node's control group, on cgroup v2 or on v1's cpu and
// cpuset hierarchies.
type cgroup struct {
	dirs []string // created directories; processes join each
}

func cgroupV2() bool {
	_, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers"))
	return err == nil
}

// CgroupName is the name of a node's cgroup directory: the namespace name,
// so hymn clean finds it by the same prefix.
func newCgroup(name string, lim CPULimit, ncpu int) (*cgroup, error) {
	cg := &cgroup{}
	write := func(dir, file, value string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
			return fmt.Errorf("cgroup %s: writing %s=%s: %w", dir, file, value, err)
		}
		return nil
	}
	mk := func(dir string) error {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		cg.dirs = append(cg.dirs, dir)
		return nil
	}
	quota := strconv.Itoa(int(lim.Fraction * cfsPeriodUs * float64(ncpu)))
	fail := func(err error) (*cgroup, error) { _ = cg.remove(); return nil, err } // best effort: err is the one to report
	if cgroupV2() {
		dir := filepath.Join(cgroupRoot, name)
		// The controllers must be enabled for children of the root.
		// Ignored: where they cannot be enabled (or already are), setting
		// the node's limits below fails, naming the file that refused.
		_ = os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte("+cpu +cpuset"), 0o644)
		if err := mk(dir); err != nil {
			return fail(err)
		}
		if lim.Fraction > 0 {
			if err := write(dir, "cpu.max", quota+" "+strconv.Itoa(cfsPeriodUs)); err != nil {
				return fail(err)
			}
		}
		if lim.Cores != "" {
			if err := write(dir, "cpuset.cpus", lim.Cores); err != nil {
				return fail(err)
			}
		}
		return cg, nil
	}
	if lim.Fraction > 0 {
		dir := filepath.Join(cgroupRoot, "cpu", name)
		if err := mk(dir); err != nil {
			return fail(err)
		}
		if err := errors.Join(write(dir, "cpu.cfs_period_us", strconv.Itoa(cfsPeriodUs)), write(dir, "cpu.cfs_quota_us", quota)); err != nil {
			return fail(err)
		}
	}
	if lim.Cores != "" {
		dir := filepath.Join(cgroupRoot, "cpuset", name)
		if err := mk(dir); err != nil {
			return fail(err)
		}
		mems, _ := os.ReadFile(filepath.Join(cgroupRoot, "cpuset", "cpuset.mems"))
		if err := errors.Join(write(dir, "cpuset.mems", strings.TrimSpace(string(mems))), write(dir, "cpuset.cpus", lim.Cores)); err != nil {
			return fail(err)
		}
	}
	return cg, nil
}

// join moves a process (and so its future children) into the cgroup.
func (cg *cgroup) join(pid int) error {
	if cg == nil {
		return nil
	}
	for _, d := range cg.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("moving pid %d into cgroup %s: %w", pid, d, err)
		}
	}
	return nil
}

// remove deletes the cgroup directories (they must hold no process).
func (cg *cgroup) remove() error {
	if cg == nil {
		return nil
	}
	var errs []error
	for i := len(cg.dirs) - 1; i >= 0; i-- {
		if err := os.Remove(cg.dirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	cg.dirs = nil
	return errors.Join(errs...)
}
