package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hymn-net/hymn/kube/kubecli"
)

func main() {
	// SIGINT is Execute's: it interrupts a node command in the shell.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	code := kubecli.Execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
