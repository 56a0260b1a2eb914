// Command writer owns the flash sale's PostgreSQL: it consumes order events
// from Kafka, persists them idempotently, applies payments and cancellations,
// expires unpaid orders and returns their stock to Redis. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"flashsale/writer/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := app.Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
