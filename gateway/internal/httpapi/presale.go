package httpapi

import (
	"context"
	"time"

	"github.com/valyala/fasthttp"

	"flashsale/gateway/internal/catalog"
	"flashsale/gateway/internal/obs"
	"flashsale/sharding/api"
)

// The presale phase (package presale): before the general start, only the
// sale's presale buyers get a ticket (the waiting room is skipped: the phase
// is theirs) and may buy, within the phase's cap. Everyone else is answered
// 403 PRESALE_ONLY with the general start, and once the cap is sold 403
// PRESALE_SOLD_OUT. Limits, tickets, proof of work and the kill switch apply
// as in the general phase.

// presaleEligible reports whether user (token verified) may buy in sale's
// presale.
func (h *Handler) presaleEligible(sale *catalog.Sale, user uint64, tok []byte) bool {
	return h.Presale != nil && h.Presale.Eligible(sale.Sale, user, tok)
}

// answerPresale answers a (PRESALE_ONLY or PRESALE_SOLD_OUT) with the
// general phase's start.
func (h *Handler) answerPresale(ctx *fasthttp.RequestCtx, route obs.Route, a answer, sale *catalog.Sale) {
	var buf [96]byte
	b := append(buf[:0], `{"error":"`...)
	if a == aPresaleOnly {
		b = append(b, api.PresaleOnly...)
	} else {
		b = append(b, api.PresaleSoldOut...)
	}
	b = append(b, `","startsAt":"`...)
	b = sale.StartsAt.UTC().AppendFormat(b, rfc3339Milli)
	h.answerBody(ctx, route, a, append(b, `"}`...))
}

// presalePurchase admits a purchase of user in sale's presale: eligible,
// then one unit of the cap taken. It returns whether the purchase goes on;
// on refusal it has answered. The caller gives the unit back
// (presaleSettle) unless the purchase was answered 202.
func (p *purchase) presaleAdmit(user uint64) bool {
	h, sale := p.h, p.it.Sale
	if !h.presaleEligible(sale, user, p.tok) {
		h.answerPresale(p.ctx, obs.RoutePurchase, aPresaleOnly, sale)
		return false
	}
	ok, err := h.Presale.Take(p.rctx, sale.Sale)
	switch {
	case err != nil:
		h.Log.Warn("presale cap", "sale", sale.ID, "err", err)
		h.Metrics.RedisError()
		p.answer(aUnavailable)
		return false
	case !ok:
		h.answerPresale(p.ctx, obs.RoutePurchase, aPresaleSoldOut, sale)
		return false
	}
	p.capTaken = true
	return true
}

// presaleSettle gives back the unit of the cap a presale purchase took
// unless it reserved one itself: every other answer reserved nothing (a
// 503 is true by construction, a 409 holds an order from before, and a 202
// that replays an Idempotency-Key's order took its unit the first time).
// A purchase whose void went to the background queue keeps its unit: the
// void may yet find the order standing (a relay took it), and the unit
// given back would then sell past the cap; the presale sells one fewer
// when the void undoes it.
func (p *purchase) presaleSettle() {
	if !p.capTaken || p.fresh || p.voidQueued {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.h.Presale.Give(ctx, p.it.Sale.Sale); err != nil {
		p.h.Log.Warn("presale cap: a unit not given back (the presale sells one fewer)", "sale", p.it.Sale.ID, "err", err)
	}
}
