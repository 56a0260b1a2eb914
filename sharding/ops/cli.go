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

// Exit codes of Main, documented in the usage text and the package doc.
const (
	ExitOK      = 0
	ExitFail    = 1 // the command ran and failed: drift or an audit failure found, a refusal, an error
	ExitUsage   = 2 // bad command line (nothing was done)
	ExitConnect = 3 // Redis or PostgreSQL could not be reached (nothing was done)
)

// DefaultRedis is the seed list used when neither --redis nor FLASHSALE_REDIS is set.
const DefaultRedis = shared.DefaultRedis

// Config is flashctl's configuration: the global flags, defaulted from the
// environment.
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

// UsageError is a bad command line: Main prints it with the command's usage
// and exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ConnectError is a store that could not be reached: Main exits 3.
type ConnectError struct{ Err error }

func (e *ConnectError) Error() string { return e.Err.Error() }
func (e *ConnectError) Unwrap() error { return e.Err }

// Main runs flashctl with args (without the program name) and returns the exit
// code. getenv reads the environment; stdout gets reports and help, stderr
// errors.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, clear bool) int {
	cfg := defaults(getenv)
	cfg.Clear = clear
	inv, err := parseLine(cfg, args)
	inv.stdout = stdout
	var ue *UsageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, inv.help())
		return ExitOK
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "flashctl:", ue.Msg)
		fmt.Fprint(stderr, inv.help())
		return ExitUsage
	}
	code, err := inv.run(ctx, &inv.cmdEnv)
	var ce *ConnectError
	switch {
	case err == nil:
		return code
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "flashctl:", ue.Msg)
		fmt.Fprint(stderr, inv.help())
		return ExitUsage
	case errors.As(err, &ce):
		fmt.Fprintln(stderr, "flashctl:", err)
		return ExitConnect
	}
	fmt.Fprintln(stderr, "flashctl:", err)
	return ExitFail
}

// cmdEnv is what a command's run function gets: the configuration, with the
// global flags applied, and where to write.
type cmdEnv struct {
	cfg    Config
	stdout io.Writer
}

// invocation is a parsed command line: the command (nil for flashctl itself or
// a group such as `sale`), its flag set and the function that runs it.
type invocation struct {
	cmdEnv
	path  string // "flashctl", "flashctl sale", "flashctl sale pause"
	cmd   *command
	group string // a group name when path names one
	fs    *flag.FlagSet
	run   func(context.Context, *cmdEnv) (int, error)
}

// parseLine finds the command in args and parses its flags (the global flags
// are accepted before and after the command). The invocation is usable for
// help even when err is set.
func parseLine(cfg Config, args []string) (*invocation, error) {
	inv := &invocation{cmdEnv: cmdEnv{cfg: cfg}, path: "flashctl"}
	gfs := flag.NewFlagSet("flashctl", flag.ContinueOnError)
	globals(gfs, &inv.cfg)
	if err := parseFlags(gfs, args, true); err != nil {
		return inv, err
	}
	rest := gfs.Args()
	if len(rest) == 0 {
		return inv, usagef("no command given")
	}
	name := rest[0]
	if name == "help" {
		return helpFor(inv, rest[1:])
	}
	if isGroup(name) {
		inv.path, inv.group = "flashctl "+name, name
		if len(rest) == 1 {
			return inv, usagef("%s: give a subcommand", name)
		}
		if rest[1] == "-h" || rest[1] == "--help" || rest[1] == "-help" {
			return inv, flag.ErrHelp
		}
		name, rest = name+" "+rest[1], rest[1:]
	}
	cmd := lookup(name)
	if cmd == nil {
		return inv, usagef("unknown command %q", name)
	}
	inv.path, inv.cmd, inv.group = "flashctl "+name, cmd, ""
	inv.fs = flag.NewFlagSet(name, flag.ContinueOnError)
	inv.run = cmd.flags(inv.fs)
	globals(inv.fs, &inv.cfg)
	return inv, parseFlags(inv.fs, rest[1:], false)
}

// helpFor answers `flashctl help [command...]` with flag.ErrHelp on the
// invocation whose help is wanted.
func helpFor(inv *invocation, words []string) (*invocation, error) {
	if len(words) == 0 {
		return inv, flag.ErrHelp
	}
	name := strings.Join(words, " ")
	if isGroup(name) {
		inv.path, inv.group = "flashctl "+name, name
		return inv, flag.ErrHelp
	}
	cmd := lookup(name)
	if cmd == nil {
		return inv, usagef("help: unknown command %q", name)
	}
	inv.path, inv.cmd = "flashctl "+name, cmd
	return inv, flag.ErrHelp
}

func globals(fs *flag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.Redis, "redis", cfg.Redis, "Redis Cluster seeds, comma separated (FLASHSALE_REDIS)")
	fs.StringVar(&cfg.DatabaseURL, "database-url", cfg.DatabaseURL, "PostgreSQL URL (DATABASE_URL)")
	fs.BoolVar(&cfg.JSON, "json", cfg.JSON, "JSON output for scripts")
}

// parseFlags parses args with fs, turning flag errors into UsageErrors;
// without interspersed, arguments after the flags are refused.
func parseFlags(fs *flag.FlagSet, args []string, interspersed bool) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%s: %v", fs.Name(), err)
	}
	if !interspersed && fs.NArg() > 0 {
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

func needSale(cmd string, s *saleFlag) error {
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
		return nil, &ConnectError{fmt.Errorf("connecting to redis %s: %w", addrs, err)}
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
			return nil, nil, &ConnectError{fmt.Errorf("connecting to postgresql: %w", err)}
		}
	}
	return NewTool(c, db), func() {
		if db != nil {
			db.Close()
		}
		c.Close()
	}, nil
}
