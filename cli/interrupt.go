package cli

import (
	"context"
	"os"
	"os/signal"
	"sync"
)

// interrupter routes Ctrl-C (SIGINT): while the shell runs a node command
// it cancels that command only; otherwise it cancels the whole run, which
// then stops the network and prints Mininet's Keyboard Interrupt line.
type interrupter struct {
	mu      sync.Mutex
	current context.CancelFunc
	whole   context.CancelFunc
}

// watchInterrupts starts routing SIGINT; stop undoes it.
func watchInterrupts(whole context.CancelFunc) (in *interrupter, stop func()) {
	in = &interrupter{whole: whole}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				in.fire()
			case <-done:
				return
			}
		}
	}()
	return in, func() { signal.Stop(ch); close(done) }
}

func (in *interrupter) fire() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.current != nil {
		in.current()
		return
	}
	in.whole()
}

// commandContext returns a context that Ctrl-C cancels without touching the
// rest of the run; call the returned function when the command is done.
func (in *interrupter) commandContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	if in == nil {
		return ctx, cancel
	}
	in.mu.Lock()
	in.current = cancel
	in.mu.Unlock()
	return ctx, func() {
		in.mu.Lock()
		in.current = nil
		in.mu.Unlock()
		cancel()
	}
}

type interrupterKey struct{}

func withInterrupter(ctx context.Context, in *interrupter) context.Context {
	return context.WithValue(ctx, interrupterKey{}, in)
}

// interrupterFrom returns the interrupter Execute installed, or nil (then
// commands are cancelled only through their context).
func interrupterFrom(ctx context.Context) *interrupter {
	in, _ := ctx.Value(interrupterKey{}).(*interrupter)
	return in
}
