package httpapi

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"flashsale/gateway/internal/catalog"
	"flashsale/gateway/internal/obs"
	"flashsale/gateway/internal/pow"
	"flashsale/gateway/internal/room"
	"flashsale/sharding/api"
)

// The front door: the waiting room (or the raffle) and the proof of work in
// front of the ticket (SPEC, "The front door"). Order of checks in admit,
// after the token:
//
//  1. A sale with a waiting room or raffle and a queue pass (X-Queue-Pass,
//     else the cookie) is answered from the pass and this gateway's copy of
//     the admission state: 202 QUEUED, the ticket when admitted, 410
//     SOLD_OUT (410 NOT_SELECTED for a raffle's place past its units, also
//     after a sell-out), 403 QUEUE_PASS_INVALID for a bad pass (the cookie
//     is cleared, so the next ask joins afresh). No Redis call, no proof:
//     the pass shows the work was done when it was issued. Once the
//     entrants are frozen an entrant without the pass (another device, a
//     cleared browser) is answered the same way from the draw (202 QUEUED,
//     entered and waiting for the draw until the reveal, then with the
//     place), and a raffle's non-entrant 403 ENTRIES_CLOSED: the draw
//     knows them, so they need no proof either.
//  2. Without a pass, when the sale or the operator asks for proof of work:
//     no X-Proof is 428 PROOF_REQUIRED with a new challenge (so is an
//     expired proof); a malformed, forged, other user's or weak one is 403
//     PROOF_INVALID.
//  3. A sale with a waiting room or raffle: one Redis call joins it (as an
//     entrant while the entries are open, else the end of the line); the pass
//     is set as a cookie scoped to the ticket URL and sent as X-Queue-Pass;
//     the answer is as in 1. A Redis failure is 503 UNAVAILABLE: the user
//     holds no place (a place taken whose reply was lost stays empty and is
//     passed over).
//  4. Otherwise the ticket is handed out.

// admit decides whether user may have a ticket of sale now; on refusal it
// has answered.
func (h *Handler) admit(ctx *fasthttp.RequestCtx, now time.Time, sale *catalog.Sale, user uint64) bool {
	rs, inRoom := &sale.Room, sale.InRoom && h.Room != nil
	rem := roomRemaining(sale)
	if inRoom {
		// NeedJoin: no pass and not known to the frozen draw, or a pass
		// the frozen draw does not know (an entry lost in a failover):
		// the user joins, as in 2 and 3.
		if v := h.Room.Check(now, rs, user, queuePass(ctx), rem); v.Outcome != room.NeedJoin {
			return h.roomAnswer(ctx, sale, rs, v)
		}
	}
	if !h.proofOK(ctx, now, sale, user) {
		return false
	}
	if !inRoom {
		return true
	}
	rctx, _ := h.deadlines.get(now)
	var buf [room.PassLen]byte
	pass, v, err := h.Room.Join(rctx, now, rs, user, rem, buf[:0])
	if err != nil {
		h.Log.Warn("joining the waiting room or raffle", "sale", sale.ID, "err", err)
		h.answer(ctx, obs.RouteTicket, aUnavailable)
		return false
	}
	if v.Outcome != room.NotOpen {
		setQueuePass(ctx, sale.ID, pass, rs.End.Sub(now))
	}
	return h.roomAnswer(ctx, sale, rs, v)
}

// roomRemaining is the sale's units left as the room judges them: 0 once
// every item is flagged sold out (the ticket endpoint's SOLD_OUT, whatever
// the last readings say), else the catalog's sum (-1 before a reading).
func roomRemaining(sale *catalog.Sale) int64 {
	if saleSoldOut(sale) {
		return 0
	}
	return sale.Remaining()
}

// drawDecides reports whether sale is a raffle whose draw this gateway has
// revealed: then the draw answers each user, a sell-out included, so the
// ticket endpoint does not answer SOLD_OUT before knowing the user. A place
// past the units is NOT_SELECTED (final, where SOLD_OUT would invite a
// retry), a place within them SOLD_OUT (returned stock may reach it), a
// non-entrant ENTRIES_CLOSED.
func (h *Handler) drawDecides(sale *catalog.Sale) bool {
	if h.Room == nil || !sale.InRoom || !sale.Room.Raffle {
		return false
	}
	st := h.Room.State(sale.ID)
	return st != nil && st.Frozen != nil && st.Frozen.Revealed
}

// preQueueOpen reports whether sale takes entries before its start: a
// queue's pre-queue, or a raffle from its entries on.
func (h *Handler) preQueueOpen(sale *catalog.Sale, now time.Time) bool {
	return h.Room != nil && sale.InRoom && !now.Before(sale.Room.Opens())
}

// roomAnswer answers v; true means admitted (the caller hands out the ticket).
func (h *Handler) roomAnswer(ctx *fasthttp.RequestCtx, sale *catalog.Sale, rs *room.Sale, v room.Verdict) bool {
	const route = obs.RouteTicket
	switch v.Outcome {
	case room.Admitted:
		h.Metrics.Funnel(sale.ID).Admitted()
		return true
	case room.Queued:
		var buf [256]byte
		secs := int64((v.Wait + time.Second - 1) / time.Second)
		ctx.Response.Header.SetCanonical(hdrRetryAfter, retryAfter[min(max(secs/2, 1), maxQueuePoll)])
		h.answerBody(ctx, route, aQueued, appendQueued(buf[:0], rs, &v, secs))
	case room.NotSelected:
		var buf [64]byte
		b := append(buf[:0], `{"error":"`+api.NotSelected+`","place":`...)
		b = strconv.AppendInt(b, v.Place, 10)
		h.answerBody(ctx, route, aNotSelected, append(b, '}'))
	case room.EntriesClosed:
		h.answer(ctx, route, aEntriesClosed)
	case room.SoldOut:
		h.answer(ctx, route, aSoldOut)
	case room.Refused:
		setQueuePass(ctx, rs.ID, nil, 0)
		h.answer(ctx, route, aQueuePassInvalid)
	default: // NotOpen
		h.answerBody(ctx, route, aSaleNotStarted, sale.NotStarted)
	}
	return false
}

// appendQueued appends the body of a 202 QUEUED: position and wait, and
// once the draw is revealed the place and its chance of a unit; the nonce
// on the answer that entered the user (theirs alone: their leaf's secret).
func appendQueued(b []byte, rs *room.Sale, v *room.Verdict, secs int64) []byte {
	b = append(b, `{"status":"QUEUED","position":`...)
	b = strconv.AppendInt(b, v.Position, 10)
	b = append(b, `,"estimatedWaitSeconds":`...)
	b = strconv.AppendInt(b, secs, 10)
	if rs.Raffle {
		b = append(b, `,"mode":"raffle"`...)
	} else {
		b = append(b, `,"mode":"queue"`...)
	}
	if v.Place > 0 {
		b = append(b, `,"place":`...)
		b = strconv.AppendInt(b, v.Place, 10)
	}
	if v.Chance >= 0 {
		b = append(b, `,"chance":`...)
		b = strconv.AppendFloat(b, v.Chance, 'f', 3, 64)
	}
	if v.Nonce != "" {
		b = append(b, `,"nonce":"`...)
		b = append(b, v.Nonce...)
		b = append(b, '"')
	}
	return append(b, '}')
}

// maxQueuePoll is the longest Retry-After of a queued answer, in seconds:
// polls cost no Redis call, and a user must learn of a sell-out or an
// admission soon.
const maxQueuePoll = 5

// proofOK applies the proof of work; on refusal it has answered 428 or 403.
func (h *Handler) proofOK(ctx *fasthttp.RequestCtx, now time.Time, sale *catalog.Sale, user uint64) bool {
	if h.Proofs == nil {
		return true
	}
	d := h.ProofLevel.For(now, sale.PowDifficulty)
	if d == 0 {
		return true
	}
	proof := peek(ctx, hdrProof, hdrProofLower)
	if len(proof) == 0 {
		h.ProofLevel.Arrive(now)
		h.askProof(ctx, now, sale.ID, user, d)
		return false
	}
	switch _, res := h.Proofs.Verify(now, proof, sale.ID, user); res {
	case pow.OK:
		return true
	case pow.Expired:
		h.askProof(ctx, now, sale.ID, user, d)
	default:
		h.answer(ctx, obs.RouteTicket, aProofInvalid)
	}
	return false
}

func (h *Handler) askProof(ctx *fasthttp.RequestCtx, now time.Time, saleID int64, user uint64, d int) {
	var buf [128]byte
	b := append(buf[:0], `{"error":"PROOF_REQUIRED","challenge":"`...)
	b = h.Proofs.AppendChallenge(b, now, saleID, user, d)
	b = append(b, `","difficulty":`...)
	b = strconv.AppendInt(b, int64(d), 10)
	b = append(b, '}')
	h.answerBody(ctx, obs.RouteTicket, aProofRequired, b)
}

// queuePass returns the pass the request carries: X-Queue-Pass, else the
// cookie; nil when none.
func queuePass(ctx *fasthttp.RequestCtx) []byte {
	if p := peek(ctx, hdrQueuePass, hdrQueuePassLower); len(p) > 0 {
		return p
	}
	if p := ctx.Request.Header.CookieBytes(cookieQueuePass); len(p) > 0 {
		return p
	}
	return nil
}

// setQueuePass sends pass as X-Queue-Pass and as a cookie that only the
// sale's ticket URL receives (HttpOnly, SameSite=Strict), kept for ttl; a
// nil pass clears the cookie.
func setQueuePass(ctx *fasthttp.RequestCtx, saleID int64, pass []byte, ttl time.Duration) {
	var path [64]byte
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	c.SetKeyBytes(cookieQueuePass)
	c.SetPathBytes(appendTicketPath(path[:0], saleID))
	c.SetHTTPOnly(true)
	c.SetSameSite(fasthttp.CookieSameSiteStrictMode)
	if pass == nil {
		c.SetExpire(fasthttp.CookieExpireDelete)
	} else {
		c.SetValueBytes(pass)
		c.SetMaxAge(max(int(ttl/time.Second), 1))
		ctx.Response.Header.SetCanonical(hdrQueuePass, pass)
	}
	ctx.Response.Header.SetCookie(c)
}

func appendTicketPath(dst []byte, saleID int64) []byte {
	dst = append(dst, "/api/flash-sales/sales/"...)
	dst = strconv.AppendInt(dst, saleID, 10)
	return append(dst, "/ticket"...)
}

var (
	hdrProof          = []byte("X-Proof")
	hdrProofLower     = []byte("x-proof")
	hdrQueuePass      = []byte("X-Queue-Pass")
	hdrQueuePassLower = []byte("x-queue-pass")
	cookieQueuePass   = []byte("fs_queue")
)
