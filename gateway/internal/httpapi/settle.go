package httpapi

import (
	"context"
	"errors"
	"sync"
	"time"

	"flashsale/gateway/internal/obs"
	"flashsale/sharding"
	"flashsale/sharding/backoff"
	"flashsale/sharding/stock"
)

// settle answers a purchase whose reserve outcome is unknown: the script may
// have run (its reply was lost, or came after the budget) or may still run (a
// stalled master). Before the client hears anything the attempt is voided
// (stock.Store.Void): its unit and journal entry are taken back, or a VOID
// record makes a late run of it refuse. Only then is 503 true. When the void
// finds that a relay already took the entry, the order stands and the answer
// is 202. When Redis cannot be reached for the void within the release budget
// the answer is 503 and the void goes on in the background (see retryQueue);
// the relay's hold gives it that long before any relay may take the entry,
// and past that the order stands although the client was told 503: the one
// case the README lists, counted as voids_total{outcome="gave_up"} or, when
// the background void finds the entry taken, {outcome="stands"}.
func (p *purchase) settle() {
	h := p.h
	h.Metrics.Ambiguous()
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.ReleaseBudget)
	defer cancel()
	out, err := h.voidOnce(ctx, p.r)
	switch {
	case err != nil:
		h.retries.add(p.r)
		h.Metrics.Voided(obs.VoidQueued)
		p.answer(aUnavailable)
	case out == stock.VoidStands:
		h.winners.add(p.tok, p.it.Sale.ID, p.r.OrderID)
		h.answerOrder(p.ctx, obs.RoutePurchase, aAccepted, p.r.OrderID, stock.StatusPending)
	default:
		p.answer(aUnavailable)
	}
}

// voidOnce voids r, trying again within ctx while Redis errs (each try is
// idempotent), and counts the outcome.
func (h *Handler) voidOnce(ctx context.Context, r stock.Reservation) (stock.VoidOutcome, error) {
	for attempt := 0; ; attempt++ {
		out, err := h.Store.Void(ctx, r)
		if err == nil {
			h.Metrics.Voided(int(out))
			return out, nil
		}
		if errors.Is(err, stock.ErrFrozen) {
			h.Catalog.RefreshSoon()
			return 0, err // the layout changed: the queue retries on the new one
		}
		h.Metrics.RedisError()
		if !backoff.Sleep(ctx, inRequest.Wait(attempt)) {
			return 0, err
		}
	}
}

// inRequest is the wait between tries within a request's release budget;
// inQueue between the tries of a queued void, for about ten minutes.
var (
	inRequest = backoff.Policy{First: 5 * time.Millisecond, Max: 100 * time.Millisecond}
	inQueue   = backoff.Policy{First: 100 * time.Millisecond, Max: 10 * time.Second}
)

// retryQueueLen bounds the voids waiting in the background.
const retryQueueLen = 4096

// retryQueue retries, in one goroutine, the voids that could not reach Redis
// within a request's release budget: jittered exponential backoff per void
// from 100ms to 10s, for about ten minutes. It is bounded; a void that does
// not fit is logged and counted (gave_up), and the writer's ghost sweep is
// the net for it. A frozen shard (a reshard) is retried on the sale's new
// layout.
type retryQueue struct {
	h     *Handler
	mu    sync.Mutex
	items []retryItem
	cap   int
	wake  chan struct{}
	quit  chan struct{}
	once  sync.Once
	done  chan struct{}
}

type retryItem struct {
	r       stock.Reservation
	due     time.Time
	attempt int
	until   time.Time
}

func newRetryQueue(h *Handler, n int) *retryQueue {
	q := &retryQueue{h: h, cap: n, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go q.run()
	return q
}

func (q *retryQueue) add(r stock.Reservation) {
	now := time.Now()
	q.mu.Lock()
	full := len(q.items) >= q.cap
	if !full {
		q.items = append(q.items, retryItem{r: r, due: now.Add(inQueue.Wait(0)), until: now.Add(10 * time.Minute)})
	}
	q.mu.Unlock()
	if full {
		q.gaveUp(r, errors.New("retry queue full"))
		return
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pending returns the number of voids waiting.
func (q *retryQueue) pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

func (q *retryQueue) close() {
	q.once.Do(func() { close(q.quit) })
	<-q.done
	if n := q.pending(); n > 0 {
		q.h.Log.Error("gateway stopping with purchase voids still queued; the writer's ghost sweep settles them", "voids", n)
	}
}

func (q *retryQueue) run() {
	defer close(q.done)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-q.quit:
			return
		case <-q.wake:
		case <-t.C:
		}
		q.tryDue(time.Now())
	}
}

// tryDue tries every due void once.
func (q *retryQueue) tryDue(now time.Time) {
	q.mu.Lock()
	var due []retryItem
	rest := q.items[:0]
	for _, it := range q.items {
		if now.Before(it.due) {
			rest = append(rest, it)
		} else {
			due = append(due, it)
		}
	}
	q.items = rest
	q.mu.Unlock()
	for _, it := range due {
		if q.try(&it) {
			continue
		}
		if now.After(it.until) {
			q.gaveUp(it.r, errors.New("redis unreachable for ten minutes"))
			continue
		}
		it.attempt++
		it.due = time.Now().Add(inQueue.Wait(it.attempt))
		q.mu.Lock()
		q.items = append(q.items, it)
		q.mu.Unlock()
	}
}

// try runs one void of it, on the sale's current layout, and reports whether
// it settled.
func (q *retryQueue) try(it *retryItem) bool {
	h := q.h
	if sale := h.Catalog.Snapshot().Sale(it.r.SaleID); sale != nil && len(sale.Shards) > 0 {
		it.r.Tag = sale.Shards[sharding.HomeShard(it.r.UserID, sale.ID, len(sale.Shards))]
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.ReleaseBudget)
	defer cancel()
	out, err := h.Store.Void(ctx, it.r)
	if err != nil {
		if errors.Is(err, stock.ErrFrozen) {
			h.Catalog.RefreshSoon()
		}
		return false
	}
	h.Metrics.Voided(int(out))
	if out == stock.VoidStands {
		h.Log.Error("a purchase answered 503 became an order: its void came after a relay took the event",
			"order", it.r.OrderID.String(), "user", it.r.UserID, "sale", it.r.SaleID)
	}
	return true
}

func (q *retryQueue) gaveUp(r stock.Reservation, why error) {
	q.h.Metrics.Voided(obs.VoidGaveUp)
	q.h.Log.Error("could not void a purchase attempt answered 503; the writer's ghost sweep settles it if it reserved",
		"order", r.OrderID.String(), "user", r.UserID, "sale", r.SaleID, "tag", r.Tag, "err", why)
}
