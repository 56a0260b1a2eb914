// Package httpapi is the gateway's public HTTP API on fasthttp, and the only
// package that imports fasthttp.
//
// A purchase is refused as early and as cheaply as possible: route and item
// id, per-IP bucket, sale window, the item's sold-out flag, the token, the
// per-user bucket, the user's home-shard sold-out flag, and only then one
// Redis round trip (the reserve script) and the Kafka hand-off. Every refusal
// before Redis writes a precomputed body and allocates nothing.
//
// HTTP statuses are chosen in one place, the answers table; handlers pick an
// answer, never a status.
//
// Request header names are matched in their canonical form
// ("Authorization") or all lower case ("authorization", as HTTP/2 proxies
// forward them); the server keeps header names as received
// (DisableHeaderNamesNormalizing) to save the normalising pass.
package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"log/slog"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"flashsale/gateway/internal/auth"
	"flashsale/gateway/internal/catalog"
	"flashsale/gateway/internal/limit"
	"flashsale/gateway/internal/obs"
	"flashsale/gateway/internal/orders"
	"flashsale/sharding"
	"flashsale/sharding/stock"
	"flashsale/writer/orderevent"
)

// Reserver takes a unit of stock for a purchase (stock.Store).
type Reserver interface {
	Reserve(ctx context.Context, r stock.Reservation) (stock.Result, error)
}

// Releaser returns a reserved unit, at most once per order id (stock.Store).
type Releaser interface {
	Release(ctx context.Context, tag string, itemID int64, userID uint64, id sharding.OrderID, status string) (bool, error)
}

// OrderReader reads an order record (stock.Store).
type OrderReader interface {
	Order(ctx context.Context, tag string, id sharding.OrderID) (stock.OrderRecord, bool, error)
}

// HolderReader reads the order a user holds in a sale from the user's home
// shard (stock.Store.Holder): one plain read, no script.
type HolderReader interface {
	Holder(ctx context.Context, tag string, userID uint64) (id sharding.OrderID, found bool, err error)
}

// Store is what the handler needs from Redis.
type Store interface {
	Reserver
	Releaser
	OrderReader
	HolderReader
}

// Borrower moves units of an item to a user's home shard that ran dry from
// the item's other shards (stock.Store.Borrow), and reports how many arrived;
// Available reads each shard's units, moves in flight included (stock.Store.Available).
type Borrower interface {
	Borrow(ctx context.Context, sale *sharding.Sale, itemID int64, home int, remaining []int64) (int64, error)
	Available(ctx context.Context, sale *sharding.Sale, itemID int64) ([]int64, error)
}

// Producer hands an order event to Kafka and waits at most wait (see package
// orders for the meaning of its errors). settleLate asks the producer to
// report a late outcome to Handler.Settle.
type Producer interface {
	Hand(ev *orderevent.Event, wait time.Duration, settleLate bool) error
}

// Verifier checks a bearer token and returns its user id (auth.Verifier). It
// must not allocate on a cache hit.
type Verifier interface {
	Verify(now time.Time, token []byte) (userID uint64, err error)
}

// Limiter is a keyed token bucket (limit.Limiter).
type Limiter interface {
	Allow(now time.Time, key uint64) (ok bool, retryAfter time.Duration)
}

// Config tunes the handler.
type Config struct {
	// Budget bounds Redis plus Kafka for one purchase (default 250ms); the
	// Kafka wait gets what Redis left, but at least MinHandOff.
	Budget time.Duration
	// MinHandOff is the least time the hand-off is given (default 20ms).
	MinHandOff time.Duration
	// ReleaseBudget bounds the settling release after a failure (default 500ms).
	ReleaseBudget time.Duration
	// OrderTTL is the lifetime of the order record in Redis (default 24h).
	OrderTTL time.Duration
	// TrustedProxies are the peers whose X-Forwarded-For names the client.
	TrustedProxies []netip.Prefix
	// NoRepeatRead sends every repeat click to the reserve script (see
	// Handler.repeat).
	NoRepeatRead bool
}

// Deps are the handler's collaborators; all are required except Borrower
// and Log.
type Deps struct {
	Catalog   *catalog.Catalog
	Store     Store
	Producer  Producer
	Verifier  Verifier
	IPLimit   Limiter
	UserLimit Limiter
	Metrics   *obs.Metrics
	// Borrower, when set, serves users whose home shard ran dry from the
	// item's other shards; without it they are told SOLD_OUT until the shard
	// is refilled.
	Borrower Borrower
	Log      *slog.Logger
}

// Handler serves the public API. It is safe for concurrent use.
type Handler struct {
	cfg Config
	Deps
	seedHi, seedLo uint64
	counter        atomic.Uint64
	winners        *winners
	deadlines      *deadlines
}

// New returns a handler.
func New(cfg Config, d Deps) *Handler {
	if cfg.Budget <= 0 {
		cfg.Budget = 250 * time.Millisecond
	}
	if cfg.MinHandOff <= 0 {
		cfg.MinHandOff = 20 * time.Millisecond
	}
	if cfg.ReleaseBudget <= 0 {
		cfg.ReleaseBudget = 500 * time.Millisecond
	}
	if cfg.OrderTTL <= 0 {
		cfg.OrderTTL = 24 * time.Hour
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	h := &Handler{cfg: cfg, Deps: d, winners: newWinners(), deadlines: newDeadlines(cfg.Budget)}
	var seed [16]byte
	_, _ = rand.Read(seed[:]) // crypto/rand.Read never fails on supported platforms
	h.seedHi, h.seedLo = binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])
	return h
}

// Handle is the fasthttp request handler.
func (h *Handler) Handle(ctx *fasthttp.RequestCtx) {
	now := time.Now()
	route, arg := Route(ctx.Path())
	m := ctx.Method()
	switch route {
	case obs.RoutePurchase:
		if string(m) != fasthttp.MethodPost {
			h.answer(ctx, route, aMethodPost)
			return
		}
		h.purchase(ctx, now, arg)
	case obs.RouteOrder:
		if string(m) != fasthttp.MethodGet {
			h.answer(ctx, route, aMethodGet)
			return
		}
		h.order(ctx, now, arg)
	case obs.RoutePay, obs.RouteCancel:
		if string(m) != fasthttp.MethodPost {
			h.answer(ctx, route, aMethodPost)
			return
		}
		h.payOrCancel(ctx, now, route, arg)
	case obs.RouteSale:
		if string(m) != fasthttp.MethodGet {
			h.answer(ctx, route, aMethodGet)
			return
		}
		h.sale(ctx, now, arg)
	default:
		h.answer(ctx, route, aNotFound)
	}
}

// clientAllowed applies the per-IP bucket; on refusal it has answered 429.
func (h *Handler) clientAllowed(ctx *fasthttp.RequestCtx, now time.Time, route obs.Route) bool {
	var peer netip.Addr
	if tcp, ok := ctx.RemoteAddr().(interface{ AddrPort() netip.AddrPort }); ok {
		peer = tcp.AddrPort().Addr()
	}
	var xff []byte
	if len(h.cfg.TrustedProxies) > 0 {
		xff = peek(ctx, hdrXFF, hdrXFFLower)
	}
	ok, retry := h.IPLimit.Allow(now, limit.IPKey(limit.ClientIP(peer, xff, h.cfg.TrustedProxies)))
	if !ok {
		h.Metrics.RateLimited(false)
		h.limited(ctx, route, retry)
	}
	return ok
}

// user authenticates the request and applies the per-user bucket, and
// returns the user and the bearer token (valid while the request is served);
// on refusal it has answered 401 or 429.
func (h *Handler) user(ctx *fasthttp.RequestCtx, now time.Time, route obs.Route) (uint64, []byte, bool) {
	tok, ok := auth.Bearer(peek(ctx, hdrAuth, hdrAuthLower))
	if !ok {
		h.answer(ctx, route, aUnauthorized)
		return 0, nil, false
	}
	user, err := h.Verifier.Verify(now, tok)
	if err != nil || user == 0 {
		h.answer(ctx, route, aUnauthorized)
		return 0, nil, false
	}
	if ok, retry := h.UserLimit.Allow(now, user); !ok {
		h.Metrics.RateLimited(true)
		h.limited(ctx, route, retry)
		return 0, nil, false
	}
	return user, tok, true
}

func (h *Handler) limited(ctx *fasthttp.RequestCtx, route obs.Route, retry time.Duration) {
	secs := int((retry + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	if secs >= len(retryAfter) {
		secs = len(retryAfter) - 1
	}
	ctx.Response.Header.SetCanonical(hdrRetryAfter, retryAfter[secs])
	h.answer(ctx, route, aRateLimited)
}

func (h *Handler) purchase(ctx *fasthttp.RequestCtx, now time.Time, arg []byte) {
	const route = obs.RoutePurchase
	id, ok := parseID(arg)
	it := h.Catalog.Snapshot().Item(id)
	if !ok || it == nil {
		h.answer(ctx, route, aItemNotFound)
		return
	}
	if !h.clientAllowed(ctx, now, route) {
		return
	}
	sale := it.Sale
	switch n := now.UnixNano(); {
	case n < sale.Start:
		h.answerBody(ctx, route, aSaleNotStarted, sale.NotStarted)
		return
	case n >= sale.End:
		h.answer(ctx, route, aSaleEnded)
		return
	}
	if it.Flags.SoldOut() {
		h.soldOut(ctx, sale.ID)
		return
	}
	user, tok, ok := h.user(ctx, now, route)
	if !ok {
		return
	}
	shard := sharding.HomeShard(user, sale.ID, len(sale.Shards))
	if it.Flags.ShardSoldOut(shard) {
		// The home shard ran dry. Unless a full reading confirmed the whole
		// item sold out (the item flag above), move units here from the other
		// shards first (see reserve). The local per-shard view is not trusted
		// for a refusal: borrows by this and other gateways change it faster
		// than it is read.
		if h.Borrower == nil || len(sale.Shards) == 1 {
			h.soldOut(ctx, sale.ID)
			return
		}
		h.reserve(ctx, now, it, user, tok, shard, true)
		return
	}
	h.reserve(ctx, now, it, user, tok, shard, false)
}

// maxBorrows bounds the borrow-and-retry rounds of one purchase.
const maxBorrows = 4

// borrow moves units of it to shard from the item's other shards and reports
// whether any arrived. It reads every shard's stock first (one pipelined
// round trip): the poller's reading is up to one interval old, and during a
// rush the shards it saw full may be empty already. The reading also updates
// the flags, so a true sell-out is known at once.
func (h *Handler) borrow(ctx context.Context, it *catalog.Item, shard int) (moved, elsewhere bool) {
	rem, err := h.Borrower.Available(ctx, it.Sale.Sale, it.Item.ID)
	if err != nil {
		h.Metrics.RedisError()
		return false, false
	}
	it.Flags.Observe(rem)
	for i, n := range rem {
		elsewhere = elsewhere || (i != shard && n > 0)
	}
	if !elsewhere {
		return false, false
	}
	n, err := h.Borrower.Borrow(ctx, it.Sale.Sale, it.Item.ID, shard, rem)
	if err != nil {
		h.Metrics.RedisError()
		return false, false
	}
	it.Flags.Refilled(shard, n)
	return n > 0, true
}

// soldOut answers 410 SOLD_OUT, or 409 with the order id to a bearer this
// gateway already answered with that order (see winners).
func (h *Handler) soldOut(ctx *fasthttp.RequestCtx, saleID int64) {
	if tok, ok := auth.Bearer(peek(ctx, hdrAuth, hdrAuthLower)); ok {
		if id, ok := h.winners.lookup(tok, saleID); ok {
			h.answerOrder(ctx, obs.RoutePurchase, aAlreadyPurchased, id, "")
			return
		}
	}
	h.answer(ctx, obs.RoutePurchase, aSoldOut)
}

// reserve runs the Redis and Kafka part of a purchase. When the user's home
// shard is (or turns out) empty while the item has units on other shards, it
// borrows units to the home shard and tries once more, so no user is told
// SOLD_OUT while units remain, beyond the staleness of the last stock reading
// (one poll interval).
func (h *Handler) reserve(ctx *fasthttp.RequestCtx, now time.Time, it *catalog.Item, user uint64, tok []byte, shard int, borrowFirst bool) {
	const route = obs.RoutePurchase
	sale := it.Sale
	tag := sale.Shards[shard]
	oid := h.orderID(ctx, sale.ID, it.Item.ID, user)
	r := stock.Reservation{
		Tag: tag, ItemID: it.Item.ID, UserID: user, OrderID: oid,
		Created: now, Expires: now.Add(sale.Window()), TTL: h.cfg.OrderTTL,
	}
	rctx, deadline := h.deadlines.get(now)
	if h.repeat(ctx, rctx, now, sale.ID, tag, user, tok, oid) {
		return
	}
	if borrowFirst {
		_, _ = h.borrow(rctx, it, shard)
	}
	res, err := h.Store.Reserve(rctx, r)
	// Concurrent buyers on the same dry shard race for the borrowed units, so
	// borrow and try again a few times while a fresh reading still shows units
	// on other shards.
	for try := 0; try < maxBorrows && err == nil && res.Outcome == stock.SoldOut && h.Borrower != nil &&
		len(sale.Shards) > 1 && rctx.Err() == nil; try++ {
		moved, elsewhere := h.borrow(rctx, it, shard)
		if !moved && !elsewhere {
			break
		}
		if moved {
			res, err = h.Store.Reserve(rctx, r)
		}
	}
	defer h.observe(route, now)
	if errors.Is(err, stock.ErrFrozen) {
		// A reshard froze the shard before the script ran: nothing was
		// reserved. Load the new layout now; the client's retry uses it.
		h.Catalog.RefreshSoon()
		h.answer(ctx, route, aUnavailable)
		return
	}
	if err != nil {
		h.Metrics.RedisError()
		h.settleAmbiguous(r)
		h.answer(ctx, route, aUnavailable)
		return
	}
	switch res.Outcome {
	case stock.SoldOut:
		it.Flags.MarkShard(shard)
		h.answer(ctx, route, aSoldOut)
		return
	case stock.AlreadyPurchased, stock.IDUsed:
		if res.Outcome == stock.AlreadyPurchased {
			h.winners.add(tok, sale.ID, res.OrderID)
		}
		h.answerOrder(ctx, route, aAlreadyPurchased, res.OrderID, "")
		return
	case stock.Reserved:
	default:
		h.answer(ctx, route, aUnavailable)
		return
	}
	ev := orderevent.Event{Type: orderevent.Reserved, OrderID: res.OrderID, SaleID: sale.ID, ItemID: it.Item.ID,
		UserID: user, Created: r.Created, Expires: r.Expires, At: now}
	if res.Replay {
		// A retry of an order this user already holds: hand the original
		// times to Kafka again (the writer deduplicates by order id).
		if rec, found, err := h.Store.Order(rctx, tag, res.OrderID); err == nil && found {
			ev.Created, ev.Expires = rec.Created, rec.Expires
		}
	}
	wait := max(time.Until(deadline), h.cfg.MinHandOff)
	switch err := h.Producer.Hand(&ev, wait, !res.Replay); {
	case err == nil:
		h.winners.add(tok, sale.ID, res.OrderID)
		h.answerOrder(ctx, route, aAccepted, res.OrderID, "PENDING")
	case errors.Is(err, orders.ErrRefused):
		h.Metrics.KafkaError()
		if !res.Replay {
			// Only the attempt that reserved may release: a replay's record
			// may have landed through the first attempt.
			h.release(r.Tag, r.ItemID, r.UserID, r.OrderID, obs.ReasonKafkaRefused)
		}
		h.answer(ctx, route, aUnavailable)
	default:
		h.Metrics.KafkaError()
		h.answer(ctx, route, aUnavailable)
	}
}

// repeat serves a repeat click of a buyer this gateway has answered before
// (see winners) with one HGET of the user's buyer record instead of the
// reserve script: while the record names an order, the script would only
// find it and answer ALREADY_PURCHASED, at several times the cost in Redis.
// It reports false, having answered nothing, when the click must go on to the
// script: an unknown bearer, no record (the order was cancelled or expired,
// and the user may buy again), or a record naming this very order id (an
// Idempotency-Key retry, which the script replays). A Redis error answers 503:
// nothing was reserved.
func (h *Handler) repeat(ctx *fasthttp.RequestCtx, rctx context.Context, now time.Time, saleID int64, tag string, user uint64, tok []byte, oid sharding.OrderID) bool {
	if h.cfg.NoRepeatRead {
		return false
	}
	known, ok := h.winners.lookup(tok, saleID)
	if !ok {
		return false
	}
	held, found, err := h.Store.Holder(rctx, tag, user)
	switch {
	case err != nil:
		h.Metrics.RedisError()
		h.answer(ctx, obs.RoutePurchase, aUnavailable)
	case !found || held == oid:
		return false
	default:
		if held != known {
			h.winners.add(tok, saleID, held)
		}
		h.answerOrder(ctx, obs.RoutePurchase, aAlreadyPurchased, held, "")
	}
	h.observe(obs.RoutePurchase, now)
	return true
}

// orderID names the order: a hash of (sale, user, item, Idempotency-Key) when
// the client sent a key, so that a retry names the same order on any gateway,
// else a fresh id from the per-process seed and counter.
func (h *Handler) orderID(ctx *fasthttp.RequestCtx, saleID, itemID int64, user uint64) sharding.OrderID {
	key := peek(ctx, hdrIdem, hdrIdemLower)
	if len(key) == 0 {
		n := h.counter.Add(1)
		return sharding.NewOrderID(saleID, sharding.Mix64(h.seedHi+n*0x9e3779b97f4a7c15), uint32(sharding.Mix64(h.seedLo^n)))
	}
	var buf [256]byte
	b := append(buf[:0], "flashsale-order-v1\x00"...)
	b = binary.BigEndian.AppendUint64(b, uint64(saleID))
	b = binary.BigEndian.AppendUint64(b, user)
	b = binary.BigEndian.AppendUint64(b, uint64(itemID))
	b = append(b, key...)
	sum := sha256.Sum256(b)
	return sharding.NewOrderID(saleID, binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint32(sum[8:12]))
}

// settleAmbiguous settles a reservation whose reply was lost (timeout or
// connection error after the script may have run): releasing the same order
// id returns the unit only if the script took it, so nothing stays reserved
// for a client that was told 503. When the release cannot reach Redis
// either, it is retried in the background for about a minute.
func (h *Handler) settleAmbiguous(r stock.Reservation) {
	h.Metrics.Ambiguous()
	h.release(r.Tag, r.ItemID, r.UserID, r.OrderID, obs.ReasonAmbiguous)
}

// release returns the unit of order id now, retrying in the background when
// Redis does not answer.
func (h *Handler) release(tag string, itemID int64, user uint64, id sharding.OrderID, reason int) {
	if err := h.tryRelease(tag, itemID, user, id, reason); err != nil {
		go h.retryRelease(tag, itemID, user, id, reason)
	}
}

func (h *Handler) tryRelease(tag string, itemID int64, user uint64, id sharding.OrderID, reason int) error {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.ReleaseBudget)
	defer cancel()
	ok, err := h.Store.Release(ctx, tag, itemID, user, id, stock.ReleaseDelete)
	if err != nil {
		h.Metrics.RedisError()
		return err
	}
	if ok {
		h.Metrics.Released(reason)
	}
	return nil
}

func (h *Handler) retryRelease(tag string, itemID int64, user uint64, id sharding.OrderID, reason int) {
	backoff := 100 * time.Millisecond
	var err error
	for range 10 {
		time.Sleep(backoff)
		if err = h.tryRelease(tag, itemID, user, id, reason); err == nil {
			return
		}
		backoff = min(2*backoff, 10*time.Second)
	}
	h.Log.Error("could not release a reserved unit; reconcile the sale", "tag", tag, "item", itemID,
		"user", user, "order", id.String(), "err", err)
}

// Settle is the producer's callback for a reservation record whose handler
// had stopped waiting (it answered 503). A failed record gives its unit back;
// a record that landed stands as a real order.
func (h *Handler) Settle(ev *orderevent.Event, err error) {
	if err == nil {
		h.Metrics.LateLanded()
		return
	}
	sale := h.Catalog.Snapshot().Sale(ev.SaleID)
	if sale == nil || len(sale.Shards) == 0 {
		h.Log.Error("late hand-off failure for an unknown sale; reconcile it", "sale", ev.SaleID, "order", ev.OrderID.String())
		return
	}
	tag := sale.Shards[sharding.HomeShard(ev.UserID, sale.ID, len(sale.Shards))]
	go h.release(tag, ev.ItemID, ev.UserID, ev.OrderID, obs.ReasonLate)
}

func (h *Handler) order(ctx *fasthttp.RequestCtx, now time.Time, arg []byte) {
	const route = obs.RouteOrder
	rec, id, ok := h.loadOrder(ctx, now, route, arg)
	if !ok {
		return
	}
	var buf [320]byte
	b := append(buf[:0], `{"orderId":"`...)
	b = id.AppendText(b)
	b = append(b, `","saleId":`...)
	b = strconv.AppendInt(b, id.SaleID(), 10)
	b = append(b, `,"itemId":`...)
	b = strconv.AppendInt(b, rec.ItemID, 10)
	b = append(b, `,"status":"`...)
	b = append(b, rec.Status...)
	b = append(b, `","createdAt":"`...)
	b = rec.Created.UTC().AppendFormat(b, time.RFC3339)
	b = append(b, `","expiresAt":"`...)
	b = rec.Expires.UTC().AppendFormat(b, time.RFC3339)
	b = append(b, `"}`...)
	h.answerBody(ctx, route, aOK, b)
}

// loadOrder parses the order id, authenticates the owner and reads the record;
// on any refusal it has answered.
func (h *Handler) loadOrder(ctx *fasthttp.RequestCtx, now time.Time, route obs.Route, arg []byte) (stock.OrderRecord, sharding.OrderID, bool) {
	var rec stock.OrderRecord
	id, ok := sharding.ParseOrderID(arg)
	var sale *catalog.Sale
	if ok {
		sale = h.Catalog.Snapshot().Sale(id.SaleID())
	}
	if sale == nil || len(sale.Shards) == 0 {
		h.answer(ctx, route, aOrderNotFound)
		return rec, id, false
	}
	if !h.clientAllowed(ctx, now, route) {
		return rec, id, false
	}
	user, _, ok := h.user(ctx, now, route)
	if !ok {
		return rec, id, false
	}
	tag := sale.Shards[sharding.HomeShard(user, sale.ID, len(sale.Shards))]
	rctx, _ := h.deadlines.get(now)
	rec, found, err := h.Store.Order(rctx, tag, id)
	h.observe(route, now)
	switch {
	case err != nil:
		h.Metrics.RedisError()
		h.answer(ctx, route, aUnavailable)
		return rec, id, false
	case !found || rec.UserID != user:
		h.answer(ctx, route, aOrderNotFound)
		return rec, id, false
	}
	return rec, id, true
}

// payOrCancel hands a pay or cancel request to the writer; see the README for
// the table of answers by current status.
func (h *Handler) payOrCancel(ctx *fasthttp.RequestCtx, now time.Time, route obs.Route, arg []byte) {
	rec, id, ok := h.loadOrder(ctx, now, route, arg)
	if !ok {
		return
	}
	pay := route == obs.RoutePay
	expired := !now.Before(rec.Expires)
	switch rec.Status {
	case stock.StatusPending:
		if expired {
			h.answer(ctx, route, aOrderExpired)
			return
		}
	case stock.StatusPaid:
		if pay {
			h.answerOrder(ctx, route, aAccepted, id, stock.StatusPaid)
		} else {
			h.answer(ctx, route, aOrderPaid)
		}
		return
	case stock.StatusCancelled:
		if pay {
			h.answer(ctx, route, aOrderCancelled)
		} else {
			h.answerOrder(ctx, route, aAccepted, id, stock.StatusCancelled)
		}
		return
	case stock.StatusExpired:
		h.answer(ctx, route, aOrderExpired)
		return
	default:
		h.answer(ctx, route, aOrderFailed)
		return
	}
	ev := orderevent.Event{Type: orderevent.Cancel, OrderID: id, SaleID: id.SaleID(), ItemID: rec.ItemID,
		UserID: rec.UserID, Created: rec.Created, Expires: rec.Expires, At: now}
	if pay {
		ev.Type = orderevent.Pay
	}
	if err := h.Producer.Hand(&ev, h.cfg.Budget, false); err != nil {
		// A pay or cancel that lands late is still applied by the writer;
		// both are idempotent, so the client may simply retry.
		h.Metrics.KafkaError()
		h.answer(ctx, route, aUnavailable)
		return
	}
	h.answerOrder(ctx, route, aAccepted, id, stock.StatusPending)
}

func (h *Handler) sale(ctx *fasthttp.RequestCtx, now time.Time, arg []byte) {
	const route = obs.RouteSale
	id, ok := parseID(arg)
	var sale *catalog.Sale
	if ok {
		sale = h.Catalog.Snapshot().Sale(id)
	}
	if sale == nil {
		h.answer(ctx, route, aSaleNotFound)
		return
	}
	if !h.clientAllowed(ctx, now, route) {
		return
	}
	ctx.Response.Header.SetCanonical(hdrCacheControl, valCacheControl)
	h.answerBody(ctx, route, aOK, sale.Description())
}

func (h *Handler) observe(route obs.Route, start time.Time) {
	h.Metrics.Observe(route, time.Since(start).Seconds())
}

// answerOrder answers {"orderId":"...","status":"..."} or, with an empty
// status, {"error":"ALREADY_PURCHASED","orderId":"..."}.
func (h *Handler) answerOrder(ctx *fasthttp.RequestCtx, route obs.Route, a answer, id sharding.OrderID, status string) {
	var buf [96]byte
	var b []byte
	if status == "" {
		b = append(buf[:0], `{"error":"ALREADY_PURCHASED","orderId":"`...)
		b = id.AppendText(b)
		b = append(b, `"}`...)
	} else {
		b = append(buf[:0], `{"orderId":"`...)
		b = id.AppendText(b)
		b = append(b, `","status":"`...)
		b = append(b, status...)
		b = append(b, `"}`...)
	}
	h.answerBody(ctx, route, a, b)
}

// answer writes a's status and precomputed body.
func (h *Handler) answer(ctx *fasthttp.RequestCtx, route obs.Route, a answer) {
	h.answerBody(ctx, route, a, nil)
}

// answerBody writes a's status with body (a's precomputed body when nil; body
// is copied unless it is a's own).
func (h *Handler) answerBody(ctx *fasthttp.RequestCtx, route obs.Route, a answer, body []byte) {
	spec := &answers[a]
	r := &ctx.Response
	r.SetStatusCode(spec.status)
	r.Header.SetContentTypeBytes(contentJSON)
	if spec.allow != nil {
		r.Header.SetCanonical(hdrAllow, spec.allow)
	}
	if body == nil {
		r.SetBodyRaw(spec.body)
	} else {
		r.SetBody(body)
	}
	h.Metrics.Request(route, spec.status)
}

func peek(ctx *fasthttp.RequestCtx, canonical, lower []byte) []byte {
	if v := ctx.Request.Header.PeekCanonical(canonical); v != nil {
		return v
	}
	return ctx.Request.Header.PeekCanonical(lower)
}
