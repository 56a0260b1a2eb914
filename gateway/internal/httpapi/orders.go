package httpapi

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"flashsale/gateway/internal/catalog"
	"flashsale/gateway/internal/obs"
	"flashsale/sharding"
	"flashsale/sharding/clock"
	"flashsale/sharding/stock"
)

// rfc3339Milli is RFC 3339 with milliseconds, the API's time format.
const rfc3339Milli = "2006-01-02T15:04:05.000Z07:00"

// serverTime answers {"serverTime":"..."}, never cached: the sale page's
// countdown corrects the client's clock with it.
func (h *Handler) serverTime(ctx *fasthttp.RequestCtx, now time.Time) {
	const route = obs.RouteTime
	if !h.clientAllowed(ctx, now, route) {
		return
	}
	var buf [64]byte
	b := append(buf[:0], `{"serverTime":"`...)
	b = clock.Wall(now).UTC().AppendFormat(b, rfc3339Milli)
	b = append(b, `"}`...)
	ctx.Response.Header.SetCanonical(hdrCacheControl, valNoStore)
	h.answerBody(ctx, route, aOK, b)
}

// order serves GET /api/flash-sales/orders/{orderId}.
func (h *Handler) order(ctx *fasthttp.RequestCtx, now time.Time, arg []byte) {
	const route = obs.RouteOrder
	rec, id, ok := h.loadOrder(ctx, now, route, arg)
	if !ok {
		return
	}
	h.answerRecord(ctx, route, now, id, &rec)
}

// heldOrder serves GET /api/flash-sales/sales/{saleId}/order: the order the
// caller holds in the sale, PENDING or PAID, as GET order shows it (the
// buyer record on the user's home shard names it); 404 ORDER_NOT_FOUND when
// there is none. A buyer whose tab was closed, or who comes back on another
// device, finds the order this way: after the sell-out a purchase is
// answered 410 SOLD_OUT from the local flag, not 409 with the order id.
func (h *Handler) heldOrder(ctx *fasthttp.RequestCtx, now time.Time, arg []byte) {
	const route = obs.RouteHeld
	id, ok := parseID(arg)
	var sale *catalog.Sale
	if ok {
		sale = h.Catalog.Snapshot().Sale(id)
	}
	if sale == nil || len(sale.Shards) == 0 {
		h.answer(ctx, route, aOrderNotFound)
		return
	}
	if !h.clientAllowed(ctx, now, route) {
		return
	}
	user, _, ok := h.user(ctx, now, route)
	if !ok {
		return
	}
	tag := sale.Shards[sharding.HomeShard(user, sale.ID, len(sale.Shards))]
	rctx, _ := h.deadlines.get(now)
	oid, found, err := h.Store.Holder(rctx, tag, user)
	var rec stock.OrderRecord
	if err == nil && found {
		rec, found, err = h.Store.Order(rctx, tag, user, oid)
	}
	h.observe(route, now)
	switch {
	case err != nil:
		h.Metrics.RedisError()
		h.answer(ctx, route, aUnavailable)
	case !found || rec.UserID != user || rec.Status == stock.StatusVoid || oid.SaleID() != sale.ID:
		h.answer(ctx, route, aOrderNotFound)
	default:
		h.answerRecord(ctx, route, now, oid, &rec)
	}
}

// answerRecord answers 200 with order id's record as GET order shows it.
func (h *Handler) answerRecord(ctx *fasthttp.RequestCtx, route obs.Route, now time.Time, id sharding.OrderID, rec *stock.OrderRecord) {
	var buf [320]byte
	b := append(buf[:0], `{"orderId":"`...)
	b = id.AppendText(b)
	b = append(b, `","saleId":`...)
	b = strconv.AppendInt(b, id.SaleID(), 10)
	b = append(b, `,"itemId":`...)
	b = strconv.AppendInt(b, rec.ItemID, 10)
	b = append(b, `,"status":"`...)
	b = append(b, rec.Shown(clock.Wall(now))...)
	b = append(b, `","createdAt":"`...)
	b = rec.Created.UTC().AppendFormat(b, rfc3339Milli)
	b = append(b, `","expiresAt":"`...)
	b = rec.Expires.UTC().AppendFormat(b, rfc3339Milli)
	b = append(b, `","persisted":`...)
	b = strconv.AppendBool(b, rec.Persisted)
	b = append(b, '}')
	// One owner's, and it changes: no cache, shared or private, keeps it.
	ctx.Response.Header.SetCanonical(hdrCacheControl, valNoStore)
	h.answerBody(ctx, route, aOK, b)
}

// loadOrder parses the order id, authenticates the owner and reads the record;
// on any refusal it has answered. A VOID record (an attempt undone before its
// client heard of it) is no order.
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
	rec, found, err := h.Store.Order(rctx, tag, user, id)
	h.observe(route, now)
	switch {
	case err != nil:
		h.Metrics.RedisError()
		h.answer(ctx, route, aUnavailable)
		return rec, id, false
	case !found || rec.UserID != user || rec.Status == stock.StatusVoid:
		h.answer(ctx, route, aOrderNotFound)
		return rec, id, false
	}
	return rec, id, true
}

// payOrCancel journals a pay or cancel request on the order's home shard
// (stock.Store.Act), which checks it against the order record in the same
// step; see the README for the table of answers. A 202 means the same as a
// purchase's: the request is journaled and reaches the writer after the
// order's reservation. A 503 means the same too: this request changed
// nothing and nothing will come of it (see settleAct).
func (h *Handler) payOrCancel(ctx *fasthttp.RequestCtx, now time.Time, route obs.Route, arg []byte) {
	rec, id, ok := h.loadOrder(ctx, now, route, arg)
	if !ok {
		return
	}
	pay := route == obs.RoutePay
	sale := h.Catalog.Snapshot().Sale(id.SaleID())
	a := stock.ActRequest{Action: stock.ActCancel, SaleID: id.SaleID(), UserID: rec.UserID, OrderID: id, At: clock.Wall(now),
		Bound: h.cfg.JournalBound, Attempt: h.attempt()}
	if pay {
		a.Action = stock.ActPay
	}
	a.Tag = sale.Shards[sharding.HomeShard(rec.UserID, sale.ID, len(sale.Shards))]
	if h.fenced(ctx, route, a.Tag, now) {
		return
	}
	rctx, _ := h.deadlines.get(now)
	v, err := h.Store.Act(rctx, a)
	if err != nil {
		h.Metrics.RedisError()
		if v, ok = h.settleAct(a); !ok {
			h.answer(ctx, route, aUnavailable)
			return
		}
	}
	h.answerAct(ctx, route, id, pay, v)
}

// answerAct answers the verdict v of a pay (pay true) or cancel request.
func (h *Handler) answerAct(ctx *fasthttp.RequestCtx, route obs.Route, id sharding.OrderID, pay bool, v string) {
	switch v {
	case stock.ActOK, stock.ActAgain:
		h.answerOrder(ctx, route, aAccepted, id, stock.StatusPending)
	case stock.ActNotFound:
		h.answer(ctx, route, aOrderNotFound)
	case stock.ActFull:
		h.Metrics.JournalFull()
		h.answer(ctx, route, aUnavailable)
	case stock.ActFrozen:
		h.Catalog.RefreshSoon()
		h.answer(ctx, route, aUnavailable)
	case stock.ActVoided: // cannot happen: only a settled attempt is voided
		h.answer(ctx, route, aUnavailable)
	case stock.StatusPaid:
		if pay {
			h.answerOrder(ctx, route, aAccepted, id, stock.StatusPaid)
		} else {
			h.answer(ctx, route, aOrderPaid)
		}
	case stock.StatusCancelled:
		if pay {
			h.answer(ctx, route, aOrderCancelled)
		} else {
			h.answerOrder(ctx, route, aAccepted, id, stock.StatusCancelled)
		}
	case stock.StatusExpired:
		h.answer(ctx, route, aOrderExpired)
	default:
		h.answer(ctx, route, aOrderFailed)
	}
}

func (h *Handler) sale(ctx *fasthttp.RequestCtx, now time.Time, arg []byte) {
	const route = obs.RouteSale
	sale := h.saleOf(ctx, now, route, arg)
	if sale == nil {
		return
	}
	ctx.Response.Header.SetCanonical(hdrCacheControl, valCacheControl)
	h.answerBody(ctx, route, aOK, sale.Description())
}

// saleOf returns the sale named by arg once the client's per-IP bucket let
// the request in; nil when it answered (SALE_NOT_FOUND, or 429).
func (h *Handler) saleOf(ctx *fasthttp.RequestCtx, now time.Time, route obs.Route, arg []byte) *catalog.Sale {
	id, ok := parseID(arg)
	var sale *catalog.Sale
	if ok {
		sale = h.Catalog.Snapshot().Sale(id)
	}
	if sale == nil {
		h.answer(ctx, route, aSaleNotFound)
		return nil
	}
	if !h.clientAllowed(ctx, now, route) {
		return nil
	}
	return sale
}
