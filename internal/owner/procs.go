package owner

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hymn-net/hymn/internal/proctree"

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
		if inodes[NetnsInode(pid)] {
			pids = append(pids, pid)
		}
	}
	return pids
}

// NetnsInode is the inode of pid's network namespace (0 when the process
// is gone): equal inodes mean the same namespace.
func NetnsInode(pid int) uint64 {
	var st unix.Stat_t
	if unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/net", &st) != nil {
		return 0
	}
	return st.Ino
}

// KillTimeout bounds how long stopping processes waits for them to exit.
// A QEMU process can take seconds to free a large guest's memory after
// SIGKILL.
const KillTimeout = 15 * time.Second

// KillAll sends SIGKILL to the pids and waits until they have exited (or
// KillTimeout passes), so the namespaces they held can be freed.
func KillAll(pids []int) {
	// Best effort: a process still running after KillTimeout keeps its
	// namespace, which the next clean finds; callers that must know use Stop.
	_, _ = Stop(pids, nil, 0, KillTimeout)
}

// StopIn stops every process in the namespaces with the given inodes:
// SIGTERM, then after grace SIGKILL to the ones still running, and it
// returns only when each has exited, or with an error naming those still
// there after timeout. Processes forked meanwhile are found by scanning
// again. It returns how many processes it stopped.
func StopIn(inodes map[uint64]bool, grace, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	total := 0
	for round := 0; ; round++ {
		pids := ProcessesIn(inodes)
		if len(pids) == 0 {
			return total, nil
		}
		n, err := Stop(pids, inodes, grace, time.Until(deadline))
		total += n
		if err != nil {
			return total, err
		}
		if round >= 5 || time.Now().After(deadline) {
			if left := ProcessesIn(inodes); len(left) > 0 {
				return total, fmt.Errorf("processes %v keep appearing in the run's namespaces", left)
			}
			return total, nil
		}
	}
}

// Stop ends the processes: each is opened as a pidfd first (so a pid that
// is reused meanwhile is never signalled), and, if inodes is not nil,
// checked again to be in one of those namespaces. With grace > 0 they get
// SIGTERM and grace to exit, then SIGKILL. Stop returns when every one has
// exited, or after timeout with an error naming the pids still running.
// A process has exited once its pidfd polls readable: by then it holds no
// memory, files or namespaces. Stop then waits up to reapWait for the
// parent (init, for an orphan) to reap it.
func Stop(pids []int, inodes map[uint64]bool, grace, timeout time.Duration) (int, error) {
	return stop(pids, inodes, grace, timeout, true)
}

// WaitExit waits, without signalling them, until the processes have exited
// or timeout passes; it returns the pids still running then.
func WaitExit(pids []int, timeout time.Duration) error {
	_, err := stop(pids, nil, 0, timeout, false)
	return err
}

func stop(pids []int, inodes map[uint64]bool, grace, timeout time.Duration, kill bool) (int, error) {
	deadline := time.Now().Add(timeout)
	type proc struct {
		pid, fd int
	}
	var procs []proc
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone already
		}
		if inodes != nil && !inodes[NetnsInode(pid)] {
			_ = unix.Close(fd)
			continue // not the process that was found (or it left the namespace)
		}
		procs = append(procs, proc{pid, fd})
	}
	defer func() {
		for _, p := range procs {
			_ = unix.Close(p.fd) // pidfds, here and above: nothing to report at close
		}
	}()
	signal := func(sig unix.Signal) {
		if !kill {
			return
		}
		for _, p := range procs {
			_ = unix.PidfdSendSignal(p.fd, sig, nil, 0) // ESRCH: it exited meanwhile; wait tells the rest
		}
	}
	// wait polls the pidfds until all are readable (the process exited)
	// or until the time is up; it returns the ones still running.
	wait := func(until time.Time) []proc {
		left := procs
		for len(left) > 0 {
			fds := make([]unix.PollFd, len(left))
			for i, p := range left {
				fds[i] = unix.PollFd{Fd: int32(p.fd), Events: unix.POLLIN}
			}
			ms := time.Until(until).Milliseconds()
			if ms <= 0 {
				return left
			}
			if _, err := unix.Poll(fds, int(min(ms, 100))); err != nil && !errors.Is(err, unix.EINTR) {
				return left
			}
			var still []proc
			for i, p := range left {
				if fds[i].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0 {
					// Reap our own children; others' are their parent's.
					var info unix.Siginfo
					_ = unix.Waitid(unix.P_PIDFD, p.fd, &info, unix.WEXITED|unix.WNOHANG, nil) // ECHILD: not ours
					continue
				}
				still = append(still, p)
			}
			left = still
		}
		return nil
	}
	// reaped waits, briefly, until the exited processes have also been
	// reaped by their parent (init reaps orphans within milliseconds), so
	// that when Stop returns they are gone from the process table too. A
	// zombie whose parent does not reap it is left as it is.
	reaped := func() {
		until := minTime(time.Now().Add(reapWait), deadline)
		for _, p := range procs {
			for unix.PidfdSendSignal(p.fd, 0, nil, 0) == nil && time.Now().Before(until) {
				time.Sleep(2 * time.Millisecond)
			}
		}
	}
	if grace > 0 && kill {
		signal(unix.SIGTERM)
		if len(wait(minTime(time.Now().Add(grace), deadline))) == 0 {
			reaped()
			return len(procs), nil
		}
	}
	signal(unix.SIGKILL)
	if left := wait(deadline); len(left) > 0 {
		var still []int
		for _, p := range left {
			still = append(still, p.pid)
		}
		if !kill {
			return len(procs), fmt.Errorf("processes %v still exiting after %v", still, timeout)
		}
		return len(procs), fmt.Errorf("processes %v still running %v after SIGKILL", still, timeout)
	}
	reaped()
	return len(procs), nil
}

// reapWait bounds how long Stop waits for exited processes to be reaped.
const reapWait = 2 * time.Second

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// pfExiting is the kernel's PF_EXITING task flag (/proc/<pid>/stat field 9).
const pfExiting = 0x4

// ExitingSince returns the processes that are exiting (killed, not yet
// exited) and started at or after startTime (clock ticks since boot, as
// /proc/<pid>/stat has them: a run's owner's start time). A process killed
// just before hymn clean looks (a run's QEMU gets SIGKILL when hymn dies)
// can have left its network namespace already while it still closes its
// sockets and taps: it is no longer found in the run's namespaces, but
// clean must not return before it is gone. It is only waited for, never
// signalled, so a stranger's exiting process costs at most its exit time.
func ExitingSince(startTime uint64) []int {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		f := proctree.StatFields(pid)
		if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		flags, _ := strconv.ParseUint(f[6], 10, 64)
		start, _ := strconv.ParseUint(f[19], 10, 64)
		if flags&pfExiting != 0 && start >= startTime {
			pids = append(pids, pid)
		}
	}
	return pids
}
