// Command gateway is the flash sale's public HTTP front: see gateway/README.md
// for its flags and environment variables. main only wires: config -> app ->
// serve until SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"flashsale/gateway/internal/app"
	"flashsale/gateway/internal/config"
	shared "flashsale/sharding/config"
)

func main() {
	cfg, err := config.Load(os.Args[1:], nil, os.Stdout)
	if errors.Is(err, shared.ErrHelp) || errors.Is(err, shared.ErrVersion) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gateway: invalid configuration:\n%v\n", err)
		os.Exit(2)
	}
	log := cfg.Log.Logger(os.Stderr)
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	a, err := app.New(ctx, cfg, app.Options{Log: log})
	if err != nil && ctx.Err() != nil {
		log.Info("gateway stopped before it was ready", "err", err)
		return
	}
	if err == nil {
		err = a.Serve(ctx)
	}
	if err != nil {
		log.Error("gateway failed", "err", err)
		os.Exit(1)
	}
}
