package emulator

import (
	"fmt"
	"testing"
	"time"
)

func TestParseSoftnet(t *testing.T) {
	// Two CPUs, the kernel's 13-column format (the last column is the CPU
	// number), and an old 11-column line without it.
	in := "0b8292c1 00000000 00000153 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n" +
		"0000000a 00000000 000001bb 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000002 00000000 00000000\n"
	got, ok := parseSoftnet([]byte(in), nil)
	if !ok || len(got) != 3 || got[0] != 0x0b8292c1 || got[1] != 0 || got[2] != 10 {
		t.Fatalf("got %v %v; want [0xb8292c1 0 10] (CPU numbers from column 13)", got, ok)
	}
	old := "00000005 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n00000007 0 0\n"
	if got, ok := parseSoftnet([]byte(old), nil); !ok || len(got) != 2 || got[0] != 5 || got[1] != 7 {
		t.Fatalf("old format: %v %v", got, ok)
	}
	if _, ok := parseSoftnet([]byte("zz 00\n"), nil); ok {
		t.Fatal("garbage parsed")
	}
}

func TestSharesWithSender(t *testing.T) {
	// The thread forwarded 10 000 frames: its own deliveries account for
	// 10 000 packets on its CPU; the sender's would add 10 000 more.
	for _, c := range []struct {
		excess int64
		want   bool
	}{{0, false}, {2000, false}, {9000, true}, {10000, true}, {-500, false}} {
		t.Run(fmt.Sprintf("excess %d", c.excess), func(t *testing.T) {
			t.Parallel()
			if got := sharesWithSender(c.excess, 10000); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

// TestPlacementOpensWhenBusy: a quiet forwarder holds no descriptor and no
// buffer (a topology of thousands of links has thousands of them); the
// first busy interval opens the counters and reads a baseline.
func TestPlacementOpensWhenBusy(t *testing.T) {
	var p placement
	p.init()
	defer p.close()
	if p.disabled {
		t.Skip("one CPU or no /proc/net/softnet_stat: placement is off")
	}
	now := int64(time.Second)
	p.check(now, placeMinFrames-1)
	if p.fd >= 0 || p.buf != nil || p.prev != nil {
		t.Fatalf("quiet interval: fd %d, buffer %d B, prev %v", p.fd, len(p.buf), p.prev)
	}
	now += int64(placeInterval)
	p.check(now, 3*placeMinFrames)
	if p.fd < 0 || len(p.prev) == 0 {
		t.Fatalf("busy interval: fd %d, prev %v", p.fd, p.prev)
	}
	now += int64(placeInterval)
	p.check(now, 3*placeMinFrames+10)
	if p.prev != nil {
		t.Fatalf("quiet again: prev %v kept", p.prev)
	}
}
