package report

import (
	"fmt"
	"io"
	"strings"

	"flashsale/sharding/look"
)

// WriteHeadline prints what the sale did, before the details: per item the
// sell-out (or what was accepted), the audit's verdict when one ran, the
// answers by outcome with their median and p99, and whether the generator
// kept its schedule (a generator behind it measures its own queue, not the
// system; one whose sends waited for busy connections met the system's pace).
func (r *Result) WriteHeadline(w io.Writer) error {
	for _, it := range r.Sales {
		fmt.Fprintf(w, "== item %d: %s\n", it.ID, sellOutText(it))
	}
	if a := r.Audit; a != nil {
		verdict := "PASS"
		if !a.OK() {
			verdict = "FAIL: " + strings.Join(a.Failures, "; ")
		}
		fmt.Fprintf(w, "== audit %s: oversold %d, 202s not in PostgreSQL %d, users with two active orders %d\n",
			verdict, a.Oversold, a.Missing, a.Duplicates)
	}
	var parts []string
	for _, o := range r.Outcomes {
		parts = append(parts, fmt.Sprintf("%s %s (p50 %s, p99 %s)", o.Name, look.Commas(o.Count), ms(o.Latency.P50), ms(o.Latency.P99)))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "== answers: %s\n", strings.Join(parts, ", "))
	}
	_, err := fmt.Fprintf(w, "== the load generator: %s\n", r.scheduleText())
	return err
}

// scheduleText says whether the generator kept its schedule.
func (r *Result) scheduleText() string {
	if r.Mode != "open" {
		return fmt.Sprintf("closed loop, %s", plural(r.Conns, "connection", "connections"))
	}
	if r.Sent == 0 {
		return "sent nothing"
	}
	late := 100 * float64(r.Late) / float64(r.Sent)
	if late < 1 && r.Unsent == 0 {
		return fmt.Sprintf("on schedule (%.1f%% of sends later than %s, at most %s)", late, r.LateBy, ms(r.MaxLateMs))
	}
	if r.targetPaced() {
		var offered, done int64
		for _, s := range r.Timeline {
			offered, done = max(offered, s.Offered), max(done, s.Done)
		}
		return fmt.Sprintf("the crowd outpaced the target: it offered up to %s requests in a second, the target answered at most %s; %.0f%% of sends later than %s, up to %s, %s of them waiting for one of the %s, all busy waiting for answers (the queue at the door; the latencies include it)",
			look.Commas(offered), look.Commas(done), late, r.LateBy, ms(r.MaxLateMs), pct(r.LateWaited, r.Late), plural(r.Conns, "connection", "connections"))
	}
	return fmt.Sprintf("BEHIND its schedule: %.0f%% of sends later than %s, up to %s; the latencies include its queue (a smaller crowd or more bench machines measure the system)",
		late, r.LateBy, ms(r.MaxLateMs))
}
