// Package afpacket is the pure-Go AF_PACKET port of hymn's link emulator.
//
// Each Port holds two packet sockets on one interface, both with TPACKET_V2
// rings mapped into the process: an RX ring (protocol ETH_P_ALL,
// PACKET_IGNORE_OUTGOING so the port does not see what the other direction
// sends out of the same interface) and a TX ring (protocol 0, so it never
// receives, with PACKET_QDISC_BYPASS). Receiving reads frames straight out
// of shared memory without a system call; sending fills TX slots and kicks
// the kernel with one sendto per batch.
//
// V2 rather than V3 for RX: a V3 ring hands a partly filled block to user
// space only when its retire timeout (at least 1 ms) fires, which would add
// about a millisecond to every packet of a quiet link (docs/platform.md §3).
// V2 marks each frame ready on its own, and poll wakes the reader as soon
// as the first one is, so a sleeping port adds only the scheduler's wake-up
// time.
//
// Frames that the kernel delivers with their VLAN tag stripped into the
// ring header are re-tagged on receipt, so the emulator forwards exactly
// the frame that was sent.
package afpacket
