package emulator

import "testing"

// TestLossBurstsCounted: Stats.LossBursts counts the runs of packets the
// loss model dropped in a row, as a receiver numbering the packets would
// see them.
func TestLossBurstsCounted(t *testing.T) {
	cfg, err := Build(GilbertElliottLoss(0.05, 0.3, 1, 0), Seed(3))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var bursts, lost uint64
	prevLost := false
	var dropped []Packet
	out := make([]Packet, 8)
	for i := 0; i < 20000; i++ {
		dropped = e.Receive(int64(i)*1000, []Packet{{Handle: uint64(i), Len: 100}}, dropped[:0])
		isLost := len(dropped) == 1
		if isLost {
			lost++
			if !prevLost {
				bursts++
			}
		}
		prevLost = isLost
		for e.Release(int64(i)*1000, out) > 0 {
		}
	}
	s := e.Stats()
	t.Logf("Stats: lost %d in %d bursts", s.Lost, s.LossBursts)
	if s.Lost != lost || s.LossBursts != bursts || bursts == 0 || bursts == lost {
		t.Errorf("Stats: lost %d in %d bursts; the packets: lost %d in %d bursts", s.Lost, s.LossBursts, lost, bursts)
	}
}
