// Package cli is the hymn command: cobra commands whose root takes Mininet's
// mn flags (--topo, --switch, --test, ...) and whose subcommands are run
// (a topology file), clean, list (running networks), emulate (the
// standalone link emulator), measure, graph, sriov, vm and version. It holds no logic the Go API lacks: each command
// parses its input, calls package hymn and prints Mininet's lines.
//
// Errors caused by bad input wrap ErrUsage and exit with status 2; other
// failures exit with status 1. Neither prints a stack trace.
package cli
