package emulator

import (
	"bytes"
	"math/bits"
	"testing"
	"time"
)

// The forwarder carries out what the emulator decides on real frames:
// twins are whole copies in buffers of their own, ECN-capable frames the
// loss model picks arrive marked CE with a valid IPv4 checksum, a
// corrupted frame differs from the one sent in exactly one bit, and the
// accounting balances with the twins counted.
func TestForwarderNetem(t *testing.T) {
	for _, c := range []struct{ name, cfg string }{
		{"duplicate", "seed 2 duplicate 100%"},
		{"ecn", "seed 2 loss 100% ecn"},
		{"corrupt", "seed 2 corrupt 100%"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := newMemPort("a"), newMemPort("b")
			f, err := NewForwarder(a, b, ForwarderConfig{AtoB: mustParse(t, c.cfg), BtoA: DefaultConfig()})
			if err != nil {
				t.Fatal(err)
			}
			f.Start()
			const n = 200
			var orig [][]byte
			for i := range n {
				fr := udpFrame(1, false) // ECT(1)
				fr[50] = byte(i)         // a payload byte tells frames apart
				fr[51] = byte(i >> 8)
				ipCsumFix(fr)
				orig = append(orig, fr)
				a.push(append([]byte(nil), fr...))
			}
			want := n
			if c.name == "duplicate" {
				want = 2 * n
			}
			for deadline := time.Now().Add(5 * time.Second); b.Stats().TxFrames < uint64(want) && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			f.Stop()
			sent, _ := b.sentFrames()
			if len(sent) != want {
				t.Fatalf("%d frames sent, want %d", len(sent), want)
			}
			st := f.Stats(AtoB)
			if acc := st.Accounting(); !acc.Balanced() {
				t.Errorf("accounting: %v (duplicated %d)", acc, acc.Duplicated)
			}
			for i, fr := range sent {
				id := int(fr[50]) | int(fr[51])<<8
				if c.name == "corrupt" {
					id = i // FIFO, no delay: in order (the flip may hit the id)
				}
				o := orig[id]
				switch c.name {
				case "duplicate":
					if !bytes.Equal(fr, o) {
						t.Fatalf("frame %d: a twin differs from its original", i)
					}
				case "ecn":
					if fr[15]&3 != 3 || !udpValid(fr) {
						t.Fatalf("frame %d: ECN %#x, checksums valid %v", i, fr[15]&3, udpValid(fr))
					}
				case "corrupt":
					diff, at := 0, 0
					for k := range fr {
						if d := bits.OnesCount8(fr[k] ^ o[k]); d > 0 {
							diff, at = diff+d, k
						}
					}
					// A flip in the Ethernet header is covered by no
					// checksum of the frame's (the FCS is the sender's).
					if diff != 1 || (at >= 14 && udpValid(fr)) {
						t.Fatalf("frame %d differs in %d bits, want 1; passes the receiver's checksums: %v", i, diff, udpValid(fr))
					}
				}
			}
			switch c.name {
			case "duplicate":
				if st.Emulator.Duplicated != n {
					t.Errorf("duplicated %d", st.Emulator.Duplicated)
				}
			case "ecn":
				if st.Emulator.Marked != n || st.Emulator.Lost != 0 {
					t.Errorf("marked %d, lost %d", st.Emulator.Marked, st.Emulator.Lost)
				}
			case "corrupt":
				if st.Emulator.Corrupted != n {
					t.Errorf("corrupted %d", st.Emulator.Corrupted)
				}
			}
		})
	}
}

// ipCsumFix recomputes an IPv4 frame's header and UDP checksums after a
// test changed its payload.
func ipCsumFix(f []byte) {
	ip := f[14:34]
	ip[10], ip[11] = 0, 0
	s := ^sum16(ip, 0)
	ip[10], ip[11] = byte(s>>8), byte(s)
	udp := f[34:]
	udp[6], udp[7] = 0, 0
	u := ^sum16(udp, uint32(sum16(ip[12:20], 17+uint32(len(udp)))))
	udp[6], udp[7] = byte(u>>8), byte(u)
}
