// Package capture records packets seen on network interfaces into pcapng
// files with nanosecond timestamps, through AF_PACKET sockets opened in the
// interfaces' namespaces (hymn's nodes, VM helper namespaces, the emulator's
// helper namespace), so it needs no tcpdump. One file may hold several
// interfaces (one pcapng Interface Description Block each), every tap
// filtered by direction: what the interface sent, what it received, or
// both. Files are bounded: after Limit bytes of packet data a capture keeps
// counting but stops writing, and the file's Interface Statistics Blocks
// say how many packets the kernel and the limit dropped. Writing uses
// github.com/gopacket/gopacket/pcapgo's pcapng writer, which tcpdump,
// tshark and Wireshark read.
package capture
