// Package expiry is the periodic job that expires unpaid orders once their
// payment window has ended and gives their units back to Redis.
//
// Each pass selects due PENDING orders in PostgreSQL (rows locked with FOR
// UPDATE SKIP LOCKED, so a payment in flight or another writer's pass is never
// waited for and never doubled), claims them in Redis (expire_claim.lua on
// each order's record: an order whose pay or cancel was accepted there is not
// expired, nor one not yet due by the Redis clock, which is the clock the
// gateway's pay script reads), moves the claimed ones to EXPIRED, takes them
// out of items.sold and writes their outbox rows in the same transaction;
// then, after the commit, it returns the units to Redis through the outbox
// Applier. A writer that dies between the two leaves outbox rows that any
// writer's replay applies later; one that dies after the claim leaves a
// claimed record, which the next pass claims again.
package expiry

import (
	"context"
	"log/slog"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/repeatlog"
	"flashsale/sharding/stock"
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
	redis   *stock.Store
	applier *outbox.Applier
	m       *obs.Metrics
	log     *slog.Logger
}

// New returns a Job.
func New(cfg Config, st *store.Store, redis *stock.Store, applier *outbox.Applier, m *obs.Metrics, log *slog.Logger) *Job {
	if cfg.Batch < 1 {
		cfg.Batch = 1
	}
	return &Job{cfg: cfg, st: st, redis: redis, applier: applier, m: m, log: log}
}

// MinGap is the shortest time between two passes: the orders that fall due
// within it expire together in the next pass, and a pass that could expire
// nothing (the Redis clock behind PostgreSQL's, a row another writer holds)
// is not repeated in a busy loop.
const MinGap = 250 * time.Millisecond

// ClaimTimeout bounds a pass's claims in Redis. A claim without a verdict
// by then (its shard's master unreachable, a failover under way) is claimed
// again next pass, while the orders of the shards that answered expire now:
// without the bound the pass, and every shard's returned units with it, would
// wait for the failover. A claim given up may still land; the next pass then
// finds the order claimed (see expire_claim.lua), so nothing is lost.
const ClaimTimeout = 2 * time.Second

// Run runs passes until ctx ends: one at each payment deadline (the next
// PENDING order's expires_at, read after every pass), at most one per MinGap,
// and at least one every Interval, which also bounds the wait when the
// deadline cannot be read. So an unpaid order's unit is back on sale about
// MinGap after its deadline, not up to a whole Interval later. Errors are
// logged and the next pass retries soon (see wait).
func (j *Job) Run(ctx context.Context) {
	var fails repeatlog.Failure
	failed := 0 // passes failed in a row
	t := time.NewTimer(j.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, err := j.Once(ctx)
		if err != nil && ctx.Err() == nil {
			kind := "other"
			if store.IsTransient(err) {
				kind = "transient"
			}
			j.m.Retries.WithLabelValues(kind).Inc()
		}
		fails.Round(ctx, j.log, err, "expiry pass")
		if err != nil {
			failed++
		} else {
			failed = 0
		}
		t.Reset(j.wait(ctx, failed))
	}
}

// wait returns how long until the next pass: until the next deadline, within
// [min(MinGap, Interval), Interval]. After a failed pass (a Redis master
// failing over, PostgreSQL away) the orders due are still due: the next pass
// comes after MinGap, doubled with each failure in a row up to Interval.
func (j *Job) wait(ctx context.Context, failed int) time.Duration {
	gap := min(MinGap, j.cfg.Interval)
	if failed > 0 {
		return min(gap<<min(failed-1, 16), j.cfg.Interval)
	}
	rctx, cancel := context.WithTimeout(ctx, j.cfg.Interval)
	defer cancel()
	d, ok, err := j.st.NextDue(rctx, j.cfg.Sales)
	if err != nil || !ok {
		return j.cfg.Interval
	}
	return min(max(d, gap), j.cfg.Interval)
}

// Once expires every due order, Batch per transaction, applying each
// transaction's releases to Redis after its commit. It returns how many
// orders it expired.
func (j *Job) Once(ctx context.Context) (int, error) {
	total := 0
	for {
		effects, err := j.st.ExpireDue(ctx, j.cfg.Batch, j.cfg.Sales, j.claim)
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

// claim claims the due orders in Redis and returns those that may expire. A
// sale with no layout in Redis has no record there that a pay could mark.
func (j *Job) claim(ctx context.Context, due []store.Due) ([]sharding.OrderID, error) {
	refs := make([]stock.ClaimRef, 0, len(due))
	var out []sharding.OrderID
	var ask []sharding.OrderID
	for _, d := range due {
		tag, ok, err := j.applier.Tag(ctx, d.SaleID, d.UserID)
		if err != nil {
			return nil, err
		}
		if !ok {
			out = append(out, d.OrderID)
			continue
		}
		refs = append(refs, stock.ClaimRef{Tag: tag, UserID: d.UserID, OrderID: d.OrderID})
		ask = append(ask, d.OrderID)
	}
	cctx, cancel := context.WithTimeout(ctx, ClaimTimeout)
	defer cancel()
	verdicts, err := j.redis.ExpireClaims(cctx, refs)
	if err != nil {
		return nil, err
	}
	failed := 0
	for i, v := range verdicts {
		switch v {
		case stock.ClaimFailed:
			failed++
			j.m.ExpirySkipped.WithLabelValues("redis_error").Inc()
		case stock.Claimed:
			out = append(out, ask[i])
		case stock.ClaimPaid, stock.ClaimCancelled:
			j.m.ExpirySkipped.WithLabelValues("request_accepted").Inc()
		case stock.ClaimNotDue:
			j.m.ExpirySkipped.WithLabelValues("not_due_by_redis").Inc()
		default:
			j.m.ExpirySkipped.WithLabelValues("frozen").Inc()
		}
	}
	if failed > 0 {
		j.log.Warn("expiry claims got no verdict from Redis (a shard unreachable, or its replica acknowledgement failed); claimed again next pass",
			"failed", failed, "of", len(verdicts))
	}
	return out, nil
}
