package pyapi

import (
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/proctree"
)

// Lingerer is a process that outlived the script's shells in a node.
type Lingerer struct {
	Node    string `json:"node"`
	PID     int    `json:"pid"`
	Command string `json:"command"`
}

// lingerGrace bounds the wait for the hung-up shells of a script that
// ended (and the jobs the hangup ends) to leave the nodes.
const lingerGrace = 3 * time.Second

// lingerers returns, once the connection of a low-level API network has
// ended, the processes still running in its hosts' namespaces that are
// neither hymn's nor the script's (its popen()s are its descendants while
// it runs): a daemon started from a shell, such as sshd, which forks away
// from it. Mininet's namespaces live on with such processes after its
// script ends, and so does this network then, until hymn clean removes it
// (its pyserve is gone, so the run is a dead one's). The shells hang up
// when the script ends (their terminals close); processes that still have
// a controlling terminal get lingerGrace to go.
func (s *Server) lingerers() []Lingerer {
	s.mu.Lock()
	n, stopped := s.net, s.stopped
	s.mu.Unlock()
	if n == nil || stopped {
		return nil
	}
	inodes := map[uint64]string{}
	for _, p := range n.Plan().Nodes {
		if p.IsSwitch() {
			continue
		}
		ns := owner.NamespaceName(n.RunID(), p.Name)
		if node, err := n.Node(p.Name); err != nil || node.Namespace() != ns {
			continue // not in a namespace of its own (a VM, the root one)
		}
		if ino, err := netnsx.Inode(ns); err == nil {
			inodes[ino] = p.Name
		}
	}
	set := make(map[uint64]bool, len(inodes))
	for ino := range inodes {
		set[ino] = true
	}
	deadline := time.Now().Add(lingerGrace)
	for {
		parents := proctree.Parents()
		script := os.Getppid()
		var out []Lingerer
		attached := false
		for _, pid := range owner.ProcessesIn(set) {
			if descendant(parents, pid, os.Getpid()) || script > 1 && descendant(parents, pid, script) {
				continue
			}
			if st := proctree.StatFields(pid); len(st) > 4 && st[4] != "0" {
				attached = true // tty_nr: still on a terminal
			}
			out = append(out, Lingerer{Node: inodes[owner.NetnsInode(pid)], PID: pid, Command: command(pid)})
		}
		if !attached || time.Now().After(deadline) {
			sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
			return out
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// descendant reports whether pid is ancestor or one of its descendants.
func descendant(parents map[int]int, pid, ancestor int) bool {
	for seen := 0; pid > 1 && seen < 4096; seen++ {
		if pid == ancestor {
			return true
		}
		pid = parents[pid]
	}
	return false
}

// command is the process's name as ps shows it (comm), for the notice.
func command(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}
