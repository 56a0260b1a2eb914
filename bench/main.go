// Command bench is the flash-sale load-test harness: it mints user tokens,
// drives the gateway with a scenario (steady, flash-crowd, bots, retry-storm)
// in open or closed loop, prints a live progress line and a summary, writes
// result.json and a self-contained report.html, and with -audit checks the
// sale's invariants in PostgreSQL and Redis (exit code 3 when one fails).
// Run `bench -h` for the flags.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"flashsale/bench/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
