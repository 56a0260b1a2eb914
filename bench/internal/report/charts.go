package report

import (
	"fmt"
	"math"
	"strconv"

	"flashsale/sharding/look"
)

// hdrTicks are the percentiles labelled on a percentile-distribution plot.
var hdrTicks = []float64{0, 90, 99, 99.9, 99.99, 99.999, 99.9999}

// hdrX maps a percentile to the plot's x: log10(1/(1-q)), so each "nine"
// takes the same width, as HdrHistogram's plotter draws it.
func hdrX(q float64) float64 { return math.Log10(1 / math.Max(1-q/100, 1e-6)) }

// hdrChart is the percentile distribution of each outcome (corrected), and
// of all requests uncorrected (dashed), latency on a log scale.
func hdrChart(r *Result) *chart {
	c := newChart("hdr", "Latency by percentile, per outcome",
		"Percentile-distribution plot: x is the percentile (each nine the same width), y the latency on a log scale; one line per outcome.")
	type series struct {
		name, color, dash string
		pts               []pctPoint
	}
	var all []series
	for _, o := range r.Outcomes {
		all = append(all, series{o.Name, outcomeColor[o.Name], "", distribution(decodeHist(o.Hist))})
	}
	all = append(all, series{"all, uncorrected", "#000", "5 3", distribution(decodeHist(r.HistUncorrected))})
	// The plot ends at the highest percentile the largest count can tell
	// apart from the maximum: 1 - 1/N.
	lo, hi, qmax := math.Inf(1), 0.0, 99.0
	for _, o := range r.Outcomes {
		qmax = math.Max(qmax, math.Min(99.9999, 100*(1-1/float64(max(o.Count, 1)))))
	}
	for _, s := range all {
		for _, p := range s.pts {
			lo, hi = math.Min(lo, math.Max(p.Ms, 0.001)), math.Max(hi, p.Ms)
		}
	}
	if hi == 0 {
		return c
	}
	xmax := hdrX(qmax)
	x := func(q float64) float64 { return c.left() + (c.right()-c.left())*math.Min(hdrX(q), xmax)/xmax }
	for _, q := range hdrTicks {
		if hdrX(q) <= xmax+1e-9 {
			c.Axes = append(c.Axes, seg{x(q), c.bottom(), x(q), c.bottom() + 4, "#999"})
			c.Grid = append(c.Grid, seg{x(q), c.top(), x(q), c.bottom(), "#f0f0f0"})
			c.Texts = append(c.Texts, label{X: x(q), Y: c.bottom() + 16, Anchor: "middle", Text: strconv.FormatFloat(q, 'f', -1, 64) + "%"})
		}
	}
	c.Axes = append(c.Axes, seg{c.left(), c.bottom(), c.right(), c.bottom(), "#333"})
	y := c.logY(lo, hi, ms)
	c.yTitle("latency (log)")
	for _, s := range all {
		if len(s.pts) == 0 {
			continue
		}
		var p points
		for _, pt := range s.pts {
			p.add(x(pt.Q), y(pt.Ms))
		}
		c.Lines = append(c.Lines, poly{Color: s.color, Dash: s.dash, Width: 2, Points: p.String(), Title: s.name})
		c.Legend = append(c.Legend, legendItem{Color: s.color, Dash: s.dash, Label: s.name})
	}
	c.Note = "x: percentile, each nine the same width; y: log scale. Lines are corrected latency (from the intended send time) except the dashed one."
	return c
}

// sellOutChart draws the units left of each item over time: from the 202s
// (solid steps) and, when sampled, from the gateway's stock gauge (dashed).
func sellOutChart(r *Result) *chart {
	c := newChart("sellout", "Units left over time", "Sell-out curve: units left per item over the run, from the 202 answers and from the gateway's stock metric when it was reachable.")
	var top float64
	known := true
	for _, it := range r.Sales {
		top = math.Max(top, float64(max(it.Quantity, it.Accepted)))
		known = known && it.Quantity > 0
	}
	if top == 0 {
		return c
	}
	end := math.Max(r.Elapsed, 0.1)
	x := c.linX(end, "s")
	y := c.linY(top, fmtCount)
	if known {
		c.yTitle("units left")
	} else {
		c.yTitle("units accepted")
	}
	for i, it := range r.Sales {
		if i >= len(itemColors) {
			break
		}
		col := itemColors[i]
		var p points
		var taken int64
		val := func() float64 {
			if known {
				return float64(it.Quantity - taken)
			}
			return float64(taken)
		}
		p.add(x(0), y(val()))
		for t, n := range it.Ticks {
			if n == 0 {
				continue
			}
			ts := float64(t*TickMs) / 1000
			p.add(x(ts), y(val()))
			taken += n
			p.add(x(ts), y(val()))
		}
		p.add(x(end), y(val()))
		c.Lines = append(c.Lines, poly{Color: col, Width: 2, Points: p.String(), Title: fmt.Sprintf("item %d, from the 202s", it.ID)})
		c.Legend = append(c.Legend, legendItem{Color: col, Label: fmt.Sprintf("item %d (202s)", it.ID)})
		var m points
		for _, s := range r.Stock {
			if v, ok := s.Left[strconv.FormatInt(it.ID, 10)]; ok && s.T <= end {
				m.add(x(s.T), y(float64(v)))
			}
		}
		if !m.empty() {
			c.Lines = append(c.Lines, poly{Color: col, Dash: "6 3", Width: 1.5, Points: m.String(), Title: fmt.Sprintf("item %d, gateway stock metric", it.ID)})
			c.Legend = append(c.Legend, legendItem{Color: col, Dash: "6 3", Label: fmt.Sprintf("item %d (gateway stock metric)", it.ID)})
		}
	}
	return c
}

// mixOverTimeChart draws responses per second of each outcome on a log
// scale, so a 1% share (the 202s among the 410s) shows.
func mixOverTimeChart(r *Result) *chart {
	c := newChart("mixtime", "Answers per second by outcome", "Responses per second for each outcome, log scale, so that small shares such as the 202s are visible beside the refusals.")
	var top float64
	for _, s := range r.Timeline {
		for _, n := range s.Out {
			top = math.Max(top, float64(n))
		}
	}
	if top == 0 {
		return c
	}
	n := float64(len(r.Timeline))
	x := c.linX(n, "s")
	y := c.logY(1, top, fmtCount)
	c.yTitle("per second (log)")
	for _, o := range r.Outcomes {
		col := outcomeColor[o.Name]
		var p points
		for _, s := range r.Timeline {
			if v := s.Out[o.Name]; v > 0 {
				p.add(x(float64(s.T)+0.5), y(float64(v)))
			} else if !p.empty() {
				c.Lines = append(c.Lines, poly{Color: col, Width: 2, Points: p.String(), Title: o.Name})
				p = points{}
			}
		}
		if !p.empty() {
			c.Lines = append(c.Lines, poly{Color: col, Width: 2, Points: p.String(), Title: o.Name})
		}
		c.Legend = append(c.Legend, legendItem{Color: col, Label: o.Name})
		for _, s := range r.Timeline { // a dot per second, so a single second shows
			if v := s.Out[o.Name]; v > 0 {
				c.Rects = append(c.Rects, rect{X: x(float64(s.T)+0.5) - 2, Y: y(float64(v)) - 2, W: 4, H: 4, Fill: col,
					Title: fmt.Sprintf("%ds: %s %s", s.T, look.Commas(v), o.Name)})
			}
		}
	}
	c.Note = "Log scale: each gridline is ten times the one below."
	return c
}

// latencyChart draws p50, p99 and max per second on a log scale; max is
// drawn last, dashed, so it shows where it equals p99.
func latencyChart(r *Result) *chart {
	c := newChart("latency", "Latency over time", "p50, p99 and max latency of each second, log scale.")
	lo, hi := math.Inf(1), 0.0
	for _, s := range r.Timeline {
		if s.P50 > 0 {
			lo = math.Min(lo, s.P50)
		}
		hi = math.Max(hi, s.Max)
	}
	if hi == 0 {
		return c
	}
	x := c.linX(float64(len(r.Timeline)), "s")
	y := c.logY(math.Max(lo, 0.001), hi, ms)
	c.yTitle("latency (log)")
	line := func(name, color, dash string, get func(Second) float64) {
		var p points
		for _, s := range r.Timeline {
			if s.Done-s.Failed > 0 {
				p.add(x(float64(s.T)+0.5), y(get(s)))
			}
		}
		c.Lines = append(c.Lines, poly{Color: color, Dash: dash, Width: 2, Points: p.String(), Title: name})
		c.Legend = append(c.Legend, legendItem{Color: color, Dash: dash, Label: name})
	}
	line("p50", palette.p50, "", func(s Second) float64 { return s.P50 })
	line("p99", palette.p99, "", func(s Second) float64 { return s.P99 })
	line("max", palette.max, "2 3", func(s Second) float64 { return s.Max })
	return c
}

// throughputChart stacks each second's responses by class, with the sends
// and the offered (scheduled) load as lines.
func throughputChart(r *Result) *chart {
	c := newChart("throughput", "Throughput per second", "Responses per second stacked by class, with the requests sent and, in open loop, the requests scheduled.")
	var top int64
	for _, s := range r.Timeline {
		top = max(top, s.Done, s.Sent, s.Offered)
	}
	if top == 0 {
		return c
	}
	n := len(r.Timeline)
	x := c.linX(float64(n), "s")
	y := c.linY(float64(top), fmtCount)
	c.yTitle("per second")
	step := x(1) - x(0)
	classes := []struct{ name, color string }{{"2xx", palette.ok}, {"4xx", palette.client}, {"429", palette.limited}, {"5xx", palette.server}, {"transport failure", palette.failed}}
	for _, s := range r.Timeline {
		base := 0.0
		for i, part := range []int64{s.OK, s.Client, s.Limited, s.Server, s.Failed} {
			if part == 0 {
				continue
			}
			y0, y1 := y(base), y(base+float64(part))
			c.Rects = append(c.Rects, rect{X: x(float64(s.T)) + step*0.1, Y: y1, W: step * 0.8, H: y0 - y1, Fill: classes[i].color,
				Title: fmt.Sprintf("%ds: %s %s", s.T, look.Commas(part), classes[i].name)})
			base += float64(part)
		}
	}
	for _, cl := range classes {
		c.Legend = append(c.Legend, legendItem{Color: cl.color, Label: cl.name})
	}
	var sent, offered points
	hasOffered := false
	for _, s := range r.Timeline {
		sent.add(x(float64(s.T)+0.5), y(float64(s.Sent)))
		offered.add(x(float64(s.T)+0.5), y(float64(s.Offered)))
		hasOffered = hasOffered || s.Offered > 0
	}
	c.Lines = append(c.Lines, poly{Color: "#6a1b9a", Dash: "3 2", Width: 1.5, Points: sent.String(), Title: "sent per second"})
	c.Legend = append(c.Legend, legendItem{Color: "#6a1b9a", Dash: "3 2", Label: "sent"})
	if hasOffered {
		c.Lines = append(c.Lines, poly{Color: "#00838f", Dash: "8 3", Width: 1.5, Points: offered.String(), Title: "offered (scheduled) per second"})
		c.Legend = append(c.Legend, legendItem{Color: "#00838f", Dash: "8 3", Label: "offered: scheduled arrivals"})
	}
	return c
}
