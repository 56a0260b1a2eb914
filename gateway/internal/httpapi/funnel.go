package httpapi

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"flashsale/sharding/api"
)

// The sale's funnel (api.Funnel*, obs.Funnel): each answer of the purchase
// and ticket routes is counted once, after its handler answered, from the
// status and body it wrote: the routes answer from many places (the cheap
// refusals, the token, the waiting room or raffle, the reserve script), and
// reading the answer back counts every one of them without a hook in each.
// Only a sale the catalog holds is counted: a client cannot make up series.

// pageLoaded counts a sale page served for sale id, when the catalog holds it.
func (h *Handler) pageLoaded(id int64) {
	if h.Catalog.Snapshot().Sale(id) != nil {
		h.Metrics.Funnel(id).PageLoad()
	}
}

// countPurchase counts the purchase answer ctx holds in sale's funnel.
func (h *Handler) countPurchase(sale int64, ctx *fasthttp.RequestCtx) {
	h.Metrics.Funnel(sale).Purchase(purchaseAnswer(ctx.Response.StatusCode(), ctx.Response.Body()))
}

// countTicket counts the ticket answer ctx holds in sale's funnel.
func (h *Handler) countTicket(sale int64, ctx *fasthttp.RequestCtx) {
	h.Metrics.Funnel(sale).Ticket(ticketAnswer(ctx.Response.StatusCode(), ctx.Response.Body()))
}

// purchaseAnswer names a purchase answer from its status and body.
func purchaseAnswer(status int, body []byte) api.FunnelAnswer {
	switch status {
	case fasthttp.StatusAccepted:
		return api.AnswerAccepted
	case fasthttp.StatusConflict:
		return api.AnswerAlreadyPurchased
	case fasthttp.StatusForbidden:
		switch {
		case is(body, aTicketRequired):
			return api.AnswerTicketRequired
		case is(body, aTicketInvalid):
			return api.AnswerTicketInvalid
		case bytes.HasPrefix(body, presalePrefix):
			return api.AnswerPresaleOnly
		}
		return api.AnswerNotStarted
	}
	return sharedAnswer(status, body)
}

// ticketAnswer names a ticket answer from its status and body.
func ticketAnswer(status int, body []byte) api.FunnelAnswer {
	switch status {
	case fasthttp.StatusOK:
		return api.AnswerIssued
	case fasthttp.StatusAccepted:
		return api.AnswerQueued
	case fasthttp.StatusPreconditionRequired:
		return api.AnswerProofRequired
	case fasthttp.StatusForbidden:
		switch {
		case bytes.HasPrefix(body, notStartedPrefix):
			return api.AnswerNotStarted
		case bytes.HasPrefix(body, entriesClosedPrefix):
			return api.AnswerNotSelected
		case bytes.HasPrefix(body, presalePrefix):
			return api.AnswerPresaleOnly
		}
		return api.AnswerRefused
	case fasthttp.StatusGone:
		if bytes.HasPrefix(body, notSelectedPrefix) {
			return api.AnswerNotSelected
		}
	}
	return sharedAnswer(status, body)
}

var (
	notStartedPrefix    = []byte(`{"error":"` + api.SaleNotStarted + `"`)
	notSelectedPrefix   = []byte(`{"error":"` + api.NotSelected + `"`)
	entriesClosedPrefix = []byte(`{"error":"` + api.EntriesClosed + `"`)
	// presalePrefix is the start of PRESALE_ONLY and PRESALE_SOLD_OUT.
	presalePrefix = []byte(`{"error":"PRESALE_`)
)

// sharedAnswer names the answers both routes give alike.
func sharedAnswer(status int, body []byte) api.FunnelAnswer {
	switch status {
	case fasthttp.StatusGone:
		if is(body, aSoldOut) {
			return api.AnswerSoldOut
		}
		return api.AnswerSaleEnded
	case fasthttp.StatusServiceUnavailable:
		if is(body, aSalePaused) {
			return api.AnswerPaused
		}
		return api.AnswerUnavailable
	case fasthttp.StatusTooManyRequests:
		return api.AnswerRateLimited
	case fasthttp.StatusUnauthorized:
		return api.AnswerUnauthorized
	}
	return api.AnswerOther
}

// is reports whether body is a's precomputed body.
func is(body []byte, a answer) bool { return bytes.Equal(body, answers[a].body) }
