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
// is 202. When Redis cannot be reached for the void within the release budget,
// or the void finds the shard frozen by a reshard (stock.VoidFrozen), the
// answer is 503 and the void goes on in the background (see retryQueue);
// the relay's hold gives it that long before any relay may take the entry,
// and past that the order stands although the client was told 503: the one
// case sharding/journal/DESIGN.md names, counted as voids_total{outcome="gave_up"} or, when
// the background void finds the entry taken, {outcome="stands"}.
func (p *purchase) settle() {
	h := p.h
	h.Metrics.Ambiguous()
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.ReleaseBudget)
	defer cancel()
	out, err := h.voidOnce(ctx, p.r)
	switch {
	case err != nil, out == stock.VoidFrozen:
		h.retries.add(p.r)
		h.Metrics.Voided(obs.VoidQueued)
		p.voidQueued = true
		p.answer(aUnavailable)
	case out == stock.VoidStands:
		p.fresh = true
		h.winners.add(p.tok, p.it.Sale.ID, p.r.OrderID)
		h.answerOrder(p.ctx, obs.RoutePurchase, aAccepted, p.r.OrderID, stock.StatusPending)
	default:
		p.answer(aUnavailable)
	}
}

// voidOnce voids r, trying again within ctx while Redis errs (each try is
// idempotent), and counts the outcome.
func (h *Handler) voidOnce(ctx context.Context, r stock.Reservation) (stock.VoidOutcome, error) {
	return h.voidWithin(ctx, retryItem{r: r})
}

// settleAct settles a pay or cancel attempt whose outcome is unknown (its
// reply was lost or came after the budget, or its WAIT failed) as settle
// does a purchase's: the attempt is voided (stock.Store.VoidAct) before the
// client hears anything. When the void found it standing (a relay took its
// entry) the verdict is ActAgain, a 202. Otherwise Redis answers again, so
// the request is made once more under a new attempt, within the release
// budget, and that one's verdict is answered: a blip costs the client
// nothing. It reports false for a 503, which is then true: the request
// changed nothing. A void that could not reach Redis, or found the shard
// frozen, goes to the background queue, which lands it before any relay may
// take the entry, as a purchase's.
func (h *Handler) settleAct(a stock.ActRequest) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.ReleaseBudget)
	defer cancel()
	for again := false; ; again = true {
		out, err := h.voidWithin(ctx, retryItem{act: &a})
		switch {
		case err != nil, out == stock.VoidFrozen:
			h.retries.push(retryItem{act: &a})
			h.Metrics.ActVoided(obs.VoidQueued)
			return "", false
		case out == stock.VoidStands:
			return stock.ActAgain, true
		case again || ctx.Err() != nil:
			return "", false
		}
		a.Attempt = h.attempt()
		v, err := h.Store.Act(ctx, a)
		if err == nil {
			return v, true
		}
		h.Metrics.RedisError()
	}
}

// voidWithin voids it (a purchase's attempt or a pay or cancel's), trying
// again within ctx while Redis errs (each try is idempotent), and counts
// the outcome. VoidFrozen comes back at once: the layout changed, and the
// queue voids it on the new one.
func (h *Handler) voidWithin(ctx context.Context, it retryItem) (stock.VoidOutcome, error) {
	for attempt := 0; ; attempt++ {
		out, err := it.void(ctx, h)
		if err == nil {
			if out == stock.VoidFrozen {
				h.Catalog.RefreshSoon()
			}
			return out, nil
		}
		h.Metrics.RedisError()
		if !backoff.Sleep(ctx, inRequest.Wait(attempt)) {
			return 0, err
		}
	}
}

// inRequest is the wait between tries within a request's release budget;
// inQueue between the tries of a queued void, for about ten minutes. The
// queue's tries stay frequent because a void must land before any relay may
// take its entry: a relay that could not see a shard takes nothing from it
// until the shard has answered for its hold plus its settle time (1s + 2s;
// journal.Config.Settle), and the queue's next try comes at most 250ms after
// the shard is back.
var (
	inRequest = backoff.Policy{First: 5 * time.Millisecond, Max: 100 * time.Millisecond}
	inQueue   = backoff.Policy{First: 50 * time.Millisecond, Max: 250 * time.Millisecond}
)

// retryQueueLen bounds the voids waiting in the background.
const retryQueueLen = 4096

// retryQueue retries, from one goroutine's rounds, the voids that could not
// reach Redis within a request's release budget: jittered exponential backoff per void
// from 50ms to 250ms, for about ten minutes; while a shard is away, one void
// of it is tried per round and the others wait (see tryDue). It is bounded; a void that does
// not fit is logged and counted (gave_up), and the writer's ghost sweep is
// the net for it. A frozen shard (a reshard) is retried on the sale's new
// layout.
type retryQueue struct {
	h      *Handler
	mu     sync.Mutex
	items  []retryItem
	tries  int             // items taken out by the round under way
	trying map[string]bool // their shards, old and new tags (see retag)
	cap    int
	wake   chan struct{}
	quit   chan struct{}
	once   sync.Once
	done   chan struct{}
}

// retryItem is one void: of a purchase attempt (r), or of a pay or cancel
// attempt (act set).
type retryItem struct {
	r       stock.Reservation
	act     *stock.ActRequest
	due     time.Time
	attempt int
	until   time.Time
}

// void runs the void once and counts its outcome, but VoidFrozen: a void
// not run yet is counted when it settles (or as queued, or given up).
func (it *retryItem) void(ctx context.Context, h *Handler) (stock.VoidOutcome, error) {
	if it.act != nil {
		out, err := h.Store.VoidAct(ctx, *it.act)
		if err == nil && out != stock.VoidFrozen {
			h.Metrics.ActVoided(int(out))
		}
		return out, err
	}
	out, err := h.Store.Void(ctx, it.r)
	if err == nil && out != stock.VoidFrozen {
		h.Metrics.Voided(int(out))
	}
	return out, err
}

// tag is the shard the void goes to.
func (it *retryItem) tag() string {
	if it.act != nil {
		return it.act.Tag
	}
	return it.r.Tag
}

func newRetryQueue(h *Handler, n int) *retryQueue {
	q := &retryQueue{h: h, cap: n, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go q.run()
	return q
}

func (q *retryQueue) add(r stock.Reservation) { q.push(retryItem{r: r}) }

// push queues the void it.
func (q *retryQueue) push(it retryItem) {
	now := time.Now()
	it.due, it.until = now.Add(inQueue.Wait(0)), now.Add(10*time.Minute)
	q.mu.Lock()
	full := len(q.items) >= q.cap
	if !full {
		q.items = append(q.items, it)
	}
	q.mu.Unlock()
	if full {
		q.gaveUp(it, errors.New("retry queue full"))
		return
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pendingTags adds to dst the shards of the voids waiting or being tried:
// each one's shard when it was queued and its user's home shard in the
// sale's layout now, where a reshard since has copied its entry untaken (and
// where its next try goes, see retag).
func (q *retryQueue) pendingTags(dst map[string]bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, it := range q.items {
		dst[it.tag()] = true
		now := it
		q.retag(&now)
		dst[now.tag()] = true
	}
	for tag := range q.trying {
		dst[tag] = true
	}
}

// pending returns the number of voids waiting or being tried (one put back
// by the round under way may count twice until the round ends).
func (q *retryQueue) pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) + q.tries
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

// tryDue tries the due voids, each shard's apart. The first void of a shard
// probes it; when it fails (the master is away) the shard's other voids wait
// for their next turn untried, so an outage costs one try per shard and
// round, not one per void. When it settles, the others follow at once and
// together (up to tryWidth at a time): they go in the same batches, under
// one WAIT, where one after another each would wait for the replicas on its
// own (50 ms each on a promoted master whose replica is not back yet).
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
	q.tries = len(due)
	q.trying = map[string]bool{}
	for _, it := range due {
		q.trying[it.tag()] = true
	}
	q.mu.Unlock()
	if len(due) == 0 {
		return
	}
	defer func() {
		q.mu.Lock()
		q.tries, q.trying = 0, nil
		q.mu.Unlock()
	}()
	byTag := map[string][]retryItem{}
	for _, it := range due {
		q.retag(&it)
		q.mu.Lock()
		q.trying[it.tag()] = true
		q.mu.Unlock()
		byTag[it.tag()] = append(byTag[it.tag()], it)
	}
	probes := make([][]retryItem, 0, len(byTag))
	for _, items := range byTag {
		probes = append(probes, items)
	}
	var mu sync.Mutex
	var back []retryItem // the voids of the shards that answered
	parallel(len(probes), func(i int) {
		items := probes[i]
		if !q.try(&items[0]) {
			for _, it := range items {
				q.later(it)
			}
			return
		}
		mu.Lock()
		back = append(back, items[1:]...)
		mu.Unlock()
	})
	parallel(len(back), func(i int) {
		if !q.try(&back[i]) {
			q.later(back[i])
		}
	})
}

// parallel runs fn(0..n-1), up to tryWidth at a time, and returns when all
// are done.
func parallel(n int, fn func(i int)) {
	width := make(chan struct{}, tryWidth)
	var wg sync.WaitGroup
	for i := range n {
		width <- struct{}{}
		wg.Go(func() {
			defer func() { <-width }()
			fn(i)
		})
	}
	wg.Wait()
}

// tryWidth bounds the voids the queue tries at once.
const tryWidth = 64

// later puts it back for its next turn, or gives it up after ten minutes.
func (q *retryQueue) later(it retryItem) {
	if time.Now().After(it.until) {
		q.gaveUp(it, errors.New("redis unreachable for ten minutes"))
		return
	}
	it.attempt++
	it.due = time.Now().Add(inQueue.Wait(it.attempt))
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
}

// retag points it at its user's home shard in the sale's current layout (a
// reshard since the attempt moved it).
func (q *retryQueue) retag(it *retryItem) {
	saleID, userID := it.r.SaleID, it.r.UserID
	if it.act != nil {
		saleID, userID = it.act.SaleID, it.act.UserID
	}
	if sale := q.h.Catalog.Snapshot().Sale(saleID); sale != nil && len(sale.Shards) > 0 {
		tag := sale.Shards[sharding.HomeShard(userID, sale.ID, len(sale.Shards))]
		if it.act != nil {
			a := *it.act // the request settleAct holds is not written to
			a.Tag = tag
			it.act = &a
		} else {
			it.r.Tag = tag
		}
	}
}

// try runs one void of it and reports whether it settled.
func (q *retryQueue) try(it *retryItem) bool {
	h := q.h
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.ReleaseBudget)
	defer cancel()
	out, err := it.void(ctx, h)
	switch {
	case err != nil:
		return false
	case out == stock.VoidFrozen:
		h.Catalog.RefreshSoon() // the next try goes to the new layout (retag)
		return false
	case out != stock.VoidStands:
		return true
	}
	if a := it.act; a != nil {
		h.Log.Error("a "+a.Action+" answered 503 went through: its void came after a relay took the request",
			"order", a.OrderID.String(), "user", a.UserID, "sale", a.SaleID)
	} else {
		h.Log.Error("a purchase answered 503 became an order: its void came after a relay took the event",
			"order", it.r.OrderID.String(), "user", it.r.UserID, "sale", it.r.SaleID)
	}
	return true
}

func (q *retryQueue) gaveUp(it retryItem, why error) {
	if a := it.act; a != nil {
		q.h.Metrics.ActVoided(obs.VoidGaveUp)
		q.h.Log.Error("could not void a "+a.Action+" attempt answered 503; the request stands if its script ran",
			"order", a.OrderID.String(), "user", a.UserID, "sale", a.SaleID, "tag", a.Tag, "err", why)
		return
	}
	r := it.r
	q.h.Metrics.Voided(obs.VoidGaveUp)
	q.h.Log.Error("could not void a purchase attempt answered 503; the writer's ghost sweep settles it if it reserved",
		"order", r.OrderID.String(), "user", r.UserID, "sale", r.SaleID, "tag", r.Tag, "err", why)
}
