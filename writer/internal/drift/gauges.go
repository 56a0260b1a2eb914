package drift

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"flashsale/sharding/journal"
)

// gauges are the series a reading exports; a series no reading shows any
// more (its sale ended or left Redis) is deleted after a reading without
// errors.
type gauges struct {
	drift, stock, backlog, age *prometheus.GaugeVec
	ledger, settled            *prometheus.GaugeVec
	shown                      map[series]bool // exported by the last complete reading
}

// series is one exported series: its vector and its label values.
type series struct {
	vec    *prometheus.GaugeVec
	labels string // the label values, NUL-separated
}

func newGauges(reg prometheus.Registerer) *gauges {
	g := &gauges{
		drift: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flashsale_writer_stock_drift_units",
			Help: "Q - (S + M + P + J) per item of a live sale: quantity minus Redis stock, units in moves, PENDING+PAID orders and reservations still in the hand-off journal. Stays 0; below 0 is an oversell in the making.",
		}, []string{"sale", "item"}),
		stock: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flashsale_writer_stock_units",
			Help: "Units left of an item on one shard of a live sale, read from Redis by the drift reading.",
		}, []string{"sale", "item", "shard"}),
		backlog: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flashsale_writer_journal_backlog",
			Help: "Entries in a shard's hand-off journal not yet acknowledged by Kafka, read by the drift reading.",
		}, []string{"sale", "shard"}),
		age: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flashsale_writer_journal_oldest_age_seconds",
			Help: "Age of the oldest entry of a shard's hand-off journal (0 when empty), read by the drift reading.",
		}, []string{"sale", "shard"}),
		ledger: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flashsale_writer_ledger_units",
			Help: "The live unit ledger of an item of a live sale, by state: paid and pending (PostgreSQL), unsold (Redis) and in_flight (moves and reservations in the hand-off journal). They sum to the quantity but for the drift.",
		}, []string{"sale", "item", "state"}),
		settled: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flashsale_writer_sale_settled",
			Help: "1 when a live sale is over with no order PENDING and no unit in flight: its ledger no longer changes, and its drift must be 0 (FlashsaleLedgerUnbalanced).",
		}, []string{"sale"}),
		shown: map[series]bool{},
	}
	reg.MustRegister(g.drift, g.stock, g.backlog, g.age, g.ledger, g.settled)
	return g
}

// reading collects the series of one reading.
type reading struct {
	g     *gauges
	shown map[series]bool
}

func (g *gauges) begin() *reading { return &reading{g: g, shown: map[series]bool{}} }

// set sets one series and records it as shown.
func (r *reading) set(vec *prometheus.GaugeVec, v float64, labels ...string) {
	vec.WithLabelValues(labels...).Set(v)
	r.shown[series{vec: vec, labels: strings.Join(labels, "\x00")}] = true
}

// sale sets the series of one sale's reading at now.
func (r *reading) sale(rd Reading, now time.Time) {
	g := r.g
	for _, it := range rd.Items {
		sale, item := strconv.FormatInt(it.Sale, 10), strconv.FormatInt(it.Item, 10)
		r.set(g.drift, float64(it.Drift), sale, item)
		for state, n := range map[string]int64{"paid": it.Paid, "pending": it.P - it.Paid, "unsold": it.S, "in_flight": it.M + it.J} {
			r.set(g.ledger, float64(n), sale, item, state)
		}
		for i, n := range it.Stock {
			if i < len(rd.Shards) {
				r.set(g.stock, float64(n), sale, item, rd.Shards[i].Tag)
			}
		}
	}
	if len(rd.Items) > 0 {
		settled := 0.0
		if rd.Settled() {
			settled = 1
		}
		r.set(g.settled, settled, strconv.FormatInt(rd.Items[0].Sale, 10))
	}
	for _, sh := range rd.Shards {
		sale := strconv.FormatInt(sh.Sale, 10)
		age := 0.0
		if t, ok := journal.IDTime(sh.Oldest); ok {
			age = max(now.Sub(t).Seconds(), 0)
		}
		r.set(g.backlog, float64(sh.Backlog), sale, sh.Tag)
		r.set(g.age, age, sale, sh.Tag)
	}
}

// end deletes the series the last complete reading showed and this one did
// not, when this one is complete (a sale whose reading failed keeps its
// last values).
func (g *gauges) end(r *reading, complete bool) {
	if !complete {
		for k := range r.shown {
			g.shown[k] = true
		}
		return
	}
	for k := range g.shown {
		if !r.shown[k] {
			k.vec.DeleteLabelValues(strings.Split(k.labels, "\x00")...)
		}
	}
	g.shown = r.shown
}
