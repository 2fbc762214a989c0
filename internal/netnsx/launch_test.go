package netnsx_test

import (
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
	"golang.org/x/sys/unix"
)

// discardThreads ends n OS threads the way measure's sender and the
// emulator's forwarder do: goroutines that exit locked to their thread.
func discardThreads(n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			time.Sleep(time.Millisecond) // hold the thread so others take fresh ones
		}()
	}
	wg.Wait()
}

// A process started with Pdeathsig by Launch runs in the namespace it was
// given and survives other goroutines throwing their threads away: only
// hymn's own end may kill it.
func TestLaunchedChildOutlivesDiscardedThreads(t *testing.T) {
	testenv.Root(t)
	run := owner.NewRunID()
	if err := owner.Claim(run); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := owner.Release(run); err != nil {
			t.Error(err)
		}
	})
	named, err := netnsx.CreateNamed(owner.NamespaceName(run, "launch"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := named.Delete(); err != nil {
			t.Error(err)
		}
	})
	for i := range 3 {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := netnsx.Launch(named.NsHandle(), cmd.Start); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }() // killed below: Wait reports the signal
		t.Cleanup(func() {
			_ = cmd.Process.Kill() // fails only if Wait has returned: then exited is closed
			<-exited
		})
		var child, want unix.Stat_t
		if err := unix.Stat("/proc/"+strconv.Itoa(cmd.Process.Pid)+"/ns/net", &child); err != nil {
			t.Fatal(err)
		}
		if err := unix.Stat(netnsx.Path(named.Namespace()), &want); err != nil {
			t.Fatal(err)
		}
		if child.Ino != want.Ino {
			t.Fatalf("child %d: in namespace inode %d, want %d (%s)", i, child.Ino, want.Ino, named.Namespace())
		}
		discardThreads(64)
		select {
		case <-exited:
			t.Fatalf("child %d was killed when other goroutines discarded their threads: %v", i, cmd.ProcessState)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
