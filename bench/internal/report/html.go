package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"flashsale/sharding/api"
	"flashsale/sharding/look"
)

//go:embed report.tmpl
var reportTmpl string

// funcs are the formatting helpers templates use.
var funcs = template.FuncMap{"count": look.Count, "ms": ms, "pct": pct, "secs": secs, "plural": plural,
	"sellout": sellOutText, "join": strings.Join}

var pageTmpl = template.Must(template.New("report").Funcs(funcs).Parse(reportTmpl))

// page is what report.tmpl renders.
type page struct {
	CSS      template.CSS // the reports' shared look (package look)
	R        *Result
	Warnings []Warning
	All      Outcome
	Charts   []*chart // in the order shown
	Status   []statusRow
	Counts   []Count
}

// statusRow is one bar of the status mix: a status with its error codes.
type statusRow struct {
	Kind, Status, Codes, Color string
	Count                      int64
	Share                      string
	Width                      float64 // percent of the widest bar
}

// WriteHTML writes the self-contained report page.
func (r *Result) WriteHTML(w io.Writer) error {
	p := page{CSS: look.CSS, R: r, Warnings: r.Warnings(), All: Outcome{Name: "all", Count: r.Responses, Latency: r.Latency, Uncorrected: r.Uncorrected},
		Charts: []*chart{hdrChart(r), sellOutChart(r), mixOverTimeChart(r), latencyChart(r), throughputChart(r)},
		Status: statusRows(r), Counts: append(append(append([]Count{}, r.Status...), r.Codes...), r.Errors...)}
	if err := pageTmpl.Execute(w, p); err != nil {
		return fmt.Errorf("rendering report: %w", err)
	}
	return nil
}

// statusRows joins each status with the error codes sent with it (410 with
// SOLD_OUT, not two bars of the same number); transport failures follow.
func statusRows(r *Result) []statusRow {
	var rows []statusRow
	used := map[Count]bool{}
	for _, s := range r.Status {
		row := statusRow{Kind: s.Kind, Status: s.What, Count: s.Count, Color: statusColor(s.What)}
		var codes []string
		for _, c := range r.Codes {
			if c.Kind == s.Kind && fmt.Sprint(api.Status[c.What]) == s.What {
				codes = append(codes, c.What+" "+look.Commas(c.Count))
				used[c] = true
			}
		}
		row.Codes = strings.Join(codes, ", ")
		rows = append(rows, row)
	}
	for _, c := range r.Codes {
		if !used[c] {
			rows = append(rows, statusRow{Kind: c.Kind, Status: "code", Codes: c.What, Count: c.Count, Color: "#78909c"})
		}
	}
	for _, e := range r.Errors {
		rows = append(rows, statusRow{Kind: e.Kind, Status: "failure", Codes: e.What, Count: e.Count, Color: palette.failed})
	}
	var top int64
	for _, row := range rows {
		top = max(top, row.Count)
	}
	for i := range rows {
		rows[i].Share = pct(rows[i].Count, r.Done)
		rows[i].Width = math.Max(0.3, 100*float64(rows[i].Count)/float64(max(top, 1)))
	}
	return rows
}

func statusColor(st string) string {
	switch {
	case strings.HasPrefix(st, "2"):
		return palette.ok
	case st == "429":
		return palette.limited
	case strings.HasPrefix(st, "5"):
		return palette.server
	}
	return palette.client
}
