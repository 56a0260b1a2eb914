package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	mrand "math/rand/v2"
	"slices"
	"time"

	"github.com/valyala/fasthttp"

	"flashsale/gateway/internal/catalog"
	"flashsale/gateway/internal/obs"
	"flashsale/sharding"
	"flashsale/sharding/clock"
	"flashsale/sharding/stock"
)

// purchase is the state of one purchase past the cheap refusals.
type purchase struct {
	h    *Handler
	ctx  *fasthttp.RequestCtx
	now  time.Time
	it   *catalog.Item
	tok  []byte
	key  []byte // the Idempotency-Key, nil when none was sent
	gen  int    // which of the key's orders p.r names (see keyedOrderID)
	home int
	r    stock.Reservation
	rctx context.Context // bounded by the budget
	// capTaken: a unit of the presale's cap was taken (presaleSettle);
	// fresh: this purchase reserved a unit (not a replay of one before);
	// voidQueued: its outcome unknown, its void went to the background
	// queue (the cap's unit is kept: presaleSettle).
	capTaken, fresh, voidQueued bool
}

func (h *Handler) purchase(ctx *fasthttp.RequestCtx, now time.Time, arg []byte) {
	const route = obs.RoutePurchase
	id, ok := parseID(arg)
	it := h.Catalog.Snapshot().Item(id)
	if !ok || it == nil {
		h.answer(ctx, route, aItemNotFound)
		return
	}
	defer h.countPurchase(it.Sale.ID, ctx)
	if !h.clientAllowed(ctx, now, route) {
		return
	}
	sale := it.Sale
	// wall is this gateway's wall clock (package clock: the lab moves it),
	// for what is compared with other processes' times: the sale's window,
	// the order's stamps. now stays the start of the request's durations.
	wall := clock.Wall(now)
	inPresale := sale.InPresale(wall)
	switch n := wall.UnixNano(); {
	case sale.Halt == catalog.HaltEnded:
		h.answer(ctx, route, aSaleEnded)
		return
	case sale.Halt == catalog.HaltPaused:
		h.answer(ctx, route, aSalePaused)
		return
	case n < sale.Start && !inPresale:
		h.answerBody(ctx, route, aSaleNotStarted, sale.NotStarted)
		return
	case n >= sale.End:
		h.answer(ctx, route, aSaleEnded)
		return
	}
	if it.Flags.SoldOut() {
		h.soldOut(ctx, now, sale, 0)
		return
	}
	user, tok, ok := h.user(ctx, now, route)
	if !ok {
		return
	}
	if sale.TicketRequired && !h.ticketOK(ctx, now, sale, user) {
		return
	}
	home := sharding.HomeShard(user, sale.ID, len(sale.Shards))
	if it.Flags.ShardSoldOut(home) && (h.Borrower == nil || len(sale.Shards) == 1) {
		h.soldOut(ctx, now, sale, user)
		return
	}
	// A flagged home shard still goes to Redis: unless a full reading
	// confirmed the whole item sold out (the item flag above), the script's
	// SOLD_OUT starts a borrow. The local per-shard view is not trusted for a
	// refusal: borrows by this and other gateways change it faster than it is
	// read.
	p := purchase{h: h, ctx: ctx, now: now, it: it, tok: tok, home: home, key: peek(ctx, hdrIdem, hdrIdemLower)}
	p.r = stock.Reservation{
		Tag: sale.Shards[home], SaleID: sale.ID, ItemID: it.Item.ID, UserID: user,
		OrderID: h.orderID(p.key, sale.ID, it.Item.ID, user), Attempt: h.attempt(),
		Created: wall, Expires: wall.Add(sale.Window()), TTL: h.cfg.OrderTTL, Bound: h.cfg.JournalBound,
	}
	p.rctx, _ = h.deadlines.get(now)
	if inPresale {
		if !p.presaleAdmit(user) {
			return
		}
		defer p.presaleSettle()
	}
	if p.repeat() || h.fenced(ctx, route, p.r.Tag, now) {
		return
	}
	defer h.observe(route, now)
	p.run()
}

// run reserves, borrowing while the home shard is dry and the item has units
// elsewhere, and answers.
func (p *purchase) run() {
	h := p.h
	res, err := h.Store.Reserve(p.rctx, p.r)
	for err == nil && res.Outcome == stock.SoldOut && h.Borrower != nil && len(p.it.Sale.Shards) > 1 {
		var sold bool
		if res, sold, err = p.borrow(); sold {
			break
		}
	}
	switch {
	case errors.Is(err, errBorrow):
		// Nothing of this attempt ran: the stock reading or the move failed
		// before any reservation was sent.
		h.Metrics.RedisError()
		p.answer(aUnavailable)
	case err != nil:
		h.Metrics.RedisError()
		p.settle()
	default:
		p.decided(res)
	}
}

// decided answers a definite outcome of the reserve script: every reply code
// of reserve.lua is chosen here, in one switch.
func (p *purchase) decided(res stock.Result) {
	const route = obs.RoutePurchase
	h, sale := p.h, p.it.Sale
	switch res.Outcome {
	case stock.Reserved:
		p.fresh = !res.Replay
		h.winners.add(p.tok, sale.ID, res.OrderID)
		h.answerOrder(p.ctx, route, aAccepted, res.OrderID, stock.StatusPending)
	case stock.SoldOut:
		p.it.Flags.MarkShard(p.home)
		p.answer(aSoldOut)
	case stock.AlreadyPurchased:
		h.winners.add(p.tok, sale.ID, res.OrderID)
		if p.laterOrder(res.OrderID) {
			// A retry of this key's purchase after an earlier one ended:
			// the same 202 as the order's first answer.
			h.answerOrder(p.ctx, route, aAccepted, res.OrderID, stock.StatusPending)
			return
		}
		h.answerOrder(p.ctx, route, aAlreadyPurchased, res.OrderID, "")
	case stock.IDUsed:
		if p.nextOrder() {
			p.run()
			return
		}
		h.answerOrder(p.ctx, route, aAlreadyPurchased, res.OrderID, "")
	case stock.Frozen:
		// A reshard froze the shard before the script ran: nothing was
		// reserved. Load the new layout now; the client's retry uses it.
		h.Catalog.RefreshSoon()
		p.answer(aUnavailable)
	case stock.JournalFull:
		h.Metrics.JournalFull()
		p.answer(aUnavailable)
	case stock.Paused:
		// An operator paused the sale and this gateway's copy does not say
		// so yet: the shard's halt key refused the reservation.
		h.Catalog.RefreshSoon()
		p.answer(aSalePaused)
	case stock.Ended:
		h.Catalog.RefreshSoon()
		p.answer(aSaleEnded)
	default:
		p.settle()
	}
}

func (p *purchase) answer(a answer) { p.h.answer(p.ctx, obs.RoutePurchase, a) }

// errBorrow marks a borrow step that failed before any reservation was sent.
var errBorrow = errors.New("borrowing stock")

// borrow runs one round of serving a user whose home shard is dry: a reading
// of every shard taken after the dry answer (a reading of zero is confirmed
// by a second one, see stock.Store.ReadStock; concurrent borrowers of the
// item share readings, see freshReader); sold out when every shard read
// zero; else a unit is moved from a donor drawn with odds proportional to its
// units and reserved for this user in the same script that credits it to the
// home shard, so no other buyer can take it in between. A shard that did not
// answer (its master down) is no donor, and while the others are dry it
// makes the answer 503, not SOLD_OUT. Each round that finds nothing to
// move means another buyer took the units read, so the item makes progress;
// the loop ends at the budget, with 503 (nothing reserved), never with a
// SOLD_OUT while a unit remains.
func (p *purchase) borrow() (stock.Result, bool, error) {
	h, it := p.h, p.it
	if err := p.rctx.Err(); err != nil {
		return stock.Result{}, false, errBorrow
	}
	if it.Flags.SoldOut() {
		// A reading taken after this purchase began found every shard at
		// zero (twice): sold out. Borrowers on other shards set it too.
		return stock.Result{Outcome: stock.SoldOut}, true, nil
	}
	need := time.Now()
	rem, err := h.reader(it).read(p.rctx, need, h.cfg.Budget, func(ctx context.Context) ([]int64, error) {
		rem, err := h.Borrower.ReadStock(ctx, it.Sale.Sale, it.Item.ID)
		if err == nil {
			it.Flags.Observe(rem)
		}
		return rem, err
	})
	if err != nil || len(rem) != len(it.Sale.Shards) {
		return stock.Result{}, false, errBorrow
	}
	donor := pickDonor(rem, p.home)
	switch {
	case donor >= 0:
	case rem[p.home] > 0: // units arrived meanwhile: try again at home
		res, err := h.Store.Reserve(p.rctx, p.r)
		return res, false, err
	case slices.Contains(rem, stock.Unknown):
		// The shards that answered are dry, and one that did not (its
		// master down, a failover under way) may hold units: no SOLD_OUT.
		return stock.Result{}, false, errBorrow
	default:
		return stock.Result{Outcome: stock.SoldOut}, true, nil
	}
	from := it.Sale.Shards[donor]
	// One unit: the one this buyer takes in the same script that credits it.
	// Moving more would strand units on a shard whose buyers may not come
	// back, while the donor's own buyers are refused.
	id, k, err := h.Borrower.MoveOut(p.rctx, it.Item.ID, from, p.r.Tag, 1)
	if err != nil {
		// Journaled on the donor or not at all; a journaled move is
		// finished by the relay's recovery (RecoverStalled).
		return stock.Result{}, false, errBorrow
	}
	if k == 0 {
		return stock.Result{Outcome: stock.SoldOut}, false, nil
	}
	r := p.r
	r.Credit = stock.Credit{MoveID: id, Units: k}
	res, err := h.Store.Reserve(p.rctx, r)
	it.Flags.Refilled(p.home, k)
	if err == nil && res.Outcome.Credited() {
		// The units are on the home shard (a halted shard is credited
		// before it refuses, a frozen one or a full journal is not): clear
		// the donor's journal. Otherwise the relay's recovery finishes the
		// move.
		_ = h.Borrower.DropMove(p.rctx, from, id)
	}
	return res, false, err
}

// reader returns the shared stock reader of it.
func (h *Handler) reader(it *catalog.Item) *freshReader {
	if r, ok := h.readers.Load(it); ok {
		return r.(*freshReader)
	}
	r, _ := h.readers.LoadOrStore(it, &freshReader{})
	return r.(*freshReader)
}

// pickDonor draws a shard other than home with odds proportional to its
// units, or -1 when no other shard has any.
func pickDonor(rem []int64, home int) int {
	var sum int64
	for i, n := range rem {
		if i != home && n > 0 {
			sum += n
		}
	}
	if sum == 0 {
		return -1
	}
	pick := mrand.Int64N(sum)
	for i, n := range rem {
		if i == home || n <= 0 {
			continue
		}
		if pick < n {
			return i
		}
		pick -= n
	}
	return -1
}

// soldOut answers a click on a sold-out item (or home shard): 410 SOLD_OUT,
// or 409 ALREADY_PURCHASED with the order id to a bearer this gateway
// answered before (see winners) while the user's buyer record in Redis still
// names an order. user is the verified user, 0 when the token was not
// checked yet: only a winner's click pays for the check and the Redis read.
func (h *Handler) soldOut(ctx *fasthttp.RequestCtx, now time.Time, sale *catalog.Sale, user uint64) {
	const route = obs.RoutePurchase
	tok, ok := bearer(&ctx.Request.Header)
	if ok {
		_, ok = h.winners.lookup(tok, sale.ID)
	}
	if !ok {
		h.answer(ctx, route, aSoldOut)
		return
	}
	if user == 0 {
		if user, _, ok = h.user(ctx, now, route); !ok {
			return
		}
	}
	h.stillHeld(ctx, now, sale, user, tok)
}

// stillHeld answers a winner's click on a sold-out item from the buyer
// record: the winners entry outlives an order that expired, or was cancelled
// through another gateway, and a 409 from it alone would tell the user of an
// order they no longer hold. No record: 410 SOLD_OUT (the user may buy again,
// once a unit returns). A Redis error also answers 410: the item has no unit,
// whatever the record says, and nothing was reserved.
func (h *Handler) stillHeld(ctx *fasthttp.RequestCtx, now time.Time, sale *catalog.Sale, user uint64, tok []byte) {
	const route = obs.RoutePurchase
	defer h.observe(route, now)
	rctx, _ := h.deadlines.get(now)
	tag := sale.Shards[sharding.HomeShard(user, sale.ID, len(sale.Shards))]
	held, found, err := h.Store.Holder(rctx, tag, user)
	switch {
	case err != nil:
		h.Metrics.RedisError()
		h.answer(ctx, route, aSoldOut)
	case !found:
		h.winners.drop(tok, sale.ID)
		h.answer(ctx, route, aSoldOut)
	default:
		h.winners.add(tok, sale.ID, held)
		h.answerOrder(ctx, route, aAlreadyPurchased, held, "")
	}
}

// repeat serves a repeat click of a buyer this gateway has answered before
// (see winners) with one HGET of the user's buyer record instead of the
// reserve script: while the record names an order, the script would only
// find it and answer ALREADY_PURCHASED, at several times the cost in Redis.
// It reports false, having answered nothing, when the click must go on to the
// script: an unknown bearer, no record (the order was cancelled or expired,
// and the user may buy again), or a record naming one of this click's
// Idempotency-Key orders (a retry, which the script replays). A Redis error
// answers 503: nothing was reserved.
func (p *purchase) repeat() bool {
	h, saleID := p.h, p.r.SaleID
	if h.cfg.NoRepeatRead {
		return false
	}
	known, ok := h.winners.lookup(p.tok, saleID)
	if !ok {
		return false
	}
	held, found, err := h.Store.Holder(p.rctx, p.r.Tag, p.r.UserID)
	switch {
	case err != nil:
		h.Metrics.RedisError()
		p.answer(aUnavailable)
	case !found || held == p.r.OrderID || p.laterOrder(held):
		return false
	default:
		if held != known {
			h.winners.add(p.tok, saleID, held)
		}
		h.answerOrder(p.ctx, obs.RoutePurchase, aAlreadyPurchased, held, "")
	}
	h.observe(obs.RoutePurchase, p.now)
	return true
}

// maxKeyedOrders bounds the orders one Idempotency-Key names for its user in
// a sale: each time the key's order has ended (expired, cancelled, failed)
// the same key buys again under the next of its ids (see keyedOrderID). Past
// the bound the key's click answers 409 naming its last order.
const maxKeyedOrders = 16

// nextOrder moves p to the key's next order id after the reserve script found
// the current one used and ended; false without a key or past the bound.
func (p *purchase) nextOrder() bool {
	if len(p.key) == 0 || p.gen+1 >= maxKeyedOrders {
		return false
	}
	p.gen++
	p.r.OrderID = keyedOrderID(p.key, p.r.SaleID, p.r.ItemID, p.r.UserID, p.gen)
	return true
}

// laterOrder reports whether held, the order the user holds, is one of the
// key's orders after p's: the click retries the purchase that bought it.
func (p *purchase) laterOrder(held sharding.OrderID) bool {
	if len(p.key) == 0 {
		return false
	}
	for g := p.gen + 1; g < maxKeyedOrders; g++ {
		if keyedOrderID(p.key, p.r.SaleID, p.r.ItemID, p.r.UserID, g) == held {
			return true
		}
	}
	return false
}

// orderID names the order: the key's first order id (see keyedOrderID) when
// the client sent an Idempotency-Key, so that a retry names the same order on
// any gateway, else a fresh id from the per-process seed and counter.
func (h *Handler) orderID(key []byte, saleID, itemID int64, user uint64) sharding.OrderID {
	if len(key) == 0 {
		n := h.counter.Add(1)
		return sharding.NewOrderID(saleID, sharding.Mix64(h.seedHi+n*0x9e3779b97f4a7c15), uint32(sharding.Mix64(h.seedLo^n)))
	}
	return keyedOrderID(key, saleID, itemID, user, 0)
}

// keyedOrderID is the gen-th order id of an Idempotency-Key: a SHA-256 of
// (sale, user, item, key), under another prefix and with gen from the second
// on (the first is the id earlier releases derived).
func keyedOrderID(key []byte, saleID, itemID int64, user uint64, gen int) sharding.OrderID {
	var buf [256]byte
	b := append(buf[:0], "flashsale-order-v1\x00"...)
	if gen > 0 {
		b = append(append(buf[:0], "flashsale-order-v2\x00"...), byte(gen))
	}
	b = binary.BigEndian.AppendUint64(b, uint64(saleID))
	b = binary.BigEndian.AppendUint64(b, user)
	b = binary.BigEndian.AppendUint64(b, uint64(itemID))
	b = append(b, key...)
	sum := sha256.Sum256(b)
	return sharding.NewOrderID(saleID, binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint32(sum[8:12]))
}

// attempt returns an id unique to this request among every gateway's
// requests (a void names the attempt it undoes): 64 bits of the per-process
// seed mixed with a counter.
func (h *Handler) attempt() uint64 {
	return sharding.Mix64(h.seedLo + h.counter.Add(1)*0x9e3779b97f4a7c15)
}
