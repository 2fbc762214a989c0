package emulator

import (
	"math"
	"time"
)

// ParseTime reads a time as the text grammar does ("10ms", "500us", "1s";
// a bare number is microseconds, as in NetEm). field names the value in
// errors.
func ParseTime(field, s string) (time.Duration, error) { return parseTime(field, s) }

// WirePacket is the bytes a full-size frame takes on the wire (1518-byte
// frame, preamble, start delimiter and inter-frame gap): the unit of a
// spacer limit given in packets ("space 10mbit 100pkt").
const WirePacket = wirePacket

// WireBytes is the bytes that packets full-size frames take on the wire.
func WireBytes(packets int) uint64 { return uint64(math.Round(float64(packets) * wirePacket)) }
