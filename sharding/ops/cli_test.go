package ops

import (
	"context"
	"encoding/json"
	"flag"
	"strconv"
	"strings"
	"testing"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/ops/plan"
	"flashsale/sharding/ops/reconcile"
	"flashsale/sharding/ops/status"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/stock"
)

func runMain(args ...string) (code int, stdout, stderr string) { return runMainEnv(nil, args...) }

// runMainEnv runs flashctl on the stack with extra environment variables.
func runMainEnv(extra map[string]string, args ...string) (code int, stdout, stderr string) {
	return opstest.Run(Main, extra, args...)
}

// TestUsageErrors: a bad command line exits 2 with a clear message and the
// usage, before connecting to anything.
func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{nil, "no command given"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"status"}, "status: --sale is required"},
		{[]string{"preload"}, "preload: --sale is required"},
		{[]string{"reconcile", "--repair"}, "reconcile: --sale is required"},
		{[]string{"reshard", "--sale", "5"}, "reshard: --shards 0: want 1..256"},
		{[]string{"reshard", "--sale", "5", "--shards", "257"}, "reshard: --shards 257: want 1..256"},
		{[]string{"reshard", "--sale", "5", "--shards", "-3"}, "want 1..256"},
		{[]string{"reshard", "--sale", "5", "--shards", "many"}, `invalid value "many" for flag -shards`},
		{[]string{"preload", "--sale", "5", "--shards", "300"}, "preload: --shards 300: want 1..256"},
		{[]string{"status", "--sale", "abc"}, `invalid value "abc" for flag -sale: want a sale id in 1..4294967295`},
		{[]string{"status", "--sale", "0"}, "want a sale id"},
		{[]string{"status", "--sale", "4294967296"}, "want a sale id"},
		{[]string{"status", "--sale", "5", "--watch", "soon"}, `invalid value "soon" for flag -watch`},
		{[]string{"status", "--sale", "5", "extra"}, `unexpected argument "extra"`},
		{[]string{"reconcile", "--sale", "5", "--grace", "-1s"}, "--grace must be positive"},
		{[]string{"plan"}, "give --master-capacity C"},
		{[]string{"plan", "--master-capacity", "100000"}, "--rate must be a positive number"},
		{[]string{"plan", "--rate", "fast", "--master-capacity", "1"}, `invalid value "fast" for flag -rate`},
		{[]string{"plan", "--rate", "1000", "--master-capacity", "-5"}, "--master-capacity must be positive"},
		{[]string{"plan", "--rate", "1000", "--measure", "--master-capacity", "5"}, "not both"},
		{[]string{"plan", "--rate", "1000", "--master-capacity", "5", "--masters", "3", "--headroom", "2"}, "--headroom must be in (0, 1]"},
		{[]string{"plan", "--rate", "1000", "--master-capacity", "5", "--masters", "3", "--redis-fraction", "0"}, "--redis-fraction must be in (0, 1]"},
		{[]string{"sale"}, "sale: give a subcommand"},
		{[]string{"status", "--sale", "5", "--jsn"}, "status: flag provided but not defined: -jsn"},
		{[]string{"status", "--sale", "5", "--redis", ""}, "-redis names no seed"},
		{[]string{"status", "--sale", "5", "--redis"}, "flag needs an argument: -redis"},
		{[]string{"sale", "report", "--sale", "5", "--json", "--database-url", "mysql://x"}, "want a postgres:// URL"},
		{[]string{"--redis", "", "status", "--sale", "5"}, "-redis names no seed"},
		{[]string{"--database-url", "mysql://x", "status", "--sale", "5"}, "want a postgres:// URL"},
		{[]string{"--redis-password-file", "/nonexistent/pw", "status", "--sale", "5"}, "redis-password-file"},
		{[]string{"sale", "frobnicate"}, `unknown command "sale frobnicate"`},
		{[]string{"sale", "create"}, "sale create: --file is required"},
		{[]string{"sale", "create", "--file", "x.yaml", "--shards", "999"}, "--shards 999: want 1..256"},
		{[]string{"sale", "show"}, "sale show: --sale is required"},
		{[]string{"sale", "pause"}, "sale pause: --sale is required"},
		{[]string{"sale", "resume", "--sale", "x"}, `invalid value "x" for flag -sale`},
		{[]string{"sale", "end", "--sale", "5", "now"}, `unexpected argument "now"`},
		{[]string{"sale", "list", "--sale", "5"}, "flag provided but not defined: -sale"},
		{[]string{"sale", "list", "--status", "LIVE"}, `sale list: --status "LIVE": want SCHEDULED, ACTIVE, SOLD_OUT, PAUSED, ENDED`},
		{[]string{"sale", "list", "--last", "-1"}, "sale list: --last -1: want 0 (all) or more"},
		{[]string{"toolbox", "--every", "0s"}, "toolbox: --every must be at least 1s"},
		{[]string{"toolbox", "--every", "soon"}, `invalid value "soon" for flag -every`},
		{[]string{"toolbox", "--writer-group", ""}, "toolbox: --writer-group and --orders-topic must not be empty"},
		{[]string{"toolbox", "now"}, `unexpected argument "now"`},
		{[]string{"sale", "presale"}, "sale presale: give a subcommand"},
		{[]string{"sale", "presale", "load"}, "sale presale load: --sale is required"},
		{[]string{"sale", "presale", "load", "--sale", "5"}, "sale presale load: --users is required"},
		{[]string{"sale", "presale", "drop", "--sale", "5"}, `unknown command "sale presale drop"`},
		{[]string{"sale", "draw", "verify"}, "sale draw verify: --sale is required"},
		{[]string{"sale", "draw", "verify", "--sale", "5", "--gateway", "gw:18080"}, `--gateway "gw:18080": want a gateway's http or https URL`},
		{[]string{"sale", "report"}, "sale report: --sale is required"},
		{[]string{"sale", "report", "--sale", "5", "--grace", "0s"}, "sale report: --grace must be positive"},
		{[]string{"sale", "report", "--sale", "5", "--grace", "soon"}, `invalid value "soon" for flag -grace`},
		{[]string{"sale", "report", "--sale", "5", "--gateways", "a:1,,b:2"}, "want admin addresses separated by commas, none empty"},
		{[]string{"sale", "report", "--sale", "5", "--gateways", "a:1", "--prometheus", "http://p:9090"}, "give --gateways or --prometheus, not both"},
		{[]string{"sale", "report", "--sale", "5", "--prometheus", "ftp://p"}, `--prometheus "ftp://p": want an http or https URL`},
		{[]string{"sale", "report", "--sale", "5", "--prometheus", "p:9090"}, "want an http or https URL"},
		{[]string{"sale", "report", "--sale", "5", "--writer-group", ""}, "sale report: --writer-group and --orders-topic must not be empty"},
		{[]string{"sale", "report", "--sale", "5", "now"}, `unexpected argument "now"`},
	}
	for _, tc := range cases {
		code, out, errOut := runMain(tc.args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "usage: flashctl") || out != "" {
			t.Errorf("flashctl %v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

// TestHelp: --help of flashctl, of the sale group and of every command exits
// 0 on stdout; a command's help lists each of its flags, generated from the
// flag set the command parses with, and the exit codes.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"-h"}} {
		code, out, errOut := runMain(args...)
		if code != ExitOK || errOut != "" || !strings.Contains(out, "usage: flashctl") || !strings.Contains(out, "sale pause") || !strings.Contains(out, "3  Redis or PostgreSQL could not be reached") {
			t.Errorf("flashctl %v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	if code, out, _ := runMain("sale", "--help"); code != ExitOK || !strings.Contains(out, "usage: flashctl [global flags] sale <command>") || strings.Contains(out, "reshard") {
		t.Errorf("sale --help: exit %d, %q", code, out)
	}
	for _, c := range commands {
		words := strings.Fields(c.name)
		for _, args := range [][]string{append(append([]string{}, words...), "--help"), append([]string{"help"}, words...)} {
			code, out, errOut := runMain(args...)
			if code != ExitOK || errOut != "" || !strings.Contains(out, "usage: flashctl [global flags] "+c.name) || !strings.Contains(out, c.summary) {
				t.Errorf("flashctl %v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
				continue
			}
			fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
			c.flags(fs)
			fs.VisitAll(func(f *flag.Flag) {
				if !strings.Contains(out, "\n  --"+f.Name) {
					t.Errorf("flashctl %s --help does not list --%s:\n%s", c.name, f.Name, out)
				}
			})
		}
	}
	if code, out, _ := runMain("-version"); code != ExitOK || !strings.HasPrefix(out, "flashctl ") {
		t.Errorf("-version: exit %d, %q", code, out)
	}
	if code, _, errOut := runMain("help", "frobnicate"); code != ExitUsage || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("help of an unknown command: exit %d, %q", code, errOut)
	}
}

// TestExitCodes: one command line per exit code, against the real stack.
func TestExitCodes(t *testing.T) {
	e := opstest.NewEnv(t)
	sale := e.NewSale(t, 2, 5)
	id := strconv.FormatInt(sale.ID, 10)
	if code, _, errOut := runMain("status", "--sale", id); code != ExitOK {
		t.Errorf("status of a sale: exit %d, want 0: %s", code, errOut)
	}
	if code, _, _ := runMain("status", "--sale", id, "--shards", "2"); code != ExitUsage {
		t.Errorf("unknown flag: exit %d, want 2", code)
	}
	if code, _, errOut := runMain("--redis", "127.0.0.1:1", "status", "--sale", id); code != ExitConnect || !strings.Contains(errOut, "connecting to redis") {
		t.Errorf("unreachable Redis: exit %d, want 3: %q", code, errOut)
	}
	if code, _, errOut := runMain("--database-url", "postgres://nobody@127.0.0.1:1/x?connect_timeout=2", "reconcile", "--sale", id); code != ExitConnect || !strings.Contains(errOut, "connecting to postgresql") {
		t.Errorf("unreachable PostgreSQL: exit %d, want 3: %q", code, errOut)
	}
	// Drift: one unit too many on a shard (an oversell waiting to happen).
	c := e.C
	key := string(sharding.AppendStockKey(nil, sale.Shards[0], sale.Items[0].ID))
	if err := c.Do(context.Background(), c.B().Incr().Key(key).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runMain("reconcile", "--sale", id); code != ExitFail {
		t.Errorf("reconcile of a drifted sale: exit %d, want 1\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runMain("sale", "resume", "--sale", strconv.FormatInt(opstest.RandomSaleID(), 10)); code != ExitFail || !strings.Contains(errOut, "unknown sale") {
		t.Errorf("resume of an unknown sale: exit %d, want 1: %q", code, errOut)
	}
}

// TestPlanArithmetic needs no Redis when the masters and capacity are given.
func TestPlanArithmetic(t *testing.T) {
	cases := []struct {
		rate, frac, capacity float64
		masters, want        int
	}{
		{300000, 0.1, 100000, 3, 3}, // 30k/s needs 1 master's headroom: one shard a master
		{300000, 1, 100000, 3, 6},   // 300k/s needs 6 masters' headroom: 6 shards, 2 a master
		{500000, 1, 100000, 3, 12},  // 10 rounded up to a multiple of 3
		{1e9, 1, 1000, 3, 255},      // capped at 256, a multiple of 3
		{1000, 1, 100000, 1, 1},     // single master
		{150000, 1, 100000, 4, 4},   // 3 -> at least M
		{250000, 0.5, 50000, 2, 6},  // 125k / 25k = 5 -> 6
	}
	for _, tc := range cases {
		rep, err := plan.Plan(context.Background(), &tool.Tool{}, plan.PlanInput{Rate: tc.rate, RedisFraction: tc.frac, Capacity: tc.capacity, Masters: tc.masters})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Shards != tc.want || rep.Shards%tc.masters != 0 {
			t.Errorf("rate %g f %g C %g M %d: S = %d, want %d\n%s", tc.rate, tc.frac, tc.capacity, tc.masters, rep.Shards, tc.want, strings.Join(rep.Arithmetic, "\n"))
		}
	}
	code, out, errOut := runMain("plan", "--rate", "300000", "--master-capacity", "100000", "--masters", "3")
	if code != ExitOK || !strings.Contains(out, "ceil(R·f / C·h) = ceil(300000 / 50000) = 6") || !strings.Contains(out, "shard count S = 6") {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "the cluster is too small") {
		t.Fatalf("plan for 6 masters' load on 3 masters does not warn:\n%s", out)
	}
}

// TestCommandsOnTheStack runs each subcommand through Main against the real
// services: runtime failures exit 1 with a message, successes 0.
func TestCommandsOnTheStack(t *testing.T) {
	e := opstest.NewEnv(t)
	ctx := context.Background()
	unknown := strconv.FormatInt(opstest.RandomSaleID(), 10)
	for _, args := range [][]string{
		{"status", "--sale", unknown},
		{"reconcile", "--sale", unknown},
		{"reshard", "--sale", unknown, "--shards", "4"},
		{"preload", "--sale", unknown},
	} {
		code, out, errOut := runMain(args...)
		if code != ExitFail || !strings.Contains(errOut, "unknown sale "+unknown) || out != "" {
			t.Errorf("flashctl %v: exit %d, stderr %q", args, code, errOut)
		}
	}
	if code, _, errOut := runMain("--redis", "127.0.0.1:1", "status", "--sale", "5"); code != ExitConnect || !strings.Contains(errOut, "connecting to redis") {
		t.Errorf("unreachable redis: exit %d, %q", code, errOut)
	}

	sale := e.NewSale(t, 4, 50, 30)
	id := strconv.FormatInt(sale.ID, 10)
	// The sale is live (started a minute ago) and preloaded: refused.
	code, _, errOut := runMain("preload", "--sale", id)
	if code != ExitFail || !strings.Contains(errOut, "refusing to overwrite a live sale without --force") || !strings.Contains(errOut, "ACTIVE") {
		t.Fatalf("preload of a live sale: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runMain("preload", "--sale", id, "--shards", "8", "--force"); code != ExitFail || !strings.Contains(errOut, "reshard") {
		t.Fatalf("forced preload with another shard count: exit %d, %q", code, errOut)
	}
	// Sell three units (one persisted by the "writer"), then force a preload:
	// the stock is rewritten and reconciled against PostgreSQL.
	sh := opstest.NewShopper(e.T.Store, sale)
	us := opstest.Users(3)
	unpersisted := map[uint64]sharding.OrderID{}
	for i, u := range us {
		r, err := sh.Buy(ctx, sale.Items[0].ID, u)
		if err != nil || r.Outcome != stock.Reserved {
			t.Fatal(r, err)
		}
		if i > 0 {
			unpersisted[u] = r.OrderID
		}
		if i == 0 {
			e.InsertOrder(t, sale.ID, sale.Items[0].ID, u, r.OrderID, stock.StatusPending, time.Now())
		}
	}
	code, out, errOut := runMain("preload", "--sale", id, "--force")
	t.Logf("forced preload:\n%s%s", out, errOut)
	if code != ExitOK {
		t.Fatalf("forced preload: exit %d", code)
	}
	// The two unpersisted reservations are younger than the 30 s grace, so
	// they stay held: Q - 1 persisted - 2 in hand-off.
	if left, q := e.Left(t, sale, sale.Items[0].ID), sale.Items[0].Quantity; left != q-3 {
		t.Fatalf("after a forced preload item has %d units, want %d", left, q-3)
	}

	code, out, errOut = runMain("status", "--sale", id)
	if code != ExitOK || !strings.Contains(out, "pending moves: none") || !strings.Contains(out, "Q-(S+P+M)") {
		t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("status:\n%s", out)
	code, out, _ = runMain("--json", "status", "--sale", id, "--watch", "10ms", "--count", "3")
	dec := json.NewDecoder(strings.NewReader(out))
	frames := 0
	for dec.More() {
		var r status.StatusReport
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("status --json: %v\n%s", err, out)
		}
		if len(r.Shards) != 4 || len(r.Items) != 2 || !r.PostgreSQL {
			t.Fatalf("status --json frame: %+v", r)
		}
		frames++
	}
	if code != ExitOK || frames != 3 {
		t.Fatalf("status --watch --count 3: exit %d, %d frames", code, frames)
	}

	code, out, errOut = runMain("reshard", "--sale", id, "--shards", "8")
	if code != ExitOK || !strings.Contains(out, "4 -> 8 shards") {
		t.Fatalf("reshard: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("reshard:\n%s", out)
	// The two unpersisted reservations moved with their journal entries:
	// in hand-off on the new layout, not orphans.
	code, out, errOut = runMain("--json", "reconcile", "--sale", id, "--grace", "1ms")
	var clean reconcile.ReconcileReport
	if err := json.Unmarshal([]byte(out), &clean); err != nil {
		t.Fatalf("reconcile --json: %v\n%s%s", err, out, errOut)
	}
	if code != ExitOK || !clean.Clean || clean.Before.Items[0].HandOff+clean.Before.Items[1].HandOff != 2 {
		t.Fatalf("reconcile after the reshard: exit %d, %+v, want clean with 2 in hand-off", code, clean.Before)
	}
	// Their entries lost (as by a failover that dropped them): orphans.
	live, err := e.T.Store.LoadSale(ctx, sale.ID)
	if err != nil {
		t.Fatal(err)
	}
	for u, oid := range unpersisted {
		tag := live.Shards[sharding.HomeShard(u, live.ID, len(live.Shards))]
		rec, found, err := e.T.Store.Order(ctx, tag, u, oid)
		if err != nil || !found {
			t.Fatalf("order %s on %s: %v %v", oid, tag, found, err)
		}
		if n, err := e.C.Do(ctx, e.C.B().Xdel().Key(string(sharding.AppendEventsKey(nil, tag))).Id(rec.Journal).Build()).AsInt64(); err != nil || n != 1 {
			t.Fatalf("deleting the entry %s of order %s: %d %v", rec.Journal, oid, n, err)
		}
	}
	code, out, errOut = runMain("--json", "reconcile", "--sale", id, "--grace", "1ms")
	var rep reconcile.ReconcileReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("reconcile --json: %v\n%s%s", err, out, errOut)
	}
	if code != ExitFail || rep.Clean || len(rep.Before.Findings) != 3 { // 2 orphans and their drift
		t.Fatalf("reconcile: exit %d, %+v", code, rep.Before)
	}
	// The orphans are released once the writers' group reads no lag (here a
	// group of its own, caught up on a topic of its own).
	_, group, topic := opstest.WriterLag(t, 0)
	if code, out, _ = runMain("reconcile", "--sale", id, "--grace", "1ms", "--repair", "--writer-group", group, "--orders-topic", topic); code != ExitOK {
		t.Fatalf("reconcile --repair: exit %d\n%s", code, out)
	}
	if code, _, _ = runMain("reconcile", "--sale", id); code != ExitOK {
		t.Fatalf("reconcile after repair: exit %d", code)
	}
	e.AssertSettled(t, sale.ID)
}
