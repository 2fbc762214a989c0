package emulator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// FuzzPipeline: any text that parses builds an emulator that takes any
// packets on a virtual clock without panicking or hanging, never sends a
// packet before it arrived (plus its delay when FIFO and unspaced), keeps
// its counters balanced and its queue within the buffer; a second text
// applied live (like `tc qdisc change`) keeps all of that.
//
//	go test -run XXX -fuzz FuzzPipeline -fuzztime 5m ./emulator
func FuzzPipeline(f *testing.F) {
	for _, s := range []struct {
		a, b string
		ops  []byte
	}{
		{"delay 10ms 1ms seed 1", "delay 20ms", []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{"rate 1mbit limit 100 loss 50% seed 2", "rate 10mbit", []byte{255, 255, 255, 255, 0, 0, 1, 1}},
		{"delay 1ms 1ms distribution uniform reorder seed 3", "fifo", []byte{9, 200, 30, 4, 5, 60, 7, 80, 9}},
		{"police 10mbit 32768 space 5mbit 10pkt loss gemodel 1% 30% 100% 0% seed 4", "nopolice", []byte{3, 3, 3, 3, 3, 3}},
		{"delay 100ms 30ms distribution lognormal half-life 0 seed 5", "time-based", []byte{0, 255, 0, 255}},
		{"delay 50ms 10ms distribution gamma loss state 1% 10% 5% 90% 1% limit 10 seed 6", "loss none", []byte{17, 34, 51, 68}},
		{"delay 3600s 3600s reorder seed 7", "delay 1ms", []byte{255, 1, 255, 1, 255, 1}},
		{"delay 1000000s 1000000s allow-large reorder distribution lognormal seed 8", "jitter 0", []byte{255, 255, 255, 255, 255, 255, 255, 255}},
		{"rate 1bit seed 9", "rate 1tbit", []byte{1, 2, 3}},
		{"max-frame 65536 overhead 4096 police 1pbit 1gb seed 10", "", []byte{128, 64, 32}},
	} {
		f.Add(s.a, s.b, s.ops)
	}
	f.Fuzz(func(t *testing.T, text, change string, ops []byte) {
		// The fuzzer has no time limit per input: a hang becomes a crash
		// (and a saved input) here.
		watchdog := time.AfterFunc(10*time.Second, func() {
			panic(fmt.Sprintf("FuzzPipeline hangs on %q then %q with %d ops", text, change, len(ops)))
		})
		defer watchdog.Stop()
		if len(ops) > 4*256 {
			return // longer programs add nothing but minimisation time
		}
		c, err := Parse(text)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("%q: error %v is not a ConfigError", text, err)
			}
			return
		}
		if c.MemoryEstimate() > 256<<20 {
			return // valid, but the fuzzer would spend its time allocating
		}
		e, err := New(c)
		if err != nil {
			t.Fatalf("%q parsed but New failed: %v", text, err)
		}
		in := make([]Packet, MaxBatch)
		out := make([]Packet, MaxBatch)
		drops := make([]Packet, 0, MaxBatch)
		var now int64
		queued := 0
		check := func() {
			s := e.Stats()
			if s.Received != s.Sent+s.Dropped()+uint64(s.Queued) {
				t.Fatalf("%q: counters: %+v", text, s)
			}
			if s.Queued > e.Config().Buffer && !changedBuffer(e, c) {
				t.Fatalf("%q: %d queued, buffer %d", text, s.Queued, e.Config().Buffer)
			}
		}
		release := func() {
			for {
				k := e.Release(now, out)
				for _, p := range out[:k] {
					if p.Due > now || p.Due < p.Arrival {
						t.Fatalf("%q: packet due %d (arrived %d) released at %d", text, p.Due, p.Arrival, now)
					}
				}
				queued -= k
				if k < len(out) {
					return
				}
			}
		}
		for i := 0; i+3 < len(ops); i += 4 {
			op := binary.LittleEndian.Uint32(ops[i:])
			switch op & 7 {
			case 0: // a burst of 1..16 packets
				n := 1 + int(op>>3)%MaxBatch
				for j := range in[:n] {
					in[j] = Packet{Handle: uint64(i + j), Len: uint32(1 + int(op>>8)%c.MaxFrame)}
				}
				drops = e.Receive(now, in[:n], drops[:0])
				queued += n - len(drops)
			case 1: // time passes: up to ~1 s, or up to ~12 days
				now += int64(op >> 3)
			case 2:
				now += int64(op>>3) << 12
			case 3: // the transmitter
				release()
			case 4: // jump to the next departure and release it
				if due, ok := e.NextDue(); ok {
					now = max(now, due) // a due packet not yet released may lie in the past
					release()
				}
			case 5: // a live change
				nc := e.Config()
				if err := nc.Apply(strings.Fields(change)); err == nil {
					if nc.MemoryEstimate() <= 256<<20 {
						if err := e.Reconfigure(nc, op&8 != 0); err != nil {
							t.Fatalf("%q then %q: validated config refused: %v", text, change, err)
						}
					}
				}
			default: // one packet of any size
				in[0] = Packet{Len: uint32(1 + int(op>>3)%c.MaxFrame)}
				drops = e.Receive(now, in[:1], drops[:0])
				queued += 1 - len(drops)
			}
			check()
		}
		// Everything queued leaves, in at most one jump per packet.
		for range queued + 1 {
			due, ok := e.NextDue()
			if !ok {
				break
			}
			now = max(now, due)
			release()
		}
		if s := e.Stats(); s.Queued != 0 {
			t.Fatalf("%q: %d packets never leave", text, s.Queued)
		}
	})
}

// changedBuffer: after a live change to a smaller buffer, what was queued
// stays (nothing is dropped retroactively).
func changedBuffer(e *Emulator, orig Config) bool { return e.Config().Buffer != orig.Buffer }
