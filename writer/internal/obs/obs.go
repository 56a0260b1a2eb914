// Package obs holds the writer's Prometheus metrics and its admin HTTP server
// (/healthz, /readyz, /metrics).
//
// Metrics live in a registry owned by one Metrics value, not the global one, so
// several writers can run in one test process.
package obs

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"flashsale/sharding/clock"
)

// Metrics are the writer's counters, gauges and histograms. All are safe for
// concurrent use.
type Metrics struct {
	Registry *prometheus.Registry

	// Consumed counts decoded events by type (reserved, pay, cancel) and
	// undecodable ones as "malformed".
	Consumed *prometheus.CounterVec
	// Persisted counts reservations that became new order rows.
	Persisted prometheus.Counter
	// Duplicates counts reservations whose order id was already stored.
	Duplicates prometheus.Counter
	// DeadLetters counts records sent to the dead-letter topic.
	DeadLetters prometheus.Counter
	// Failed counts orders stored as FAILED.
	Failed prometheus.Counter
	// Lag is the records behind the high watermark over the partitions this
	// writer consumes, as of its last poll.
	Lag prometheus.Gauge
	// Expired, Paid and Cancelled count orders moved to those statuses.
	Expired, Paid, Cancelled prometheus.Counter
	// Releases counts units returned to Redis stock (a release script that
	// really gave the unit back, not a guarded no-op replay).
	Releases prometheus.Counter
	// ReleaseNoops counts release calls the per-order guard turned into no-ops.
	ReleaseNoops prometheus.Counter
	// Parked counts payments and cancellations that arrived before their
	// reservation was stored.
	Parked prometheus.Counter
	// Retries counts batch and job attempts retried after an error, by kind
	// (transient or other).
	Retries *prometheus.CounterVec
	// RedisErrors counts outbox rows Redis failed to apply (they are replayed).
	RedisErrors prometheus.Counter
	// UnlinkedRuns counts runs of an item's chain that did not link to the
	// item's persisted watermark (an entry before them never reached
	// PostgreSQL, or its mark waits for a retry): their orders are marked
	// one by one.
	UnlinkedRuns prometheus.Counter
	// ReserveToCommit is the time from the gateway's reservation to the
	// commit of the order row, in seconds.
	ReserveToCommit prometheus.Histogram
	// BatchSeconds is the time to persist one batch, in seconds.
	BatchSeconds prometheus.Histogram
	// ExpirySkipped counts due orders the Redis claim kept from expiring, by
	// reason: request_accepted (a pay or cancel was accepted before the
	// deadline; its event is on its way), not_due_by_redis, frozen,
	// redis_error (no verdict came: the order is claimed again next pass).
	ExpirySkipped *prometheus.CounterVec
	// Ghosts counts reservations the ghost sweep found in Redis with no
	// journal entry and no order after its grace, and released (FAILED).
	Ghosts prometheus.Counter
	// GhostSweepsSkipped counts sweeps that did not judge because the orders
	// topic's consumer group had lag (an event could still be on its way).
	GhostSweepsSkipped prometheus.Counter
	// DrawLogEntries counts draw log entries copied from Redis to
	// PostgreSQL (internal/drawlog).
	DrawLogEntries prometheus.Counter
	// DrawLogRefused counts reads of a sale's draw log in Redis that did
	// not verify (draw.CheckLog) or held an entry unfit to keep: nothing of
	// it was copied. Counted at every read while it lasts.
	DrawLogRefused prometheus.Counter
	// DrawLogConflicts counts reads of a sale's draw log in Redis holding an
	// entry at a sequence number PostgreSQL holds with another hash: the
	// entry held is kept. Counted at every read while it lasts.
	DrawLogConflicts prometheus.Counter
}

// NewMetrics registers the writer's metrics in a new registry, with the Go
// and process collectors.
func NewMetrics() *Metrics {
	r := prometheus.NewRegistry()
	f := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: "flashsale_writer_" + name, Help: help})
		r.MustRegister(c)
		return c
	}
	m := &Metrics{
		Registry: r,
		Consumed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flashsale_writer_events_consumed_total", Help: "Order events consumed, by type (malformed for undecodable records).",
		}, []string{"type"}),
		Persisted:          f("orders_persisted_total", "Reservations that became new order rows."),
		Duplicates:         f("duplicates_total", "Reservations whose order id was already stored; they changed nothing."),
		DeadLetters:        f("dead_letters_total", "Records sent to the dead-letter topic."),
		Failed:             f("failed_orders_total", "Orders stored as FAILED (refused by PostgreSQL)."),
		Expired:            f("expired_total", "Orders expired after their payment window."),
		Paid:               f("paid_total", "Orders paid."),
		Cancelled:          f("cancelled_total", "Orders cancelled."),
		Releases:           f("releases_total", "Units returned to Redis stock."),
		ReleaseNoops:       f("release_noops_total", "Release calls that found the unit already returned (replays)."),
		Parked:             f("parked_actions_total", "Payments and cancellations that arrived before their reservation."),
		RedisErrors:        f("redis_errors_total", "Outbox rows Redis failed to apply; they are replayed later."),
		UnlinkedRuns:       f("unlinked_runs_total", "Runs of an item's journal chain that did not link to its persisted watermark (an entry before them never reached PostgreSQL); their orders were marked one by one."),
		Ghosts:             f("ghost_reservations_total", "Reservations found in Redis with no journal entry and no order after the sweep's grace, released as FAILED (the journal makes this 0 by construction; anything else is a bug or a lost failover write)."),
		GhostSweepsSkipped: f("ghost_sweeps_skipped_total", "Ghost sweeps that judged nothing because the orders consumer group had lag."),
		DrawLogEntries:     f("draw_log_entries_total", "Draw log entries copied from Redis to PostgreSQL."),
		DrawLogRefused:     f("draw_log_refused_total", "Reads of a sale's draw log in Redis that did not verify (hash chain, sequence, order of events) or held an entry unfit to keep; nothing of it was copied (counted at every read while it lasts)."),
		DrawLogConflicts:   f("draw_log_conflicts_total", "Reads of a sale's draw log in Redis holding an entry at a sequence number PostgreSQL holds with another hash; the entry held is kept (counted at every read while it lasts)."),
		ExpirySkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flashsale_writer_expiry_skipped_total", Help: "Due orders the Redis claim kept from expiring, by reason.",
		}, []string{"reason"}),
		Lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "flashsale_writer_consumer_lag", Help: "Records behind the high watermark on this writer's partitions, as of the last poll.",
		}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flashsale_writer_retries_total", Help: "Attempts retried after an error, by kind.",
		}, []string{"kind"}),
		ReserveToCommit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "flashsale_writer_reservation_to_commit_seconds",
			Help:    "Time from the gateway's reservation to the commit of the order row.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		BatchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "flashsale_writer_batch_seconds",
			Help:    "Time to persist one batch of events.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
	}
	// Every labelled child exists from the start, so dashboards and alerts see
	// zeros rather than absent series before the first event.
	for _, t := range []string{"reserved", "pay", "cancel", "malformed"} {
		m.Consumed.WithLabelValues(t)
	}
	for _, t := range []string{"request_accepted", "not_due_by_redis", "frozen", "redis_error"} {
		m.ExpirySkipped.WithLabelValues(t)
	}
	for _, k := range []string{"transient", "other"} {
		m.Retries.WithLabelValues(k)
	}
	r.MustRegister(m.Consumed, m.Lag, m.ExpirySkipped, m.Retries, m.ReserveToCommit, m.BatchSeconds,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ReplicaAcks exports the writer's acknowledged Redis writes that came back
// short of the replicas asked (stock.Batcher.Shortfalls) or unconfirmed
// (stock.Batcher.Unconfirmed), read at each scrape.
func (m *Metrics) ReplicaAcks(short, unconfirmed func() int64) {
	m.Registry.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "flashsale_writer_replica_ack_shortfalls_total",
			Help: "Redis writes (releases, statuses, expiry claims, persisted marks) answered after WAIT timed out with fewer replicas than asked: a failover before the replicas caught up could lose them."},
			func() float64 { return float64(short()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "flashsale_writer_replica_ack_unconfirmed_total",
			Help: "Redis writes whose WAIT failed after the master answered (the master may be gone); each is retried, as its outcome is unknown."},
			func() float64 { return float64(unconfirmed()) }))
}

// Value returns the current value of a counter or gauge, for tests and logs.
func Value(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// Sum returns the sum of a histogram's observations.
func Sum(h prometheus.Histogram) float64 {
	var m dto.Metric
	if err := h.Write(&m); err != nil || m.Histogram == nil {
		return 0
	}
	return m.Histogram.GetSampleSum()
}

// Check is one readiness probe; it returns nil when the dependency answers.
type Check func(context.Context) error

// Server is the admin HTTP server.
type Server struct {
	srv *http.Server
	ln  net.Listener
	log *slog.Logger
}

// Listen binds addr and serves /healthz (always 200 while the process runs),
// /readyz (200 when every check passes within two seconds, else 503 naming
// the failures) and /metrics. Close stops it.
func Listen(addr string, m *Metrics, checks map[string]Check, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(checks)) // a stable /readyz
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		var failed []byte
		for _, name := range names {
			if err := checks[name](ctx); err != nil {
				failed = append(failed, name+": "+err.Error()+"\n"...)
			}
		}
		if len(failed) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write(failed)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry}))
	if clock.Knob() {
		mux.Handle("/debug/clock", clock.Handler()) // the lab's test knob (package clock)
	}
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln, log: log}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin server stopped", "err", err)
		}
	}()
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, waiting up to ctx for open requests.
func (s *Server) Close(ctx context.Context) error { return s.srv.Shutdown(ctx) }
