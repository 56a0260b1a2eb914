package ops

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"flashsale/sharding"
	shared "flashsale/sharding/config"
)

// Exit codes of Main.
const (
	ExitOK    = 0
	ExitFail  = 1 // a runtime failure, a refusal, or drift found
	ExitUsage = 2 // bad command line
)

// DefaultRedis is the seed list used when neither --redis nor FLASHSALE_REDIS is set.
const DefaultRedis = shared.DefaultRedis

// Config is flashctl's configuration: the global flags, defaulted from the
// environment, plus the chosen subcommand's arguments.
type Config struct {
	Redis       string // comma-separated cluster seeds (--redis, FLASHSALE_REDIS)
	DatabaseURL string // PostgreSQL URL (--database-url, DATABASE_URL); empty: no database
	JSON        bool   // --json: machine-readable output
	// Clear makes status --watch clear the screen between snapshots; main sets
	// it when stdout is a terminal.
	Clear bool
	// Timeout bounds one subcommand (default 2 minutes; not --watch, not the
	// measurement, which bound themselves).
	Timeout time.Duration
}

// defaults fills Config from the environment.
func defaults(getenv func(string) string) Config {
	c := Config{Redis: getenv("FLASHSALE_REDIS"), DatabaseURL: getenv("DATABASE_URL"), Timeout: 2 * time.Minute}
	if c.Redis == "" {
		c.Redis = DefaultRedis
	}
	return c
}

// UsageError is a bad command line: Main prints it with the usage and exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

const usage = `usage: flashctl [--redis ADDRS] [--database-url URL] [--json] <command> [flags]

commands:
  plan       --rate R [--redis-fraction F] [--master-capacity C | --measure] [--masters M] [--headroom H] [--sale ID]
             shard count and placement for a request rate, with the arithmetic
  preload    --sale ID [--shards S] [--force]
             stock from PostgreSQL into Redis; refuses a live sale without --force
  status     --sale ID [--watch 1s] [--count N]
             per shard and per item: units, master, buyers, sold-out, totals against PostgreSQL
  reshard    --sale ID --shards N
             change the shard count (resumes a crashed reshard)
  reconcile  --sale ID [--repair] [--grace 30s]
             compare Redis with PostgreSQL; repair only with --repair (exit 1 when not clean)

global flags (also accepted after the command):
  --redis         cluster seeds, comma separated (FLASHSALE_REDIS)
  --database-url  PostgreSQL URL (DATABASE_URL)
  --json          JSON output for scripts
`

// Main runs flashctl with args (without the program name) and returns the exit
// code. getenv reads the environment; stdout gets reports, stderr errors.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, clear bool) int {
	cfg := defaults(getenv)
	cfg.Clear = clear
	code, err := run(ctx, cfg, args, stdout)
	var ue *UsageError
	switch {
	case err == nil:
		return code
	case errors.As(err, &ue), errors.Is(err, flag.ErrHelp):
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "flashctl:", ue.Msg)
		}
		fmt.Fprint(stderr, usage)
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	default:
		fmt.Fprintln(stderr, "flashctl:", err)
		return ExitFail
	}
}

func globals(fs *flag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.Redis, "redis", cfg.Redis, "Redis Cluster seeds, comma separated")
	fs.StringVar(&cfg.DatabaseURL, "database-url", cfg.DatabaseURL, "PostgreSQL URL")
	fs.BoolVar(&cfg.JSON, "json", cfg.JSON, "JSON output")
}

// parse parses args with fs, turning flag errors into UsageErrors.
func parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%s: %v", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// saleFlag is --sale: a sale id in 1..MaxSaleID.
type saleFlag struct{ id int64 }

func (s *saleFlag) String() string { return strconv.FormatInt(s.id, 10) }
func (s *saleFlag) Set(v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > sharding.MaxSaleID {
		return fmt.Errorf("want a sale id in 1..%d", int64(sharding.MaxSaleID))
	}
	s.id = n
	return nil
}

func needSale(cmd string, s saleFlag) error {
	if s.id == 0 {
		return usagef("%s: --sale is required", cmd)
	}
	return nil
}

func checkShards(cmd string, n int, required bool) error {
	if n == 0 && !required {
		return nil
	}
	if n < 1 || n > sharding.MaxShards {
		return usagef("%s: --shards %d: want 1..%d", cmd, n, sharding.MaxShards)
	}
	return nil
}

func run(ctx context.Context, cfg Config, args []string, stdout io.Writer) (int, error) {
	// Global flags before the command.
	gfs := flag.NewFlagSet("flashctl", flag.ContinueOnError)
	globals(gfs, &cfg)
	gfs.SetOutput(io.Discard)
	if err := gfs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, err
		}
		return 0, usagef("%v", err)
	}
	if gfs.NArg() == 0 {
		return 0, usagef("no command given")
	}
	cmd, rest := gfs.Arg(0), gfs.Args()[1:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	globals(fs, &cfg)
	var sale saleFlag
	switch cmd {
	case "plan":
		var in PlanInput
		var measure bool
		fs.Float64Var(&in.Rate, "rate", 0, "target purchase requests/s at the gateways")
		fs.Float64Var(&in.RedisFraction, "redis-fraction", 1, "share of requests that reach Redis")
		fs.Float64Var(&in.Capacity, "master-capacity", 0, "reserve scripts/s one master runs")
		fs.BoolVar(&measure, "measure", false, "measure the capacity of each master")
		fs.IntVar(&in.Masters, "masters", 0, "master count (default: from CLUSTER SLOTS)")
		fs.Float64Var(&in.Headroom, "headroom", 0.5, "share of a master's capacity to plan for")
		fs.DurationVar(&in.MeasureFor, "measure-for", 2*time.Second, "how long to measure each master")
		fs.Var(&sale, "sale", "sale id to place the shards for")
		if err := parse(fs, rest); err != nil {
			return 0, err
		}
		in.SaleID = sale.id
		switch {
		case measure && in.Capacity != 0:
			return 0, usagef("plan: give --master-capacity or --measure, not both")
		case !measure && in.Capacity == 0:
			return 0, usagef("plan: give --master-capacity C (reserve scripts/s of one master) or --measure")
		case !measure && in.Capacity < 0:
			return 0, usagef("plan: --master-capacity must be positive")
		case in.Rate <= 0:
			return 0, usagef("plan: --rate must be a positive number of requests/s")
		case !(in.RedisFraction > 0 && in.RedisFraction <= 1):
			return 0, usagef("plan: --redis-fraction must be in (0, 1]")
		case !(in.Headroom > 0 && in.Headroom <= 1):
			return 0, usagef("plan: --headroom must be in (0, 1]")
		}
		var c rueidis.Client
		if measure || in.Masters == 0 || in.SaleID != 0 {
			var err error
			if c, err = dialRedis(cfg.Redis); err != nil {
				return 0, err
			}
			defer c.Close()
		}
		t := NewTool(c, nil)
		ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
		rep, err := t.Plan(ctx, in)
		if err != nil {
			return 0, err
		}
		return ExitOK, Write(stdout, rep, cfg.JSON)
	case "preload":
		var shards int
		var force bool
		fs.Var(&sale, "sale", "sale id")
		fs.IntVar(&shards, "shards", 0, "shard count (default: keep the sale's)")
		fs.BoolVar(&force, "force", false, "overwrite a live sale")
		if err := parse(fs, rest); err != nil {
			return 0, err
		}
		if err := errors.Join(needSale(cmd, sale), checkShards(cmd, shards, false)); err != nil {
			return 0, firstUsage(err)
		}
		return ExitOK, withTool(ctx, cfg, true, stdout, func(ctx context.Context, t *Tool) (Report, error) {
			return t.Preload(ctx, sale.id, shards, force)
		})
	case "status":
		var watch time.Duration
		var count int
		fs.Var(&sale, "sale", "sale id")
		fs.DurationVar(&watch, "watch", 0, "redraw every interval until interrupted")
		fs.IntVar(&count, "count", 0, "with --watch, stop after this many snapshots")
		if err := parse(fs, rest); err != nil {
			return 0, err
		}
		if err := needSale(cmd, sale); err != nil {
			return 0, err
		}
		if watch < 0 || count < 0 {
			return 0, usagef("status: --watch and --count must not be negative")
		}
		t, done, err := connect(ctx, cfg, false)
		if err != nil {
			return 0, err
		}
		defer done()
		if watch == 0 {
			ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
			defer cancel()
			rep, err := t.Status(ctx, sale.id)
			if err != nil {
				return 0, err
			}
			return ExitOK, Write(stdout, rep, cfg.JSON)
		}
		return ExitOK, t.Watch(ctx, sale.id, watch, count, func(r *StatusReport) error {
			if cfg.Clear && !cfg.JSON {
				fmt.Fprint(stdout, "\x1b[H\x1b[2J")
			} else if !cfg.JSON {
				fmt.Fprintln(stdout, strings.Repeat("-", 72))
			}
			return Write(stdout, r, cfg.JSON)
		})
	case "reshard":
		var shards int
		fs.Var(&sale, "sale", "sale id")
		fs.IntVar(&shards, "shards", 0, "new shard count")
		if err := parse(fs, rest); err != nil {
			return 0, err
		}
		if err := errors.Join(needSale(cmd, sale), checkShards(cmd, shards, true)); err != nil {
			return 0, firstUsage(err)
		}
		return ExitOK, withTool(ctx, cfg, false, stdout, func(ctx context.Context, t *Tool) (Report, error) {
			return t.Reshard(ctx, sale.id, shards)
		})
	case "reconcile":
		var opt ReconcileOptions
		fs.Var(&sale, "sale", "sale id")
		fs.BoolVar(&opt.Repair, "repair", false, "repair what is found (compare-and-set)")
		fs.DurationVar(&opt.Grace, "grace", 30*time.Second, "age after which a reservation missing from PostgreSQL counts as lost")
		if err := parse(fs, rest); err != nil {
			return 0, err
		}
		if err := needSale(cmd, sale); err != nil {
			return 0, err
		}
		if opt.Grace <= 0 {
			return 0, usagef("reconcile: --grace must be positive")
		}
		var rep *ReconcileReport
		err := withTool(ctx, cfg, true, stdout, func(ctx context.Context, t *Tool) (Report, error) {
			var err error
			rep, err = t.Reconcile(ctx, sale.id, opt)
			return rep, err
		})
		if err != nil {
			return 0, err
		}
		if !rep.Clean {
			return ExitFail, nil
		}
		return ExitOK, nil
	case "help":
		return 0, flag.ErrHelp
	}
	return 0, usagef("unknown command %q", cmd)
}

// withTool connects (to PostgreSQL too when needDB), runs do within
// cfg.Timeout and writes the report it returns.
func withTool(ctx context.Context, cfg Config, needDB bool, stdout io.Writer, do func(context.Context, *Tool) (Report, error)) error {
	t, done, err := connect(ctx, cfg, needDB)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	rep, err := do(ctx, t)
	if err != nil {
		return err
	}
	return Write(stdout, rep, cfg.JSON)
}

func firstUsage(err error) error {
	var ue *UsageError
	if errors.As(err, &ue) {
		return ue
	}
	return err
}

func dialRedis(addrs string) (rueidis.Client, error) {
	var seeds []string
	for _, a := range strings.Split(addrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			seeds = append(seeds, a)
		}
	}
	if len(seeds) == 0 {
		return nil, usagef("--redis: no addresses")
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: seeds, ShuffleInit: true, DisableCache: true})
	if err != nil {
		return nil, fmt.Errorf("connecting to redis %s: %w", addrs, err)
	}
	return c, nil
}

// connect opens Redis and, when DatabaseURL is set (required with needDB),
// PostgreSQL; done closes both.
func connect(ctx context.Context, cfg Config, needDB bool) (*Tool, func(), error) {
	if needDB && cfg.DatabaseURL == "" {
		return nil, nil, ErrNoDatabase
	}
	c, err := dialRedis(cfg.Redis)
	if err != nil {
		return nil, nil, err
	}
	var db *pgxpool.Pool
	if cfg.DatabaseURL != "" {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if db, err = pgxpool.New(pctx, cfg.DatabaseURL); err == nil {
			err = db.Ping(pctx)
		}
		if err != nil {
			if db != nil {
				db.Close()
			}
			c.Close()
			return nil, nil, fmt.Errorf("connecting to postgresql: %w", err)
		}
	}
	return NewTool(c, db), func() {
		if db != nil {
			db.Close()
		}
		c.Close()
	}, nil
}
