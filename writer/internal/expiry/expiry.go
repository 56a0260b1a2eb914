// Package expiry is the periodic job that expires unpaid orders once their
// payment window has ended and gives their units back to Redis.
//
// Each pass moves due PENDING orders to EXPIRED in PostgreSQL (rows locked with
// FOR UPDATE SKIP LOCKED, so a payment in flight or another writer's pass is
// never waited for and never doubled), takes them out of items.sold and writes
// their outbox rows in the same transaction; then, after the commit, it
// returns the units to Redis through the outbox Applier. A writer that dies
// between the two leaves outbox rows that any writer's replay applies later.
package expiry

import (
	"context"
	"log/slog"
	"time"

	"flashsale/writer/internal/obs"
	"flashsale/writer/internal/outbox"
	"flashsale/writer/internal/store"
)

// Config tunes the job.
type Config struct {
	// Interval is the time between passes.
	Interval time.Duration
	// Batch is the most orders one transaction expires.
	Batch int
	// Sales limits the job to these sales; empty means every sale.
	Sales []int64
}

// Job expires orders. Drive it with Run, or step it with Once in tests.
type Job struct {
	cfg     Config
	st      *store.Store
	applier *outbox.Applier
	m       *obs.Metrics
	log     *slog.Logger
}

// New returns a Job.
func New(cfg Config, st *store.Store, applier *outbox.Applier, m *obs.Metrics, log *slog.Logger) *Job {
	if cfg.Batch < 1 {
		cfg.Batch = 1
	}
	return &Job{cfg: cfg, st: st, applier: applier, m: m, log: log}
}

// Run runs a pass every Interval until ctx ends. Errors are logged and the
// next pass retries.
func (j *Job) Run(ctx context.Context) {
	t := time.NewTicker(j.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := j.Once(ctx); err != nil && ctx.Err() == nil {
			kind := "other"
			if store.IsTransient(err) {
				kind = "transient"
			}
			j.m.Retries.WithLabelValues(kind).Inc()
			j.log.Warn("expiry pass failed; retrying next pass", "err", err)
		}
	}
}

// Once expires every due order, Batch per transaction, applying each
// transaction's releases to Redis after its commit. It returns how many
// orders it expired.
func (j *Job) Once(ctx context.Context) (int, error) {
	total := 0
	for {
		effects, err := j.st.ExpireDue(ctx, j.cfg.Batch, j.cfg.Sales)
		if err != nil {
			return total, err
		}
		total += len(effects)
		j.m.Expired.Add(float64(len(effects)))
		if len(effects) > 0 {
			// A failure here leaves undone outbox rows for the replay.
			_ = j.applier.ApplyAndMark(context.WithoutCancel(ctx), effects)
		}
		if len(effects) < j.cfg.Batch {
			return total, nil
		}
	}
}
