package stallwatch

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// A process stopped for 40 ms (SIGSTOP from a child, which the stop does
// not hold up) is a stall the watcher records, covering the stop.
func TestSeesAStoppedProcess(t *testing.T) {
	w := Start()
	time.Sleep(20 * time.Millisecond)
	before := time.Now()
	pid := strconv.Itoa(os.Getpid())
	if out, err := exec.Command("sh", "-c", "kill -STOP "+pid+"; sleep 0.04; kill -CONT "+pid).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	after := time.Now()
	time.Sleep(20 * time.Millisecond)
	r := w.Stop()
	t.Log(r)
	if !r.Stalled() || r.Worst < 30*time.Millisecond {
		t.Fatalf("a 40 ms stop went unseen: %v", r)
	}
	var covered time.Duration
	for _, st := range r.Stalls {
		if st.From.Before(after) && st.To.After(before) {
			covered += st.Len()
		}
	}
	if covered < 30*time.Millisecond {
		t.Errorf("stalls within the stop add up to %v, want about 40 ms: %v", covered, r)
	}
	if again := w.Stop(); len(again.Stalls) != len(r.Stalls) {
		t.Errorf("a second Stop says %v, the first %v", again, r)
	}
}
