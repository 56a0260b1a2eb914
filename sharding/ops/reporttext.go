package ops

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"flashsale/sharding/api"
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
		if err := r.Funnel.text(w); err != nil {
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

// text renders the funnel: one row per gateway, then the sum.
func (f *Funnel) text(w io.Writer) error {
	fmt.Fprintf(w, "\nfunnel (from the %s: counted answers, not people; not exact)\n", f.Source)
	tb := newTable(w, "gateway", "page loads", "tickets issued", "queued", "admitted", "purchases", "202s")
	for _, g := range append(append([]GatewayFunnel{}, f.Gateways...), f.Total) {
		tb.row(g.Gateway, itoa(g.PageLoads), itoa(g.Tickets[api.AnswerIssued.String()]), itoa(g.Tickets[api.AnswerQueued.String()]),
			itoa(g.Admitted), itoa(sumValues(g.Purchases)), itoa(g.Purchases[api.AnswerAccepted.String()]))
	}
	if err := tb.flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "  purchases by answer: %s\n  paid (PostgreSQL): %d\n", answersText(f.Total.Purchases), f.Paid)
	for _, e := range f.Errors {
		fmt.Fprintf(w, "  not read: %s\n", e)
	}
	return nil
}

func sumValues(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// answersText is the non-zero answers, largest first.
func answersText(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || (m[keys[i]] == m[keys[j]] && keys[i] < keys[j]) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
