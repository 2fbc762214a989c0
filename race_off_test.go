//go:build !race

package hymn

const raceEnabled = false
