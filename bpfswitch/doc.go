// Package bpfswitch is a MAC-learning Ethernet switch made of one eBPF
// program on the tc ingress hook of each of its ports: hymn's switch kind
// "bpf" (--switch bpf), an alternative to a Linux bridge.
//
// # Why
//
// A Linux bridge is cheap to make but slow to free: unregistering one
// calls rcu_barrier() (br_dev_uninit -> br_multicast_dev_del), about 20 ms
// each, one after another under the RTNL lock. Deleting the namespaces of
// linear,100 returns at once, but the kernel then works 2.1 s more to free
// its 100 bridges, against 0.3 s for hymn's own build and teardown. Veths
// with a clsact qdisc and a BPF filter have no such barrier: the same
// namespaces are freed within tenths of a second. Nothing else changes
// for the hosts: a switch's ports are still veth ends. Package hymn puts
// all the BPF switches of a network in one namespace (each switch's
// program sees only its own ports), one namespace to make and free
// instead of one per switch.
//
// # What the program does
//
// As a Linux bridge without STP does, for a frame arriving on port P:
//
//   - a frame shorter than an Ethernet header, or whose source is a group
//     address or zero, is dropped; so is one to an IEEE 802.1D reserved
//     group 01:80:c2:00:00:01..0f (pause, LACP, LLDP...), which a bridge
//     never forwards (01:80:c2:00:00:00, STP's, is forwarded like any
//     group address, as a bridge without STP does);
//   - the source is learned: source -> P with the time, in a hash map one
//     per switch, written only when new, moved, or older than a second (a
//     write per frame would cost more than forwarding it);
//   - an IPv6 message meant for routers only (a router solicitation, an MLD
//     report or done) is dropped until the switch has seen a router on any
//     port (a router advertisement, an MLD query, PIM); from then on it
//     floods, as a bridge without a querier floods it. Every host sends
//     several as it starts (and solicitations again at 4, 8, 16... s), no
//     host acts on another's, and flooded through 10 000 nodes they were
//     the whole cost of a large network: linear,2500 (5000 nodes) spent
//     286 s of softirq time forwarding them, 2.8 s without;
//   - a destination that is a group address (broadcast, multicast), unknown
//     or older than Ageing (300 s, the bridge's ageing time) is flooded: a
//     bpf_clone_redirect to every other port, then the frame is dropped;
//   - a destination known on another port gets the frame alone
//     (bpf_redirect to that port's egress); one known on P gets nothing.
//
// The ports' indexes are an array map with one value, the flood list, which
// Attach and Detach rewrite. The flood loop is bounded: the verifier walks
// it once per possible iteration (about 50 µs of load time per port of
// room on a 2-vCPU paravirtualised guest), so a switch loads a program
// with room for the ports it is told it will have, and a larger one (at
// least 8 ports, a power of two), with a larger list, when a port beyond
// that is attached, up to MaxPorts (1024: the verifier refuses
// much longer loops); Attach refuses more. The learning table holds 4096
// addresses; beyond that frames to the unlearned ones are flooded.
//
// The program is assembled from raw instructions (prog.go, on bpfsys.Asm)
// and loaded through bpf(2) (sys.go): no compiler, no libbpf. The maps and
// the program are kernel objects that live while a descriptor or a filter
// holds them: Close drops the descriptors, and the filters go with their
// devices, so deleting the switches' namespace frees everything.
//
// # Differences from a bridge
//
// There is no bridge device: nothing to give an address to, no STP, no
// VLAN filtering, no IGMP/MLD snooping (multicast is flooded, as a bridge
// with snooping off does, but for the router messages above, which a host
// on the segment no longer sees while there is no router). A port going down keeps its learned entries (a
// bridge flushes them); a port deleted or made again under its name is
// forgotten (Detach, Attach). The switch's namespace should have IPv6 off,
// so that its ports send nothing of their own (package nodes does that).
package bpfswitch
