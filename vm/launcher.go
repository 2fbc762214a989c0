package vm

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/vishvananda/netns"
)

// QEMU is started with Pdeathsig (SIGKILL), so it ends with hymn even when
// hymn is killed outright. But Linux sends that signal when the *thread*
// that forked the child ends, not the process, and Go ends threads: a
// goroutine that exits while locked to its thread takes the thread with
// it, which measure's sender, the emulator's forwarder and the simulated
// NIC do on purpose (their threads carry a namespace or a real-time
// priority). Starting QEMU from an ordinary thread (netnsx.Do) returned
// that thread to the scheduler, and whichever such goroutine later ran on
// it killed the guest when it ended: in a 7-node line of TCG routers two
// of five QEMUs vanished during the first zero-loss trials, and the path
// then forwarded nothing at any rate (an "overloaded guest that did not
// recover", which it never was).
//
// So every QEMU is forked by one launcher goroutine that locks its thread
// and never ends: the thread lives as long as the process.

type launchReq struct {
	ns    netns.NsHandle
	start func() error
	done  chan error
}

var (
	launchOnce sync.Once
	launches   chan launchReq
)

// startInNamespace runs start (an exec.Cmd's Start) on the launcher
// thread, inside the network namespace ns, so the child is created in ns
// and its Pdeathsig only fires when hymn ends.
func startInNamespace(ns netns.NsHandle, start func() error) error {
	launchOnce.Do(func() {
		launches = make(chan launchReq)
		go launcher()
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
			// launcher serves the next requests.
			req.done <- errors.Join(startErr, fmt.Errorf("launcher thread: returning to the original namespace: %w", err))
			go launcher()
			select {}
		}
		req.done <- startErr
	}
}
