// Package proctree reads the process tree from /proc and kills subtrees of
// it. Node shells (in namespaces, and hymn's VM guest agent) use it to stop
// what one command started while sparing the background jobs of earlier
// ones.
package proctree

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Parents maps every pid to its parent pid.
func Parents() map[int]int {
	out := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := StatFields(pid); len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			out[pid] = ppid
		}
	}
	return out
}

// StatFields returns the fields of /proc/<pid>/stat after the command name
// (which may hold spaces): index 0 is the state, 1 the parent pid, 19 the
// start time. It returns nil when the process is gone.
func StatFields(pid int) []string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(data[i+1:]))
}

// Children returns the pids whose parent is pid.
func Children(pid int) map[int]bool {
	kids := map[int]bool{}
	for p, parent := range Parents() {
		if parent == pid {
			kids[p] = true
		}
	}
	return kids
}

// KillTree sends SIGKILL to the children of pid that are not in spare, and
// to all their descendants.
func KillTree(pid int, spare map[int]bool) {
	pp := Parents()
	var victims []int
	var walk func(p int)
	walk = func(p int) {
		victims = append(victims, p)
		for c, parent := range pp {
			if parent == p {
				walk(c)
			}
		}
	}
	for c, parent := range pp {
		if parent == pid && !spare[c] {
			walk(c)
		}
	}
	for _, v := range victims {
		_ = syscall.Kill(v, syscall.SIGKILL) // ESRCH: it exited since the walk, which is the aim
	}
}
