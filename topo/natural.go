package topo

import (
	"strconv"
	"unicode"
)

// NaturalLess orders names as Mininet's natural() sort key does: runs of
// digits compare as numbers, so "h2" sorts before "h10".
func NaturalLess(a, b string) bool {
	for a != "" && b != "" {
		ca, restA := nextChunk(a)
		cb, restB := nextChunk(b)
		if ca != cb {
			na, errA := strconv.Atoi(ca)
			nb, errB := strconv.Atoi(cb)
			switch {
			case errA == nil && errB == nil:
				if na != nb {
					return na < nb
				}
				// Equal values with different spellings ("01" vs "1").
				return ca < cb
			case errA == nil:
				// Python compares int < str as an error; Mininet names never
				// hit this, so order digits first for a total order.
				return true
			case errB == nil:
				return false
			default:
				return ca < cb
			}
		}
		a, b = restA, restB
	}
	return len(a) < len(b)
}

// nextChunk splits off the leading run of digits or of non-digits.
func nextChunk(s string) (chunk, rest string) {
	digit := unicode.IsDigit(rune(s[0]))
	i := 1
	for i < len(s) && unicode.IsDigit(rune(s[i])) == digit {
		i++
	}
	return s[:i], s[i:]
}
