package owner

import (
	"github.com/hymn-net/hymn/internal/proctree"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ProcessesIn returns the pids of every process whose network namespace is
// one of the given namespace inodes.
func ProcessesIn(inodes map[uint64]bool) []int {
	if len(inodes) == 0 {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name()+"/ns/net", &st) != nil {
			continue
		}
		if inodes[st.Ino] {
			pids = append(pids, pid)
		}
	}
	return pids
}

// KillAll sends SIGKILL to the pids and waits (bounded) until they are gone,
// so the namespaces they held can be freed.
func KillAll(pids []int) {
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGKILL)
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, p := range pids {
		for time.Now().Before(deadline) {
			if syscall.Kill(p, 0) != nil {
				break
			}
			// Our own children stay as zombies until reaped; reap if we can.
			var ws syscall.WaitStatus
			if wp, _ := syscall.Wait4(p, &ws, syscall.WNOHANG, nil); wp == p {
				break
			}
			if isZombie(p) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func isZombie(pid int) bool {
	f := proctree.StatFields(pid)
	return len(f) == 0 || f[0] == "Z"
}
