package ops

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"flashsale/sharding"
	shared "flashsale/sharding/config"
	"flashsale/sharding/ops/tool"
)

// Exit codes of Main, documented in the usage text and the package doc.
const (
	ExitOK      = 0
	ExitFail    = 1 // the command ran and failed: drift or an audit failure found, a ledger that does not balance, a refusal, an error
	ExitUsage   = 2 // bad command line (nothing was done)
	ExitConnect = 3 // Redis or PostgreSQL could not be reached (nothing was done)
)

// Config is flashctl's configuration: the global flags (before the command
// or among its flags), with the shared settings of package sharding/config (Redis with its TLS and
// password file, PostgreSQL, logging; flag -some-name or environment
// FLASHSALE_SOME_NAME, DATABASE_URL too).
type Config struct {
	shared.Common
	JSON bool // --json: machine-readable output
	// Clear makes status --watch clear the screen between snapshots; main sets
	// it when stdout is a terminal.
	Clear bool
	// Timeout bounds one subcommand (default 2 minutes; not --watch, not the
	// measurement, which bound themselves).
	Timeout time.Duration
}

// globalSet registers the global flags of cfg on a new shared.Set.
func globalSet(cfg *Config) *shared.Set {
	set := shared.NewSet("flashctl", "")
	cfg.Common = shared.NewCommon("", 0)
	cfg.Common.Register(set, shared.UseRedis|shared.UsePostgres|shared.UseKafka)
	set.Add(shared.Setting{Name: "json", Usage: "JSON output for scripts", Value: shared.Bool(&cfg.JSON), FlagOnly: true})
	return set
}

// Main runs flashctl with args (without the program name) and returns the exit
// code. getenv reads the environment; stdout gets reports and help, stderr
// errors.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, clear bool) int {
	inv, err := parseLine(args, getenv, stdout)
	inv.stdout, inv.cfg.Clear = stdout, clear
	var ue *tool.UsageError
	switch {
	case errors.Is(err, shared.ErrVersion):
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, inv.help())
		return ExitOK
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "flashctl:", ue.Msg)
		fmt.Fprint(stderr, inv.help())
		return ExitUsage
	}
	code, err := inv.run(ctx, &inv.cmdEnv)
	var ce *tool.ConnectError
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
	set   *shared.Set
	cmd   *command
	group string // a group name when path names one
	fs    *flag.FlagSet
	run   func(context.Context, *cmdEnv) (int, error)
}

// parseLine reads the global flags and the environment, finds the command
// and parses its flags. Global flags go before the command or among its own
// flags after it (`flashctl sale report --sale 5 --json`), as kubectl's, gh's
// and docker's do. The invocation is usable for help even when err is set.
func parseLine(args []string, getenv func(string) string, stdout io.Writer) (*invocation, error) {
	inv := &invocation{path: "flashctl"}
	if err := inv.parseGlobal(args, getenv, stdout); err != nil {
		return inv, err
	}
	rest := inv.set.Args()
	if len(rest) == 0 {
		return inv, tool.Usagef("no command given")
	}
	name := rest[0]
	if name == "help" {
		return helpFor(inv, rest[1:])
	}
	for isGroup(name) { // "sale", then "sale presale"
		inv.path, inv.group = "flashctl "+name, name
		if len(rest) == 1 {
			return inv, tool.Usagef("%s: give a subcommand", name)
		}
		if rest[1] == "-h" || rest[1] == "--help" || rest[1] == "-help" {
			return inv, flag.ErrHelp
		}
		name, rest = name+" "+rest[1], rest[1:]
	}
	cmd := lookup(name)
	if cmd == nil {
		return inv, tool.Usagef("unknown command %q", name)
	}
	inv.path, inv.cmd, inv.group = "flashctl "+name, cmd, ""
	inv.fs = flag.NewFlagSet(name, flag.ContinueOnError)
	inv.run = cmd.flags(inv.fs)
	own, global := splitGlobal(rest[1:], inv.fs, inv.set)
	if len(global) > 0 {
		// Parsed again, with the ones before the command, in one pass: a
		// flag given anywhere wins over the environment.
		before := args[:len(args)-len(inv.set.Args())]
		if n := len(before); n > 0 && before[n-1] == "--" {
			before = before[:n-1] // what follows now is flags
		}
		if err := inv.parseGlobal(append(slices.Clip(before), global...), getenv, stdout); err != nil {
			return inv, err
		}
	}
	if err := envDefaults(inv.fs, getenv); err != nil {
		return inv, err
	}
	return inv, parseFlags(inv.fs, own, false)
}

// parseGlobal parses args (the global flags, then the command line's other
// words) into a new configuration and resolves it.
func (inv *invocation) parseGlobal(args []string, getenv func(string) string, stdout io.Writer) error {
	inv.cfg = Config{Timeout: 2 * time.Minute}
	inv.set = globalSet(&inv.cfg)
	err := inv.set.Parse(args, getenv, io.Discard)
	switch {
	case errors.Is(err, shared.ErrVersion):
		fmt.Fprintln(stdout, shared.VersionLine("flashctl"))
		return err
	case errors.Is(err, flag.ErrHelp):
		return err
	case err != nil:
		return tool.Usagef("%v", err)
	}
	if err := inv.cfg.Common.Resolve(); err != nil {
		return tool.Usagef("%v", err)
	}
	return nil
}

// splitGlobal splits the arguments after a command into its own flags and
// the global flags among them, each with its value. A name the command
// defines is the command's. It stops at the first argument that is no flag
// (or at "--"): what follows is the command's, for fs to refuse.
func splitGlobal(args []string, fs *flag.FlagSet, global *shared.Set) (own, glob []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			return append(own, args[i:]...), glob
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		n := 1 // the flag alone, or with the next argument as its value
		v := global.Lookup(name)
		if f := fs.Lookup(name); f != nil {
			v = nil
			if !hasValue && !isBoolFlag(f.Value) {
				n = 2
			}
		} else if v != nil && !hasValue && !isBoolFlag(v) {
			n = 2
		}
		end := min(i+n, len(args))
		if v != nil {
			glob = append(glob, args[i:end]...)
		} else {
			own = append(own, args[i:end]...)
		}
		i = end - 1
	}
	return own, glob
}

func isBoolFlag(v flag.Value) bool {
	b, ok := v.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// flagEnv names the environment variables whose value a command flag of that
// name takes when the command line does not give it: the writer's own
// variables for its Kafka group and topic, so that reconcile and the toolbox
// in the ops pod read the lag of the cluster's writers without a flag; the
// gateway `sale draw verify` asks.
var flagEnv = map[string]string{"writer-group": "FLASHSALE_GROUP", "orders-topic": "FLASHSALE_TOPIC", "gateway": "FLASHCTL_GATEWAY"}

func envDefaults(fs *flag.FlagSet, getenv func(string) string) error {
	for name, key := range flagEnv {
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if v := getenv(key); v != "" {
			if err := f.Value.Set(v); err != nil {
				return tool.Usagef("%s=%q: %v", key, v, err)
			}
		}
	}
	return nil
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
		return inv, tool.Usagef("help: unknown command %q", name)
	}
	inv.path, inv.cmd = "flashctl "+name, cmd
	return inv, flag.ErrHelp
}

// parseFlags parses args with fs, turning flag errors into UsageErrors;
// without interspersed, arguments after the flags are refused.
func parseFlags(fs *flag.FlagSet, args []string, interspersed bool) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return tool.Usagef("%s: %v", fs.Name(), err)
	}
	if !interspersed && fs.NArg() > 0 {
		return tool.Usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
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
		return tool.Usagef("%s: --sale is required", cmd)
	}
	return nil
}

func checkShards(cmd string, n int, required bool) error {
	if n == 0 && !required {
		return nil
	}
	if n < 1 || n > sharding.MaxShards {
		return tool.Usagef("%s: --shards %d: want 1..%d", cmd, n, sharding.MaxShards)
	}
	return nil
}
