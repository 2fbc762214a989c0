package stallwatch

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
)

// A process stopped for 40 ms (SIGSTOP from a child, which the stop does
// not hold up) is a stall the watcher records, covering the stop.
//
// Both judgements are floors: a pause of the machine or of the child only
// lengthens the stop (sleep 0.04 waits at least 40 ms between the two
// signals), so only the watcher's own granularity can make it read
// short. The watcher sleeps 1 ms at a time and a stall is recorded from
// when that sleep was due to end: a stop that began just after it went
// to sleep is recorded up to 1 ms short. That 1 ms is the resolution; the
// 10 ms allowed below are ten of it.
func TestSeesAStoppedProcess(t *testing.T) {
	const stop = 40 * time.Millisecond
	res := testenv.Ms(time.Millisecond, "the watcher sleeps 1 ms at a time and dates a stall from when that sleep was due: a stop is recorded up to one sleep short; pauses only lengthen the stop")
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
	if !r.Stalled() {
		t.Fatalf("a 40 ms stop went unseen: %v", r)
	}
	testenv.JudgeTime(t, testenv.Timing{Quantity: "the longest oversleep, across a 40 ms stop", Got: r.Worst, Target: stop,
		Tolerance: 10 * time.Millisecond, Bound: testenv.AtLeast, Resolution: res})
	var covered time.Duration
	for _, st := range r.Stalls {
		if st.From.Before(after) && st.To.After(before) {
			covered += st.Len()
		}
	}
	testenv.JudgeTime(t, testenv.Timing{Quantity: "stalls recorded within a 40 ms stop, together", Got: covered, Target: stop,
		Tolerance: 10 * time.Millisecond, Bound: testenv.AtLeast, Resolution: res})
	if again := w.Stop(); len(again.Stalls) != len(r.Stalls) {
		t.Errorf("a second Stop says %v, the first %v", again, r)
	}
}
