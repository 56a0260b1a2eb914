package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"flashsale/sharding/look"
)

// WriteText prints the summary: totals, warnings, latency by outcome,
// sell-out per item and the status breakdown.
func (r *Result) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "\n%s against %s: %s loop, %s, %s (GOMAXPROCS %d), %s\n",
		r.Scenario, r.URL, r.Mode, plural(r.Conns, "connection", "connections"), plural(r.Workers, "worker", "workers"),
		r.GOMAXPROCS, plural(r.Users, "user", "users"))
	fmt.Fprintf(w, "elapsed %.2fs, sent %s, responses %s, transport failures %s, throughput %s/s (peak second %s)\n",
		r.Elapsed, look.Commas(r.Sent), look.Commas(r.Responses), look.Commas(r.Failed), look.Count(r.Throughput), look.Commas(r.PeakSecond))
	if r.Mode == "open" {
		fmt.Fprintf(w, "late sends (> %s after intended time) %s, max send delay %s, unsent at end %s\n",
			r.LateBy, look.Commas(r.Late), ms(r.MaxLateMs), look.Commas(r.Unsent))
	}
	for _, wn := range r.Warnings() {
		fmt.Fprintf(w, "WARNING: %s. %s\n  what to do: %s\n", wn.Title, wn.Detail, wn.Advice)
	}
	if r.Retries > 0 || r.Accepted > 0 {
		fmt.Fprintf(w, "retries scheduled %s, purchases accepted (202) %s, distinct orders %s\n", look.Commas(r.Retries), look.Commas(r.AcceptedN), look.Commas(int64(r.Winners)))
		if r.Winners > 0 {
			fmt.Fprintf(w, "accepted purchases: first 202 at %.3fs, last at %.3fs after the start (with a sale that sells out: the time to sell out)\n",
				r.FirstAcceptedS, r.LastAcceptedS)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "outcome\tcount\tp50\tp90\tp99\tp99.9\tmax\tuncorrected p50\tp99\tmax\t")
	fmt.Fprintf(tw, "all\t%s\t%s", look.Commas(r.Responses), latencyCells(r.Latency, r.Uncorrected))
	fmt.Fprintln(tw)
	for _, o := range r.Outcomes {
		fmt.Fprintf(tw, "%s\t%s\t%s", o.Name, look.Commas(o.Count), latencyCells(o.Latency, o.Uncorrected))
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, it := range r.Sales {
		fmt.Fprintf(w, "item %d: %s\n", it.ID, sellOutText(it))
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "kind\tstatus/error\tcount\tshare")
	for _, c := range append(append(append([]Count{}, r.Status...), r.Codes...), r.Errors...) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Kind, c.What, look.Commas(c.Count), pct(c.Count, r.Done))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "throughput per second (responses):", timelineText(r.Timeline))
	return err
}

// latencyCells is the tab-separated percentiles of a latency row.
func latencyCells(c, u Latency) string {
	return strings.Join([]string{ms(c.P50), ms(c.P90), ms(c.P99), ms(c.P999), ms(c.Max), ms(u.P50), ms(u.P99), ms(u.Max), ""}, "\t")
}

func sellOutText(it ItemSale) string {
	switch {
	case it.Accepted == 0:
		return "no 202"
	case it.SoldOutS > 0:
		return fmt.Sprintf("%s units sold out %s after the start (first 202 at %s)", look.Commas(it.Quantity), secs(it.SoldOutS), secs(it.FirstS))
	case it.Quantity > 0:
		return fmt.Sprintf("%s of %s units accepted, not sold out (last 202 at %s)", look.Commas(it.Accepted), look.Commas(it.Quantity), secs(it.LastS))
	}
	return fmt.Sprintf("%s units accepted, quantity unknown (run with -sale), last 202 at %s", look.Commas(it.Accepted), secs(it.LastS))
}

func timelineText(t []Second) string {
	var b strings.Builder
	for i, s := range t {
		if i > 0 {
			b.WriteByte(' ')
		}
		if i >= 60 {
			fmt.Fprintf(&b, "... (%d more)", len(t)-i)
			break
		}
		b.WriteString(look.Commas(s.Done - s.Failed))
	}
	return b.String()
}
