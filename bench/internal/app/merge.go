package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"flashsale/bench/internal/config"
	"flashsale/bench/internal/report"
)

// mergeMain is `bench merge [-out DIR] [-audit ...] DIR...`: one result, one
// report and (with -audit) one audit from the results of bench instances
// that ran one schedule with -shard i/N.
func mergeMain(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg := config.Default()
	cfg.DatabaseURL = getenv("DATABASE_URL")
	if v := getenv("FLASHSALE_REDIS"); v != "" {
		cfg.Redis = strings.Split(v, ",")
	}
	fs := flag.NewFlagSet("bench merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bench merge [flags] DIR...  (each DIR holds one shard's result.json and accepted.tsv)")
		fs.PrintDefaults()
	}
	redis := strings.Join(cfg.Redis, ",")
	fs.StringVar(&cfg.OutDir, "out", "", "merged result directory (default bench/out/<start>-merged)")
	fs.BoolVar(&cfg.Audit, "audit", false, "check the sale's invariants in PostgreSQL and Redis against every shard's 202s")
	fs.StringVar(&cfg.DatabaseURL, "database-url", cfg.DatabaseURL, "PostgreSQL URL for the audit (env DATABASE_URL)")
	fs.StringVar(&redis, "redis", redis, "Redis Cluster seeds for the audit (env FLASHSALE_REDIS)")
	fs.DurationVar(&cfg.Settle, "settle", cfg.Settle, "audit: how long the orders and stock must stay unchanged before checking")
	fs.DurationVar(&cfg.SettleMax, "settle-max", cfg.SettleMax, "audit: stop waiting for the system to settle after this long")
	wait := fs.Duration("wait", 0, "wait up to this long for every DIR's result.json (a merge step started beside the shards)")
	if err := fs.Parse(args); err != nil {
		return exitFlags(err)
	}
	cfg.Redis = strings.Split(redis, ",")
	if fs.NArg() == 0 {
		fs.Usage()
		return ExitUsage
	}
	code, err := runMerge(ctx, &cfg, fs.Args(), *wait, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "bench merge:", err)
	}
	return code
}

// runMerge is mergeMain once its flags are read, as run is Main's: it waits up to
// wait for the shards' results in dirs, merges them, audits the merged run
// with cfg.Audit and writes it (to cfg.OutDir, default
// bench/out/<start>-merged). It returns the exit code and, when it stopped
// short, why; an audit that fails is ExitAuditFails without an error, the
// merged result written all the same.
func runMerge(ctx context.Context, cfg *config.Config, dirs []string, wait time.Duration, stdout, stderr io.Writer) (int, error) {
	if err := waitResults(ctx, dirs, wait, stderr); err != nil {
		return ExitError, err
	}
	out, err := mergeDirs(dirs)
	if err != nil {
		return ExitError, err
	}
	cfg.SaleID = out.SaleID
	code := ExitOK
	if cfg.Audit {
		if cfg.SaleID == 0 || cfg.DatabaseURL == "" {
			return ExitUsage, errors.New("-audit needs results of a run with -sale, and -database-url or DATABASE_URL")
		}
		rep, err := runAudit(ctx, cfg, out.AcceptedOrders(), stderr)
		if err != nil {
			return ExitError, err
		}
		out.Audit = rep
		if !rep.OK() {
			code = ExitAuditFails
		}
	}
	dir := cfg.OutDir
	if dir == "" {
		dir = filepath.Join("bench", "out", out.Start.Format("20060102-150405")+"-merged")
	}
	if c, err := write(dir, out, stdout); err != nil {
		return c, err
	}
	return code, nil
}

// waitResults waits until every dir has its result.json, at most d.
func waitResults(ctx context.Context, dirs []string, d time.Duration, stderr io.Writer) error {
	deadline := time.Now().Add(d)
	for _, dir := range dirs {
		said := false
		for {
			if _, err := os.Stat(filepath.Join(dir, report.ResultFile)); err == nil || d <= 0 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("no %s in %s after %v", report.ResultFile, dir, d)
			}
			if !said {
				fmt.Fprintf(stderr, "waiting for %s\n", filepath.Join(dir, report.ResultFile))
				said = true
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}

// mergeDirs loads and merges the result directories.
func mergeDirs(dirs []string) (*report.Result, error) {
	var rs []*report.Result
	for _, d := range dirs {
		r, err := report.Load(d)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return report.Merge(rs, dirs)
}

// compareMain is `bench compare [-html FILE] A B`: two runs side by side.
func compareMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	html := fs.String("html", "", "also write the comparison page here (default: compare.html in B's directory)")
	if err := fs.Parse(args); err != nil {
		return exitFlags(err)
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(stderr, "usage: bench compare [-html FILE] A B  (result directories or result.json files)")
		return ExitUsage
	}
	a, err := report.Load(fs.Arg(0))
	if err == nil {
		var b *report.Result
		if b, err = report.Load(fs.Arg(1)); err == nil {
			return writeComparison(report.Compare(a, b, fs.Arg(0), fs.Arg(1)), *html, fs.Arg(1), stdout, stderr)
		}
	}
	fmt.Fprintln(stderr, "bench compare:", err)
	return ExitError
}

func writeComparison(c *report.Comparison, html, dirB string, stdout, stderr io.Writer) int {
	if err := c.WriteText(stdout); err != nil {
		fmt.Fprintln(stderr, "bench compare:", err)
		return ExitError
	}
	if html == "" {
		if strings.HasSuffix(dirB, ".json") {
			dirB = filepath.Dir(dirB)
		}
		html = filepath.Join(dirB, "compare.html")
	}
	f, err := os.Create(html)
	if err == nil {
		err = c.WriteHTML(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench compare:", err)
		return ExitError
	}
	fmt.Fprintf(stdout, "comparison: %s\n", html)
	return ExitOK
}

func exitFlags(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	return ExitUsage
}
