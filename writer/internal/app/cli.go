package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	shared "flashsale/sharding/config"
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
  help                         print this text

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
	if cmd == "sale" {
		if len(rest) == 0 || rest[0] == "" || rest[0][0] == '-' {
			fmt.Fprint(stderr, usage)
			return 2
		}
		cmd, rest = "sale "+rest[0], rest[1:]
	}
	set := shared.NewSet("writer", usage)
	set.SetOutput(stdout)
	var file string
	var shards int
	set.Add(shared.Setting{Name: "file", Usage: "sale file, JSON or YAML (sale create)", Value: shared.File(&file), FlagOnly: true})
	set.Add(shared.Setting{Name: "shards", Usage: "shard count of a new sale; 0: one per Redis master (sale create)", Value: shared.Int(&shards), FlagOnly: true})
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
	for _, w := range cfg.Deprecations {
		log.Warn(w)
	}
	if cmd != "sale show" && len(set.Args()) > 0 {
		fmt.Fprintf(stderr, "writer %s: unexpected argument %q\n", cmd, set.Args()[0])
		return 2
	}
	if code, known := dispatch(ctx, cmd, cfg, log, set.Args(), file, shards, stdout, stderr); known {
		return code
	}
	fmt.Fprintf(stderr, "writer: unknown command %q\n\n%s", cmd, usage)
	return 2
}

// dispatch runs cmd; known is false for a command that does not exist.
func dispatch(ctx context.Context, cmd string, cfg config.Config, log *slog.Logger, args []string, file string, shards int, stdout, stderr io.Writer) (code int, known bool) {
	var err error
	switch cmd {
	case "run":
		err = run(ctx, cfg, log)
	case "migrate":
		err = migrate(ctx, cfg, log)
	case "sale create":
		if file == "" {
			fmt.Fprintln(stderr, "writer sale create: --file is required")
			return 2, true
		}
		err = createSale(ctx, cfg, file, shards, stdout)
	case "sale list":
		err = withStores(ctx, cfg, false, func(st *store.Store, _ *stock.Store) error { return sale.List(ctx, st, stdout) })
	case "sale show":
		if len(args) != 1 {
			fmt.Fprintln(stderr, "writer sale show: want one sale id")
			return 2, true
		}
		id, perr := strconv.ParseInt(args[0], 10, 64)
		if perr != nil {
			fmt.Fprintf(stderr, "writer sale show: %q is not a sale id\n", args[0])
			return 2, true
		}
		err = withStores(ctx, cfg, true, func(st *store.Store, rs *stock.Store) error { return sale.Show(ctx, st, rs, id, stdout) })
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
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	var rs *stock.Store
	if redis {
		c, err := NewRedis(cfg.Redis)
		if err != nil {
			return err
		}
		defer c.Close()
		rs = stock.New(c)
	}
	return fn(store.New(pool), rs)
}
