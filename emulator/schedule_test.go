package emulator

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// vclock drives an emulator on a virtual clock with an ideal transmitter:
// it wakes exactly at every time NextDue names, as the forwarder does.
type vclock struct {
	e        *Emulator
	now      int64
	out      [MaxBatch]Packet
	departed []Packet
	dropped  []Packet
}

func (v *vclock) advance(t int64) {
	for {
		due, ok := v.e.NextDue()
		if !ok || due > t {
			break
		}
		v.now = max(v.now, due)
		n := v.e.Release(v.now, v.out[:])
		v.departed = append(v.departed, v.out[:n]...)
	}
	v.now = max(v.now, t)
}

func (v *vclock) send(t int64, size uint32) {
	v.advance(t)
	in := []Packet{{Handle: uint64(len(v.departed) + len(v.dropped)), Len: size}}
	v.dropped = v.e.Receive(t, in, v.dropped)
}

func newSchedEmu(t *testing.T, opts ...Option) *Emulator {
	t.Helper()
	cfg, err := Build(append([]Option{Seed(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustSchedule(t *testing.T, text string) *Schedule {
	t.Helper()
	s, err := ParseSchedule("test.csv", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A step 10 ms → 30 ms at 2 s with a packet every 100 ms: every packet
// sent before 2 s sees 10 ms, every one from 2 s on sees 30 ms, none is
// lost or reordered, and the change is applied exactly at 2 s.
func TestScheduleStepVirtual(t *testing.T) {
	e := newSchedEmu(t, Delay(10*time.Millisecond))
	if err := e.SetSchedule(mustSchedule(t, "time,delay\n2s,30ms\n"), 0); err != nil {
		t.Fatal(err)
	}
	v := &vclock{e: e}
	const interval = int64(100 * time.Millisecond)
	for i := int64(0); i < 40; i++ {
		v.send(i*interval, 98)
	}
	v.advance(math.MaxInt64 / 2)
	if len(v.departed) != 40 || len(v.dropped) != 0 {
		t.Fatalf("departed %d dropped %d, want 40 and 0", len(v.departed), len(v.dropped))
	}
	for i, p := range v.departed {
		if p.Seq != uint64(i) {
			t.Fatalf("packet %d left as %d: reordered", p.Seq, i)
		}
		want := 10 * time.Millisecond
		if p.Arrival >= int64(2*time.Second) {
			want = 30 * time.Millisecond
		}
		if got := time.Duration(p.Due - p.Arrival); got != want {
			t.Errorf("packet sent at %v: delay %v, want %v", time.Duration(p.Arrival), got, want)
		}
	}
	st := e.ScheduleStatus()
	if st.Applied != 1 || len(st.Recent) != 1 || st.Recent[0].At != 2*time.Second || st.MaxLate != 0 {
		t.Fatalf("status %+v: want one change applied at exactly 2s", st)
	}
	if s := e.Stats(); s.Reordered != 0 || s.Dropped() != 0 {
		t.Fatalf("reordered %d dropped %d", s.Reordered, s.Dropped())
	}
}

// A decrease of the delay while packets are queued: FIFO keeps them in
// order (the later ones wait for the earlier), nothing is lost.
func TestScheduleDecreaseKeepsOrder(t *testing.T) {
	e := newSchedEmu(t, Delay(40*time.Millisecond))
	if err := e.SetSchedule(mustSchedule(t, "time,delay\n1s,5ms\n"), 0); err != nil {
		t.Fatal(err)
	}
	v := &vclock{e: e}
	for i := int64(0); i < 2000; i++ { // one packet per ms for 2 s
		v.send(i*int64(time.Millisecond), 1000)
	}
	v.advance(math.MaxInt64 / 2)
	if len(v.departed) != 2000 {
		t.Fatalf("departed %d of 2000", len(v.departed))
	}
	for i, p := range v.departed {
		if p.Seq != uint64(i) {
			t.Fatalf("reordered at %d", i)
		}
	}
	last := v.departed[len(v.departed)-1]
	if d := time.Duration(last.Due - last.Arrival); d != 5*time.Millisecond {
		t.Fatalf("last delay %v, want 5ms", d)
	}
}

// Applied times on the virtual clock equal the schedule's, for many
// points and repetitions, even with no traffic (the transmitter wakes for
// each point through NextDue).
func TestScheduleAppliedTimes(t *testing.T) {
	e := newSchedEmu(t, Delay(20*time.Millisecond))
	s := mustSchedule(t, "time,delay\n0,20\n15s,40\nrepeat,30s\n")
	zero := int64(123456789)
	if err := e.SetSchedule(s, zero); err != nil {
		t.Fatal(err)
	}
	v := &vclock{e: e, now: zero}
	v.advance(zero + int64(5*time.Minute) - 1)
	st := e.ScheduleStatus()
	if st.Applied != 20 || st.MaxLate != 0 || st.Failed != 0 {
		t.Fatalf("status %+v: want 20 changes, none late", st)
	}
	for i, a := range st.Recent {
		if want := time.Duration(i) * 15 * time.Second; a.Due != want || a.At != want {
			t.Fatalf("change %d: due %v at %v, want %v", i, a.Due, a.At, want)
		}
	}
	if e.Config().Delay != 40*time.Millisecond {
		t.Fatalf("delay %v after 4m59s, want 40ms", e.Config().Delay)
	}
}

// A ramp moves the delay linearly: halfway, half the change.
func TestScheduleRamp(t *testing.T) {
	e := newSchedEmu(t, Delay(10*time.Millisecond))
	if err := e.SetSchedule(mustSchedule(t, "time,delay,loss,ramp\n10s,30ms,10%,true\n"), 0); err != nil {
		t.Fatal(err)
	}
	v := &vclock{e: e}
	for _, ts := range []time.Duration{0, 2500 * time.Millisecond, 5 * time.Second, 7500 * time.Millisecond, 10 * time.Second, 11 * time.Second} {
		v.send(int64(ts), 100)
		want := 10*time.Millisecond + time.Duration(float64(20*time.Millisecond)*min(1, ts.Seconds()/10))
		cfg := e.Config()
		// rampStep limits how often the parameters are recomputed.
		if d := cfg.Delay - want; d < -time.Microsecond*20 || d > time.Microsecond*20 {
			t.Errorf("at %v: delay %v, want %v", ts, cfg.Delay, want)
		}
		if wantLoss := 0.1 * min(1, ts.Seconds()/10); math.Abs(cfg.Loss.Prob-wantLoss) > 1e-4 {
			t.Errorf("at %v: loss %v, want %v", ts, cfg.Loss.Prob, wantLoss)
		}
	}
}

func TestScheduleRefusedAgainstConfig(t *testing.T) {
	e := newSchedEmu(t, WithDistribution(Deterministic))
	err := e.SetSchedule(mustSchedule(t, "time,jitter\n1s,1ms\n"), 0)
	if err == nil || !strings.Contains(err.Error(), "test.csv:2:") {
		t.Fatalf("jitter on a deterministic link: %v, want test.csv:2 error", err)
	}
}

func TestParseScheduleFormats(t *testing.T) {
	s := mustSchedule(t, "# satellite\ntime, delay, jitter, rate, loss, ramp\n0,20,,10,,\n15s,40ms,1ms,5mbit,1%,true\nrepeat,30s\n")
	if len(s.Points) != 2 || s.Repeat != 30*time.Second {
		t.Fatalf("%+v", s)
	}
	p := s.Points[1]
	if p.At != 15*time.Second || p.Params.Delay != 40*time.Millisecond || p.Params.Jitter != time.Millisecond ||
		p.Params.Rate != 5e6 || p.Params.Loss != 0.01 || !p.Ramp || p.Params.Set != SetDelay|SetJitter|SetRate|SetLoss {
		t.Fatalf("%+v", p)
	}
	if s.Points[0].Params.Set != SetDelay|SetRate || s.Points[0].Params.Rate != 10e6 {
		t.Fatalf("%+v", s.Points[0])
	}
	// A headerless file is a delay trace in ms.
	d := mustSchedule(t, "0 10\n100 12.5\n200 11\n")
	if len(d.Points) != 3 || d.Points[1].At != 100*time.Millisecond || d.Points[1].Params.Delay != 12500*time.Microsecond {
		t.Fatalf("%+v", d)
	}
	// Encode round-trips.
	r, err := DecodeSchedule("inline", s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if r.Encode() != s.Encode() {
		t.Fatalf("round trip:\n%s\n%s", s.Encode(), r.Encode())
	}
}

func TestParseScheduleErrors(t *testing.T) {
	huge := "time,delay\n" + strings.Repeat("0000000000000000000000000,1\n", MaxScheduleBytes/27+1)
	for _, c := range []struct{ name, text, want string }{
		{"empty", "", "f.csv: empty schedule"},
		{"comments only", "# nothing\n\n", "f.csv: empty schedule"},
		{"header only", "time,delay\n", "f.csv: empty schedule"},
		{"unsorted", "time,delay\n1s,10ms\n2s,20ms\n1500ms,5ms\n", "f.csv:4: time 1.5s is not after"},
		{"equal", "time,delay\n1s,10ms\n1s,20ms\n", "f.csv:3: time 1s is not after"},
		{"negative time", "time,delay\n-1s,10ms\n", "f.csv:2: time: negative"},
		{"negative delay", "time,delay\n1s,-10ms\n", "f.csv:2: delay: negative"},
		{"negative rate", "time,rate\n1s,-10mbit\n", "f.csv:2: rate:"},
		{"zero rate", "time,rate\n1s,0\n", "f.csv:2: rate:"},
		{"loss range", "time,loss\n1s,120%\n", "f.csv:2: loss:"},
		{"unknown column", "time,delay,bandwidth\n1s,10ms,5\n", "f.csv:1: column 3 is not a schedule column"},
		{"duplicate column", "time,delay,delay\n", "f.csv:1: column \"delay\" appears twice"},
		{"time not first", "delay,time\n", "f.csv:1: the first column must be time"},
		{"cells", "time,delay\n1s,10ms,3\n", "f.csv:2: 3 values for 2 columns"},
		{"bad unit", "time,delay\n1s,10parsecs\n", "f.csv:2: delay:"},
		{"nothing set", "time,delay,jitter\n1s,,\n", "f.csv:2: point at 1s changes nothing"},
		{"repeat short", "time,delay\n0,1\n5s,2\nrepeat,5s\n", "f.csv:4: repeat 5s must be longer"},
		{"after repeat", "time,delay\n0,1\nrepeat,5s\n6s,2\n", "f.csv:4: nothing may follow"},
		{"bad ramp", "time,delay,ramp\n1s,1ms,maybe\n", "f.csv:2: ramp:"},
		{"huge delay", "time,delay\n1s,2h\n", "f.csv:2: delay:"},
		{"long line", "time,delay\n" + strings.Repeat("1", 5000) + ",1\n", "f.csv:2: line too long"},
		{"huge file", huge, "f.csv: file is larger"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseSchedule("f.csv", []byte(c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%v does not match ErrInvalidConfig", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

// FuzzParseSchedule: any input is either refused with an error naming
// the file, or gives a valid schedule that survives Encode/Decode.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{
		"time,delay\n0,10ms\n2s,30ms\n",
		"time,delay,jitter,rate,loss,ramp\n0,20,,10,,\n15s,40ms,1ms,5mbit,1%,true\nrepeat,30s\n",
		"0 10\n100 12.5\n",
		"time,delay\n1s,10ms\n0.5s,1ms\n",
		"# c\n\ntime,loss\n1e3,1e1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSchedule("fuzz.csv", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.csv") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("parsed schedule does not validate: %v", err)
		}
		r, err := DecodeSchedule("fuzz.csv", s.Encode())
		if err != nil {
			t.Fatalf("encoded schedule does not parse: %v\n%s", err, s.Encode())
		}
		if r.Encode() != s.Encode() {
			t.Fatalf("round trip differs")
		}
		e, err := New(DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		if e.SetSchedule(s, 0) == nil {
			v := &vclock{e: e}
			v.send(0, 100)
			v.advance(int64(s.Duration()) + 1)
		}
	})
}
