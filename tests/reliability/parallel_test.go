package reliability

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
)

// TestParallelRunsBesideClean runs several networks at once through the
// binary, each pinging all its hosts a few times over its life, while
// hymn clean runs in a loop beside them: clean must never harm a live run
// (every pingall 0% dropped), including runs whose record is being written
// or removed at that moment, since each worker builds and stops networks
// one after another.
func TestParallelRunsBesideClean(t *testing.T) {
	testenv.RootAndTools(t, "ping")
	workers, rounds := 2, 2
	if full {
		workers, rounds = 4, 5
	}
	script := "pingall\nsh sleep 1\npingall\nsh sleep 1\npingall\nexit\n"
	const pingalls = 3

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cleans, cleanErrs atomic.Int64
	var cleanWG sync.WaitGroup
	cleanWG.Add(1)
	go func() {
		defer cleanWG.Done()
		for ctx.Err() == nil {
			out, err := exec.Command(hymnBin, "clean").CombinedOutput()
			cleans.Add(1)
			if err != nil {
				cleanErrs.Add(1)
				t.Errorf("hymn clean beside live runs: %v\n%s", err, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	var wg sync.WaitGroup
	var runs, unharmed atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				runs.Add(1)
				// Distinct address ranges are not needed (each run has its
				// own namespaces), but distinct topologies vary the timing.
				spec := fmt.Sprintf("linear,%d", 2+(w+r)%3)
				cmd := exec.Command(hymnBin, "--topo", spec, "--link", "tc,delay=1ms")
				cmd.Stdin = strings.NewReader(script)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				err := cmd.Run()
				got := strings.Count(stderr.String(), "*** Results: 0% dropped")
				if err != nil || got != pingalls {
					t.Errorf("worker %d round %d (%s): %v, %d of %d pingalls without loss:\n%s", w, r, spec, err, got, pingalls, clip(stderr.String()))
					continue
				}
				unharmed.Add(1)
			}
		}()
	}
	wg.Wait()
	cancel()
	cleanWG.Wait()
	verdict := "all unharmed"
	if unharmed.Load() != runs.Load() {
		verdict = fmt.Sprintf("%d HARMED", runs.Load()-unharmed.Load())
	}
	summary("parallel runs %d (%d at a time, %d pingalls each) beside %d hymn clean: %d/%d with 0%% dropped, %s",
		runs.Load(), workers, pingalls, cleans.Load(), unharmed.Load(), runs.Load(), verdict)
}
