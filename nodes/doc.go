// Package nodes runs the nodes of a topology in network namespaces: hosts,
// switches (a Linux bridge inside the switch's own namespace, STP optional;
// or, as --switch bpf, no bridge but package bpfswitch's learning program
// on each port) and routers (IPv4 forwarding in their namespace only).
//
// Every node offers two ways to run commands. Cmd goes through a persistent
// shell started on first use, so Mininet's semantics hold: the working
// directory, variables and background jobs persist between calls and the
// output comes back as text. Exec runs a program directly, for Go callers
// that want stdout, stderr and the exit status. Cancelling the context kills
// what the call started. Node is the small interface every backend
// implements: namespace nodes here, VM nodes in package vm.
package nodes
