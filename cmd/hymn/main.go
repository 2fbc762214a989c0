// Command hymn is the Mininet-compatible network emulator; see package cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/cli"
)

func main() {
	// hymn owns namespaces, links and processes it must remove before it
	// exits, so no signal may end it half-way. A closed pipe on stdout or
	// stderr (hymn ... | head) would by default kill it at the next
	// progress line: ignored, the writes fail quietly and the run ends as
	// it would have. SIGINT is routed by cli (Ctrl-C in the mininet> shell
	// interrupts the node command, not hymn); SIGTERM and SIGHUP (the
	// terminal went away) end the run cleanly.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	code := cli.Execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	// DPDK's environment (emulated VF links with emulator=dpdk) lives as
	// long as the process, since it cannot start twice in one; it ends
	// here, its runtime directory with it.
	if err := hymn.CleanupDPDK(); err != nil {
		_, _ = os.Stderr.WriteString("hymn: DPDK cleanup: " + err.Error() + "\n")
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
