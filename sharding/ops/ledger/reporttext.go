package ledger

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Text renders the report for a person: the timing, the funnel, then the
// ledger, whose verdict is the last line (what `make demo` ends with).
func (r *SaleReport) Text(w io.Writer) error {
	settled := "settled"
	if !r.Settled {
		settled = "not settled: " + r.unsettledWhy()
	}
	fmt.Fprintf(w, "sale report: sale %d %q, %s, taken %s (%s)\n", r.Sale, r.Name, r.State, r.TakenAt.Format(time.RFC3339), settled)
	r.Timing.text(w)
	if r.Funnel != nil {
		if err := r.Funnel.Text(w); err != nil {
			return err
		}
	}
	return r.ledgerText(w)
}

func (r *SaleReport) unsettledWhy() string {
	t := r.Ledger.Total
	var why []string
	if r.State != "ENDED" {
		why = append(why, "the sale has not ended")
	}
	if t.Pending > 0 {
		why = append(why, fmt.Sprintf("%d orders PENDING", t.Pending))
	}
	if n := t.InFlight.Units(); n > 0 {
		why = append(why, fmt.Sprintf("%d units in flight", n))
	}
	if !r.Lag.Known {
		why = append(why, "the writers' lag unknown ("+r.Lag.Error+")")
	} else if r.Lag.Records > 0 {
		why = append(why, fmt.Sprintf("the writers have %d records to persist", r.Lag.Records))
	}
	return strings.Join(why, ", ")
}

func at(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("2006-01-02 15:04:05.000Z07:00")
}

func (tm *Timing) text(w io.Writer) {
	fmt.Fprintf(w, "\ntiming\n  window          %s .. %s\n", at(tm.StartsAt), at(tm.EndsAt))
	fmt.Fprintf(w, "  first 202       %s\n  last 202        %s\n", at(tm.FirstAccepted), at(tm.LastAccepted))
	for _, s := range tm.SoldOut {
		fmt.Fprintf(w, "  sold out        item %d: %s\n", s.Item, orNever(s.At))
	}
	for _, a := range tm.Acts {
		fmt.Fprintf(w, "  %-15s %s %s\n", a.Kind, at(a.At), detailText(a.Detail))
	}
	fmt.Fprintf(w, "  last payment window closes %s\n", at(tm.LastWindowClose))
	if len(tm.PaymentsByMinute) == 0 {
		fmt.Fprintln(w, "  payments by minute: none")
		return
	}
	parts := make([]string, len(tm.PaymentsByMinute))
	for i, m := range tm.PaymentsByMinute {
		parts[i] = fmt.Sprintf("%s %d", m.Minute.Format("15:04"), m.Count)
	}
	fmt.Fprintf(w, "  payments by minute (UTC): %s\n", strings.Join(parts, ", "))
}

func orNever(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return at(t)
}

func detailText(d []byte) string {
	if s := string(d); s != "{}" && s != "" {
		return s
	}
	return ""
}
