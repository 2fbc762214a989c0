package netnsx

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// FilesPerNamespace is how many descriptors a namespace of its own holds
// while its network runs: its namespace handle (its netlink socket is in
// the cache that FilesReserve counts).
const FilesPerNamespace = 1

// FilesReserve is what the rest of hymn may hold at once: the netlink
// cache (NetlinkCache), and the live view's connections, captures,
// emulator sockets, the Go runtime's.
const FilesReserve = NetlinkCache + 512

// EnsureFiles raises the process's open-file limit to need descriptors:
// the soft limit up to the hard one, and the hard one too where the
// process may (CAP_SYS_RESOURCE), up to fs.nr_open. Go raises the soft
// limit to the hard one at start, but the hard limit is often 20 000 or
// less, and a 10 000-node network holds more. It returns the limit in
// force; the error, when the limit stays below need, says both.
func EnsureFiles(need uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("reading the open-file limit: %w", err)
	}
	if lim.Cur >= need {
		return lim.Cur, nil
	}
	want := syscall.Rlimit{Cur: min(need, max(lim.Max, NrOpen())), Max: max(lim.Max, min(need, NrOpen()))}
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) != nil {
		want = syscall.Rlimit{Cur: min(need, lim.Max), Max: lim.Max} // without CAP_SYS_RESOURCE: the soft limit alone
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			return lim.Cur, fmt.Errorf("raising the open-file limit to %d: %w", need, err)
		}
	}
	if want.Cur < need {
		return want.Cur, fmt.Errorf("about %d open files are needed, and the limit is %d (hard limit %d, fs.nr_open %d; raising the hard limit needs CAP_SYS_RESOURCE: ulimit -Hn)",
			need, want.Cur, want.Max, NrOpen())
	}
	return want.Cur, nil
}

// NrOpen returns fs.nr_open, the most descriptors the kernel lets a
// process have (1048576 by default), or that default when unreadable.
func NrOpen() uint64 {
	b, err := os.ReadFile("/proc/sys/fs/nr_open")
	if err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			return n
		}
	}
	return 1 << 20
}
