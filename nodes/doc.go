// Package nodes runs the nodes of a topology in network namespaces: hosts,
// switches and routers (IPv4 forwarding in their namespace only).
//
// A switch forwards through one plane, a kind per file behind the
// switchPlane interface (plane.go, where switchKinds lists them): a Linux
// bridge inside the switch's own namespace, STP optional (bridge.go); no
// bridge but package bpfswitch's learning program on each port
// (bpf.go); an Open vSwitch bridge with daemons of its own (ovs.go); or a
// bridge of the network's shared OpenFlow Open vSwitch (ovs_net.go).
//
// Every node offers two ways to run commands. Cmd goes through a persistent
// shell started on first use, so Mininet's semantics hold: the working
// directory, variables and background jobs persist between calls and the
// output comes back as text. Exec runs a program directly, for Go callers
// that want stdout, stderr and the exit status. Cancelling the context kills
// what the call started. Node is the small interface every backend
// implements: namespace nodes here, VM nodes in package vm.
package nodes
