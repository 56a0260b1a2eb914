// Package obs holds the gateway's Prometheus metrics. Every labelled child the
// request path touches is resolved once in New, so counting a request is an
// atomic add with no allocation and no map lookup.
package obs

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
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
	RouteTime
	RouteTicket
	RouteHeld
	RoutePage
	RouteDev
	RouteDraw
	RouteDrawMe
	RouteDrawLog
	RouteDrawEntry
	RouteDrawPage
	RouteOther
	numRoutes
)

var routeNames = [numRoutes]string{"purchase", "order", "pay", "cancel", "sale", "time", "ticket", "held_order", "page", "dev", "draw", "draw_me", "draw_log", "draw_entry", "draw_page", "other"}

func (r Route) String() string { return routeNames[r] }

// codes are the HTTP statuses the gateway answers; others count as "other".
var codes = []int{200, 202, 304, 400, 401, 403, 404, 405, 408, 409, 410, 413, 428, 429, 431, 500, 503}

// Void outcomes for the voids_total counter (stock.VoidOutcome but
// VoidFrozen, plus a void that could not reach Redis in time, or found its
// shard frozen by a reshard, and went to the background queue).
const (
	VoidNothing = iota
	VoidVoided
	VoidStands
	VoidFenced
	VoidQueued
	VoidGaveUp
	numVoids
)

var voidNames = [numVoids]string{"nothing", "voided", "stands", "fenced", "queued", "gave_up"}

// Metrics are the gateway's counters and histograms. Create with New; every
// method is safe for concurrent use and allocates nothing.
type Metrics struct {
	Registry *prometheus.Registry

	requests    [numRoutes][]prometheus.Counter // by route, then index in codes (+1 other)
	duration    [numRoutes]prometheus.Observer
	redisErrs   prometheus.Counter
	limitedIP   prometheus.Counter
	limitedUser prometheus.Counter
	ambiguous   prometheus.Counter
	voids       [numVoids]prometheus.Counter
	actVoids    [numVoids]prometheus.Counter
	journalFull prometheus.Counter
	fenced      prometheus.Counter
	soldOut     *prometheus.GaugeVec
	stock       *prometheus.GaugeVec
	selling     *prometheus.GaugeVec
	paused      *prometheus.GaugeVec
	relay       relayMetrics
	drift       driftMetrics
	funnel      *funnels

	stockMu   sync.Mutex
	stockTags map[[2]int64][]string // (sale, item) -> the shards its stock gauges name
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
	lim := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flashsale_gateway_ratelimited_total", Help: "Requests refused by a token bucket, by kind."}, []string{"kind"})
	m.limitedIP, m.limitedUser = lim.WithLabelValues("ip"), lim.WithLabelValues("user")
	m.ambiguous = prometheus.NewCounter(prometheus.CounterOpts{Name: "flashsale_gateway_ambiguous_reservations_total", Help: "Purchase attempts whose outcome was unknown (a Redis error or the budget ended after the script was sent), settled by voiding the attempt."})
	voids := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flashsale_gateway_voids_total", Help: "Voids of purchase attempts whose answer could not be given in time, by outcome."}, []string{"outcome"})
	for i := range m.voids {
		m.voids[i] = voids.WithLabelValues(voidNames[i])
	}
	actVoids := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flashsale_gateway_act_voids_total", Help: "Voids of pay and cancel attempts whose answer could not be given in time, by outcome."}, []string{"outcome"})
	for i := range m.actVoids {
		m.actVoids[i] = actVoids.WithLabelValues(voidNames[i])
	}
	m.journalFull = prometheus.NewCounter(prometheus.CounterOpts{Name: "flashsale_gateway_journal_full_total", Help: "Purchases, pays and cancels refused (503) because the shard's hand-off journal was full."})
	m.soldOut = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_gateway_soldout", Help: "1 when the item's local sold-out flag is set."}, []string{"item"})
	m.stock = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_gateway_stock_units",
		Help: "Units left on one shard of an item, as of the catalog's last reading (every refresh, 1 s; flagged items every poll, 200 ms)."}, []string{"sale", "item", "shard"})
	m.selling = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_gateway_sale_selling",
		Help: "1 while the sale sells: its window is open and no operator paused or ended it."}, []string{"sale"})
	m.paused = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_gateway_sale_paused",
		Help: "1 while an operator has paused the sale (flashctl sale pause)."}, []string{"sale"})
	m.fenced = prometheus.NewCounter(prometheus.CounterOpts{Name: "flashsale_gateway_fenced_total", Help: "Purchases, pays and cancels refused (503, nothing sent) because this gateway's fence mark on the shard was stale (journal.Fence)."})
	reg.MustRegister(req, dur, m.redisErrs, lim, m.ambiguous, voids, actVoids, m.journalFull, m.fenced, m.soldOut, m.stock, m.selling, m.paused)
	m.relay = newRelayMetrics(reg)
	m.drift = newDriftMetrics(reg)
	m.funnel = newFunnels(reg)
	return m
}

// ReplicaShortfalls exports the acknowledged writes that came back with
// fewer replicas than asked (stock.Batcher.Shortfalls), read at each scrape.
func (m *Metrics) ReplicaShortfalls(count func() int64) {
	m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "flashsale_gateway_replica_ack_shortfalls_total",
		Help: "Journaled writes (reservations, pays, cancels, voids) answered after WAIT timed out with fewer replicas than asked, on a master another node still names the owner: a failover before the replicas caught up could lose them."},
		func() float64 { return float64(count()) }))
}

// ClockOffset exports how far this gateway's wall clock is from its masters'
// (journal.Fence.Offset: the worst of the last beats, master minus gateway),
// read at each scrape.
func (m *Metrics) ClockOffset(offset func() time.Duration) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "flashsale_gateway_clock_offset_seconds",
		Help: "The masters' clock less this gateway's, the largest either way over the last fence beats (each read at the middle of its round trip). No promise reads it; the sale's window, tickets and payment deadlines this gateway stamps move by it."},
		func() float64 { return offset().Seconds() }))
}

// MasterClockJumps exports the fence beats whose answer showed a master's
// clock jump (journal.Fence.Jumps), read at each scrape.
func (m *Metrics) MasterClockJumps(count func() int64) {
	m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "flashsale_gateway_master_clock_jumps_total",
		Help: "Fence beats whose answer showed a Redis master's clock jump: its time moved from its previous answer more than 500 ms off this gateway's monotonic clock (or a failover to a master whose clock differs). The relay's hold reads the masters' clocks."},
		func() float64 { return float64(count()) }))
}

// DrawBeacons exports the sealed draws' troubles (room.BeaconStats): rounds
// refused for a signature that is not the chain's, and draws whose round is
// overdue, read at each scrape.
func (m *Metrics) DrawBeacons(refused, overdue func() int64) {
	m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "flashsale_gateway_draw_beacon_refused_total",
		Help: "Beacon rounds refused because their signature is not the pinned chain's: a relay's answer, or a round recorded in Redis (then no place is drawn from it)."},
		func() float64 { return float64(refused()) }))
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "flashsale_gateway_draw_beacon_overdue",
		Help: "Sales whose draw is frozen and has no verified beacon round 10 s after the round's time: their entrants wait (relays unreachable, or rounds refused; flashctl sale draw beacon hands one)."},
		func() float64 { return float64(overdue()) }))
}

// ReplicaUnconfirmed exports the acknowledged writes whose WAIT failed after
// the master answered (stock.Batcher.Unconfirmed), read at each scrape.
func (m *Metrics) ReplicaUnconfirmed(count func() int64) {
	m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "flashsale_gateway_replica_ack_unconfirmed_total",
		Help: "Journaled writes whose WAIT failed after the master answered (the master may be gone), or that no replica acknowledged on a master no other node still names the owner (a demoted master): settled as unknown outcomes (a purchase voided before its 503, a pay or cancel asked again)."},
		func() float64 { return float64(count()) }))
}

// ReserveCalls exports the reserve script calls and the reservations they
// carried (stock.Batcher.ReserveStats), read at each scrape: their rates'
// ratio is the reservations per call.
func (m *Metrics) ReserveCalls(stats func() (calls, reservations int64)) {
	m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "flashsale_gateway_reserve_calls_total",
		Help: "Reserve script calls sent to Redis (reserve.lua alone, or reserve_many.lua for the reservations of one slot in one batch)."},
		func() float64 { c, _ := stats(); return float64(c) }))
	m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "flashsale_gateway_reserve_call_reservations_total",
		Help: "Reservations carried by the reserve script calls: divided by flashsale_gateway_reserve_calls_total, the reservations per call."},
		func() float64 { _, r := stats(); return float64(r) }))
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

// RedisErrors returns how many Redis calls failed since the start: the
// counter's value, read for /readyz (it allocates; not for the request path).
func (m *Metrics) RedisErrors() uint64 {
	var d dto.Metric
	if m.redisErrs.Write(&d) != nil {
		return 0
	}
	return uint64(d.GetCounter().GetValue())
}

// RateLimited counts a refusal by the per-IP (user false) or per-user bucket.
func (m *Metrics) RateLimited(user bool) {
	if user {
		m.limitedUser.Inc()
		return
	}
	m.limitedIP.Inc()
}

// Ambiguous counts a purchase attempt whose outcome was unknown.
func (m *Metrics) Ambiguous() { m.ambiguous.Inc() }

// Voided counts a void by outcome (Void* constants).
func (m *Metrics) Voided(outcome int) { m.voids[outcome].Inc() }

// ActVoided counts a void of a pay or cancel attempt by outcome (Void* constants).
func (m *Metrics) ActVoided(outcome int) { m.actVoids[outcome].Inc() }

// JournalFull counts a request refused because the journal was full.
func (m *Metrics) JournalFull() { m.journalFull.Inc() }

// Fenced counts a request refused because the fence mark was stale.
func (m *Metrics) Fenced() { m.fenced.Inc() }

// Sale sets the selling and paused gauges of a sale (catalog refresh only).
func (m *Metrics) Sale(saleID int64, selling, paused bool) {
	id := strconv.FormatInt(saleID, 10)
	m.selling.WithLabelValues(id).Set(b2f(selling))
	m.paused.WithLabelValues(id).Set(b2f(paused))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Stock sets the stock gauges of an item's shards (tags) from a reading. It
// allocates; the catalog calls it from its reading loops only, never per
// request.
func (m *Metrics) Stock(saleID, itemID int64, tags []string, perShard []int64) {
	sale, item := strconv.FormatInt(saleID, 10), strconv.FormatInt(itemID, 10)
	m.stockMu.Lock()
	k := [2]int64{saleID, itemID}
	if old := m.stockTags[k]; !slices.Equal(old, tags) {
		// A reshard: the old shards' gauges go, their stock moved.
		for _, tag := range old {
			if !slices.Contains(tags, tag) {
				m.stock.DeleteLabelValues(sale, item, tag)
			}
		}
		if m.stockTags == nil {
			m.stockTags = map[[2]int64][]string{}
		}
		m.stockTags[k] = slices.Clone(tags)
	}
	m.stockMu.Unlock()
	for i, n := range perShard {
		if n >= 0 && i < len(tags) { // a shard that did not answer keeps its last reading
			m.stock.WithLabelValues(sale, item, tags[i]).Set(float64(n))
		}
	}
}

// ForgetSale drops the gauges of a sale and of its items (catalog refresh
// only): the sale is over, or gone. See catalog.Config.Forget.
func (m *Metrics) ForgetSale(saleID int64, items []int64) {
	id := prometheus.Labels{"sale": strconv.FormatInt(saleID, 10)}
	m.stock.DeletePartialMatch(id)
	m.selling.DeletePartialMatch(id)
	m.paused.DeletePartialMatch(id)
	m.drift.units.DeletePartialMatch(id)
	m.drift.age.DeletePartialMatch(id)
	m.funnel.forget(saleID)
	m.stockMu.Lock()
	for k := range m.stockTags {
		if k[0] == saleID {
			delete(m.stockTags, k)
		}
	}
	m.stockMu.Unlock()
	for _, it := range items {
		m.soldOut.DeleteLabelValues(strconv.FormatInt(it, 10))
	}
}

// SoldOut sets the sold-out gauge of item. It allocates; the catalog calls it
// from its refresh loop only.
func (m *Metrics) SoldOut(itemID int64, soldOut bool) {
	v := 0.0
	if soldOut {
		v = 1
	}
	m.soldOut.WithLabelValues(strconv.FormatInt(itemID, 10)).Set(v)
}
