package netnsx

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/vishvananda/netns"
)

// Children started with Pdeathsig (SIGKILL) end with hymn even when hymn
// is killed outright. But Linux sends that signal when the *thread* that
// forked the child ends, not the process, and Go ends threads: a goroutine
// that exits while locked to its thread takes the thread with it, which
// measure's sender, the emulator's forwarder and the simulated NIC do on
// purpose (their threads carry a namespace or a real-time priority). A
// child forked from an ordinary thread (Do) had its thread returned to
// the scheduler, and whichever such goroutine later ran on it killed the
// child when it ended: in a 7-node line of TCG routers two of five QEMUs
// vanished during a zero-loss search; node shells and daemons are exposed
// the same way.
//
// So such children are forked by launcher goroutines that lock their
// threads and never end: the threads live as long as the process. There
// is one launcher per CPU, so nodes started in parallel still fork in
// parallel.

type launchReq struct {
	ns    netns.NsHandle
	start func() error
	done  chan error
}

var (
	launchOnce sync.Once
	launches   chan launchReq
)

// Launch runs start (an exec.Cmd's Start) on a launcher thread inside the
// network namespace ns (-1: hymn's own), so the child is created in ns and
// its Pdeathsig fires only when hymn ends.
func Launch(ns netns.NsHandle, start func() error) error {
	launchOnce.Do(func() {
		launches = make(chan launchReq)
		for range runtime.NumCPU() {
			go launcher()
		}
	})
	req := launchReq{ns: ns, start: start, done: make(chan error, 1)}
	launches <- req
	return <-req.done
}

// launcher serves launch requests on a thread of its own, forever.
func launcher() {
	runtime.LockOSThread() // never unlocked, and the goroutine never returns
	orig, origErr := netns.Get()
	for req := range launches {
		if req.ns < 0 {
			req.done <- req.start()
			continue
		}
		if origErr != nil {
			req.done <- fmt.Errorf("launcher thread: its own namespace: %w", origErr)
			continue
		}
		if err := netns.Set(req.ns); err != nil {
			req.done <- fmt.Errorf("entering namespace: %w", err)
			continue
		}
		startErr := req.start()
		if err := netns.Set(orig); err != nil {
			// The thread is stuck in another namespace, but it must not
			// end while its children run: it parks for good and a new
			// launcher takes its place.
			req.done <- errors.Join(startErr, fmt.Errorf("launcher thread: returning to the original namespace: %w", err))
			go launcher()
			select {}
		}
		req.done <- startErr
	}
}
