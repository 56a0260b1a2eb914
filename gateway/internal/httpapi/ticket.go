package httpapi

import (
	"time"

	"github.com/valyala/fasthttp"

	"flashsale/gateway/internal/catalog"
	"flashsale/gateway/internal/obs"
	"flashsale/sharding/clock"
)

// ticket serves POST /api/flash-sales/sales/{saleId}/ticket: the purchase
// URL's key, handed out only once the sale has started (SPEC, "The front
// door"). The cheap refusals come first, as on the purchase path: sale id,
// per-IP bucket, window, pause, sold out (but for a raffle whose draw is
// revealed, where the draw answers each user: drawDecides); then the bearer
// token and the per-user bucket; then admission (the waiting room or raffle
// and the proof of work, frontdoor.go); then 200 ADMITTED with a ticket
// bound to (user, sale). The only Redis call is a user's join of the
// waiting room or raffle.
func (h *Handler) ticket(ctx *fasthttp.RequestCtx, now time.Time, arg []byte) {
	const route = obs.RouteTicket
	sale := h.saleOf(ctx, now, route, arg)
	if sale == nil {
		return
	}
	defer h.countTicket(sale.ID, ctx)
	ctx.Response.Header.SetCanonical(hdrCacheControl, valNoStore)
	// wall is this gateway's wall clock (package clock), for what other
	// processes' clocks judge too: the sale's window and the ticket's
	// expiry. now stays the start of the request's durations.
	wall := clock.Wall(now)
	inPresale := sale.InPresale(wall)
	soldOut := saleSoldOut(sale)
	switch n := wall.UnixNano(); {
	case sale.Halt == catalog.HaltEnded:
		h.answer(ctx, route, aSaleEnded)
		return
	case n < sale.Start && !inPresale && !h.preQueueOpen(sale, wall):
		// A sale whose entries opened before the start (a pre-queue, a
		// raffle) goes on to admit, which answers 202 QUEUED (the place is
		// drawn at the start).
		h.answerBody(ctx, route, aSaleNotStarted, sale.NotStarted)
		return
	case n >= sale.End:
		h.answer(ctx, route, aSaleEnded)
		return
	case salePaused(sale):
		h.answer(ctx, route, aSalePaused)
		return
	case soldOut && !h.drawDecides(sale):
		// A raffle's revealed draw answers after the token instead
		// (admit): NOT_SELECTED past the units is final, not SOLD_OUT.
		h.answer(ctx, route, aSoldOut)
		return
	}
	user, tok, ok := h.user(ctx, now, route)
	if !ok {
		return
	}
	switch {
	case inPresale && h.presaleEligible(sale, user, tok):
		// The presale's buyers skip the waiting room (the phase is theirs),
		// not the proof of work.
		if soldOut {
			h.answer(ctx, route, aSoldOut)
			return
		}
		if !h.proofOK(ctx, now, sale, user) {
			return
		}
	case inPresale && !h.preQueueOpen(sale, wall):
		h.answerPresale(ctx, route, aPresaleOnly, sale)
		return
	case !h.admit(ctx, now, sale, user):
		return
	}
	var buf [160]byte
	b := append(buf[:0], `{"status":"ADMITTED","ticket":"`...)
	b, exp := h.Tickets.Append(b, user, sale.ID, wall)
	b = append(b, `","expiresAt":"`...)
	b = exp.UTC().AppendFormat(b, rfc3339Milli)
	b = append(b, `"}`...)
	h.answerBody(ctx, route, aOK, b)
}

// salePaused reports whether an operator paused sale (`flashctl sale pause`:
// the sale description's state, see catalog.Sale.Halt).
func salePaused(sale *catalog.Sale) bool { return sale.Halt == catalog.HaltPaused }

// saleSoldOut reports whether every item of sale is flagged sold out.
func saleSoldOut(sale *catalog.Sale) bool {
	for _, it := range sale.Items {
		if !it.Flags.SoldOut() {
			return false
		}
	}
	return len(sale.Items) > 0
}

// ticketOK checks the purchase ticket of a sale that requires one, after the
// bearer token and before Redis; on refusal it has answered 403
// TICKET_REQUIRED (none sent) or TICKET_INVALID (forged, malformed, expired,
// another user's or sale's, or issued before the start). It allocates
// nothing.
func (h *Handler) ticketOK(ctx *fasthttp.RequestCtx, now time.Time, sale *catalog.Sale, user uint64) bool {
	tok := peek(ctx, hdrTicket, hdrTicketLower)
	if len(tok) == 0 {
		h.answer(ctx, obs.RoutePurchase, aTicketRequired)
		return false
	}
	// A ticket of the presale is good in the presale only: after the start
	// the general phase's tickets come through its waiting room or raffle.
	start := sale.Start
	wall := clock.Wall(now) // the ticket's expiry, stamped by another gateway's clock (package clock)
	if sale.InPresale(wall) {
		start = sale.Presale.StartsAt.UnixNano()
	}
	if err := h.Tickets.Verify(tok, user, sale.ID, start, wall); err != nil {
		h.answer(ctx, obs.RoutePurchase, aTicketInvalid)
		return false
	}
	return true
}
