package shellproc

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

const testNonce = "0123456789abcdef0123456789abcdef"

// feedAll splits stream at the given cut points and feeds the pieces,
// returning what was passed on, the status, whether the end was found and
// what followed it.
func feedAll(f *framer, stream []byte, cuts []int) (out []byte, status int, done bool, rest []byte) {
	prev := 0
	for _, c := range append(cuts, len(stream)) {
		if c < prev || c > len(stream) {
			continue
		}
		o, st, d, r := f.feed(stream[prev:c])
		out = append(out, o...)
		prev = c
		if d {
			return out, st, true, append(r, stream[c:]...)
		}
	}
	return out, 0, false, nil
}

func TestFramerSplits(t *testing.T) {
	marker := "\x01hymn-" + testNonce + ":"
	cases := []struct {
		name, stream, out, rest string
		status                  int
		done                    bool
	}{
		{"plain", "hello\n" + marker + "0\x01", "hello\n", "", 0, true},
		{"status", "x" + marker + "127\x01after", "x", "after", 127, true},
		{"forged seq marker", "\x01hymn-1:0\x01late\n" + marker + "0\x01", "\x01hymn-1:0\x01late\n", "", 0, true},
		{"forged nonce format", "\x01hymn-00000000000000000000000000000000:0\x01x" + marker + "3\x01", "\x01hymn-00000000000000000000000000000000:0\x01x", "", 3, true},
		{"lone ctrl-a", "\x01\x01\x01" + marker + "1\x01", "\x01\x01\x01", "", 1, true},
		{"marker without status", marker + "\x01" + marker + "2\x01", marker + "\x01", "", 2, true},
		{"marker with garbage status", marker + "9x\x01" + marker + "2\x01", marker + "9x\x01", "", 2, true},
		{"marker with long status", marker + "999999999999999\x01" + marker + "2\x01", marker + "999999999999999\x01", "", 2, true},
		{"unfinished", "abc\x01hymn-", "abc", "", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			stream := []byte(c.stream)
			// Every way of cutting the stream in two, and byte by byte.
			splits := [][]int{nil}
			for i := range stream {
				splits = append(splits, []int{i})
			}
			var each []int
			for i := range stream {
				each = append(each, i)
			}
			splits = append(splits, each)
			for _, cuts := range splits {
				f := newFramer(testNonce)
				out, st, done, rest := feedAll(f, stream, cuts)
				if !done {
					out = append(out, f.flush()...)
				}
				if done != c.done || st != c.status || string(rest) != c.rest {
					t.Fatalf("cut at %v: done=%v status=%d rest=%q, want %v %d %q", cuts, done, st, rest, c.done, c.status, c.rest)
				}
				want := c.out
				if !c.done {
					want = c.stream
				}
				if string(out) != want {
					t.Fatalf("cut at %v: output %q, want %q", cuts, out, want)
				}
			}
		})
	}
}

// TestFramerHoldsLittle: however much output there is, and however many
// \x01 bytes it has, the framer holds back less than a marker and status.
func TestFramerHoldsLittle(t *testing.T) {
	f := newFramer(testNonce)
	r := rand.New(rand.NewPCG(1, 2))
	chunk := make([]byte, 4096)
	for range 2000 {
		for i := range chunk {
			chunk[i] = "\x01hymn-:0123456789abcdefy\n"[r.IntN(25)]
		}
		if r.IntN(4) == 0 {
			copy(chunk[len(chunk)-10:], f.marker)
		}
		if _, _, done, _ := f.feed(chunk); done {
			t.Fatal("random output ended the command")
		}
		if len(f.held) > len(f.marker)+maxStatusLen {
			t.Fatalf("framer holds %d bytes", len(f.held))
		}
	}
}

// FuzzFramer feeds arbitrary streams, cut anywhere, with the real marker
// somewhere or nowhere: the framer never panics, holds back a bounded
// amount, loses no byte, and finds the end exactly where a whole-stream
// search does.
func FuzzFramer(f *testing.F) {
	f.Add([]byte("hello\n"), []byte{}, uint16(0), uint16(3), true)
	f.Add([]byte("\x01hymn-1:0\x01late"), []byte("rest"), uint16(5), uint16(1), true)
	f.Add([]byte("\x01\x01hymn-"+testNonce), []byte("7\x01"), uint16(2), uint16(9), false)
	f.Add([]byte("yyyyyyyy\x01"), []byte{}, uint16(1), uint16(1), false)
	f.Fuzz(func(t *testing.T, before, after []byte, cut1, cut2 uint16, withMarker bool) {
		marker := "\x01hymn-" + testNonce + ":"
		stream := bytes.Clone(before)
		end := "42\x01"
		if withMarker {
			stream = append(stream, marker+end...)
		}
		stream = append(stream, after...)
		fr := newFramer(testNonce)
		cuts := []int{int(cut1) % (len(stream) + 1), int(cut2) % (len(stream) + 1)}
		if cuts[0] > cuts[1] {
			cuts[0], cuts[1] = cuts[1], cuts[0]
		}
		var out []byte
		prev, done, status := 0, false, 0
		var rest []byte
		for _, c := range append(cuts, len(stream)) {
			o, st, d, r := fr.feed(stream[prev:c])
			out = append(out, o...)
			if len(fr.held) > len(fr.marker)+maxStatusLen {
				t.Fatalf("holds %d bytes", len(fr.held))
			}
			if d {
				done, status, rest = true, st, append(bytes.Clone(r), stream[c:]...)
				break
			}
			prev = c
		}
		if !done {
			out = append(out, fr.flush()...)
			if !bytes.Equal(out, stream) {
				t.Fatalf("lost bytes: got %q, want %q", out, stream)
			}
			if withMarker {
				t.Fatalf("real marker not found in %q", stream)
			}
			return
		}
		// The end the framer found must be a well-formed marker at the
		// first place a whole-stream scan finds one, with rest after it.
		if !bytes.HasPrefix(stream, out) || !bytes.HasSuffix(stream, rest) || len(out)+len(rest) > len(stream) {
			t.Fatalf("output %q and rest %q do not frame the stream %q", out, rest, stream)
		}
		mid := stream[len(out) : len(stream)-len(rest)]
		digits, ok := bytes.CutPrefix(mid, []byte(marker))
		if !ok || len(digits) < 2 || digits[len(digits)-1] != 1 {
			t.Fatalf("%q is not a marker", mid)
		}
		if st, ok := parseStatus(digits[:len(digits)-1]); !ok || st != status {
			t.Fatalf("status %d from %q", status, mid)
		}
		if i := firstEnd(stream, []byte(marker)); i != len(out) {
			t.Fatalf("end found at %d, first well-formed marker at %d", len(out), i)
		}
	})
}

// firstEnd is the reference: the first marker followed by 1 to
// maxStatusLen digits and \x01.
func firstEnd(stream, marker []byte) int {
	for i := 0; i+len(marker) <= len(stream); i++ {
		if !bytes.HasPrefix(stream[i:], marker) {
			continue
		}
		after := stream[i+len(marker):]
		j := bytes.IndexByte(after, 1)
		if j < 0 || j > maxStatusLen {
			continue
		}
		if _, ok := parseStatus(after[:j]); ok {
			return i
		}
	}
	return -1
}
