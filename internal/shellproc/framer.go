package shellproc

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// maxStatusLen bounds the exit status digits after a marker: the shell
// prints $?, 0-255, but the framer holds back no more than this.
const maxStatusLen = 11

// framer finds the end of one command in the shell's output stream. The
// end is "\x01hymn-<nonce>:<status>\x01", where nonce is 128 random bits
// drawn for this command alone, so nothing a command prints can end it.
// A framer holds back only the bytes that may still turn out to be the
// start of the marker (at most the marker and its status), so memory stays
// flat however much a command prints.
type framer struct {
	marker []byte // "\x01hymn-<nonce>:"
	held   []byte
	buf    []byte // reused to join held and the next chunk
}

// newNonce returns 128 bits from crypto/rand in hex: a command cannot
// guess it, and it is only written to the shell once the command that
// could see it has been read (see Shell.RunStream).
func newNonce() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("drawing a shell marker nonce: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func newFramer(nonce string) *framer {
	return &framer{marker: []byte("\x01hymn-" + nonce + ":")}
}

// feed takes the next bytes of the stream. It returns the bytes that are
// the command's output (valid until the next call), and once the marker is
// complete, done with the status and the bytes that followed the marker
// (output of background jobs, which belongs to what comes next). After
// done, the framer must not be fed again.
func (f *framer) feed(p []byte) (out []byte, status int, done bool, rest []byte) {
	data := p
	if len(f.held) > 0 {
		f.buf = append(append(f.buf[:0], f.held...), p...)
		data = f.buf
	}
	f.held = f.held[:0]
	from := 0
	for {
		i := bytes.Index(data[from:], f.marker)
		if i < 0 {
			break
		}
		i += from
		after := data[i+len(f.marker):]
		if j := bytes.IndexByte(after[:min(len(after), maxStatusLen+1)], '\x01'); j >= 0 {
			if st, ok := parseStatus(after[:j]); ok {
				return data[:i], st, true, after[j+1:]
			}
		} else if len(after) <= maxStatusLen {
			// The status may still be coming.
			f.held = append(f.held, data[i:]...)
			return data[:i], 0, false, nil
		}
		// Not the shape the shell prints: output that happens to contain
		// the marker (it cannot, unless the nonce leaked). Pass it on.
		from = i + 1
	}
	keep := partialSuffix(data[from:], f.marker)
	f.held = append(f.held, data[len(data)-keep:]...)
	return data[:len(data)-keep], 0, false, nil
}

// flush returns what the framer holds back, for when the stream ends.
func (f *framer) flush() []byte {
	h := f.held
	f.held = nil
	return h
}

// parseStatus reads 1 to maxStatusLen decimal digits.
func parseStatus(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > maxStatusLen {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// partialSuffix returns the length of the longest suffix of data that is a
// proper prefix of marker (which starts with \x01, so only suffixes
// starting at a \x01 byte are candidates).
func partialSuffix(data, marker []byte) int {
	start := max(0, len(data)-len(marker)+1)
	for i := start; i < len(data); i++ {
		if data[i] == marker[0] && bytes.HasPrefix(marker, data[i:]) {
			return len(data) - i
		}
	}
	return 0
}
