package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hymn-net/hymn/kube/kubecli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	code := kubecli.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
