package emulator

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// constantTrace is Mahimahi's 12 Mbit/s trace: one opportunity per ms.
func constantTrace(t testing.TB) *DeliveryTrace {
	tr, err := ParseDeliveryTrace("12mbit.trace", []byte("1\n"))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// outageTrace is 10 s of one opportunity per ms with no opportunity in
// (8 s, 10 s): a 2 s outage; the line 10000 closes the period.
func outageTrace(t testing.TB) *DeliveryTrace {
	var b strings.Builder
	for ms := 1; ms <= 8000; ms++ {
		b.WriteString(strconv.Itoa(ms) + "\n")
	}
	b.WriteString("10000\n")
	tr, err := ParseDeliveryTrace("outage.trace", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// saturate offers full-size frames (1514 B) at 15 Mbit/s for dur and
// returns the bytes delivered in [from, to).
func saturate(t *testing.T, e *Emulator, dur time.Duration, from, to time.Duration) (delivered uint64, v *vclock) {
	v = &vclock{e: e}
	gap := int64(807467) // 1514 B at 15 Mbit/s
	for ts := int64(0); ts < int64(dur); ts += gap {
		v.send(ts, 1514)
	}
	v.advance(math.MaxInt64 / 2)
	for _, p := range v.departed {
		if p.Due >= int64(from) && p.Due < int64(to) {
			delivered += uint64(p.Len)
		}
	}
	return delivered, v
}

func TestTraceConstantRate(t *testing.T) {
	cfg, err := Build(Seed(1), BufferPackets(100))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Trace = TraceConfig{Trace: constantTrace(t)}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, v := saturate(t, e, 12*time.Second, time.Second, 11*time.Second)
	// Backlogged, every ms delivers exactly one 1514-byte frame: 1500 B
	// of IP packet per ms = 12 Mbit/s, so 10 s carry 10 000 frames.
	if want := uint64(10000 * 1514); got != want {
		t.Fatalf("delivered %d bytes in 10 s, want %d (12 Mbit/s of IP packets)", got, want)
	}
	for i, p := range v.departed {
		if p.Seq < v.departed[max(i, 1)-1].Seq {
			t.Fatalf("reordered")
		}
		if p.Due%int64(time.Millisecond) != 0 {
			t.Fatalf("departure at %v is not on an opportunity (whole ms)", time.Duration(p.Due))
		}
	}
	if s := e.Stats(); s.BufferFull == 0 {
		t.Fatalf("15 Mbit/s into 12 Mbit/s with a 100-packet buffer dropped nothing: %+v", s)
	}
}

// With a 2 s outage in a 10 s trace the delivered bytes over whole
// periods drop by the outage's share: 8000 (+1 at 10 s) of 10 000
// opportunities.
func TestTraceOutageShare(t *testing.T) {
	run := func(tr *DeliveryTrace) uint64 {
		cfg, _ := Build(Seed(1), BufferPackets(100))
		cfg.Trace = TraceConfig{Trace: tr}
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := saturate(t, e, 31*time.Second, 0, 30*time.Second)
		return got
	}
	full, cut := run(constantTrace(t)), run(outageTrace(t))
	ratio := float64(cut) / float64(full)
	if want := 8001.0 / 10000; math.Abs(ratio-want) > 0.001 {
		t.Fatalf("delivered %d with outage vs %d without: ratio %.4f, want %.4f", cut, full, ratio, want)
	}
}

// A frame larger than the opportunity spans several; small frames share
// one if they are waiting.
func TestTracePacking(t *testing.T) {
	cfg, _ := Build(Seed(1))
	cfg.Trace = TraceConfig{Trace: constantTrace(t), Opportunity: 1000}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v := &vclock{e: e}
	in := []Packet{{Len: 1500}, {Len: 300}, {Len: 200}, {Len: 600}}
	v.dropped = e.Receive(0, in, nil)
	v.advance(math.MaxInt64 / 2)
	// t0 = 0 (first packet); opportunities at 1, 2, 3 ms of 1000 B.
	// 1500 B takes ms 1 and 500 B of ms 2; 300 and 200 B fill ms 2; 600 B goes at ms 3.
	want := []int64{2, 2, 2, 3}
	for i, p := range v.departed {
		if p.Due != want[i]*int64(time.Millisecond) {
			t.Errorf("frame %d (%d B) left at %v, want %d ms", i, p.Len, time.Duration(p.Due), want[i])
		}
	}
}

// The byte limit drops what would wait beyond it.
func TestTraceLimit(t *testing.T) {
	cfg, _ := Build(Seed(1))
	cfg.Trace = TraceConfig{Trace: constantTrace(t), Limit: 10 * 1514}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	in := make([]Packet, 30)
	for i := range in {
		in[i].Len = 1514
	}
	dropped := e.Receive(0, in, nil)
	if len(dropped) != 20 {
		t.Fatalf("dropped %d of 30 with room for 10", len(dropped))
	}
	if s := e.Stats(); s.SpacerDropped != 20 {
		t.Fatalf("%+v", s)
	}
}

// A schedule changing the delay keeps the trace's place: it does not
// restart the trace.
func TestTraceWithSchedule(t *testing.T) {
	cfg, _ := Build(Seed(1), Delay(5*time.Millisecond))
	cfg.Trace = TraceConfig{Trace: outageTrace(t)}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetSchedule(mustSchedule(t, "time,delay\n8500ms,20ms\n"), 0); err != nil {
		t.Fatal(err)
	}
	v := &vclock{e: e}
	v.send(0, 100)
	v.send(int64(8600*time.Millisecond), 100)
	v.advance(math.MaxInt64 / 2)
	// The second packet is ready at 8.62 s, inside the outage: it waits
	// for the opportunity at 10 s of trace time, which started when the
	// first packet was ready (5 ms).
	if got := v.departed[1].Due; got != int64(10005*time.Millisecond) {
		t.Fatalf("left at %v, want 10.005s", time.Duration(got))
	}
	if err := e.SetSchedule(mustSchedule(t, "time,rate\n1s,10mbit\n"), 0); err == nil {
		t.Fatal("a rate schedule on a traced link was accepted")
	}
}

func TestParseDeliveryTraceErrors(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"empty", "", "t.trace: empty trace"},
		{"blank", "\n\n# c\n", "t.trace: empty trace"},
		{"unsorted", "1\n2\n5\n4\n", "t.trace:4: time before the previous line's"},
		{"negative", "1\n-2\n", "t.trace:2: negative time"},
		{"not a number", "1\n2ms\n", "t.trace:2: not a time in whole milliseconds"},
		{"fraction", "1.5\n", "t.trace:1:"},
		{"zero period", "0\n0\n", "t.trace:2: the last time must be > 0"},
		{"huge time", "99999999999\n", "t.trace:1: time beyond the limit"},
		{"long line", strings.Repeat("1", 5000) + "\n", "t.trace:1: line too long"},
		{"huge", strings.Repeat("1\n", MaxTraceBytes/2+1), "t.trace: file is larger"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseDeliveryTrace("t.trace", []byte(c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%v does not match ErrInvalidConfig", err)
			}
		})
	}
	tr := constantTrace(t)
	if r := tr.MeanRate(1500); r != 12e6 {
		t.Fatalf("mean rate %v", r)
	}
	cfg, _ := Build(Space(10e6, 0))
	cfg.Trace = TraceConfig{Trace: tr}
	if err := cfg.Validate(); err == nil {
		t.Fatal("trace and spacer together accepted")
	}
}

// FuzzParseDeliveryTrace: any input is refused with file:line or gives a
// trace whose stage delivers every frame at a non-decreasing time.
func FuzzParseDeliveryTrace(f *testing.F) {
	for _, s := range []string{"1\n", "0\n0\n5\n", "1\n2\n3\n10000\n", "# x\n\n3\n3\n3\n7\n", "5\n4\n"} {
		f.Add([]byte(s), uint16(1514))
	}
	f.Fuzz(func(t *testing.T, data []byte, size uint16) {
		tr, err := ParseDeliveryTrace("fuzz.trace", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.trace") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		var s traceStage
		s.configure(TraceConfig{Trace: tr})
		last := int64(-1)
		for i := int64(0); i < 50; i++ {
			due, ok := s.schedule(i*int64(time.Millisecond)/3, int(size%3000))
			if !ok || due < last || due < i*int64(time.Millisecond)/3 {
				t.Fatalf("frame %d: due %d (last %d, ok %v)", i, due, last, ok)
			}
			last = due
		}
	})
}
