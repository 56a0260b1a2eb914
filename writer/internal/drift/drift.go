// Package drift is the writer's online invariant: every Interval it computes,
// for each item of each live sale,
//
//	drift = Q - (S + M + P + J)
//
// with Q the item's quantity and P its PENDING and PAID orders (items.sold) in
// PostgreSQL, S the units on its Redis shards, M the units in journaled moves
// between shards, and J the reservations still in the shards' hand-off
// journals (in flight: taken from the stock, not yet persisted). It exports
// the value as flashsale_writer_stock_drift_units{sale,item}; the oversell
// alarm watches it (deploy/observability/alerts.yaml). The same reading
// exports each shard's stock per item and each shard's journal backlog and
// oldest entry's age (gauges.go), so that the writer shows, as every gateway
// does, the figures SPEC's Operations section names.
//
// The reading is not atomic and J does not see events already in Kafka but
// not yet committed: for a moment a unit can be counted twice (a reservation
// the writer committed before the relay trimmed its entry) or not at all
// (between the relay's hand-over to Kafka and the commit). At the peak of
// `make demo` (10,000 units sold in under a second) one reading showed +497;
// the next ones 0. The alarm therefore wants every reading of 10 s on one
// side of 0. Drift that
// stays is real: below zero more units exist than the quantity (an oversell in
// the making: stock set wrong in Redis, a double release); above zero units
// were lost or are stuck (a writer far behind Kafka shows here too).
//
// A sale is live from ten minutes before its start to ten minutes after its
// end plus its payment window; other sales are not read.
package drift

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"flashsale/sharding/repeatlog"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

// Config tunes a Watcher.
type Config struct {
	Interval time.Duration // between readings (default 1s)
	Sales    []int64       // the sales to watch; empty: every live sale in Redis
}

// Watcher computes the drift of live sales and exports it.
type Watcher struct {
	cfg   Config
	db    *pgxpool.Pool
	redis *stock.Store
	g     *gauges
	log   *slog.Logger
}

// New registers the watcher's gauges in reg and returns a Watcher.
func New(cfg Config, db *pgxpool.Pool, redis *stock.Store, reg prometheus.Registerer, log *slog.Logger) *Watcher {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	return &Watcher{cfg: cfg, db: db, redis: redis, g: newGauges(reg), log: log}
}

// Run reads every Interval until ctx ends; a failed reading is logged and
// leaves the last values.
func (w *Watcher) Run(ctx context.Context) {
	repeatlog.Loop(ctx, w.cfg.Interval, w.log, "drift reading", w.Once)
}

// Reading is one sale's reading.
type Reading struct {
	Items  []Item
	Shards []Shard
	// Over: the sale ended (an operator ended it, or its window closed).
	Over bool
}

// Settled reports whether the reading shows a settled sale: over, with no
// order PENDING and no unit in flight, so its ledger (flashctl sale report)
// no longer changes and drift must be 0.
func (r *Reading) Settled() bool {
	if !r.Over || len(r.Items) == 0 {
		return false
	}
	for _, it := range r.Items {
		if it.P != it.Paid || it.M+it.J != 0 {
			return false
		}
	}
	return true
}

// Item is one item's reading.
type Item struct {
	Sale, Item    int64
	Q, S, M, P, J int64
	Paid          int64 // of P, the PAID orders (the rest are PENDING)
	Drift         int64
	Stock         []int64 // S per shard, in the sale's shard order
}

// Shard is one shard's hand-off journal.
type Shard struct {
	Sale    int64
	Tag     string
	Backlog int64  // entries not yet acknowledged by Kafka
	Oldest  string // the oldest entry's id, "" when empty
}

// Once takes one reading of every live sale at now, exports it and returns
// the first error (the other sales are still read).
func (w *Watcher) Once(ctx context.Context, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Interval*5)
	defer cancel()
	ids := w.cfg.Sales
	if len(ids) == 0 {
		var err error
		if ids, err = w.redis.SaleIDs(ctx); err != nil {
			return err
		}
	}
	var firstErr error
	shown := w.g.begin()
	for _, id := range ids {
		rd, err := w.Sale(ctx, id, now)
		shown.sale(rd, now) // what was read: the journals, even when the rest failed
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if err := w.publish(ctx, id, rd, now); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	w.g.end(shown, firstErr == nil)
	return firstErr
}

// publish records the reading of sale id in Redis for the gateways, which
// export it (they cannot see PostgreSQL): nothing when it has no item.
func (w *Watcher) publish(ctx context.Context, id int64, rd Reading, now time.Time) error {
	if len(rd.Items) == 0 {
		return nil
	}
	items := make(map[int64]int64, len(rd.Items))
	for _, it := range rd.Items {
		items[it.Item] = it.Drift
	}
	return w.redis.PublishDrift(ctx, id, stock.DriftReading{At: now, Items: items})
}

// live reports whether sale is worth reading at now.
func live(s *sale.Sale, now time.Time) bool { return s.Around(now, 10*time.Minute, 10*time.Minute) }

// Sale reads the drift of every item of sale id, and its journals; empty
// for a sale that is not live or not in Redis. On an error the journals
// read before it are returned (Items empty).
func (w *Watcher) Sale(ctx context.Context, id int64, now time.Time) (Reading, error) {
	s, err := w.redis.LoadSale(ctx, id)
	if errors.Is(err, stock.ErrNoSale) {
		return Reading{}, nil
	}
	if err != nil {
		return Reading{}, err
	}
	if !live(s, now) {
		return Reading{}, nil
	}
	// The journals first: their gauges are exported even when the rest of
	// the reading fails (PostgreSQL away, a mangled entry), since
	// FlashsaleJournalEntryOld reads them.
	rd := Reading{Over: s.State == sale.StateEnded || !now.Before(s.EndsAt)}
	js, jerr := w.redis.ReadJournals(ctx, s)
	if js.Backlog != nil {
		for i, tag := range s.Shards {
			rd.Shards = append(rd.Shards, Shard{Sale: id, Tag: tag, Backlog: js.Backlog[i], Oldest: js.Oldest[i]})
		}
	}
	if jerr != nil {
		return rd, jerr
	}
	moves, err := w.redis.PendingMoves(ctx, s)
	if err != nil {
		return rd, err
	}
	pg, err := w.itemTotals(ctx, id)
	if err != nil {
		return rd, err
	}
	for _, it := range s.Items {
		tot, ok := pg[it.ID]
		if !ok {
			continue // not in PostgreSQL (yet): nothing to compare with
		}
		rem, err := w.redis.Remaining(ctx, s, it.ID)
		if err != nil {
			return Reading{Shards: rd.Shards}, err
		}
		r := Item{Sale: id, Item: it.ID, Q: tot[0], P: tot[1], Paid: tot[2], J: js.Units[it.ID], Stock: rem}
		for _, n := range rem {
			r.S += n
		}
		for _, m := range moves {
			if m.ItemID == it.ID {
				r.M += m.Units
			}
		}
		r.Drift = r.Q - (r.S + r.M + r.P + r.J)
		rd.Items = append(rd.Items, r)
	}
	return rd, nil
}

// itemTotals reads quantity, sold (PENDING + PAID) and the PAID orders of
// each item of sale id (the paid count is an index-only count of
// orders_sale_item_status).
func (w *Watcher) itemTotals(ctx context.Context, id int64) (map[int64][3]int64, error) {
	rows, err := w.db.Query(ctx, `
		SELECT i.id, i.quantity, i.sold, (SELECT count(*) FROM orders o
		       WHERE o.sale_id = i.sale_id AND o.item_id = i.id AND o.status = 'PAID')
		FROM items i WHERE i.sale_id = $1`, id)
	if err != nil {
		return nil, fmt.Errorf("reading items of sale %d: %w", id, err)
	}
	defer rows.Close()
	out := map[int64][3]int64{}
	for rows.Next() {
		var item, q, sold, paid int64
		if err := rows.Scan(&item, &q, &sold, &paid); err != nil {
			return nil, fmt.Errorf("reading items of sale %d: %w", id, err)
		}
		out[item] = [3]int64{q, sold, paid}
	}
	return out, rows.Err()
}
