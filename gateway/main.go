// Command gateway is the flash sale's public HTTP front: see gateway/README.md
// for its flags and environment variables. main only wires: config -> app ->
// serve until SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"flashsale/gateway/internal/app"
	"flashsale/gateway/internal/config"
)

func main() {
	cfg, err := config.Load(os.Args[1:], nil, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gateway: invalid configuration:\n%v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	a, err := app.New(ctx, cfg, app.Options{})
	if err == nil {
		err = a.Serve(ctx)
	}
	if err != nil {
		slog.Error("gateway failed", "err", err)
		os.Exit(1)
	}
}
