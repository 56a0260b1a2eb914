// Package ghost is the writer's safety net for reservations that would
// otherwise hold a unit for ever: a buyer record in Redis whose order has no
// entry in the hand-off journal and no row in PostgreSQL. The journal makes
// such a ghost impossible by construction (the reserve script writes the unit,
// the buyer record and the journal entry in one step, and a 503 voids the
// attempt); this sweep counts what would still slip through (a failover that
// lost a journal entry but kept its buyer record, a bug, a hand-planted key)
// and settles it: PostgreSQL records it as a FAILED order (store.FailGhost)
// with its history row, in the same transaction as the outbox row that
// returns its unit; then the unit goes back and the order record says FAILED,
// so the buyer's GET shows it, the user may buy again and the closing ledger
// (flashctl sale report) counts it among the ghosts reclaimed.
//
// A reservation is judged a ghost only when all of these hold:
//   - its order id is absent from PostgreSQL in two sweeps at least Grace apart;
//   - its journal entry (the id the order record names) is no longer in the
//     shard's stream: an entry still there will be relayed;
//   - the orders topic's consumer group has no lag at a moment after the
//     absence was seen, and PostgreSQL still lacks the order after that: an
//     event already in Kafka but not persisted (a writer stopped or lagging
//     for minutes) is therefore never mistaken for a ghost; while there is lag
//     the sweep judges nothing.
//
// Only sales that can still hold an unsettled ghost are swept (see
// sweepable), and a shard's buyer records are read a page at a time (HSCAN),
// so the sweep's cost follows the live sales, not every buyer a deployment
// ever had.
package ghost

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"flashsale/sharding"
	"flashsale/sharding/repeatlog"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/internal/obs"
	"flashsale/writer/internal/store"
)

// Config tunes a Sweeper.
type Config struct {
	// Interval is the time between sweeps (default 30s).
	Interval time.Duration
	// Grace is how long a candidate must stay absent from PostgreSQL before
	// it is judged (default 2m).
	Grace time.Duration
	// Sales limits the sweep to these sales; empty means every sale in Redis.
	Sales []int64
}

// Sweeper finds and settles ghost reservations. Drive it with Run, or step
// it with Once in tests.
type Sweeper struct {
	cfg   Config
	st    *store.Store
	redis *stock.Store
	lag   func(context.Context) (int64, error)
	m     *obs.Metrics
	log   *slog.Logger
	seen  map[sharding.OrderID]time.Time // candidate -> first seen absent
}

// New returns a Sweeper. lag reports the orders consumer group's lag
// (consume.Consumer.GroupLag).
func New(cfg Config, st *store.Store, redis *stock.Store, lag func(context.Context) (int64, error), m *obs.Metrics, log *slog.Logger) *Sweeper {
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 2 * time.Minute
	}
	return &Sweeper{cfg: cfg, st: st, redis: redis, lag: lag, m: m, log: log, seen: map[sharding.OrderID]time.Time{}}
}

// Run sweeps every Interval until ctx ends.
func (s *Sweeper) Run(ctx context.Context) {
	repeatlog.Loop(ctx, s.cfg.Interval, s.log, "ghost sweep", func(ctx context.Context, now time.Time) error {
		_, err := s.Once(ctx, now)
		return err
	})
}

// candidate is a buyer record whose order PostgreSQL lacks.
type candidate struct {
	tag              string
	sale             *sale.Sale
	user             uint64
	id               sharding.OrderID
	itemID           int64
	created, expires time.Time // the order record's (zero when unreadable)
	buyer            stock.Buyer
}

// Once runs one sweep at now and returns how many ghosts it settled.
func (s *Sweeper) Once(ctx context.Context, now time.Time) (int, error) {
	sales, err := s.sales(ctx, now)
	if err != nil {
		return 0, err
	}
	var all []candidate
	for _, sale := range sales {
		cs, err := s.absent(ctx, sale)
		if err != nil {
			return 0, err
		}
		all = append(all, cs...)
	}
	due := s.due(all, now)
	if len(due) == 0 {
		return 0, nil
	}
	lag, err := s.lag(ctx)
	if err != nil {
		return 0, err
	}
	if lag > 0 {
		s.m.GhostSweepsSkipped.Inc()
		s.log.Info("ghost sweep: the orders consumer group has lag; judging nothing", "lag", lag, "candidates", len(due))
		return 0, nil
	}
	return s.release(ctx, due)
}

// due remembers when each candidate was first seen, forgets the ones gone,
// and returns those seen at least a grace before now.
func (s *Sweeper) due(all []candidate, now time.Time) []candidate {
	live := make(map[sharding.OrderID]bool, len(all))
	var due []candidate
	for _, c := range all {
		live[c.id] = true
		first, ok := s.seen[c.id]
		if !ok {
			s.seen[c.id] = now
			continue
		}
		if now.Sub(first) >= s.cfg.Grace {
			due = append(due, c)
		}
	}
	for id := range s.seen {
		if !live[id] {
			delete(s.seen, id)
		}
	}
	return due
}

// release settles the due candidates whose order is still not in
// PostgreSQL, once the consumer group had no lag (an event produced before
// that moment is persisted): it records each as a FAILED order with its
// history and an outbox row (store.RecordGhosts, whose insert is the last
// check that PostgreSQL still lacks it), then returns its unit and marks its
// record FAILED in Redis, and marks the outbox row done. A release that fails
// is left to the outbox replay.
func (s *Sweeper) release(ctx context.Context, due []candidate) (int, error) {
	gs := make([]store.Ghost, len(due))
	byID := make(map[sharding.OrderID]candidate, len(due))
	for i, c := range due {
		gs[i] = store.Ghost{OrderID: c.id, SaleID: c.sale.ID, ItemID: c.itemID, UserID: c.user, Created: c.created, Expires: c.expires}
		byID[c.id] = c
		delete(s.seen, c.id)
	}
	recorded, err := s.st.RecordGhosts(ctx, gs)
	if err != nil {
		return 0, err
	}
	n := 0
	var done []sharding.OrderID
	for _, e := range recorded {
		c := byID[e.OrderID]
		rel, err := s.redis.Release(ctx, c.tag, c.itemID, c.user, c.id, stock.StatusFailed)
		if err == nil && rel == stock.ReleaseFrozen {
			err = stock.ErrFrozen // the replay releases it on the new layout
		}
		if err != nil {
			return n, fmt.Errorf("releasing ghost %s (recorded; the outbox replay releases it): %w", c.id, err)
		}
		done = append(done, c.id)
		if rel == stock.Released {
			n++
			s.m.Ghosts.Inc()
			s.log.Error("ghost reservation released: a buyer record with no journal entry and no order",
				"sale", c.sale.ID, "shard", c.tag, "user", c.user, "order", c.id.String())
		}
	}
	return n, s.st.MarkDone(ctx, done)
}

// sales lists the sales to sweep at now: those of the index (or Config.Sales)
// whose reservations can still be settled (see sweepable). The descriptions
// are read in one pipelined round trip.
func (s *Sweeper) sales(ctx context.Context, now time.Time) ([]*sale.Sale, error) {
	ids := s.cfg.Sales
	if len(ids) == 0 {
		var err error
		if ids, err = s.redis.SaleIDs(ctx); err != nil {
			return nil, err
		}
	}
	out := make([]*sale.Sale, 0, len(ids))
	for _, st := range s.redis.ReadSales(ctx, ids) {
		sl, err := st.Decode()
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			s.log.Warn("ghost sweep: skipping a sale", "sale", st.ID, "err", err)
			continue
		}
		if s.sweepable(sl, now) {
			out = append(out, sl)
		}
	}
	return out, nil
}

// sweepable reports whether sale's buyer records are worth a sweep at now:
// from 10 minutes before its start to 10 minutes after its last payment
// window closed plus twice the grace. A ghost is born with its reservation,
// before the sale ends, and is judged within two sweeps a grace apart; a
// sale over for longer holds only settled records, and sweeping it would
// read every buyer it ever had, every Interval, for as long as Redis keeps
// them (a deployment's past sales add up; flashctl reconcile covers them).
func (s *Sweeper) sweepable(sale *sale.Sale, now time.Time) bool {
	const margin = 10 * time.Minute
	return sale.Around(now, margin, 2*s.cfg.Grace+margin)
}

// scanPage is the HSCAN page of a buyers record: a shard's buyers are read a
// page per command, so a hash of a big sale never blocks its master for long.
const scanPage = 1000

// buyersOf reads a shard's buyer records (user -> order id) with HSCAN.
func buyersOf(ctx context.Context, c rueidis.Client, key string) (map[string]string, error) {
	out := map[string]string{}
	var cursor uint64
	for {
		e, err := c.Do(ctx, c.B().Hscan().Key(key).Cursor(cursor).Count(scanPage).Build()).AsScanEntry()
		if err != nil {
			return nil, err
		}
		if len(e.Elements)%2 != 0 {
			return nil, fmt.Errorf("HSCAN of %s: an odd number of elements (%d)", key, len(e.Elements))
		}
		for i := 0; i < len(e.Elements); i += 2 {
			out[e.Elements[i]] = e.Elements[i+1]
		}
		if cursor = e.Cursor; cursor == 0 {
			return out, nil
		}
	}
}

// absent returns the buyer records of sale whose order PostgreSQL lacks and
// whose journal entry is gone (or was never written).
func (s *Sweeper) absent(ctx context.Context, sale *sale.Sale) ([]candidate, error) {
	cands, err := s.records(ctx, sale)
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	present, err := s.st.Existing(ctx, ids(cands))
	if err != nil {
		return nil, err
	}
	out := cands[:0]
	for _, cd := range cands {
		if !present[cd.id] {
			out = append(out, cd)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return s.unjournaled(ctx, out)
}

// records returns sale's buyer records, skipping (and logging) malformed ones.
func (s *Sweeper) records(ctx context.Context, sale *sale.Sale) ([]candidate, error) {
	var cands []candidate
	for _, tag := range sale.Shards {
		buyers, err := buyersOf(ctx, s.redis.Client(), string(sharding.AppendBuyersKey(nil, tag)))
		if err != nil {
			return nil, fmt.Errorf("reading buyers of %s: %w", tag, err)
		}
		for u, o := range buyers {
			user, err1 := strconv.ParseUint(u, 10, 64)
			b, err2 := stock.ParseBuyer(o)
			if err1 != nil || err2 != nil || user == 0 {
				s.log.Warn("ghost sweep: malformed buyer record", "shard", tag, "user", u, "order", o)
				continue
			}
			cands = append(cands, candidate{tag: tag, sale: sale, user: user, id: b.OrderID, buyer: b})
		}
	}
	return cands, nil
}

// unjournaled reads each candidate's order record (its item and journal
// entry id), or takes them from its buyer record while that carries the
// order (lua/order.lua), and keeps those whose entry is no longer in the
// stream, in one pipelined round trip each.
func (s *Sweeper) unjournaled(ctx context.Context, out []candidate) ([]candidate, error) {
	c := s.redis.Client()
	reads := make(rueidis.Commands, len(out))
	for i, cd := range out {
		reads[i] = c.B().Hmget().Key(string(sharding.AppendOrderKey(nil, cd.tag, cd.id))).Field("item", "j", "created", "expires").Build()
	}
	res := c.DoMulti(ctx, reads...)
	var checks rueidis.Commands
	var checked []int
	kept := out[:0]
	for i, r := range res {
		vals, err := r.ToArray()
		if err != nil || len(vals) != 4 {
			return nil, fmt.Errorf("reading order record %s: %v", out[i].id, err)
		}
		item, _ := vals[0].ToString()
		out[i].itemID, _ = strconv.ParseInt(item, 10, 64)
		out[i].created, out[i].expires = millis(vals[2]), millis(vals[3])
		j, _ := vals[1].ToString()
		if b := &out[i].buyer; out[i].itemID <= 0 && b.Lazy {
			out[i].itemID, out[i].created, out[i].expires, j = b.ItemID, b.Created, b.Expires, b.Journal
		}
		if out[i].itemID <= 0 {
			// No record to name the item (it expired or was lost): the unit's
			// item is unknown here; reconcile settles it.
			s.log.Warn("ghost sweep: buyer record without an order record", "shard", out[i].tag, "order", out[i].id.String())
			continue
		}
		kept = append(kept, out[i])
		if j != "" {
			checks = append(checks, c.B().Xrange().Key(string(sharding.AppendEventsKey(nil, out[i].tag))).Start(j).End(j).Build())
			checked = append(checked, len(kept)-1)
		}
	}
	inJournal := map[int]bool{}
	for k, r := range c.DoMulti(ctx, checks...) {
		es, err := r.ToArray()
		if err != nil {
			return nil, fmt.Errorf("reading journal: %w", err)
		}
		inJournal[checked[k]] = len(es) > 0
	}
	final := make([]candidate, 0, len(kept))
	for i, cd := range kept {
		if !inJournal[i] {
			final = append(final, cd)
		}
	}
	return final, nil
}

// millis reads a record's time field (unix milliseconds); the zero time
// when it is missing or not a number (store.RecordGhosts then uses now).
func millis(v rueidis.RedisMessage) time.Time {
	str, err := v.ToString()
	if err != nil {
		return time.Time{}
	}
	ms, err := strconv.ParseInt(str, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// ids returns the candidates' order ids.
func ids(cs []candidate) []sharding.OrderID {
	out := make([]sharding.OrderID, len(cs))
	for i, c := range cs {
		out[i] = c.id
	}
	return out
}
