package hymn

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// The first failure cancels the work in progress (a VM boot would
// otherwise run to its timeout) and starts no more; the cancellations it
// caused are not reported as errors of their own.
func TestForEachCancelsOnFirstError(t *testing.T) {
	boom := errors.New("boom")
	var started atomic.Int32
	err := forEach(context.Background(), 4, 100, func(ctx context.Context, i int) error {
		started.Add(1)
		if i == 0 {
			time.Sleep(10 * time.Millisecond)
			return boom
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return errors.New("not cancelled")
		}
	})
	if !errors.Is(err, boom) || errors.Is(err, context.Canceled) {
		t.Fatalf("forEach = %v; want only the first failure", err)
	}
	if n := started.Load(); n > 4 {
		t.Fatalf("%d items started; want no new work after the failure (4 workers)", n)
	}
}

// A cancelled caller's context is reported.
func TestForEachCallerCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := forEach(ctx, 2, 3, func(context.Context, int) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("forEach with a cancelled context = %v", err)
	}
}
