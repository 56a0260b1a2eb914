package report

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Chart geometry in SVG user units.
const (
	chartW, chartH = 900, 260
	padL, padR     = 70, 20
	padT, padB     = 20, 40
)

var palette = struct{ ok, client, limited, server, failed, p50, p99, max string }{
	"#2e7d32", "#1565c0", "#ef6c00", "#c62828", "#212121", "#1565c0", "#c62828", "#9e9e9e"}

// WriteHTML writes the self-contained report page.
func (r *Result) WriteHTML(w io.Writer) error {
	b := bufio.NewWriter(w)
	esc := html.EscapeString
	fmt.Fprintf(b, `<!doctype html><html><head><meta charset="utf-8"><title>bench: %s</title>
<style>body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:960px}
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 10px;border-bottom:1px solid #ddd;text-align:right}
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}h2{margin-top:28px}
.pass{color:#2e7d32;font-weight:bold}.fail{color:#c62828;font-weight:bold}svg{background:#fff;border:1px solid #ddd}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}</style>
</head><body>
`, esc(r.Scenario))
	fmt.Fprintf(b, "<h1>%s against %s</h1>\n<p>%s, %s loop, %d connections, %d workers (GOMAXPROCS %d), %d users, items %v.</p>\n",
		esc(r.Scenario), esc(r.URL), esc(r.Start.Format("2006-01-02 15:04:05 MST")), r.Mode, r.Conns, r.Workers, r.GOMAXPROCS, r.Users, r.Items)

	l := r.Latency
	fmt.Fprintf(b, `<table><tr><th>elapsed</th><th>sent</th><th>responses</th><th>transport failures</th><th>throughput</th><th>peak second</th><th>202 accepted</th><th>late sends</th><th>unsent</th></tr>
<tr><td>%.2fs</td><td>%d</td><td>%d</td><td>%d</td><td>%.0f/s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td></tr></table>
<table><tr><th>latency (ms)</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>mean</th></tr>
<tr><td>all requests</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%.3f</td></tr></table>
`, r.Elapsed, r.Sent, r.Responses, r.Failed, r.Throughput, r.PeakSecond, r.Accepted, r.Late, r.Unsent,
		l.P50, l.P90, l.P99, l.P999, l.Max, l.Mean)
	if r.Mode == "open" {
		fmt.Fprintf(b, "<p>Open loop: latency counts from each request's intended send time, so time spent waiting for a free connection is included. Sends later than %s: %d.</p>\n", esc(r.LateBy), r.Late)
	}

	b.WriteString("<h2>Latency over time</h2>\n")
	legend(b, [][2]string{{palette.p50, "p50"}, {palette.p99, "p99"}, {palette.max, "max"}})
	latencyChart(b, r.Timeline)
	b.WriteString("<h2>Throughput per second</h2>\n")
	legend(b, [][2]string{{palette.ok, "2xx"}, {palette.client, "4xx"}, {palette.limited, "429"}, {palette.server, "5xx"},
		{palette.failed, "transport failure"}, {"#6a1b9a", "sent (dashed)"}, {"#00838f", "offered: scheduled arrivals (long dashes, open loop)"}})
	throughputChart(b, r.Timeline)
	b.WriteString("<h2>Status mix</h2>\n")
	mixChart(b, r)

	if a := r.Audit; a != nil {
		cls, word := "pass", "PASS"
		if !a.OK() {
			cls, word = "fail", "FAIL"
		}
		fmt.Fprintf(b, "<h2>Audit of sale %d: <span class=%q>%s</span></h2>\n", a.SaleID, cls, word)
		fmt.Fprintf(b, "<p>Orders in PostgreSQL %d, distinct 202s %d, oversold %d, users with two active orders %d, 202s missing from PostgreSQL %d, FAILED orders %d; settled %v.</p>\n",
			a.Orders, a.Accepted, a.Oversold, a.Duplicates, a.Missing, a.Failed, a.Settled)
		b.WriteString("<table><tr><th>item</th><th>Q</th><th>sold</th><th>P</th><th>pending</th><th>paid</th><th>expired</th><th>cancelled</th><th>failed</th><th>S (Redis)</th><th>Q-S-P</th><th>202s</th></tr>\n")
		for _, it := range a.Items {
			fmt.Fprintf(b, "<tr><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td></tr>\n",
				it.ID, it.Q, it.Sold, it.P, it.Pending, it.Paid, it.Expired, it.Cancelled, it.Failed, it.S, it.Q-it.S-it.P, it.A)
		}
		b.WriteString("</table>\n")
		if len(a.Failures) > 0 {
			b.WriteString("<ul>")
			for _, f := range a.Failures {
				fmt.Fprintf(b, "<li class=fail>%s</li>", esc(f))
			}
			b.WriteString("</ul>\n")
		}
	}

	b.WriteString("<h2>Counts</h2>\n<table><tr><th>kind</th><th>status / code / failure</th><th>count</th></tr>\n")
	for _, c := range append(append(append([]Count{}, r.Status...), r.Codes...), r.Errors...) {
		fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td><td>%d</td></tr>\n", esc(c.Kind), esc(c.What), c.Count)
	}
	b.WriteString("</table>\n</body></html>\n")
	return b.Flush()
}

func legend(b *bufio.Writer, items [][2]string) {
	b.WriteString(`<div class="legend">`)
	for _, it := range items {
		fmt.Fprintf(b, `<span><i style="background:%s"></i>%s</span>`, it[0], html.EscapeString(it[1]))
	}
	b.WriteString("</div>\n")
}

func svgOpen(b *bufio.Writer, h int) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" font-size="11">`, chartW, h, chartW, h)
}

// xAxis draws second ticks under a plot of n seconds and returns the x of
// second t's left edge and the width of one second.
func xAxis(b *bufio.Writer, n int) (func(t float64) float64, float64) {
	n = max(n, 1)
	pw := float64(chartW - padL - padR)
	step := pw / float64(n)
	x := func(t float64) float64 { return padL + t*step }
	every := max(1, int(math.Ceil(float64(n)/15)))
	for t := 0; t <= n; t += every {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/><text x="%.1f" y="%d" text-anchor="middle">%ds</text>`,
			x(float64(t)), chartH-padB, x(float64(t)), chartH-padB+4, x(float64(t)), chartH-padB+16, t)
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`, padL, chartH-padB, chartW-padR, chartH-padB)
	return x, step
}

func latencyChart(b *bufio.Writer, t []Second) {
	svgOpen(b, chartH)
	defer b.WriteString("</svg>\n")
	if len(t) == 0 {
		return
	}
	// Log scale: latencies of one run span microseconds to seconds.
	lo, hi := math.Inf(1), 0.0
	for _, s := range t {
		if s.P50 > 0 {
			lo = math.Min(lo, s.P50)
		}
		hi = math.Max(hi, s.Max)
	}
	if hi == 0 {
		return
	}
	lo = math.Pow(10, math.Floor(math.Log10(math.Max(lo, 0.001))))
	hi = math.Pow(10, math.Ceil(math.Log10(hi)))
	if hi <= lo {
		hi = lo * 10
	}
	ph := float64(chartH - padT - padB)
	y := func(v float64) float64 {
		v = math.Max(v, lo)
		return padT + ph - ph*(math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))
	}
	for v := lo; v <= hi*1.001; v *= 10 {
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`,
			padL, y(v), chartW-padR, y(v), padL-6, y(v)+4, fmtMs(v))
	}
	x, step := xAxis(b, len(t))
	line := func(color string, dash string, get func(Second) float64) {
		var pts strings.Builder
		for _, s := range t {
			if s.Done-s.Failed == 0 {
				continue
			}
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(float64(s.T))+step/2, y(get(s)))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" %s points="%s"/>`, color, dash, pts.String())
	}
	line(palette.max, `stroke-dasharray="4 3"`, func(s Second) float64 { return s.Max })
	line(palette.p99, "", func(s Second) float64 { return s.P99 })
	line(palette.p50, "", func(s Second) float64 { return s.P50 })
	fmt.Fprintf(b, `<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">latency (log)</text>`, chartH/2, chartH/2)
}

func fmtMs(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%gs", v/1000)
	case v >= 1:
		return fmt.Sprintf("%gms", v)
	}
	return fmt.Sprintf("%gµs", v*1000)
}

func throughputChart(b *bufio.Writer, t []Second) {
	svgOpen(b, chartH)
	defer b.WriteString("</svg>\n")
	var top int64
	for _, s := range t {
		top = max(top, s.Done, s.Sent, s.Offered)
	}
	if top == 0 {
		return
	}
	ph := float64(chartH - padT - padB)
	scale := niceCeil(float64(top))
	y := func(v float64) float64 { return padT + ph - ph*v/scale }
	for i := 0; i <= 4; i++ {
		v := scale * float64(i) / 4
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`,
			padL, y(v), chartW-padR, y(v), padL-6, y(v)+4, fmtCount(v))
	}
	x, step := xAxis(b, len(t))
	for _, s := range t {
		base := 0.0
		for _, part := range []struct {
			n     int64
			color string
		}{{s.OK, palette.ok}, {s.Client, palette.client}, {s.Limited, palette.limited}, {s.Server, palette.server}, {s.Failed, palette.failed}} {
			if part.n == 0 {
				continue
			}
			y0, y1 := y(base), y(base+float64(part.n))
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%ds: %d</title></rect>`,
				x(float64(s.T))+step*0.1, y1, step*0.8, y0-y1, part.color, s.T, part.n)
			base += float64(part.n)
		}
	}
	var sent, offered strings.Builder
	hasOffered := false
	for _, s := range t {
		fmt.Fprintf(&sent, "%.1f,%.1f ", x(float64(s.T))+step/2, y(float64(s.Sent)))
		fmt.Fprintf(&offered, "%.1f,%.1f ", x(float64(s.T))+step/2, y(float64(s.Offered)))
		hasOffered = hasOffered || s.Offered > 0
	}
	fmt.Fprintf(b, `<polyline fill="none" stroke="#6a1b9a" stroke-width="1.5" stroke-dasharray="3 2" points="%s"><title>sent per second</title></polyline>`, sent.String())
	if hasOffered {
		fmt.Fprintf(b, `<polyline fill="none" stroke="#00838f" stroke-width="1.5" stroke-dasharray="8 3" points="%s"><title>offered (scheduled) per second</title></polyline>`, offered.String())
	}
	fmt.Fprintf(b, `<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">per second</text>`, chartH/2, chartH/2)
}

func mixChart(b *bufio.Writer, r *Result) {
	rows := append(append([]Count{}, r.Status...), r.Errors...)
	for _, c := range r.Codes {
		rows = append(rows, Count{Kind: c.Kind, What: "code " + c.What, Count: c.Count})
	}
	h := padT + 22*len(rows) + 10
	svgOpen(b, h)
	defer b.WriteString("</svg>\n")
	var top int64
	for _, c := range rows {
		top = max(top, c.Count)
	}
	if top == 0 {
		return
	}
	total := float64(max(r.Done, 1))
	left := 280.0
	pw := float64(chartW) - left - 140
	for i, c := range rows {
		yy := float64(padT + 22*i)
		color := palette.client
		switch {
		case strings.HasPrefix(c.What, "2"):
			color = palette.ok
		case c.What == "429":
			color = palette.limited
		case strings.HasPrefix(c.What, "5"):
			color = palette.server
		case strings.HasPrefix(c.What, "code "):
			color = "#78909c"
		case !strings.ContainsAny(c.What[:1], "0123456789"):
			color = palette.failed
		}
		w := math.Max(1, pw*float64(c.Count)/float64(top))
		fmt.Fprintf(b, `<text x="%.0f" y="%.1f" text-anchor="end">%s %s</text><rect x="%.0f" y="%.1f" width="%.1f" height="16" fill="%s"/><text x="%.1f" y="%.1f">%d (%.2f%%)</text>`,
			left-8, yy+12, html.EscapeString(c.Kind), html.EscapeString(c.What), left, yy, w, color, left+w+6, yy+12, c.Count, 100*float64(c.Count)/total)
	}
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func fmtCount(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}
