package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"

	"flashsale/sharding/look"
)

// CompareRow is one figure of two runs side by side.
type CompareRow struct {
	Group, What string
	A, B        string
	Change      string // B against A: "+12.3%", "−4.0%", "" when not comparable
	Worse       bool   // the change is for the worse (slower, fewer)
}

// Comparison is two runs side by side.
type Comparison struct {
	NameA, NameB string
	A, B         *Result
	Rows         []CompareRow
}

// Compare sets run b beside run a: throughput, 202s, time to sell out,
// late sends, and the percentiles of every outcome either run has.
func Compare(a, b *Result, nameA, nameB string) *Comparison {
	c := &Comparison{NameA: nameA, NameB: nameB, A: a, B: b}
	num := func(group, what string, va, vb float64, f func(float64) string, higherBetter bool) {
		c.Rows = append(c.Rows, CompareRow{Group: group, What: what, A: f(va), B: f(vb), Change: change(va, vb),
			Worse: va > 0 && (higherBetter && vb < va*0.98 || !higherBetter && vb > va*1.02)})
	}
	cnt := func(v float64) string { return look.Count(v) }
	num("run", "throughput (responses/s)", a.Throughput, b.Throughput, cnt, true)
	num("run", "responses", float64(a.Responses), float64(b.Responses), cnt, true)
	num("run", "202 accepted (distinct orders)", float64(a.Winners), float64(b.Winners), cnt, true)
	num("run", "last 202 (time to sell out)", a.LastAcceptedS, b.LastAcceptedS, secs, false)
	num("run", "late sends", float64(a.Late), float64(b.Late), cnt, false)
	num("run", "transport failures", float64(a.Failed), float64(b.Failed), cnt, false)
	for _, name := range outcomeNames(a, b) {
		oa, ob := outcomeOf(a, name), outcomeOf(b, name)
		// More refusals of capacity (429, 503) are worse; the mix of 409s and
		// 410s follows the crowd, so their counts are shown, not judged.
		c.Rows = append(c.Rows, CompareRow{Group: name, What: "count", A: cnt(float64(oa.Count)), B: cnt(float64(ob.Count)),
			Change: change(float64(oa.Count), float64(ob.Count)), Worse: (name == "429" || name == "503") && ob.Count > oa.Count*102/100})
		for _, p := range []struct {
			what string
			get  func(Latency) float64
		}{{"p50", func(l Latency) float64 { return l.P50 }}, {"p90", func(l Latency) float64 { return l.P90 }},
			{"p99", func(l Latency) float64 { return l.P99 }}, {"p99.9", func(l Latency) float64 { return l.P999 }},
			{"max", func(l Latency) float64 { return l.Max }}} {
			num(name, p.what, p.get(oa.Latency), p.get(ob.Latency), ms, false)
		}
	}
	return c
}

func outcomeNames(a, b *Result) []string {
	var out []string
	seen := map[string]bool{}
	for _, o := range append(append([]Outcome{}, a.Outcomes...), b.Outcomes...) {
		if !seen[o.Name] {
			seen[o.Name] = true
			out = append(out, o.Name)
		}
	}
	return out
}

func outcomeOf(r *Result, name string) Outcome {
	for _, o := range r.Outcomes {
		if o.Name == name {
			return o
		}
	}
	return Outcome{Name: name}
}

// change is b relative to a in percent.
func change(a, b float64) string {
	if a == 0 || math.IsNaN(a) || math.IsNaN(b) {
		if a == b {
			return "="
		}
		return ""
	}
	d := 100 * (b - a) / a
	if math.Abs(d) < 0.05 {
		return "="
	}
	sign := ""
	if d > 0 {
		sign = "+"
	}
	return sign + strconv.FormatFloat(d, 'f', 1, 64) + "%"
}

// WriteText prints the comparison as a table.
func (c *Comparison) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\t\tA: %s\tB: %s\tB vs A\n", c.NameA, c.NameB)
	for _, r := range c.Rows {
		mark := ""
		if r.Worse {
			mark = "  (worse)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s%s\n", r.Group, r.What, r.A, r.B, r.Change, mark)
	}
	return tw.Flush()
}

// WriteHTML writes the comparison page: the table and both runs'
// percentile distributions on one plot.
func (c *Comparison) WriteHTML(w io.Writer) error {
	if err := pageTmpl.ExecuteTemplate(w, "compare", struct {
		*Comparison
		Chart *chart
	}{c, compareChart(c)}); err != nil {
		return fmt.Errorf("rendering comparison: %w", err)
	}
	return nil
}

// compareChart draws both runs' percentile distributions per outcome: A
// solid, B dashed.
func compareChart(c *Comparison) *chart {
	merged := &Result{}
	for _, o := range c.A.Outcomes {
		merged.Outcomes = append(merged.Outcomes, Outcome{Name: "A " + o.Name, Count: o.Count, Hist: o.Hist})
	}
	for _, o := range c.B.Outcomes {
		merged.Outcomes = append(merged.Outcomes, Outcome{Name: "B " + o.Name, Count: o.Count, Hist: o.Hist})
	}
	ch := hdrChart(merged)
	ch.ID, ch.Title = "hdr-compare", "Latency by percentile: A solid, B dashed"
	ch.Desc = "Percentile-distribution plot of both runs, one line per outcome and run; B's lines are dashed."
	var lines []poly
	var legend []legendItem
	for i, l := range ch.Lines {
		if l.Title == "all, uncorrected" {
			continue
		}
		name := l.Title[2:]
		l.Color = outcomeColor[name]
		if l.Title[0] == 'B' {
			l.Dash = "6 3"
		}
		lines = append(lines, l)
		legend = append(legend, legendItem{Color: l.Color, Dash: l.Dash, Label: ch.Legend[i].Label})
	}
	ch.Lines, ch.Legend = lines, legend
	ch.Note = "x: percentile, each nine the same width; y: log scale; corrected latency."
	return ch
}
