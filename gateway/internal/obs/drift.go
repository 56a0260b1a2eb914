package obs

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// driftMetrics mirror the writer's drift readings (the gateway cannot see
// PostgreSQL, so it cannot take one itself).
type driftMetrics struct {
	units *prometheus.GaugeVec
	age   *prometheus.GaugeVec
}

func newDriftMetrics(reg *prometheus.Registry) driftMetrics {
	d := driftMetrics{
		units: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_gateway_stock_drift_units",
			Help: "Q - (S + M + P + J) per item: the writer's last drift reading, read from Redis every second (stays 0; below 0 is an oversell in the making). See flashsale_gateway_stock_drift_age_seconds for how old it is."}, []string{"sale", "item"}),
		age: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_gateway_stock_drift_age_seconds",
			Help: "Age of the writer's last drift reading of a sale: it grows when no writer reads the sale."}, []string{"sale"}),
	}
	reg.MustRegister(d.units, d.age)
	return d
}

// Drift sets a sale's drift gauges from the writer's reading taken age ago
// (its own loop only: it allocates).
func (m *Metrics) Drift(saleID int64, items map[int64]int64, age time.Duration) {
	sale := strconv.FormatInt(saleID, 10)
	for item, d := range items {
		m.drift.units.WithLabelValues(sale, strconv.FormatInt(item, 10)).Set(float64(d))
	}
	m.drift.age.WithLabelValues(sale).Set(max(age.Seconds(), 0))
}

// NoDrift records that sale has no reading: its drift series go, and its
// age is how long a reading has been due (0 before it is due).
func (m *Metrics) NoDrift(saleID int64, due time.Duration) {
	sale := strconv.FormatInt(saleID, 10)
	m.drift.units.DeletePartialMatch(prometheus.Labels{"sale": sale})
	m.drift.age.WithLabelValues(sale).Set(max(due.Seconds(), 0))
}
