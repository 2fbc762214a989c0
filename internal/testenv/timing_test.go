package testenv

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// judgeRecorder records what Judge logged, reported and refused.
type judgeRecorder struct {
	recorder
	logs, errors []string
}

func (r *judgeRecorder) Log(args ...any)   { r.logs = append(r.logs, fmt.Sprint(args...)) }
func (r *judgeRecorder) Error(args ...any) { r.errors = append(r.errors, fmt.Sprint(args...)) }

func judge(m Measurement) (r *judgeRecorder, ok bool) {
	r = &judgeRecorder{}
	defer func() {
		if v := recover(); v != nil {
			if _, isStop := v.(stop); !isStop {
				panic(v)
			}
		}
	}()
	ok = Judge(r, m)
	return r, ok
}

func TestJudgeRefusesAToleranceUnderTenResolutions(t *testing.T) {
	// The rate of TestTraceOutage as it was: a caller-read 10 s window
	// judged to 0.1 %.
	m := Measurement{Quantity: "constant trace / nominal", Got: 1.0011, Target: 1, Tolerance: 0.001, Bound: AtMost,
		Resolution: CallerWindow(1, 10*time.Second)}
	r, ok := judge(m)
	if ok || r.failed == "" {
		t.Fatalf("a tolerance of 0.001 on a resolution of %g was not refused (ok %v, logs %v)", m.Resolution.Value, ok, r.logs)
	}
	for _, want := range []string{"test mistake", "constant trace / nominal", "under 10 times", "window of 10s"} {
		if !strings.Contains(r.failed, want) {
			t.Errorf("refusal %q does not say %q", r.failed, want)
		}
	}
	// Refused even when the value is in bounds: the mistake is the test's.
	m.Got = 1
	if r, _ := judge(m); r.failed == "" {
		t.Errorf("an in-bounds value hid the test's mistake")
	}
	// Exactly ten resolutions is allowed.
	m.Tolerance = 10 * m.Resolution.Value
	if r, ok := judge(m); !ok || r.failed != "" || len(r.errors) != 0 {
		t.Errorf("tolerance of exactly ten resolutions: ok %v, refused %q, errors %v", ok, r.failed, r.errors)
	}
}

func TestJudgeRefusesAResolutionWithoutDerivation(t *testing.T) {
	for _, res := range []Resolution{{Value: 0, Derived: "x"}, {Value: -1, Derived: "x"}, {Value: 1}} {
		r, _ := judge(Measurement{Quantity: "q", Tolerance: 100, Resolution: res})
		if !strings.Contains(r.failed, "test mistake") {
			t.Errorf("resolution %+v: not refused (%q)", res, r.failed)
		}
	}
	if r, _ := judge(Measurement{Tolerance: 100, Resolution: Resolution{1, "x"}}); !strings.Contains(r.failed, "without a quantity") {
		t.Errorf("no quantity: %q", r.failed)
	}
}

func TestJudgeBoundsAndLog(t *testing.T) {
	res := Resolution{Value: 0.1, Derived: "how"}
	for _, c := range []struct {
		got   float64
		bound Bound
		ok    bool
	}{
		{12, Within, true}, {8, Within, true}, {12.01, Within, false}, {7.99, Within, false},
		{12, AtMost, true}, {12.5, AtMost, false}, {-100, AtMost, true},
		{8, AtLeast, true}, {7.5, AtLeast, false}, {1e9, AtLeast, true},
	} {
		r, ok := judge(Measurement{Quantity: "rate (Mbit/s)", Got: c.got, Target: 10, Tolerance: 2, Bound: c.bound, Resolution: res})
		if ok != c.ok || r.failed != "" {
			t.Errorf("%v %v 10±2: ok %v (refused %q), want %v", c.got, c.bound, ok, r.failed, c.ok)
			continue
		}
		lines := append(r.logs, r.errors...)
		if len(lines) != 1 || (len(r.errors) == 1) == c.ok {
			t.Errorf("%v %v: logs %v, errors %v", c.got, c.bound, r.logs, r.errors)
			continue
		}
		// All four numbers and the derivation are in the one line.
		for _, want := range []string{"rate (Mbit/s)", fmt.Sprintf("got %g", c.got), "target 10", "tolerance " + c.bound.String() + " 2", "resolution 0.1 (how)"} {
			if !strings.Contains(lines[0], want) {
				t.Errorf("log %q does not say %q", lines[0], want)
			}
		}
	}
}

func TestElapsedIsCallerRead(t *testing.T) {
	r := &judgeRecorder{}
	if !Elapsed(r, "refusal", 200*time.Millisecond, time.Second) || len(r.logs) != 1 {
		t.Fatalf("200 ms within 1 s: logs %v errors %v", r.logs, r.errors)
	}
	if !strings.Contains(r.logs[0], "testenv.CallerPause") || !strings.Contains(r.logs[0], "refusal (ms)") {
		t.Errorf("log %q", r.logs[0])
	}
	// A bound of less than ten caller pauses cannot be judged by the
	// caller's clock.
	rr, _ := judge(Measurement{Quantity: "q (ms)", Got: 1, Tolerance: ms(TimingRule*CallerPause) - 1, Bound: AtMost, Resolution: CallerRead()})
	if rr.failed == "" {
		t.Errorf("a %v bound on a caller-read time was not refused", TimingRule*CallerPause-time.Millisecond)
	}
}

func TestFloorIsTimerSlack(t *testing.T) {
	r := &judgeRecorder{}
	if Floor(r, "grace", 980*time.Millisecond, time.Second, 10*time.Millisecond) || len(r.errors) != 1 {
		t.Errorf("980 ms is under a 1 s floor less 10 ms: logs %v errors %v", r.logs, r.errors)
	}
	r = &judgeRecorder{}
	if !Floor(r, "grace", 1200*time.Millisecond, time.Second, 10*time.Millisecond) || !strings.Contains(r.logs[0], "testenv.TimerSlack") {
		t.Errorf("1.2 s over a 1 s floor: logs %v errors %v", r.logs, r.errors)
	}
}
