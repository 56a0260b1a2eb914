package ops

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// parse runs parseLine on args with the environment env and fails the test
// on an error.
func parse(t *testing.T, env map[string]string, args ...string) *invocation {
	t.Helper()
	inv, err := parseLine(args, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatalf("flashctl %s: %v", strings.Join(args, " "), err)
	}
	return inv
}

// TestGlobalFlagsAfterTheCommand: global flags are taken after the command,
// among its own flags, as well as before it. `flashctl sale report --sale 5
// --json` answered "flag provided but not defined: -json" (exit 2): global
// flags were parsed only before the command, where kubectl, gh and docker
// users do not look for them.
func TestGlobalFlagsAfterTheCommand(t *testing.T) {
	for _, args := range [][]string{
		{"sale", "report", "--sale", "5", "--json"},
		{"--json", "sale", "report", "--sale", "5"},
		{"sale", "report", "--json", "--sale", "5"},
		{"sale", "report", "--sale=5", "-json"},
	} {
		inv := parse(t, nil, args...)
		if !inv.cfg.JSON || inv.cmd == nil || inv.cmd.name != "sale report" || inv.fs.Lookup("sale").Value.String() != "5" {
			t.Errorf("flashctl %s: json %v, command %v, --sale %s; want the report of sale 5 in JSON",
				strings.Join(args, " "), inv.cfg.JSON, inv.path, inv.fs.Lookup("sale").Value)
		}
	}

	// A global flag with a value, after the command, beside the command's
	// own flags (which share no name with a global one); it wins over the
	// environment, and over the same flag before the command.
	env := map[string]string{"FLASHSALE_REDIS": "10.0.0.9:7001"}
	inv := parse(t, env, "--database-url", "postgres://a@db:5432/x", "--redis", "10.0.0.8:7001",
		"status", "--sale", "7", "--redis", "10.0.0.1:7001,10.0.0.2:7001", "--watch", "2s", "--count=3", "--log-level", "debug")
	if got := inv.cfg.Redis.Addrs; !slices.Equal(got, []string{"10.0.0.1:7001", "10.0.0.2:7001"}) {
		t.Errorf("--redis after the command: Redis %v, want 10.0.0.1:7001,10.0.0.2:7001", got)
	}
	if inv.cfg.Postgres.URL != "postgres://a@db:5432/x" || inv.cfg.Log.Level.String() != "DEBUG" || inv.cfg.JSON {
		t.Errorf("global flags: database %q, log level %v, json %v; want those given, before and after the command", inv.cfg.Postgres.URL, inv.cfg.Log.Level, inv.cfg.JSON)
	}
	for name, want := range map[string]string{"sale": "7", "watch": "2s", "count": "3"} {
		if got := inv.fs.Lookup(name).Value.String(); got != want {
			t.Errorf("status --%s = %s, want %s beside global flags", name, got, want)
		}
	}
	if inv = parse(t, env, "reconcile", "--repair", "--redis=10.0.0.3:7001", "--grace", "5s", "--sale", "9"); !slices.Equal(inv.cfg.Redis.Addrs, []string{"10.0.0.3:7001"}) ||
		inv.fs.Lookup("repair").Value.String() != "true" || inv.fs.Lookup("grace").Value.String() != "5s" {
		t.Errorf("reconcile --repair --redis=...: Redis %v, --repair %s, --grace %s", inv.cfg.Redis.Addrs, inv.fs.Lookup("repair").Value, inv.fs.Lookup("grace").Value)
	}
	// Without a flag the environment still counts.
	if inv = parse(t, env, "status", "--sale", "7", "--json"); !slices.Equal(inv.cfg.Redis.Addrs, []string{"10.0.0.9:7001"}) {
		t.Errorf("FLASHSALE_REDIS with --json after the command: Redis %v", inv.cfg.Redis.Addrs)
	}
	// What follows a command's argument stays the command's, to refuse.
	if _, err := parseLine([]string{"status", "--sale", "7", "now", "--json"}, func(string) string { return "" }, io.Discard); err == nil || !strings.Contains(err.Error(), `unexpected argument "now"`) {
		t.Errorf("status --sale 7 now --json: %v, want the stray argument refused", err)
	}
}

// TestNoCommandFlagIsGlobal: a flag after a command means one thing only
// when no command has a flag of a global flag's name.
func TestNoCommandFlagIsGlobal(t *testing.T) {
	inv := parse(t, nil, "status", "--sale", "1")
	for _, c := range commands {
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.flags(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if inv.set.Lookup(f.Name) != nil {
				t.Errorf("%s --%s has the name of a global flag: which one a flag after the command sets would be a guess", c.name, f.Name)
			}
		})
	}
}
