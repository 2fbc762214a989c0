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
	if got := r.Overlapping(before, after); got < 30*time.Millisecond {
		t.Errorf("stalls overlapping the stop add up to %v, want about 40 ms: %v", got, r)
	}
	if got := r.Overlapping(after.Add(time.Second), after.Add(2*time.Second)); got != 0 {
		t.Errorf("a stall overlaps a later interval: %v", got)
	}
	if again := w.Stop(); len(again.Stalls) != len(r.Stalls) {
		t.Errorf("a second Stop says %v, the first %v", again, r)
	}
}

func TestOverlappingBounds(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	r := Report{Stalls: []Stall{{ms(10), ms(30)}, {ms(50), ms(56)}}}
	for _, c := range []struct {
		from, to int
		want     time.Duration
	}{
		{0, 10, 0}, // touching is not overlapping
		{0, 11, 20 * time.Millisecond},
		{29, 51, 26 * time.Millisecond},
		{30, 50, 0},
		{60, 90, 0},
	} {
		if got := r.Overlapping(ms(c.from), ms(c.to)); got != c.want {
			t.Errorf("[%d, %d] ms: %v, want %v", c.from, c.to, got, c.want)
		}
	}
	if (Report{}).Stalled() {
		t.Error("an empty report stalled")
	}
}
