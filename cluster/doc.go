// Package cluster runs one topology across several workers (machines,
// or Kubernetes pods): each worker runs its part — the nodes package
// partition gave it, the links between them — with exactly the code a
// single machine uses (hymn.Network), and every cut link (ends on two
// workers) becomes a VXLAN tunnel between the workers' addresses.
//
// A cut link is one VXLAN device per side, one VNI per link (derived from
// a random key the coordinator puts in every spec, so both sides agree
// without talking and nobody else can guess it; or VNIBase plus the
// link's index when asked), local = this worker's address, remote = the
// peer worker's, UDP port 4789 unless configured. Since the kernel's
// device takes its VNI's frames from any sender, each worker installs an
// nftables table of its run in the underlay that drops them unless they
// come from the link's peer to this worker's address (filter.go).
// The device is created in the worker's own namespace (where the underlay
// lives: its UDP socket stays there) and moved into the node's namespace
// under the link's planned interface name, address and MAC, so addresses,
// routes, bridges and captures treat it like a veth end. Its MTU is the
// link's (1500 by default): the underlay must carry 50 bytes more (1550
// over IPv4: inner Ethernet 14, VXLAN 8, UDP 8, IPv4 20), which the worker
// checks against the route to the peer before building anything. A cut
// link with emulation parameters is emulated on the sending side of each
// direction: the worker holding the link's first end runs a>b, the other
// b>a, each with an emulator between the node's veth and the VXLAN device
// in a helper namespace; the received direction goes from the VXLAN
// device to the node's veth by an XDP redirect (links.RedirectXDP), in the
// kernel, or through the forwarder untouched where XDP is missing.
//
// The worker (hymn worker, Worker) speaks JSON lines: it reports "ready"
// once its part is built, is told its peers' addresses ("link"), reports
// "linked" once its VXLAN links are up, answers "stats" and "exec" (a
// command in one of its nodes), re-creates its side of the cut links
// shared with a replaced worker toward that worker's new address on
// "relink" (reporting "relinked"), and on "stop", end of input or SIGTERM
// tears everything down and reports "stopped". Cluster.Replace runs a
// worker that died (a killed pod) again: same spec, new address; every
// interface has a MAC derived from its name (unless the plan gives one),
// so the new part's hosts keep theirs and their peers' neighbour tables
// stay right. A coordinator (Run) drives
// the workers through a Transport: Local runs them as processes in
// separate network namespaces ("machines") on this host, joined by a
// bridge; a Kubernetes transport (pods created through the API server,
// the same worker binary inside) is the next backend behind the same
// interface.
package cluster
