package ops

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/redis/rueidis"
	"github.com/twmb/franz-go/pkg/kgo"

	"flashsale/sharding/draw/beacon"
	"flashsale/sharding/journal"
	"flashsale/sharding/ops/drawverify"
	"flashsale/sharding/ops/plan"
	"flashsale/sharding/ops/preload"
	"flashsale/sharding/ops/reconcile"
	"flashsale/sharding/ops/reshard"
	"flashsale/sharding/ops/saleops"
	"flashsale/sharding/ops/status"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/ops/toolbox"
	"flashsale/sharding/orderevent"
	"flashsale/sharding/sale"
)

// commands is flashctl's command table, in the order the usage lists it.
var commands = []command{
	{name: "plan", summary: "shard count and placement for a request rate, with the arithmetic",
		required: []string{"rate"}, flags: planFlags},
	{name: "preload", summary: "stock from PostgreSQL into Redis; refuses a live sale without --force",
		required: []string{"sale"}, flags: preloadFlags},
	{name: "status", summary: "per shard and per item: units, master, buyers, sold-out, totals against PostgreSQL",
		required: []string{"sale"}, flags: statusFlags},
	{name: "reshard", summary: "change the shard count (resumes a crashed reshard)",
		required: []string{"sale", "shards"}, flags: reshardFlags},
	{name: "reconcile", summary: "compare Redis with PostgreSQL; repair only with --repair (exit 1 when not clean)",
		required: []string{"sale"}, flags: reconcileFlags},
	{name: "toolbox", summary: "stay running as the ops pod (kubectl exec runs commands in it); check now and then that Redis, PostgreSQL and Kafka answer",
		flags: toolboxFlags},
	{name: "sale create", summary: "create a sale from a JSON or YAML file (deploy/sale.yaml): PostgreSQL rows, its stock preloaded in Redis, and for a queue or raffle the seed of its draw (the report prints its commitment)",
		required: []string{"file"}, flags: saleCreateFlags},
	{name: "sale brand", summary: "change a live sale's branding (brand, items' image and description) from its edited sale file",
		required: []string{"file"}, flags: saleBrandFlags},
	{name: "sale list", summary: "list the sales with their status", flags: saleListFlags},
	{name: "sale show", summary: "a sale: status, halt keys, orders by status (PostgreSQL), stock left per shard (Redis), access mode, draw commitment, presale",
		required: []string{"sale"}, flags: saleShowFlags},
	{name: "sale presale load", summary: "add user ids (one per line) to a sale's presale list (presale.list: true); a bad line loads nothing",
		required: []string{"sale", "users"}, flags: presaleLoadFlags},
	{name: "sale draw verify", summary: "check a queue's or raffle's published draw (seed, commitment, root, draws, places): exit 1 with the reason when it does not verify",
		required: []string{"sale"}, flags: drawVerifyFlags},
	{name: "sale draw beacon", summary: "hand a sealed draw its beacon round: verify the round's signature (given, or fetched from drand's relays) against the pinned key and record it for the gateways",
		required: []string{"sale"}, flags: drawBeaconFlags},
	{name: "sale draw abort", summary: "log the abort of a draw, with its reason, in the draw's hash-chained log: a redraw without one fails every check",
		required: []string{"sale", "reason"}, flags: drawAbortFlags},
	{name: "sale pause", summary: "stop selling now: every shard refuses reservations at once, every gateway answers 503 SALE_PAUSED within 1 s",
		required: []string{"sale"}, flags: stateFlags(sale.StatePaused)},
	{name: "sale resume", summary: "sell again after a pause",
		required: []string{"sale"}, flags: stateFlags("")},
	{name: "sale end", summary: "end the sale now, for good: 410 SALE_ENDED (pay and cancel of its orders go on)",
		required: []string{"sale"}, flags: stateFlags(sale.StateEnded)},
	{name: "sale report", summary: "close the books: the unit ledger (exit 1 naming the orders when it does not balance; never repairs), timing, the gateways' funnel",
		required: []string{"sale"}, flags: saleReportFlags},
}

func planFlags(fs *flag.FlagSet) func(context.Context, *cmdEnv) (int, error) {
	var in plan.PlanInput
	var measure bool
	var sale saleFlag
	fs.Float64Var(&in.Rate, "rate", 0, "target purchase `requests/s` at the gateways")
	fs.Float64Var(&in.RedisFraction, "redis-fraction", 1, "share of requests that reach Redis, in (0, 1]")
	fs.Float64Var(&in.Capacity, "master-capacity", 0, "reserve `scripts/s` one master runs (or --measure)")
	fs.BoolVar(&measure, "measure", false, "measure the capacity of each master")
	fs.DurationVar(&in.MeasureFor, "measure-for", 2*time.Second, "how long to measure each master")
	fs.IntVar(&in.Masters, "masters", 0, "master `count` (default: from CLUSTER SLOTS)")
	fs.Float64Var(&in.Headroom, "headroom", 0.5, "share of a master's capacity to plan for, in (0, 1]")
	fs.Var(&sale, "sale", "sale `id` to place the shards for")
	return func(ctx context.Context, e *cmdEnv) (int, error) {
		in.SaleID = sale.id
		switch {
		case measure && in.Capacity != 0:
			return 0, tool.Usagef("plan: give --master-capacity or --measure, not both")
		case !measure && in.Capacity == 0:
			return 0, tool.Usagef("plan: give --master-capacity C (reserve scripts/s of one master) or --measure")
		case !measure && in.Capacity < 0:
			return 0, tool.Usagef("plan: --master-capacity must be positive")
		case in.Rate <= 0:
			return 0, tool.Usagef("plan: --rate must be a positive number of requests/s")
		case !(in.RedisFraction > 0 && in.RedisFraction <= 1):
			return 0, tool.Usagef("plan: --redis-fraction must be in (0, 1]")
		case !(in.Headroom > 0 && in.Headroom <= 1):
			return 0, tool.Usagef("plan: --headroom must be in (0, 1]")
		}
		var c rueidis.Client
		if measure || in.Masters == 0 || in.SaleID != 0 {
			var err error
			if c, err = tool.DialRedis(e.cfg.Redis); err != nil {
				return 0, err
			}
			defer c.Close()
		}
		ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
		defer cancel()
		rep, err := plan.Plan(ctx, tool.NewTool(c, nil), in)
		if err != nil {
			return 0, err
		}
		return ExitOK, tool.Write(e.stdout, rep, e.cfg.JSON)
	}
}

func preloadFlags(fs *flag.FlagSet) func(context.Context, *cmdEnv) (int, error) {
	var sale saleFlag
	var shards int
	var force bool
	fs.Var(&sale, "sale", "sale `id`")
	fs.IntVar(&shards, "shards", 0, "shard `count` (default: keep the sale's)")
	fs.BoolVar(&force, "force", false, "overwrite a live sale")
	return func(ctx context.Context, e *cmdEnv) (int, error) {
		if err := needSale("preload", &sale); err != nil {
			return 0, err
		}
		if err := checkShards("preload", shards, false); err != nil {
			return 0, err
		}
		return report(ctx, e, true, func(ctx context.Context, t *tool.Tool) (tool.Report, error) {
			return preload.Preload(ctx, t, sale.id, shards, force)
		})
	}
}

func statusFlags(fs *flag.FlagSet) func(context.Context, *cmdEnv) (int, error) {
	var sale saleFlag
	var watch time.Duration
	var count int
	fs.Var(&sale, "sale", "sale `id`")
	fs.DurationVar(&watch, "watch", 0, "redraw every `interval` until interrupted")
	fs.IntVar(&count, "count", 0, "with --watch, stop after this many snapshots")
	return func(ctx context.Context, e *cmdEnv) (int, error) {
		if err := needSale("status", &sale); err != nil {
			return 0, err
		}
		if watch < 0 || count < 0 {
			return 0, tool.Usagef("status: --watch and --count must not be negative")
		}
		if watch == 0 {
			return report(ctx, e, false, func(ctx context.Context, t *tool.Tool) (tool.Report, error) { return status.Status(ctx, t, sale.id) })
		}
		t, done, err := tool.Connect(ctx, e.cfg.Redis, e.cfg.Postgres, false)
		if err != nil {
			return 0, err
		}
		defer done()
		return ExitOK, status.Watch(ctx, t, sale.id, watch, count, func(r *status.StatusReport) error {
			if e.cfg.Clear && !e.cfg.JSON {
				fmt.Fprint(e.stdout, "\x1b[H\x1b[2J")
			} else if !e.cfg.JSON {
				fmt.Fprintln(e.stdout, strings.Repeat("-", 72))
			}
			return tool.Write(e.stdout, r, e.cfg.JSON)
		})
	}
}

func reshardFlags(fs *flag.FlagSet) func(context.Context, *cmdEnv) (int, error) {
	var sale saleFlag
	var shards int
	fs.Var(&sale, "sale", "sale `id`")
	fs.IntVar(&shards, "shards", 0, "new shard `count`, 1..256")
	return func(ctx context.Context, e *cmdEnv) (int, error) {
		if err := needSale("reshard", &sale); err != nil {
			return 0, err
		}
		if err := checkShards("reshard", shards, true); err != nil {
			return 0, err
		}
		return report(ctx, e, false, func(ctx context.Context, t *tool.Tool) (tool.Report, error) {
			return reshard.Reshard(ctx, t, sale.id, shards)
		})
	}
}

func reconcileFlags(fs *flag.FlagSet) func(context.Context, *cmdEnv) (int, error) {
	var sale saleFlag
	var opt reconcile.ReconcileOptions
	fs.Var(&sale, "sale", "sale `id`")
	fs.BoolVar(&opt.Repair, "repair", false, "repair what is found (compare-and-set)")
	fs.DurationVar(&opt.Grace, "grace", 30*time.Second, "`age` after which a reservation missing from PostgreSQL counts as lost")
	group, topic := lagFlags(fs, "an orphan is released only once it has no lag")
	return func(ctx context.Context, e *cmdEnv) (int, error) {
		if err := needSale("reconcile", &sale); err != nil {
			return 0, err
		}
		if opt.Grace <= 0 {
			return 0, tool.Usagef("reconcile: --grace must be positive")
		}
		if *group == "" || *topic == "" {
			return 0, tool.Usagef("reconcile: --writer-group and --orders-topic must not be empty")
		}
		if opt.Repair {
			cl, err := kgo.NewClient(e.cfg.Kafka.Opts()...)
			if err != nil {
				return 0, tool.Usagef("reconcile: kafka client: %v", err)
			}
			defer cl.Close()
			opt.WriterLag = func(ctx context.Context) (int64, error) { return journal.GroupLag(ctx, cl, *group, *topic) }
		}
		var rep *reconcile.ReconcileReport
		if _, err := report(ctx, e, true, func(ctx context.Context, t *tool.Tool) (tool.Report, error) {
			var err error
			rep, err = reconcile.Reconcile(ctx, t, sale.id, opt)
			return rep, err
		}); err != nil {
			return 0, err
		}
		if !rep.Clean {
			return ExitFail, nil
		}
		return ExitOK, nil
	}
}

// lagFlags defines --writer-group and --orders-topic, the writers' consumer
// group and the topic whose lag a command reads (why: what it is read for).
// In the ops pod they default from the writer's own variables (envDefaults).
func lagFlags(fs *flag.FlagSet, why string) (group, topic *string) {
	group = fs.String("writer-group", orderevent.DefaultGroup, "the writers' Kafka consumer `group`: "+why+" (env FLASHSALE_GROUP)")
	topic = fs.String("orders-topic", orderevent.DefaultTopic, "the order events' Kafka `topic` (env FLASHSALE_TOPIC)")
	return group, topic
}

func toolboxFlags(fs *flag.FlagSet) func(context.Context, *cmdEnv) (int, error) {
	var once bool
	var every time.Duration
	fs.BoolVar(&once, "once", false, "check once and exit 1 when a store does not answer (the readiness probe)")
	fs.DurationVar(&every, "every", time.Minute, "`interval` between two checks")
	group, topic := lagFlags(fs, "a check reads its lag")
	return func(ctx context.Context, e *cmdEnv) (int, error) {
		switch {
		case every < time.Second:
			return 0, tool.Usagef("toolbox: --every must be at least 1s")
		case *group == "" || *topic == "":
			return 0, tool.Usagef("toolbox: --writer-group and --orders-topic must not be empty")
		}
		return runToolbox(ctx, e, toolbox.Options{Group: *group, Topic: *topic, Timeout: 10 * time.Second}, once, every)
	}
}

func saleCreateFlags(fs *flag.FlagSet) func(context.Context, *cmdEnv) (int, error) {
	var file string
	var shards int
	fs.StringVar(&file, "file", "", "sale `file`, JSON or YAML (the extension says which); - reads standard input")
	fs.IntVar(&shards, "shards", 0, "shard `count` of the new sale, 1..256 (default: one per Redis master)")
	chainName := fs.String("beacon", os.Getenv("FLASHSALE_BEACON"), "beacon `chain` that seals a queue's or raffle's draw: quicknet (drand; the default), dev (the local stack's test chain) or none (env FLASHSALE_BEACON)")
	return func(ctx context.Context, e *cmdEnv) (int, error) {
		if file == "" {
			return 0, tool.Usagef("sale create: --file is required")
		}
		chain, err := saleops.ChainNamed(*chainName)
		if err != nil {
			return 0, tool.Usagef("sale create: --beacon: %v", err)
		}
		if err := checkShards("sale create", shards, false); err != nil {
			return 0, err
		}
		// The file before any store: a bad field is named without a stack.
		s, err := saleops.ReadSaleFile(file)
		if err != nil {
			return 0, err
		}
		return report(ctx, e, true, func(ctx context.Context, t *tool.Tool) (tool.Report, error) {
			return saleops.CreateParsedSale(ctx, t, s, shards, chain)
		})
	}
}

func saleBrandFlags(fs *flag.FlagSet) func(context.Context, *cmdEnv) (int, error) {
	var file string
	fs.StringVar(&file, "file", "", "the sale's `file`, JSON or YAML, edited for its branding only; - reads standard input")
	return func(ctx context.Context, e *cmdEnv) (int, error) {
		if file == "" {
			return 0, tool.Usagef("sale brand: --file is required")
		}
		s, err := saleops.ReadSaleFile(file)
		if err != nil {
			return 0, err
		}
		return report(ctx, e, true, func(ctx context.Context, t *tool.Tool) (tool.Report, error) { return saleops.BrandSale(ctx, t, s) })
	}
}

func saleListFlags(fs *flag.FlagSet) func(context.Context, *cmdEnv) (int, error) {
	var f saleops.ListFilter
	status := fs.String("status", "", "only sales in these `STATES`, comma separated: "+strings.Join(saleops.SaleStates, ", ")+" (default: all)")
	fs.IntVar(&f.Last, "last", 0, "only the `N` sales that start last (after --status; 0: all)")
	return func(ctx context.Context, e *cmdEnv) (int, error) {
		if err := f.Parse(*status); err != nil {
			return 0, err
		}
		return report(ctx, e, true, func(ctx context.Context, t *tool.Tool) (tool.Report, error) { return saleops.ListSales(ctx, t, f) })
	}
}

func saleShowFlags(fs *flag.FlagSet) func(context.Context, *cmdEnv) (int, error) {
	var sale saleFlag
	fs.Var(&sale, "sale", "sale `id`")
	return func(ctx context.Context, e *cmdEnv) (int, error) {
		if err := needSale("sale show", &sale); err != nil {
			return 0, err
		}
		return report(ctx, e, false, func(ctx context.Context, t *tool.Tool) (tool.Report, error) { return saleops.ShowSale(ctx, t, sale.id) })
	}
}

// stateFlags makes the flags of sale pause (state PAUSED), resume ("") and
// end (ENDED).
func stateFlags(state string) func(*flag.FlagSet) func(context.Context, *cmdEnv) (int, error) {
	return func(fs *flag.FlagSet) func(context.Context, *cmdEnv) (int, error) {
		var sale saleFlag
		fs.Var(&sale, "sale", "sale `id`")
		return func(ctx context.Context, e *cmdEnv) (int, error) {
			if err := needSale(fs.Name(), &sale); err != nil {
				return 0, err
			}
			return report(ctx, e, false, func(ctx context.Context, t *tool.Tool) (tool.Report, error) {
				return saleops.SetSaleState(ctx, t, sale.id, state)
			})
		}
	}
}

// report connects (to PostgreSQL too when needDB), runs do within the
// configured timeout and writes the report it returns.
func report(ctx context.Context, e *cmdEnv, needDB bool, do func(context.Context, *tool.Tool) (tool.Report, error)) (int, error) {
	t, done, err := tool.Connect(ctx, e.cfg.Redis, e.cfg.Postgres, needDB)
	if err != nil {
		return 0, err
	}
	defer done()
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	rep, err := do(ctx, t)
	if err != nil {
		return 0, err
	}
	return ExitOK, tool.Write(e.stdout, rep, e.cfg.JSON)
}

func drawVerifyFlags(fs *flag.FlagSet) func(context.Context, *cmdEnv) (int, error) {
	var sale saleFlag
	var gateway, file, logFile string
	var offline bool
	fs.Var(&sale, "sale", "sale `id`")
	fs.StringVar(&gateway, "gateway", drawverify.DefaultGateway, "`URL` of a gateway that serves the draw (env FLASHCTL_GATEWAY)")
	fs.StringVar(&file, "file", "", "verify the draw saved whole in this JSON `file` instead of asking a gateway; - reads standard input")
	fs.StringVar(&logFile, "log", "", "with --file: the draw's log saved in this JSON `file` (GET .../draw/log); without it the log is not checked")
	fs.BoolVar(&offline, "offline", false, "with --file: do not compare the commitment with the sale's description in Redis")
	return func(ctx context.Context, e *cmdEnv) (int, error) {
		if err := needSale("sale draw verify", &sale); err != nil {
			return 0, err
		}
		base, err := drawverify.GatewayURL(gateway)
		if err != nil && file == "" {
			return 0, err
		}
		if logFile != "" && file == "" {
			return 0, tool.Usagef("sale draw verify: --log goes with --file (asking a gateway reads its log too)")
		}
		ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
		defer cancel()
		doc, log, src := (*drawverify.DrawPage)(nil), (*drawverify.LogPage)(nil), file
		if file != "" {
			if doc, err = drawverify.ReadDrawFile(file); err == nil && logFile != "" {
				log, err = drawverify.ReadLogFile(logFile)
			}
		} else {
			src = base
			cl := &http.Client{Timeout: 30 * time.Second}
			if doc, err = drawverify.FetchDraw(ctx, cl, base, sale.id); err == nil && doc.State == drawverify.DrawRevealed {
				log, err = drawverify.FetchLog(ctx, cl, base, sale.id)
			}
		}
		if err != nil {
			return 0, err
		}
		rep, err := drawverify.CheckDraw(doc, log, sale.id)
		if err != nil {
			return 0, err
		}
		rep.Source = src
		if offline && file != "" {
			rep.Described = "not compared: --offline"
		} else {
			drawverify.DescribedCommitment(ctx, e.cfg.Redis, rep)
		}
		if err := tool.Write(e.stdout, rep, e.cfg.JSON); err != nil || !rep.Verified {
			return ExitFail, err
		}
		return ExitOK, nil
	}
}

func drawBeaconFlags(fs *flag.FlagSet) func(context.Context, *cmdEnv) (int, error) {
	var sale saleFlag
	var signature, relays string
	fs.Var(&sale, "sale", "sale `id`")
	fs.StringVar(&signature, "signature", "", "the round's signature (96 hex digits), as a drand relay serves it, for gateways that reach no relay")
	fs.StringVar(&relays, "relays", strings.Join(beacon.DefaultRelays, ","), "drand HTTP `relays` to fetch the round from when --signature is not given, comma-separated")
	return func(ctx context.Context, e *cmdEnv) (int, error) {
		if err := needSale("sale draw beacon", &sale); err != nil {
			return 0, err
		}
		return report(ctx, e, false, func(ctx context.Context, t *tool.Tool) (tool.Report, error) {
			return saleops.HandBeacon(ctx, t, sale.id, signature, &beacon.Fetcher{Relays: splitList(relays)})
		})
	}
}

func drawAbortFlags(fs *flag.FlagSet) func(context.Context, *cmdEnv) (int, error) {
	var sale saleFlag
	var reason string
	fs.Var(&sale, "sale", "sale `id`")
	fs.StringVar(&reason, "reason", "", "why, in a sentence: it is published in the log")
	return func(ctx context.Context, e *cmdEnv) (int, error) {
		if err := needSale("sale draw abort", &sale); err != nil {
			return 0, err
		}
		return report(ctx, e, false, func(ctx context.Context, t *tool.Tool) (tool.Report, error) {
			return saleops.AbortDraw(ctx, t, sale.id, reason)
		})
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func presaleLoadFlags(fs *flag.FlagSet) func(context.Context, *cmdEnv) (int, error) {
	var sale saleFlag
	var file string
	fs.Var(&sale, "sale", "sale `id`")
	fs.StringVar(&file, "users", "", "`file` of user ids, one decimal id per line (blank lines and # comments ignored); - reads standard input")
	return func(ctx context.Context, e *cmdEnv) (int, error) {
		if err := needSale("sale presale load", &sale); err != nil {
			return 0, err
		}
		if file == "" {
			return 0, tool.Usagef("sale presale load: --users is required")
		}
		// The whole file before any store: a bad line loads nothing.
		users, err := saleops.ReadPresaleFile(file)
		if err != nil {
			return 0, err
		}
		return report(ctx, e, false, func(ctx context.Context, t *tool.Tool) (tool.Report, error) {
			return saleops.LoadPresale(ctx, t, sale.id, users)
		})
	}
}

// runToolbox checks once, then every `every` until ctx ends (SIGTERM), and
// returns ExitOK; with once it checks once and returns ExitFail when a store
// did not answer (the pod's readiness probe).
func runToolbox(ctx context.Context, e *cmdEnv, o toolbox.Options, once bool, every time.Duration) (int, error) {
	for {
		r := toolbox.Check(ctx, e.cfg.Common, o)
		if ctx.Err() != nil {
			return ExitOK, nil
		}
		if err := tool.Write(e.stdout, r, e.cfg.JSON); err != nil {
			return 0, err
		}
		if once {
			if !r.OK {
				return ExitFail, nil
			}
			return ExitOK, nil
		}
		select {
		case <-ctx.Done():
			return ExitOK, nil
		case <-time.After(every):
		}
	}
}
