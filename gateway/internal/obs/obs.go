// Package obs holds the gateway's Prometheus metrics. Every labelled child the
// request path touches is resolved once in New, so counting a request is an
// atomic add with no allocation and no map lookup.
package obs

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Route names a public route for the route label.
type Route uint8

// Routes.
const (
	RoutePurchase Route = iota
	RouteOrder
	RoutePay
	RouteCancel
	RouteSale
	RouteOther
	numRoutes
)

var routeNames = [numRoutes]string{"purchase", "order", "pay", "cancel", "sale", "other"}

func (r Route) String() string { return routeNames[r] }

// codes are the HTTP statuses the gateway answers; others count as "other".
var codes = []int{200, 202, 401, 403, 404, 405, 409, 410, 429, 500, 503}

// Release reasons for the releases_total counter.
const (
	ReasonKafkaRefused = iota // the broker definitely refused the hand-off
	ReasonAmbiguous           // a reservation whose reply was lost, settled by id
	ReasonLate                // a hand-off that failed after the handler gave up
	numReasons
)

var reasonNames = [numReasons]string{"kafka_refused", "ambiguous", "late_failure"}

// Metrics are the gateway's counters and histograms. Create with New; every
// method is safe for concurrent use and allocates nothing.
type Metrics struct {
	Registry *prometheus.Registry

	requests    [numRoutes][]prometheus.Counter // by route, then index in codes (+1 other)
	duration    [numRoutes]prometheus.Observer
	redisErrs   prometheus.Counter
	kafkaErrs   prometheus.Counter
	limitedIP   prometheus.Counter
	limitedUser prometheus.Counter
	ambiguous   prometheus.Counter
	releases    [numReasons]prometheus.Counter
	lateLanded  prometheus.Counter
	soldOut     *prometheus.GaugeVec
}

// New registers the gateway's metrics (and the Go and process collectors) in a
// fresh registry.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{Registry: reg}
	req := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flashsale_gateway_requests_total", Help: "Requests answered, by route and HTTP status.",
	}, []string{"route", "code"})
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "flashsale_gateway_request_duration_seconds",
		Help:    "Latency of requests that reached Redis, by route.",
		Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1},
	}, []string{"route"})
	for r := Route(0); r < numRoutes; r++ {
		for _, c := range codes {
			m.requests[r] = append(m.requests[r], req.WithLabelValues(r.String(), strconv.Itoa(c)))
		}
		m.requests[r] = append(m.requests[r], req.WithLabelValues(r.String(), "other"))
		m.duration[r] = dur.WithLabelValues(r.String())
	}
	m.redisErrs = prometheus.NewCounter(prometheus.CounterOpts{Name: "flashsale_gateway_redis_errors_total", Help: "Redis calls that failed or timed out."})
	m.kafkaErrs = prometheus.NewCounter(prometheus.CounterOpts{Name: "flashsale_gateway_kafka_errors_total", Help: "Kafka hand-offs that failed or timed out."})
	lim := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flashsale_gateway_ratelimited_total", Help: "Requests refused by a token bucket, by kind."}, []string{"kind"})
	m.limitedIP, m.limitedUser = lim.WithLabelValues("ip"), lim.WithLabelValues("user")
	m.ambiguous = prometheus.NewCounter(prometheus.CounterOpts{Name: "flashsale_gateway_ambiguous_reservations_total", Help: "Reservations whose outcome was unknown (Redis error after send), settled by releasing the order id."})
	rel := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flashsale_gateway_releases_total", Help: "Units the gateway returned to stock, by reason."}, []string{"reason"})
	for i := range m.releases {
		m.releases[i] = rel.WithLabelValues(reasonNames[i])
	}
	m.lateLanded = prometheus.NewCounter(prometheus.CounterOpts{Name: "flashsale_gateway_late_handoffs_total", Help: "Order records that reached Kafka after the handler had answered 503; the order stands."})
	m.soldOut = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_gateway_soldout", Help: "1 when the item's local sold-out flag is set."}, []string{"item"})
	reg.MustRegister(req, dur, m.redisErrs, m.kafkaErrs, lim, m.ambiguous, rel, m.lateLanded, m.soldOut)
	return m
}

// Batches exports the purchase path's Redis batching (stock.Batcher.Stats):
// commands sent and the batches they went in, read at each scrape.
func (m *Metrics) Batches(stats func() (commands, batches int64)) {
	m.Registry.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "flashsale_gateway_redis_batched_commands_total",
			Help: "Purchase-path Redis commands sent in batches (one DoMulti per batch)."},
			func() float64 { c, _ := stats(); return float64(c) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "flashsale_gateway_redis_batches_total",
			Help: "Batches of purchase-path Redis commands; commands / batches is the mean batch size."},
			func() float64 { _, b := stats(); return float64(b) }))
}

// Request counts one answer on route with HTTP status code.
func (m *Metrics) Request(r Route, code int) {
	row := m.requests[r]
	for i, c := range codes {
		if c == code {
			row[i].Inc()
			return
		}
	}
	row[len(codes)].Inc()
}

// Observe records the latency, in seconds, of a request that reached Redis.
func (m *Metrics) Observe(r Route, seconds float64) { m.duration[r].Observe(seconds) }

// RedisError counts a failed Redis call.
func (m *Metrics) RedisError() { m.redisErrs.Inc() }

// KafkaError counts a failed hand-off.
func (m *Metrics) KafkaError() { m.kafkaErrs.Inc() }

// RateLimited counts a refusal by the per-IP (user false) or per-user bucket.
func (m *Metrics) RateLimited(user bool) {
	if user {
		m.limitedUser.Inc()
		return
	}
	m.limitedIP.Inc()
}

// Ambiguous counts a reservation settled by id after a Redis error.
func (m *Metrics) Ambiguous() { m.ambiguous.Inc() }

// Released counts a unit returned to stock for reason (Reason* constants).
func (m *Metrics) Released(reason int) { m.releases[reason].Inc() }

// LateLanded counts a record that reached Kafka after its handler gave up.
func (m *Metrics) LateLanded() { m.lateLanded.Inc() }

// SoldOut sets the sold-out gauge of item. It allocates; the catalog calls it
// from its refresh loop only.
func (m *Metrics) SoldOut(itemID int64, soldOut bool) {
	v := 0.0
	if soldOut {
		v = 1
	}
	m.soldOut.WithLabelValues(strconv.FormatInt(itemID, 10)).Set(v)
}
