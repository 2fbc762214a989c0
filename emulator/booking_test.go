package emulator

import (
	"fmt"
	"testing"
	"time"
)

// TestDroppedPacketsBookNoTime floods a 1 Mbit/s link with a 100-packet
// buffer at 50× its rate for 10 s on the virtual clock, then stops. A
// packet that the buffer (or the policer, or the spacer's own limit) drops
// must not book serialisation time, and one lost on the wire holds its
// slot only as long as it holds a buffer place: so the link drains within
// limit × frame time after the flood, and a packet that arrives after that
// leaves at once. Before the fix the spacer booked every flooded packet
// and the link stayed blocked for about 500 s.
func TestDroppedPacketsBookNoTime(t *testing.T) {
	const (
		size  = 1000 // frame bytes; 1024 on the wire
		limit = 100
		flood = 10 * time.Second
	)
	frameTime := int64(1024 * 8 * time.Second / 1e6) // 8.192 ms at 1 Mbit/s
	gap := frameTime / 50
	for _, tc := range []struct{ name, params string }{
		{"buffer full", "rate 1mbit limit 100"},
		{"random loss", "rate 1mbit limit 100 loss 50%"},
		{"gilbert-elliott", "rate 1mbit limit 100 loss gemodel 5% 20% 90% 1%"},
		{"4-state loss", "rate 1mbit limit 100 loss state 5% 20%"},
		{"policer", "police 5mbit 32768 rate 1mbit limit 100"},
		{"spacer limit", "space 1mbit 50pkt limit 100 loss 10%"},
		{"with delay", "delay 20ms 2ms rate 1mbit limit 100 loss 30%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := mustNew(t, tc.params+" seed 9")
			delay := int64(e.Config().Delay)
			in := make([]Packet, 1)
			out := make([]Packet, MaxBatch)
			var now int64
			var lastStart int64
			for now = 0; now < int64(flood); now += gap {
				in[0] = Packet{Len: size}
				e.Receive(now, in, nil)
				for e.Release(now, out) == len(out) {
				}
				if q := e.queued(); q > limit {
					t.Fatalf("queue %d exceeds the limit %d", q, limit)
				}
			}
			end := now
			// Everything still queued must leave within limit frame times
			// (plus the largest delay the configuration can add: the delay
			// line is part of the buffer).
			bound := end + limit*frameTime + delay + 10*int64(e.Config().Jitter)
			for {
				due, ok := e.NextDue()
				if !ok {
					break
				}
				if due > bound {
					t.Fatalf("a queued packet departs at %v, %v after the flood; want within %v (limit × frame time)",
						time.Duration(due), time.Duration(due-end), time.Duration(bound-end))
				}
				lastStart = due
				e.Release(due, out)
			}
			s := e.Stats()
			if s.SpacerFree > bound+frameTime {
				t.Fatalf("spacer booked until %v, %v after the flood", time.Duration(s.SpacerFree), time.Duration(s.SpacerFree-end))
			}
			// A later packet must not wait for time booked for dropped ones.
			later := max(bound, s.SpacerFree) + frameTime
			for i := 0; i < 5; i++ {
				in[0] = Packet{Len: size}
				drops := e.Receive(later, in, nil)
				if len(drops) == 0 {
					break // lost on the wire (the loss cases): try the next one
				}
				later += frameTime
			}
			due, ok := e.NextDue()
			if !ok {
				t.Fatalf("no packet got through after the flood: %+v", e.Stats())
			}
			if wait := due - later; wait > delay+10*int64(e.Config().Jitter) {
				t.Fatalf("a packet after the flood waits %v beyond its delay", time.Duration(wait-delay))
			}
			// The link ran at its rate during the flood: every frame time
			// started one slot (sent or lost on the wire).
			slots := s.Sent + s.Lost
			if tc.name == "policer" || tc.name == "buffer full" {
				slots = s.Sent
			}
			if tc.name != "spacer limit" && tc.name != "policer" {
				want := uint64(int64(flood) / frameTime)
				if slots+2 < want {
					t.Errorf("only %d slots used in %v at 1 Mbit/s, want about %d", slots, flood, want)
				}
			}
			if s.Received != s.Sent+s.Dropped()+uint64(s.Queued) {
				t.Fatalf("counters do not add up: %+v", s)
			}
			t.Logf("%s: %s", tc.name, fmt.Sprintf("received %d sent %d policed %d spacer %d lost %d buffer full %d; last start %v after the flood",
				s.Received, s.Sent, s.Policed, s.SpacerDropped, s.Lost, s.BufferFull, time.Duration(lastStart-end)))
		})
	}
}
