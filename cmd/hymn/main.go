// Command hymn is the Mininet-compatible network emulator; see package cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hymn-net/hymn/cli"
)

func main() {
	// SIGINT is routed by cli (Ctrl-C in the mininet> shell interrupts the
	// node command, not hymn); SIGTERM ends the run cleanly.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	code := cli.Execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
