package ledger

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"time"

	"flashsale/sharding/look"
	"flashsale/sharding/ops/funnel"
)

//go:embed sale_report.tmpl
var saleReportTmpl string

var saleReportPage = template.Must(template.New("sale report").Funcs(template.FuncMap{
	"count": look.Count, "at": at, "never": orNever,
	"total": funnel.SumValues, "answers": funnel.AnswersText, "failed": failedOrders,
}).Parse(saleReportTmpl))

// htmlPage is what sale_report.tmpl renders.
type htmlPage struct {
	CSS       template.CSS
	R         *SaleReport
	L         *Ledger
	T         ItemLedger
	InFlight  int64
	Unsettled string
	Lag       string
	Rows      []htmlRow
	Payments  []htmlBar
	Gateways  []funnel.GatewayFunnel // each gateway, then the tool.Sum
}

type htmlRow struct {
	ItemLedger
	Label string
}

type htmlBar struct {
	Label string
	Count int64
	Width float64 // percent of the widest bar
}

// WriteHTML writes the report as a self-contained page, in the look of the
// bench report (package look).
func (r *SaleReport) WriteHTML(w io.Writer) error {
	p := htmlPage{CSS: look.CSS, R: r, L: r.Ledger, T: r.Ledger.Total, InFlight: r.Ledger.Total.InFlight.Units(),
		Unsettled: r.unsettledWhy(), Lag: lagText(r.Lag)}
	for _, it := range r.Ledger.Items {
		p.Rows = append(p.Rows, htmlRow{it, fmt.Sprint(it.Item)})
	}
	p.Rows = append(p.Rows, htmlRow{r.Ledger.Total, "all"})
	var top int64
	for _, m := range r.Timing.PaymentsByMinute {
		top = max(top, m.Count)
	}
	for _, m := range r.Timing.PaymentsByMinute {
		p.Payments = append(p.Payments, htmlBar{m.Minute.Format(time.DateTime), m.Count, max(0.5, 100*float64(m.Count)/float64(max(top, 1)))})
	}
	if r.Funnel != nil {
		p.Gateways = append(append(p.Gateways, r.Funnel.Gateways...), r.Funnel.Total)
	}
	if err := saleReportPage.Execute(w, p); err != nil {
		return fmt.Errorf("rendering the sale report: %w", err)
	}
	return nil
}

func lagText(l WriterLag) string {
	if !l.Known {
		return "not known: " + l.Error
	}
	return fmt.Sprintf("%d records to persist", l.Records)
}

// failedOrders counts the FAILED orders over every reason.
func failedOrders(fs []Failure) int64 {
	var n int64
	for _, f := range fs {
		n += f.Orders
	}
	return n
}
