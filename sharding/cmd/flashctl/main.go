// Command flashctl is the operator's tool for a flash sale's stock in Redis:
// plan, preload, status, reshard and reconcile. See package flashsale/sharding/ops.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"flashsale/sharding/ops"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	fi, err := os.Stdout.Stat()
	tty := err == nil && fi.Mode()&os.ModeCharDevice != 0
	code := ops.Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, tty)
	stop()
	os.Exit(code)
}
