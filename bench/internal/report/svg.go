package report

import (
	"fmt"
	"math"
	"strings"
)

// A chart is drawn by the template from these primitives; Go only computes
// the geometry, html/template escapes every text.
type chart struct {
	ID, Title, Desc string
	W, H            int
	Grid, Axes      []seg
	Texts           []label
	Rects           []rect
	Lines           []poly
	Legend          []legendItem
	Note            string // said under the chart, e.g. "log scale"
}

type seg struct {
	X1, Y1, X2, Y2 float64
	Color          string
}

type label struct {
	X, Y         float64
	Anchor, Text string
	Rotate       bool
}

type rect struct {
	X, Y, W, H  float64
	Fill, Title string
}

type poly struct {
	Color, Dash, Title string
	Width              float64
	Points             string
}

type legendItem struct{ Color, Dash, Label string }

// Chart geometry in SVG user units.
const (
	chartW, chartH = 900, 280
	padL, padR     = 70, 20
	padT, padB     = 16, 40
)

// colors of the outcomes, and of the status classes.
var outcomeColor = map[string]string{"202": "#2e7d32", "409": "#6a1b9a", "410": "#1565c0", "429": "#ef6c00", "503": "#c62828",
	"other": "#616161", "pay": "#00838f", "cancel": "#8d6e63", "get-order": "#ad1457"}

var palette = struct{ ok, client, limited, server, failed, p50, p99, max string }{
	"#2e7d32", "#1565c0", "#ef6c00", "#c62828", "#212121", "#1565c0", "#c62828", "#424242"}

// itemColors colour the items of a sell-out chart in turn.
var itemColors = []string{"#2e7d32", "#1565c0", "#6a1b9a", "#ef6c00", "#00838f", "#c62828", "#8d6e63", "#ad1457"}

func newChart(id, title, desc string) *chart {
	return &chart{ID: id, Title: title, Desc: desc, W: chartW, H: chartH}
}

// plot area
func (c *chart) left() float64   { return padL }
func (c *chart) right() float64  { return float64(c.W - padR) }
func (c *chart) top() float64    { return padT }
func (c *chart) bottom() float64 { return float64(c.H - padB) }

// linX returns a linear x scale over [0, hi] with about 12 labelled ticks.
func (c *chart) linX(hi float64, unit string) func(float64) float64 {
	hi = math.Max(hi, 1e-9)
	x := func(v float64) float64 { return c.left() + (c.right()-c.left())*v/hi }
	step := niceCeil(hi / 12)
	for v := 0.0; v <= hi*1.0001; v += step {
		c.Axes = append(c.Axes, seg{x(v), c.bottom(), x(v), c.bottom() + 4, "#999"})
		c.Texts = append(c.Texts, label{X: x(v), Y: c.bottom() + 16, Anchor: "middle", Text: trimFloat(v) + unit})
	}
	c.Axes = append(c.Axes, seg{c.left(), c.bottom(), c.right(), c.bottom(), "#333"})
	return x
}

// linY returns a linear y scale over [0, hi] with 4 gridlines.
func (c *chart) linY(hi float64, format func(float64) string) func(float64) float64 {
	hi = niceCeil(hi)
	y := func(v float64) float64 { return c.bottom() - (c.bottom()-c.top())*v/hi }
	for i := 0; i <= 4; i++ {
		v := hi * float64(i) / 4
		c.Grid = append(c.Grid, seg{c.left(), y(v), c.right(), y(v), "#e6e6e6"})
		c.Texts = append(c.Texts, label{X: c.left() - 6, Y: y(v) + 4, Anchor: "end", Text: format(v)})
	}
	return y
}

// logY returns a log y scale over [lo, hi] (decades), lines at each decade.
func (c *chart) logY(lo, hi float64, format func(float64) string) func(float64) float64 {
	lo = math.Pow(10, math.Floor(math.Log10(lo)))
	hi = math.Pow(10, math.Ceil(math.Log10(math.Max(hi, lo*10))))
	ll, lh := math.Log10(lo), math.Log10(hi)
	y := func(v float64) float64 {
		v = math.Max(v, lo)
		return c.bottom() - (c.bottom()-c.top())*(math.Log10(v)-ll)/(lh-ll)
	}
	for v := lo; v <= hi*1.001; v *= 10 {
		c.Grid = append(c.Grid, seg{c.left(), y(v), c.right(), y(v), "#e6e6e6"})
		c.Texts = append(c.Texts, label{X: c.left() - 6, Y: y(v) + 4, Anchor: "end", Text: format(v)})
	}
	return y
}

func (c *chart) yTitle(t string) {
	c.Texts = append(c.Texts, label{X: 14, Y: float64(c.H) / 2, Anchor: "middle", Text: t, Rotate: true})
}

// points writes x,y pairs for a polyline.
type points struct{ b strings.Builder }

func (p *points) add(x, y float64) { fmt.Fprintf(&p.b, "%.1f,%.1f ", x, y) }
func (p *points) String() string   { return p.b.String() }
func (p *points) empty() bool      { return p.b.Len() == 0 }

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v*0.9999 {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.10g", math.Round(v*1000)/1000), ".0")
}

// fmtCount labels a count axis: 500, 20k, 1.5M.
func fmtCount(v float64) string {
	switch {
	case v >= 1e6:
		return trimFloat(v/1e6) + "M"
	case v >= 1e3:
		return trimFloat(v/1e3) + "k"
	}
	return trimFloat(v)
}
