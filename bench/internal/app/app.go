// Package app wires the bench binary: configuration, tokens, scenario, load
// engine, progress line, summary, report files and the audit.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"flashsale/bench/internal/audit"
	"flashsale/bench/internal/config"
	"flashsale/bench/internal/load"
	"flashsale/bench/internal/report"
	"flashsale/bench/internal/scenario"
	"flashsale/bench/internal/tokens"
	"flashsale/sharding/stock"
)

// Exit codes of Main.
const (
	ExitOK         = 0
	ExitError      = 1 // the run could not be done
	ExitUsage      = 2 // bad flags
	ExitAuditFails = 3 // an invariant failed
)

// Main runs the bench with args (without the program name) and returns the
// process exit code. `merge DIR...` and `compare A B` are subcommands. Cancelling ctx (SIGINT) ends the run early; the summary
// is still printed.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "merge":
			return mergeMain(ctx, args[1:], getenv, stdout, stderr)
		case "compare":
			return compareMain(args[1:], stdout, stderr)
		}
	}
	cfg, err := config.Load(args, getenv, stderr)
	if errors.Is(err, config.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return ExitUsage
	}
	code, err := run(ctx, &cfg, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
	}
	return code
}

func run(ctx context.Context, cfg *config.Config, stdout, stderr io.Writer) (int, error) {
	if cfg.TokensOut != "" {
		return writeTokens(cfg)
	}
	items, qty := cfg.Items, []int64(nil)
	if len(items) == 0 {
		var err error
		if items, qty, err = saleItems(ctx, cfg); err != nil {
			return ExitError, err
		}
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t0 := time.Now()
	toks, err := mintTokens(cfg, t0)
	if err != nil {
		return ExitError, err
	}
	fmt.Fprintf(stderr, "minted %d tokens in %v\n", toks.Len(), time.Since(t0).Round(time.Millisecond))
	plan, err := scenario.Build(cfg, len(items), seed)
	if err != nil {
		return ExitError, err
	}
	eng, err := load.New(load.Options{Addr: cfg.Addr, Conns: cfg.Conns, Workers: cfg.Workers, SourceAddrs: sources(cfg),
		TLS: cfg.TLS, Insecure: cfg.Insecure, Portable: cfg.Engine == "portable",
		Timeout: cfg.Timeout, LateBy: cfg.LateBy, Drain: cfg.Drain, Items: items, Tokens: toks, UserBase: cfg.UserBase,
		XForwardedFor: cfg.XFF, IdempotencyKeys: cfg.IdemKeys, RunID: strconv.FormatUint(seed%1e12, 36), Seed: seed,
		StartAt: cfg.StartAt})
	if err != nil {
		return ExitError, err
	}
	if len(plan.Actions) > 0 {
		fmt.Fprintf(stderr, "%s: %d users, %d clicks scheduled over %v\n", cfg.Scenario, cfg.Users, len(plan.Actions),
			time.Duration(plan.Actions[len(plan.Actions)-1].At).Round(time.Millisecond))
	}
	if !cfg.StartAt.IsZero() {
		fmt.Fprintf(stderr, "waiting for the start at %s (in %v)\n", cfg.StartAt.Format(time.RFC3339Nano), time.Until(cfg.StartAt).Round(time.Millisecond))
	}
	res, samples, err := drive(ctx, cfg, eng, plan, stderr)
	if err != nil {
		return ExitError, err
	}
	out := describe(cfg, res, plan, items, qty, seed, samples)
	return finish(ctx, cfg, out, res, items, stdout, stderr)
}

// drive runs the plan with the progress line and, with -metrics-url, the
// stock sampler.
func drive(ctx context.Context, cfg *config.Config, eng *load.Engine, plan *load.Plan, stderr io.Writer) (*load.Result, []stockSample, error) {
	done := make(chan struct{})
	var bg sync.WaitGroup
	if !cfg.Quiet {
		bg.Go(func() { progress(eng, stderr, done) })
	}
	var sampler *stockSampler
	if cfg.MetricsURL != "" {
		sampler = newStockSampler(cfg.MetricsURL, 250*time.Millisecond)
		sctx, cancel := context.WithCancel(ctx)
		bg.Go(func() { sampler.run(sctx) })
		bg.Go(func() { <-done; cancel() })
	}
	res, err := eng.Run(ctx, plan)
	close(done)
	bg.Wait()
	if sampler == nil {
		return res, nil, err
	}
	samples, serr := sampler.result()
	if len(samples) == 0 {
		fmt.Fprintf(stderr, "no stock gauge read from %s (%v): the sell-out curve comes from the 202s alone\n", cfg.MetricsURL, serr)
	}
	return res, samples, err
}

// describe builds the result with the run's description and metadata.
func describe(cfg *config.Config, res *load.Result, plan *load.Plan, items, qty []int64, seed uint64, samples []stockSample) *report.Result {
	out := report.Build(res, report.Info{LateBy: cfg.LateBy, Items: items, Quantity: qty})
	out.Scenario, out.URL, out.Users, out.SaleID = cfg.Scenario, cfg.URL, cfg.Users, cfg.SaleID
	out.GOMAXPROCS = runtime.GOMAXPROCS(0)
	out.Meta = runMeta(cfg, seed)
	out.Meta.Engine = res.Engine
	for _, s := range samples {
		out.Stock = append(out.Stock, report.StockSample{T: s.at.Sub(res.Start).Seconds(), Left: s.left})
	}
	if plan.Actions != nil {
		out.SetOffered(func(i int) int64 { return plan.Actions[i].At }, len(plan.Actions))
	} else if len(plan.Stages) > 0 {
		out.SetOffered(plan.At, int(min(plan.Total(), 1e8)))
	}
	return out
}

// finish runs the audit, prints the summary and writes the files.
func finish(ctx context.Context, cfg *config.Config, out *report.Result, res *load.Result, items []int64, stdout, stderr io.Writer) (int, error) {
	code := ExitOK
	var err error
	if out.Responses == 0 {
		code = ExitError
		err = fmt.Errorf("no response from %s (%d transport failures)", cfg.URL, out.Failed)
	}
	if cfg.Audit && ctx.Err() == nil {
		rep, aerr := runAudit(ctx, cfg, out.AcceptedOrders(), stderr)
		if aerr != nil {
			return ExitError, aerr
		}
		out.Audit = rep
		if !rep.OK() {
			code = ExitAuditFails
		}
	}
	c, werr := write(cfg.OutDir, out, stdout)
	if werr != nil {
		return c, werr
	}
	return code, err
}

// write prints the summary and audit and writes the result directory (default
// bench/out/<start time>).
func write(dir string, out *report.Result, stdout io.Writer) (int, error) {
	if err := out.WriteHeadline(stdout); err != nil {
		return ExitError, err
	}
	if err := out.WriteText(stdout); err != nil {
		return ExitError, err
	}
	if out.Audit != nil {
		if err := out.Audit.WriteText(stdout); err != nil {
			return ExitError, err
		}
	}
	if dir == "" {
		dir = filepath.Join("bench", "out", out.Start.Format("20060102-150405"))
	}
	path, err := out.WriteFiles(dir)
	if err != nil {
		return ExitError, err
	}
	fmt.Fprintf(stdout, "result: %s\nreport: %s\n", filepath.Join(dir, report.ResultFile), path)
	return ExitOK, nil
}

// progress prints a line a second until done closes.
func progress(eng *load.Engine, w io.Writer, done <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var last load.Progress
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		p := eng.Progress()
		rate := float64(p.Done-last.Done) / (p.Elapsed - last.Elapsed).Seconds()
		fmt.Fprintf(w, "[%5.1fs] %9.0f/s  done %d  failed %d  in-flight %d  sent %d\n",
			p.Elapsed.Seconds(), rate, p.Done, p.Failed, p.InFlight, p.Sent)
		last = p
	}
}

// saleItems reads the sale's item ids and quantities from the gateway's
// public sale endpoint.
func saleItems(ctx context.Context, cfg *config.Config) ([]int64, []int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	u := cfg.URL + "/api/flash-sales/sales/" + strconv.FormatInt(cfg.SaleID, 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("reading sale: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("reading sale %d: %w", cfg.SaleID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("reading sale %d: GET %s answered %s", cfg.SaleID, u, resp.Status)
	}
	var sale struct {
		Items []struct {
			ID     json.Number `json:"id"`
			ItemID json.Number `json:"itemId"`
			Qty    int64       `json:"quantity"`
		} `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&sale); err != nil {
		return nil, nil, fmt.Errorf("reading sale %d: %w", cfg.SaleID, err)
	}
	var out, qty []int64
	for _, it := range sale.Items {
		s := it.ID
		if s == "" {
			s = it.ItemID
		}
		id, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("reading sale %d: item id %q: %w", cfg.SaleID, s, err)
		}
		out, qty = append(out, id), append(qty, it.Qty)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("sale %d has no items", cfg.SaleID)
	}
	return out, qty, nil
}

func runAudit(ctx context.Context, cfg *config.Config, acc []report.AcceptedOrder, stderr io.Writer) (*audit.Report, error) {
	pool, err := pgxpool.New(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("audit: connecting to PostgreSQL: %w", err)
	}
	defer pool.Close()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cfg.Redis, ShuffleInit: true})
	if err != nil {
		return nil, fmt.Errorf("audit: connecting to Redis: %w", err)
	}
	defer rc.Close()
	st := stock.New(rc)
	in := audit.Input{SaleID: cfg.SaleID}
	for _, a := range acc {
		in.Accepted = append(in.Accepted, audit.Accepted{Order: a.Order, ItemID: a.ItemID})
	}
	settled, waited, err := audit.Settle(ctx, pool, st, cfg.SaleID, len(acc), cfg.Settle, cfg.SettleMax, 250*time.Millisecond, stderr)
	if err != nil {
		return nil, err
	}
	rep, err := audit.Check(ctx, pool, st, in)
	if err != nil {
		return nil, err
	}
	rep.Settled, rep.SettleWait = settled, waited
	if !settled {
		rep.Failures = append(rep.Failures, fmt.Sprintf("the sale did not settle within %v", cfg.SettleMax))
	}
	return rep, nil
}

// writeTokens mints the users' tokens and writes them to cfg.TokensOut, one a
// line, for load tools that cannot sign (bench/peers.sh feeds them to wrk).
func writeTokens(cfg *config.Config) (int, error) {
	toks, err := mintTokens(cfg, time.Now())
	if err != nil {
		return ExitError, err
	}
	var b []byte
	for i := 0; i < toks.Len(); i++ {
		b = append(append(b, toks.Token(i)...), '\n')
	}
	if err := os.WriteFile(cfg.TokensOut, b, 0o600); err != nil {
		return ExitError, fmt.Errorf("writing tokens: %w", err)
	}
	return ExitOK, nil
}

// mintTokens mints the users' tokens, signed with -jwt-key when given, else
// with the HS256 secret.
func mintTokens(cfg *config.Config, now time.Time) (*tokens.Set, error) {
	claims := tokens.Claims{UserBase: cfg.UserBase, Users: cfg.Users, IssuedAt: now, Expires: now.Add(cfg.TokenTTL),
		Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience, KeyID: cfg.JWTKeyID}
	if cfg.JWTKeyFile != "" {
		return tokens.MintKey(cfg.JWTKeyFile, claims)
	}
	return tokens.MintHS256([]byte(cfg.JWTSecret), claims)
}
