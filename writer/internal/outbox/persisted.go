package outbox

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/orderevent"
	"flashsale/sharding/stock"
)

// Stored names one committed event whose order is to be marked persisted,
// so that the gateway's GET answers "persisted": true and the sale page
// stops showing "processing". An event the relay named the journal position
// and predecessor of (At, its item's chain) raises its shard's watermark
// for its item over the runs of the chain that link to it
// (stock.Store.MarkPersistedRuns: one write per shard and batch); a
// reservation in a run that does not link (an entry before it never
// reached PostgreSQL), or without a chained position (an older relay's), is
// marked in its order's record or buyer record (stock.Store.MarkPersisted).
type Stored struct {
	OrderID  sharding.OrderID
	SaleID   int64
	ItemID   int64
	UserID   uint64
	Reserved bool
	At       orderevent.Position // zero when the record named none
}

// maxUnmarked bounds the marks kept for a later try after Redis failed them.
const maxUnmarked = 100_000

// StoredOf returns what to mark of events, the batch a transaction just
// committed, at[i] being where the relay read events[i] (at may be shorter:
// zero positions). New orders and duplicates alike are marked (a batch read
// again after a crash marks what the first reading did not get to); a pay
// or cancel counts only for its shard's watermark.
func StoredOf(events []orderevent.Event, at []orderevent.Position) []Stored {
	var out []Stored
	for i := range events {
		e := &events[i]
		st := Stored{OrderID: e.OrderID, SaleID: e.SaleID, ItemID: e.ItemID, UserID: e.UserID, Reserved: e.Type == orderevent.Reserved}
		if i < len(at) {
			st.At = at[i]
		}
		if st.Reserved || st.At.Shard != "" {
			out = append(out, st)
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

// markGroup is orders of one shard, marked in one call: by the runs of its
// items' chains when runs is set, else order by order.
type markGroup struct {
	tag  string
	of   []Stored
	runs []run
}

// run is a stretch of one item's records each naming the one before it,
// and the reservations among them.
type run struct {
	stock.Run
	of []Stored
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
				if left, err := a.mark(ctx, groups[i]); err != nil {
					a.m.RedisErrors.Inc()
					mu.Lock()
					failed = append(failed, left...)
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

// mark marks one group and, when it fails, returns what is left to mark.
// The reservations of the runs that did not link are marked one by one.
func (a *Applier) mark(ctx context.Context, g *markGroup) (left []Stored, err error) {
	if g.runs == nil {
		return g.of, a.markEach(ctx, g.tag, g.of)
	}
	runs := make([]stock.Run, len(g.runs))
	for i := range g.runs {
		runs[i] = g.runs[i].Run
	}
	unlinked, err := a.redis.MarkPersistedRuns(ctx, g.tag, runs)
	if err != nil {
		return g.of, err
	}
	var each []Stored
	for _, i := range unlinked {
		each = append(each, g.runs[i].of...)
	}
	if len(unlinked) > 0 {
		a.m.UnlinkedRuns.Add(float64(len(unlinked)))
	}
	for len(each) > 0 {
		n := min(len(each), markBatch)
		if err := a.markEach(ctx, g.tag, each[:n]); err != nil {
			return each, err
		}
		each = each[n:]
	}
	return nil, nil
}

// markEach marks the orders of of on tag's shard in one call.
func (a *Applier) markEach(ctx context.Context, tag string, of []Stored) error {
	ids := make([]sharding.OrderID, len(of))
	users := make([]uint64, len(of))
	for j := range of {
		ids[j], users[j] = of[j].OrderID, of[j].UserID
	}
	_, err := a.redis.MarkPersistedMany(ctx, tag, users, ids)
	return err
}

// groupMarks sorts s by shard: the events read at a chained position of a
// shard of their sale's current layout into one group of runs per shard
// (see runsOf), the other reservations in groups of at most markBatch. An
// order whose shard cannot be told now (its sale's layout unreadable) is
// returned in failed; one of a sale gone from Redis has nothing to mark,
// nor has a pay or cancel read at a shard a reshard has since dropped, or
// one without a chained position.
func (a *Applier) groupMarks(ctx context.Context, s []Stored) (groups []*markGroup, failed []Stored) {
	open := map[string]*markGroup{}
	chained := map[string]*markGroup{}
	for i := range s {
		sale, err := a.sale(ctx, s[i].SaleID)
		if err != nil {
			a.m.RedisErrors.Inc()
			failed = append(failed, s[i])
			continue
		}
		if sale == nil || len(sale.Shards) == 0 {
			continue
		}
		if at := s[i].At; at.Shard != "" && at.Prev != "" && slices.Contains(sale.Shards, at.Shard) {
			g := chained[at.Shard]
			if g == nil {
				g = &markGroup{tag: at.Shard, runs: []run{}}
				chained[at.Shard] = g
				groups = append(groups, g)
			}
			g.of = append(g.of, s[i])
			continue
		}
		if !s[i].Reserved {
			continue
		}
		tag := sale.Shards[sharding.HomeShard(s[i].UserID, s[i].SaleID, len(sale.Shards))]
		g := open[tag]
		if g == nil || len(g.of) == markBatch {
			g = &markGroup{tag: tag}
			open[tag] = g
			groups = append(groups, g)
		}
		g.of = append(g.of, s[i])
	}
	for _, g := range chained {
		g.runs = runsOf(g.of)
	}
	return groups, failed
}

// runsOf cuts events of one shard, in the order they were consumed, into
// runs of each item's chain: an event whose prev is its item's last event
// so far extends that item's run, any other starts a new one (the first of
// the item here, one after a gap, a record produced again after a relay's
// takeover). The runs keep, per item, the order of the events.
func runsOf(events []Stored) []run {
	var runs []run
	open := map[int64]int{} // item -> its run in runs
	for _, e := range events {
		i, ok := open[e.ItemID]
		if !ok || runs[i].Last != e.At.Prev {
			runs = append(runs, run{Run: stock.Run{Item: e.ItemID, Prev: e.At.Prev}})
			i = len(runs) - 1
			open[e.ItemID] = i
		}
		runs[i].Last = e.At.Entry
		if e.Reserved {
			runs[i].of = append(runs[i].of, e)
		}
	}
	return runs
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
