package ops

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"flashsale/sharding/journal"
	"flashsale/sharding/ops/funnel"
	"flashsale/sharding/ops/ledger"
	"flashsale/sharding/ops/tool"
)

// reportFlags are the checked flags of `sale report`.
type reportFlags struct {
	sale       saleFlag
	html       string
	grace      time.Duration
	gateways   string
	prometheus string
	group      *string
	topic      *string
}

func saleReportFlags(fs *flag.FlagSet) func(context.Context, *cmdEnv) (int, error) {
	var f reportFlags
	fs.Var(&f.sale, "sale", "sale `id`")
	fs.StringVar(&f.html, "html", "", "also write the report as an HTML page to `file`")
	fs.DurationVar(&f.grace, "grace", 30*time.Second, "`age` below which a reservation missing from PostgreSQL counts as on its way")
	fs.StringVar(&f.gateways, "gateways", "", "the gateways' admin `addresses` (host:port or URL), comma separated: their funnel counters are summed")
	fs.StringVar(&f.prometheus, "prometheus", "", "Prometheus `url`: read the funnel there instead (it keeps a sale's counters after the gateways drop them)")
	f.group, f.topic = lagFlags(fs, "its lag tells a reservation waiting in Kafka from a lost one")
	return func(ctx context.Context, e *cmdEnv) (int, error) {
		opt, err := f.options()
		if err != nil {
			return 0, err
		}
		cl, err := kgo.NewClient(e.cfg.Kafka.Opts()...)
		if err != nil {
			return 0, tool.Usagef("sale report: kafka client: %v", err)
		}
		defer cl.Close()
		opt.WriterLag = func(ctx context.Context) (int64, error) { return journal.GroupLag(ctx, cl, *f.group, *f.topic) }
		return runSaleReport(ctx, e, f.sale.id, f.html, opt)
	}
}

// options checks the flags and returns the report's options.
func (f *reportFlags) options() (ledger.SaleReportOptions, error) {
	var opt ledger.SaleReportOptions
	switch {
	case f.sale.id == 0:
		return opt, tool.Usagef("sale report: --sale is required")
	case f.grace <= 0:
		return opt, tool.Usagef("sale report: --grace must be positive")
	case *f.group == "" || *f.topic == "":
		return opt, tool.Usagef("sale report: --writer-group and --orders-topic must not be empty")
	case f.gateways != "" && f.prometheus != "":
		return opt, tool.Usagef("sale report: give --gateways or --prometheus, not both")
	}
	if f.prometheus != "" {
		u, err := url.Parse(f.prometheus)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return opt, tool.Usagef("sale report: --prometheus %q: want an http or https URL", f.prometheus)
		}
		opt.Prometheus = f.prometheus
	}
	for _, gw := range strings.Split(f.gateways, ",") {
		if f.gateways == "" {
			break
		}
		if gw = strings.TrimSpace(gw); gw == "" || strings.ContainsAny(gw, " \t") {
			return opt, tool.Usagef("sale report: --gateways %q: want admin addresses separated by commas, none empty", f.gateways)
		}
		if _, err := url.Parse(funnel.MetricsURL(gw)); err != nil {
			return opt, tool.Usagef("sale report: --gateways: %q is not an address: %v", gw, err)
		}
		opt.Gateways = append(opt.Gateways, gw)
	}
	opt.Grace = f.grace
	return opt, nil
}

// runSaleReport takes the report, writes it (and the HTML page to html when
// set; the file is created first, so a bad path fails before the work) and
// exits 0 when the ledger balances, 1 when it does not.
func runSaleReport(ctx context.Context, e *cmdEnv, id int64, html string, opt ledger.SaleReportOptions) (int, error) {
	var page *os.File
	if html != "" {
		var err error
		if page, err = os.Create(html); err != nil {
			return 0, fmt.Errorf("sale report: --html: %w", err)
		}
		defer page.Close()
	}
	var rep *ledger.SaleReport
	if _, err := report(ctx, e, true, func(ctx context.Context, t *tool.Tool) (tool.Report, error) {
		var err error
		rep, err = ledger.TakeReport(ctx, t, id, opt)
		return rep, err
	}); err != nil {
		return 0, err
	}
	if page != nil {
		if err := rep.WriteHTML(page); err != nil {
			return 0, err
		}
		if err := page.Close(); err != nil {
			return 0, fmt.Errorf("sale report: --html: %w", err)
		}
	}
	if !rep.Balanced {
		return ExitFail, nil
	}
	return ExitOK, nil
}
