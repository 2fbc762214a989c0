//go:build race

package hymn

// raceEnabled: the race detector slows every goroutine, the forwarders'
// included, several times over; real-time bounds that hold to microseconds
// without it (the schedule's 1 ms) get a wider bound under it.
const raceEnabled = true
