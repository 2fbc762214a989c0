//go:build race

package cluster

// The race detector slows the emulator's forwarder several times over
// (measured: an emulated cut link's mean RTT 14.6 ms for 10 ms of delay,
// 10.4 ms without it), so timing bounds widen under it.
const raceEnabled = true
