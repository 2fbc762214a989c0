// Package links creates and configures the links between nodes: veth pairs
// named as Mininet names them (h1-eth0, s1-eth1), created with both ends
// directly in their target namespaces so nothing ever appears in the root
// namespace, and their addressing (IP, MAC, MTU) and state (up/down).
//
// RedirectXDP joins two devices one way in the kernel (an XDP redirect),
// for a direction that crosses an emulator's ports but needs no emulation.
//
// It knows namespaces only through the small Endpoint interface, so the
// node backends stay out of it.
package links
