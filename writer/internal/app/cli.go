package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	shared "flashsale/sharding/config"
	"flashsale/writer/internal/config"
	"flashsale/writer/internal/store"
)

const usage = `usage: writer [command] [flags]

commands:
  run                          consume order events, expire orders (default)
  migrate                      apply pending PostgreSQL migrations and exit
  help                         print this text

Sales are created, listed, shown, paused, resumed and ended with flashctl
(` + "`flashctl sale --help`" + `).

Every command takes the flags below; each has an environment variable.
`

// Main runs the command line args (without the program name) and returns the
// process exit code: 0 on success (and for help and -version), 1 on
// failure, 2 on a usage error. ctx ends on SIGTERM or SIGINT.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cmd, rest := "run", args
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, rest = args[0], args[1:]
	}
	switch cmd {
	case "run", "migrate", "help":
	default:
		fmt.Fprintf(stderr, "writer: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	set := shared.NewSet("writer", usage)
	set.SetOutput(stdout)
	if cmd == "help" {
		c := config.Default()
		c.Register(set)
		set.PrintUsage(stdout)
		return 0
	}
	cfg, err := config.Load(set, rest, getenv)
	if errors.Is(err, shared.ErrHelp) || errors.Is(err, shared.ErrVersion) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "writer: configuration:\n%v\n", err)
		return 2
	}
	log := cfg.Log.Logger(stderr)
	if len(set.Args()) > 0 {
		fmt.Fprintf(stderr, "writer %s: unexpected argument %q\n", cmd, set.Args()[0])
		return 2
	}
	if code, known := dispatch(ctx, cmd, cfg, log, stderr); known {
		return code
	}
	fmt.Fprintf(stderr, "writer: unknown command %q\n\n%s", cmd, usage)
	return 2
}

// dispatch runs cmd; known is false for a command that does not exist.
func dispatch(ctx context.Context, cmd string, cfg config.Config, log *slog.Logger, stderr io.Writer) (code int, known bool) {
	var err error
	switch cmd {
	case "run":
		err = run(ctx, cfg, log)
	case "migrate":
		err = migrate(ctx, cfg, log)
	default:
		return 2, false
	}
	if err != nil {
		fmt.Fprintf(stderr, "writer %s: %v\n", cmd, err)
		return 1, true
	}
	return 0, true
}

func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	a, err := New(ctx, cfg, log)
	if err != nil && ctx.Err() != nil {
		log.Info("writer stopped before it was ready", "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx)
}

func migrate(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := store.Migrate(ctx, pool, log); err != nil {
		return err
	}
	log.Info("schema up to date")
	return nil
}
