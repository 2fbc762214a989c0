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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
