package report

import (
	"fmt"

	"flashsale/sharding/look"
)

// Warning is something a load tester must know before trusting the figures,
// with what to do about it.
type Warning struct {
	Title  string `json:"title"`
	Detail string `json:"detail"`
	Advice string `json:"advice"`
}

// lateShare is the share of late sends from which the run is flagged: the
// generator, not the server, shaped the latency.
const lateShare = 0.01

// Warnings reads the result for the mistakes load tests make most: a
// generator that fell behind, a crowd refused by the per-IP limit, a target
// that failed at the transport level.
func (r *Result) Warnings() []Warning {
	var out []Warning
	if r.Mode == "open" && r.Sent > 0 && float64(r.Late) > lateShare*float64(r.Sent) {
		out = append(out, r.lateWarning())
	}
	var limited, purchases int64
	for _, c := range r.Status {
		if c.Kind == "purchase" {
			purchases += c.Count
			if c.What == "429" {
				limited += c.Count
			}
		}
	}
	if purchases > 0 && float64(limited) > 0.5*float64(purchases) {
		out = append(out, Warning{
			Title: "Most purchases were refused by a rate limit (429)",
			Detail: fmt.Sprintf("%s of %s purchases (%s) were answered 429 RATE_LIMITED. Every simulated user comes from "+
				"this bench host's few addresses, so the gateway's per-IP bucket sees one client.", look.Commas(limited), look.Commas(purchases), pct(limited, purchases)),
			Advice: "Run with -xff (a distinct X-Forwarded-For per user) and start the gateway with -trusted-proxies naming " +
				"the bench host's address (e.g. 127.0.0.0/8 on loopback), as behind a load balancer; or use -source-ips / " +
				"more bench hosts. See bench/README.md, \"The per-IP limit\".",
		})
	}
	if r.Done > 0 && float64(r.Failed) > 0.01*float64(r.Done) {
		out = append(out, Warning{
			Title:  "Transport failures",
			Detail: fmt.Sprintf("%s of %s requests (%s) got no HTTP answer (connect, read, timeout).", look.Commas(r.Failed), look.Commas(r.Done), pct(r.Failed, r.Done)),
			Advice: "Check the target is up and its listen backlog and file limits (ulimit -n); lower -c if connects fail.",
		})
	}
	return out
}

func unsentNote(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" %s scheduled requests were never sent: the schedule's -drain ran out first.", look.Commas(n))
}

// lateWarning says who was late: the target, whose answers kept every
// connection busy, or the generator itself.
func (r *Result) lateWarning() Warning {
	sends := fmt.Sprintf("%s of %s sends (%s) went out more than %s after their intended time, up to %s late",
		look.Commas(r.Late), look.Commas(r.Sent), pct(r.Late, r.Sent), r.LateBy, ms(r.MaxLateMs))
	if r.targetPaced() {
		return Warning{
			Title: "The target did not keep up with the schedule",
			Detail: fmt.Sprintf("%s; %s of them waited for one of the %s, all busy waiting for answers: the crowd outpaced the "+
				"target, and the wait is the queue a real crowd would meet at its door. Latency counts from the intended time, "+
				"so the percentiles include it.", sends, pct(r.LateWaited, r.Late), plural(r.Conns, "connection", "connections")) +
				unsentNote(r.Unsent),
			Advice: "Read the throughput per second for what the target served; a smaller crowd, or more connections (-c) where " +
				"the target has cores to spare, measures it below its limit.",
		}
	}
	return Warning{
		Title: "The generator fell behind its schedule",
		Detail: sends + ". Latency counts from the intended time, so the percentiles include this queueing inside the bench; " +
			"compare corrected with uncorrected below." + unsentNote(r.Unsent),
		Advice: "Add connections (-c), or spread the crowd over more machines (bench -shard i/N -start-at T, then bench merge); " +
			"check the bench host's CPU (GOMAXPROCS, -workers) is not saturated.",
	}
}

// targetPaced reports whether most late sends waited for a free connection
// (the target's pace) rather than for the generator.
func (r *Result) targetPaced() bool {
	return r.Late > 0 && r.LateWaited*10 >= r.Late*9
}
