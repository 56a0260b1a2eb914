package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"flashsale/sharding/stock"
	"flashsale/writer/internal/config"
	"flashsale/writer/internal/sale"
	"flashsale/writer/internal/store"
)

const usage = `usage: writer [command] [flags]

commands:
  run                          consume order events, expire orders (default)
  migrate                      apply pending PostgreSQL migrations and exit
  sale create --file F [--shards S]
                               create a sale from a JSON or YAML file
  sale list                    list sales
  sale show ID                 show a sale: orders by status, Redis stock per shard

Every command takes the flags below; each has an environment variable.
`

// Main runs the command line args (without the program name) and returns the
// process exit code: 0 on success, 1 on failure, 2 on a usage error. ctx ends
// on SIGTERM or SIGINT.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cmd, rest := "run", args
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, rest = args[0], args[1:]
	}
	if cmd == "sale" {
		if len(rest) == 0 || rest[0] == "" || rest[0][0] == '-' {
			fmt.Fprint(stderr, usage)
			return 2
		}
		cmd, rest = "sale "+rest[0], rest[1:]
	}
	fs := flag.NewFlagSet("writer "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage+"\nflags:\n")
		fs.PrintDefaults()
	}
	file := fs.String("file", "", "sale file, JSON or YAML (sale create)")
	shards := fs.Int("shards", 0, "shard count of a new sale; 0: one per Redis master (sale create)")
	cfg, err := config.Load(fs, rest, getenv)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "writer: configuration: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))

	switch cmd {
	case "run":
		err = run(ctx, cfg, log)
	case "migrate":
		err = migrate(ctx, cfg, log)
	case "sale create":
		if *file == "" {
			fmt.Fprintln(stderr, "writer sale create: --file is required")
			return 2
		}
		err = createSale(ctx, cfg, *file, *shards, stdout)
	case "sale list":
		err = withStores(ctx, cfg, false, func(st *store.Store, _ *stock.Store) error { return sale.List(ctx, st, stdout) })
	case "sale show":
		if fs.NArg() != 1 {
			fmt.Fprintln(stderr, "writer sale show: want one sale id")
			return 2
		}
		id, perr := strconv.ParseInt(fs.Arg(0), 10, 64)
		if perr != nil {
			fmt.Fprintf(stderr, "writer sale show: %q is not a sale id\n", fs.Arg(0))
			return 2
		}
		err = withStores(ctx, cfg, true, func(st *store.Store, rs *stock.Store) error { return sale.Show(ctx, st, rs, id, stdout) })
	default:
		fmt.Fprintf(stderr, "writer: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "writer %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	a, err := New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx)
}

func migrate(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	pool, err := store.Open(ctx, cfg.DatabaseURL)
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

func createSale(ctx context.Context, cfg config.Config, file string, shards int, stdout io.Writer) error {
	s, err := sale.ReadFile(file)
	if err != nil {
		return err
	}
	return withStores(ctx, cfg, true, func(st *store.Store, rs *stock.Store) error {
		if err := store.Migrate(ctx, st.Pool(), nil); err != nil {
			return err
		}
		if err := sale.Create(ctx, st, rs, s, shards); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "sale %d created: %d items, %d shards %v\n", s.ID, len(s.Items), len(s.Shards), s.Shards)
		return nil
	})
}

// withStores connects PostgreSQL (and Redis when redis is set) for one command.
func withStores(ctx context.Context, cfg config.Config, redis bool, fn func(*store.Store, *stock.Store) error) error {
	pool, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	var rs *stock.Store
	if redis {
		c, err := NewRedis(cfg.RedisAddrs)
		if err != nil {
			return err
		}
		defer c.Close()
		rs = stock.New(c)
	}
	return fn(store.New(pool), rs)
}
