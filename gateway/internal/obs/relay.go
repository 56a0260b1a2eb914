package obs

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"flashsale/sharding/journal"
)

// relayMetrics are the hand-off journal's and its relay's metrics.
type relayMetrics struct {
	backlog *prometheus.GaugeVec
	age     *prometheus.GaugeVec
	relayed prometheus.Counter
	errs    *prometheus.CounterVec
}

func newRelayMetrics(reg *prometheus.Registry) relayMetrics {
	r := relayMetrics{
		backlog: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_journal_backlog",
			Help: "Entries in a shard's hand-off journal not yet acknowledged by Kafka, reported by the relay that owns the shard."}, []string{"sale", "shard"}),
		age: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_journal_oldest_age_seconds",
			Help: "Age of the oldest entry of a shard's hand-off journal (0 when empty), reported by the relay that owns the shard."}, []string{"sale", "shard"}),
		relayed: prometheus.NewCounter(prometheus.CounterOpts{Name: "flashsale_relay_entries_total",
			Help: "Journal entries this process's relay produced and Kafka acknowledged."}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flashsale_relay_errors_total",
			Help: "Relay failures by kind: redis (a round failed), kafka (a produce failed; retried), malformed (an entry sent to the dead-letter topic)."}, []string{"kind"}),
	}
	for _, k := range []string{"redis", "kafka", "malformed"} {
		r.errs.WithLabelValues(k)
	}
	reg.MustRegister(r.backlog, r.age, r.relayed, r.errs)
	return r
}

// Relay returns the journal.Observer that feeds these metrics.
func (m *Metrics) Relay() journal.Observer { return &m.relay }

func (r *relayMetrics) Journal(sh journal.Shard, backlog int64, oldest time.Duration) {
	sale := strconv.FormatInt(sh.SaleID, 10)
	r.backlog.WithLabelValues(sale, sh.Tag).Set(float64(backlog))
	r.age.WithLabelValues(sale, sh.Tag).Set(oldest.Seconds())
}

func (r *relayMetrics) Released(sh journal.Shard) {
	sale := strconv.FormatInt(sh.SaleID, 10)
	r.backlog.DeleteLabelValues(sale, sh.Tag)
	r.age.DeleteLabelValues(sale, sh.Tag)
}

func (r *relayMetrics) Relayed(n int) { r.relayed.Add(float64(n)) }

func (r *relayMetrics) Failed(kind string) { r.errs.WithLabelValues(kind).Inc() }
