package dpdk

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrNotBuilt is returned by every entry point of a build without the
// dpdk tag.
var ErrNotBuilt = errors.New("DPDK support is not built in (rebuild with -tags dpdk and libdpdk-dev installed)")

// RunDir is where EAL keeps its runtime files (as root it ignores
// XDG_RUNTIME_DIR).
const RunDir = "/var/run/dpdk"

// prefixBase starts the EAL file prefix of every hymn process; the pid
// follows, so a stale directory can be told from a live one.
const prefixBase = "hymn"

// FilePrefix is the EAL --file-prefix of this process.
func FilePrefix() string { return prefixBase + strconv.Itoa(os.Getpid()) }

// RemoveStale removes the EAL runtime directories of hymn processes that
// are gone, and returns how many it removed. Directories of other DPDK
// programs are not touched.
func RemoveStale() (int, error) { return removeStaleIn(RunDir) }

func removeStaleIn(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefixBase)
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(rest)
		if err != nil || pid <= 0 {
			continue
		}
		if syscall.Kill(pid, 0) == nil || errors.Is(syscall.Kill(pid, 0), syscall.EPERM) {
			continue // alive
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
