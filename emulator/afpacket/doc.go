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
//
// With Options.Offloads the sockets use PACKET_VNET_HDR: a virtio_net_hdr
// before every frame tells whether it is a GSO super-frame (up to 64 KiB,
// cut into segments only when it reaches a real wire) and where a checksum
// left for the NIC starts, so the interfaces keep TSO, GSO and checksum
// offload on and TCP through a zero-delay emulated veth link runs at half
// a plain link's rate or more instead of a sixth. Slots stay sized for the
// MTU: a frame longer than a slot is queued whole on the RX socket
// (PACKET_COPY_THRESH; its slot, marked TP_STATUS_COPY, still carries the
// kernel's time stamp and VLAN tag) and read with one recvfrom, and on the
// way out it goes through a third, ringless socket after the ring frames
// queued before it. So the rings cost the same memory with or without
// offloads, and a super-frame costs one system call each way.
package afpacket
