package hymn

import (
	"context"
	"errors"
	"runtime"
	"sync"
)

// defaultWorkers bounds concurrent setup. Setup is kernel work (netlink,
// namespace creation), so a few more workers than cores keeps every core busy
// while one worker waits on a lock in the kernel.
func defaultWorkers() int { return max(4, 4*runtime.NumCPU()) }

// forEach calls fn(ctx, i) for i in [0, n) on up to workers goroutines.
// After the first error no new work starts and the context of the work in
// progress is cancelled (a VM boot takes a minute under TCG; the network
// is torn down anyway); it returns every error that occurred except the
// cancellations that followed the first.
func forEach(ctx context.Context, workers, n int, fn func(ctx context.Context, i int) error) error {
	work, cancel := context.WithCancel(ctx)
	defer cancel()
	if workers < 1 {
		workers = 1
	}
	var (
		mu   sync.Mutex
		errs []error
		next int
		wg   sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= n || len(errs) > 0 || ctx.Err() != nil {
			return 0, false
		}
		next++
		return next - 1, true
	}
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i, ok := take()
				if !ok {
					return
				}
				if err := fn(work, i); err != nil {
					mu.Lock()
					if len(errs) == 0 || !errors.Is(err, context.Canceled) {
						errs = append(errs, err)
					}
					mu.Unlock()
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) == 0 && ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(errs...)
}
