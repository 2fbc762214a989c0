package emulator

import "fmt"

// Direction names a direction of a link between A and B: the ports of a
// forwarder, the two ends of a link in a topology (a is its first node), or
// the two nodes as a caller names them. It is the one direction type of
// hymn: the root package, link parameters ("a>b.delay") and the CLI's
// a>b, b>a and both all use it.
type Direction int

// The two directions of a link, and Both for a change that applies to
// each. AtoB and BtoA index per-direction arrays ([2]Config); Both never
// does.
const (
	AtoB Direction = iota
	BtoA
	Both
)

// Directions are the two directions of a link, in index order.
var Directions = [2]Direction{AtoB, BtoA}

// String returns "a>b", "b>a" or "both": the prefix of per-direction link
// parameters and the CLI's spelling.
func (d Direction) String() string {
	switch d {
	case AtoB:
		return "a>b"
	case BtoA:
		return "b>a"
	case Both:
		return "both"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// Valid reports whether d is AtoB, BtoA or Both.
func (d Direction) Valid() bool { return d >= AtoB && d <= Both }

// Includes reports whether a change in direction d applies to direction x
// (AtoB or BtoA).
func (d Direction) Includes(x Direction) bool { return d == Both || d == x }

// Reverse returns the opposite direction (Both stays Both).
func (d Direction) Reverse() Direction {
	switch d {
	case AtoB:
		return BtoA
	case BtoA:
		return AtoB
	}
	return d
}

// ParseDirection accepts "a>b", "b>a", and "both" or "" for Both.
func ParseDirection(s string) (Direction, error) {
	switch s {
	case "", "both":
		return Both, nil
	case "a>b":
		return AtoB, nil
	case "b>a":
		return BtoA, nil
	}
	return 0, fmt.Errorf("direction %q: use a>b, b>a or both", s)
}
