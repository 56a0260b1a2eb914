package outbox

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/orderevent"
)

// Stored names one committed reservation whose Redis record (or buyer
// record: lua/order.lua) is to be marked persisted (stock.Store.MarkPersisted), so that the gateway's GET answers
// "persisted": true and the sale page stops showing "processing".
type Stored struct {
	OrderID sharding.OrderID
	SaleID  int64
	UserID  uint64
}

// maxUnmarked bounds the marks kept for a later try after Redis failed them.
const maxUnmarked = 100_000

// StoredOf returns the reservations among events, the batch a transaction
// just committed: new orders and duplicates alike (a batch read again after
// a crash marks what the first reading did not get to).
func StoredOf(events []orderevent.Event) []Stored {
	var out []Stored
	for i := range events {
		if e := &events[i]; e.Type == orderevent.Reserved {
			out = append(out, Stored{OrderID: e.OrderID, SaleID: e.SaleID, UserID: e.UserID})
		}
	}
	return out
}

// EnqueuePersisted hands committed reservations to the background worker
// without waiting. Call it only after the PostgreSQL commit.
//
// Why the writer marks the record rather than the gateway inferring it: the
// writer is the only component that knows PostgreSQL committed, and the mark
// rides on the record the gateway's GET already reads (one HGETALL), so
// "persisted" costs the gateway nothing. The relay's acknowledgement would
// only say Kafka has the event, not PostgreSQL.
//
// The mark is not itself in the PostgreSQL outbox: a mark Redis refused is
// kept in memory and tried again at every replay tick, and one lost with the
// writer process leaves its order "processing" until its status changes
// (paid, cancelled or expired, each written after a commit and so persisted).
// A batch read again after a crash is marked again.
func (a *Applier) EnqueuePersisted(s []Stored) {
	if len(s) == 0 {
		return
	}
	select {
	case a.marks <- s:
	default:
		a.keepUnmarked(s)
	}
}

// markBatch is the most orders one persisted.lua call marks.
const markBatch = 64

// markGroup is orders of one shard, marked in one call.
type markGroup struct {
	tag string
	of  []Stored
}

// markAll marks s, one call per shard and up to markBatch orders,
// Concurrency calls at a time, and keeps the failures for a later try. (One
// call per order cost each master a script call per sale's order, 10,000 in
// the demo, just as the sale's last units were being sold.)
func (a *Applier) markAll(ctx context.Context, s []Stored) {
	groups, failed := a.groupMarks(ctx, s)
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range min(a.cfg.Concurrency, len(groups)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(groups) {
					return
				}
				g := groups[i]
				ids := make([]sharding.OrderID, len(g.of))
				users := make([]uint64, len(g.of))
				for j := range g.of {
					ids[j], users[j] = g.of[j].OrderID, g.of[j].UserID
				}
				if _, err := a.redis.MarkPersistedMany(ctx, g.tag, users, ids); err != nil {
					a.m.RedisErrors.Inc()
					mu.Lock()
					failed = append(failed, g.of...)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		a.markFails.Failed(a.log, time.Now(), "marking orders persisted in redis failed; tried again later", "orders", len(failed))
		a.keepUnmarked(failed)
		return
	}
	a.markFails.Recovered(a.log, time.Now(), "marking orders persisted in redis recovered")
}

// groupMarks sorts s by shard, in groups of at most markBatch. An order whose
// shard cannot be told now (its sale's layout unreadable) is returned in
// failed; one of a sale gone from Redis has nothing to mark.
func (a *Applier) groupMarks(ctx context.Context, s []Stored) (groups []*markGroup, failed []Stored) {
	open := map[string]*markGroup{}
	for i := range s {
		tag, ok, err := a.Tag(ctx, s[i].SaleID, s[i].UserID)
		if err != nil {
			a.m.RedisErrors.Inc()
			failed = append(failed, s[i])
			continue
		}
		if !ok {
			continue
		}
		g := open[tag]
		if g == nil || len(g.of) == markBatch {
			g = &markGroup{tag: tag}
			open[tag] = g
			groups = append(groups, g)
		}
		g.of = append(g.of, s[i])
	}
	return groups, failed
}

// keepUnmarked keeps s for the next replay tick, dropping what exceeds
// maxUnmarked.
func (a *Applier) keepUnmarked(s []Stored) {
	a.umu.Lock()
	defer a.umu.Unlock()
	room := maxUnmarked - len(a.unmarked)
	if room < len(s) {
		a.log.Warn("too many orders waiting to be marked persisted; dropping some", "dropped", len(s)-max(room, 0))
		s = s[:max(room, 0)]
	}
	a.unmarked = append(a.unmarked, s...)
}

// retryUnmarked tries the kept marks again.
func (a *Applier) retryUnmarked(ctx context.Context) {
	a.umu.Lock()
	s := a.unmarked
	a.unmarked = nil
	a.umu.Unlock()
	if len(s) > 0 {
		a.markAll(ctx, s)
	}
}
