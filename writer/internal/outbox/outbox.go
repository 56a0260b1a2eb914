// Package outbox applies committed order status changes to Redis: it returns
// the units of expired and cancelled orders to stock (release.lua) and records
// PAID and FAILED statuses for the gateway's GET (status.lua).
//
// Every change it applies was first written, in the same PostgreSQL
// transaction as the change itself, as a row of the releases table (package
// store). The writer that committed the change hands the rows to an Applier
// right after the commit (Enqueue, or Apply for the expiry job); a periodic
// replay picks up rows still not done, for instance because the writer died
// between the commit and the Redis call, or Redis was unreachable. Applying a
// row twice is harmless: the release script is guarded per order (only the
// call that removes the buyer's user -> order entry returns the unit), and a
// status write is idempotent. So several writers may replay at once.
//
// The user's shard is looked up in the sale's current layout in Redis
// (sharding.HomeShard over Sale.Shards), cached for about a second, so a
// release after a reshard goes to the shard that now holds the buyer record.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/repeatlog"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/internal/obs"
	"flashsale/writer/internal/store"
)

// Config tunes an Applier.
type Config struct {
	// StatusTTL is how long Redis keeps an order record after the writer sets
	// a final status on it.
	StatusTTL time.Duration
	// SaleCacheTTL is how long a sale layout read from Redis is reused.
	SaleCacheTTL time.Duration
	// Concurrency is the number of Redis calls in flight per Apply.
	Concurrency int
	// ReplayInterval is the period of the replay of rows not yet done.
	ReplayInterval time.Duration
	// ReplayGrace is the age below which an undone row is left to the writer
	// that committed it.
	ReplayGrace time.Duration
	// ReplayBatch is the number of rows one replay transaction claims.
	ReplayBatch int
	// Sales limits the replay to these sales; empty means every sale.
	Sales []int64
	// QueueLen is the number of committed batches waiting for Redis before
	// Enqueue drops them to the replay.
	QueueLen int
}

// Applier applies outbox rows to Redis. It is safe for concurrent use.
type Applier struct {
	cfg   Config
	st    *store.Store
	redis *stock.Store
	m     *obs.Metrics
	log   *slog.Logger
	queue chan []store.Effect
	marks chan []Stored // see EnqueuePersisted

	umu      sync.Mutex
	unmarked []Stored // marks Redis refused, tried again at the replay tick

	mu    sync.Mutex
	sales map[int64]cachedSale
	load  func(context.Context, int64) (*sale.Sale, error) // reads a layout: redis.LoadSale

	replayFails repeatlog.Failure // the log of failing replays
	markFails   repeatlog.Failure // the log of failing persisted marks
}

type cachedSale struct {
	sale  *sale.Sale // nil: not in Redis
	at    time.Time  // when it was read
	tried time.Time  // the last failed read since (the stale layout serves until SaleCacheTTL after it)
}

// New returns an Applier. Start its background work with Run.
func New(cfg Config, st *store.Store, redis *stock.Store, m *obs.Metrics, log *slog.Logger) *Applier {
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 1
	}
	if cfg.QueueLen < 1 {
		cfg.QueueLen = 1
	}
	a := &Applier{cfg: cfg, st: st, redis: redis, m: m, log: log,
		queue: make(chan []store.Effect, cfg.QueueLen), marks: make(chan []Stored, cfg.QueueLen), sales: map[int64]cachedSale{}}
	if redis != nil {
		a.load = redis.LoadSale
	}
	return a
}

// Enqueue hands committed effects to the background worker without waiting.
// When the worker is behind, they are left to the periodic replay.
func (a *Applier) Enqueue(effects []store.Effect) {
	if len(effects) == 0 {
		return
	}
	select {
	case a.queue <- effects:
	default:
	}
}

// Run applies enqueued effects and replays undone rows every ReplayInterval
// (and once at start) until ctx ends.
func (a *Applier) Run(ctx context.Context) {
	a.replayAll(ctx)
	t := time.NewTicker(a.cfg.ReplayInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case effects := <-a.queue:
			_ = a.ApplyAndMark(ctx, effects)
		case s := <-a.marks:
			a.markAll(ctx, s)
		case <-t.C:
			a.replayAll(ctx)
			a.retryUnmarked(ctx)
		}
	}
}

// ApplyAndMark applies effects to Redis and marks the applied ones done.
func (a *Applier) ApplyAndMark(ctx context.Context, effects []store.Effect) error {
	done := a.Apply(ctx, effects)
	if err := a.st.MarkDone(ctx, done); err != nil {
		a.log.Warn("outbox rows applied but not marked done; the replay will re-apply them harmlessly", "rows", len(done), "err", err)
		return err
	}
	return nil
}

// Apply applies effects to Redis, Concurrency at a time, and returns the ids
// of those applied (or that need nothing from Redis). Failures are counted and
// logged; their rows stay undone for the replay.
func (a *Applier) Apply(ctx context.Context, effects []store.Effect) []sharding.OrderID {
	ok := make([]bool, len(effects))
	var next atomic.Int64
	var wg sync.WaitGroup
	workers := min(a.cfg.Concurrency, len(effects))
	var firstErr atomic.Pointer[error]
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(effects) {
					return
				}
				err := a.applyOne(ctx, &effects[i])
				if err != nil {
					a.m.RedisErrors.Inc()
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				ok[i] = true
			}
		}()
	}
	wg.Wait()
	if p := firstErr.Load(); p != nil {
		a.log.Warn("applying outbox rows to redis failed; they will be replayed", "err", *p)
	}
	done := make([]sharding.OrderID, 0, len(effects))
	for i, v := range ok {
		if v {
			done = append(done, effects[i].OrderID)
		}
	}
	return done
}

func (a *Applier) applyOne(ctx context.Context, e *store.Effect) error {
	sale, err := a.sale(ctx, e.SaleID)
	if err != nil {
		return err
	}
	if sale == nil || len(sale.Shards) == 0 {
		// No layout in Redis: no stock and no record to update there.
		return nil
	}
	tag := sale.Shards[sharding.HomeShard(e.UserID, e.SaleID, len(sale.Shards))]
	if e.Status == store.StatusFailed {
		// A second active order of the user (its buyer record was lost in
		// Redis): return its unit and restore the real order's buyer record.
		active, dup, err := a.st.DuplicateOf(ctx, e.OrderID)
		if err != nil {
			return err
		}
		if dup {
			released, err := a.release(ctx, tag, e)
			if err != nil {
				return err
			}
			if _, err := a.redis.RestoreBuyer(ctx, tag, e.UserID, active); err != nil {
				return err
			}
			if released {
				a.m.Releases.Inc()
				return nil
			}
		}
	}
	if e.Releases() {
		released, err := a.release(ctx, tag, e)
		if err != nil {
			return err
		}
		if released {
			a.m.Releases.Inc()
			return nil
		}
		// The guard found the unit already returned (a replay) or the buyer
		// entry gone; make sure GET still shows the final status.
		a.m.ReleaseNoops.Inc()
	}
	return a.redis.SetStatus(ctx, tag, e.OrderID, stock.OrderRecord{
		UserID: e.UserID, ItemID: e.ItemID, Status: e.Status, Created: e.Created, Expires: e.Expires,
	}, a.cfg.StatusTTL)
}

// release returns e's unit on tag's shard and reports whether this call
// returned it. A frozen shard (a reshard) is an error here, as a status write
// there is: the row stays undone and its replay releases on the new layout.
func (a *Applier) release(ctx context.Context, tag string, e *store.Effect) (bool, error) {
	rel, err := a.redis.Release(ctx, tag, e.ItemID, e.UserID, e.OrderID, e.Status)
	if err != nil {
		return false, err
	}
	if rel == stock.ReleaseFrozen {
		return false, fmt.Errorf("releasing order %s on %s: %w", e.OrderID, tag, stock.ErrFrozen)
	}
	return rel == stock.Released, nil
}

// Tag returns the hash tag of userID's home shard in sale saleID's current
// layout; ok is false when Redis has no layout of the sale.
func (a *Applier) Tag(ctx context.Context, saleID int64, userID uint64) (tag string, ok bool, err error) {
	sale, err := a.sale(ctx, saleID)
	if err != nil || sale == nil || len(sale.Shards) == 0 {
		return "", false, err
	}
	return sale.Shards[sharding.HomeShard(userID, saleID, len(sale.Shards))], true, nil
}

// staleLayout bounds how old a layout sale may fall back on.
const staleLayout = time.Hour

// saleLoadTimeout bounds one reading of a sale's layout: the key's master
// away, the reading does not fail at once, it waits for the failover.
const saleLoadTimeout = time.Second

// sale returns the current layout of sale id, nil when Redis has none. When
// the layout cannot be read (the master of the sale's key is failing over) it
// returns the last one read, up to staleLayout old: the sale key lives on one
// master, and without the fallback that master's outage would hold up the
// releases and expiry claims of every shard, not only its own. A stale layout
// cannot misplace a release: a reshard leaves a fence on every shard it
// replaced (stock.FenceTTL, a day), on which the scripts answer frozen, and
// the caller reloads the layout and tries again.
func (a *Applier) sale(ctx context.Context, id int64) (*sale.Sale, error) {
	now := time.Now()
	a.mu.Lock()
	c, ok := a.sales[id]
	a.mu.Unlock()
	if ok && (now.Sub(c.at) < a.cfg.SaleCacheTTL || now.Sub(c.tried) < a.cfg.SaleCacheTTL) {
		return c.sale, nil
	}
	lctx, cancel := context.WithTimeout(ctx, saleLoadTimeout)
	sale, err := a.load(lctx, id)
	cancel()
	if errors.Is(err, stock.ErrNoSale) {
		sale, err = nil, nil
	}
	if err != nil {
		if ok && c.sale != nil && now.Sub(c.at) < staleLayout {
			c.tried = now
			a.mu.Lock()
			a.sales[id] = c
			a.mu.Unlock()
			return c.sale, nil
		}
		return nil, err
	}
	a.mu.Lock()
	a.sales[id] = cachedSale{sale: sale, at: now}
	a.mu.Unlock()
	return sale, nil
}

// replayAll replays undone rows older than ReplayGrace until none is left.
func (a *Applier) replayAll(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := a.ReplayOnce(ctx, a.cfg.ReplayGrace)
		a.replayFails.Round(ctx, a.log, err, "outbox replay")
		if err != nil {
			return
		}
		if n < a.cfg.ReplayBatch {
			return
		}
	}
}

// ReplayOnce claims up to ReplayBatch undone rows older than grace, applies
// them and marks them done; it returns how many were applied.
func (a *Applier) ReplayOnce(ctx context.Context, grace time.Duration) (int, error) {
	return a.st.ReplayOutbox(ctx, grace, a.cfg.ReplayBatch, a.cfg.Sales, a.Apply)
}
