package httpapi

import (
	"bytes"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"flashsale/gateway/internal/catalog"
	"flashsale/gateway/internal/obs"
	"flashsale/gateway/internal/room"
	"flashsale/sharding/draw"
)

// The published draw (SPEC "Fair access"): GET .../sales/{id}/draw serves
// the commitment, then the root and count once the entrants are frozen, then
// the seed and every leaf with its draw and place once revealed, in pages of
// DrawPage entries (?from=K); GET .../draw/me serves the caller's own entry
// with its inclusion proof. Both are read from this gateway's copy of the
// admission state (no Redis call, but for /draw/me before the freeze: one
// HGET). Once revealed, the draw's pages and entries are also served under
// its address (draw.ID), immutable; their JSON is version 1 of this
// format, and a change to it (or to DrawPage) takes a new path.

// DrawPage is the most entries one /draw answer carries.
const DrawPage = room.PageSize

// Draw states, as /draw names them.
const (
	drawOpen     = "OPEN"     // entries may still come
	drawFrozen   = "FROZEN"   // root and count recorded, seed not yet public
	drawRevealed = "REVEALED" // seed public: every place can be checked
)

// drawSale reads the sale arg names and its room's state, or answers (404
// SALE_NOT_FOUND, NO_DRAW, ...).
func (h *Handler) drawSale(ctx *fasthttp.RequestCtx, now time.Time, route obs.Route, arg []byte) (*catalog.Sale, *room.Sale, *room.State, bool) {
	sale := h.saleOf(ctx, now, route, arg)
	if sale == nil {
		return nil, nil, nil, false
	}
	rs, st, ok := h.drawOf(ctx, route, sale)
	return sale, rs, st, ok
}

// drawOf returns sale's room and its state, or answers 404 NO_DRAW.
func (h *Handler) drawOf(ctx *fasthttp.RequestCtx, route obs.Route, sale *catalog.Sale) (*room.Sale, *room.State, bool) {
	if !sale.InRoom || h.Room == nil {
		h.answer(ctx, route, aNoDraw)
		return nil, nil, false
	}
	st := h.Room.State(sale.ID)
	if st == nil {
		st = &room.State{}
	}
	return &sale.Room, st, true
}

func (h *Handler) drawPublished(ctx *fasthttp.RequestCtx, now time.Time, arg []byte) {
	const route = obs.RouteDraw
	sale, rs, st, ok := h.drawSale(ctx, now, route, arg)
	if !ok {
		return
	}
	// A page starts on a multiple of DrawPage (as next points): any other
	// from is rounded down, so every page is built once and cached.
	from, err := strconv.Atoi(string(ctx.QueryArgs().Peek("from")))
	if err != nil || from < 0 {
		from = 0
	}
	from -= from % DrawPage
	if f := st.Frozen; f != nil && f.Revealed {
		// The revealed draw never changes: each page is built once, the
		// same bytes as under its address (drawPage), which is what caches
		// should keep.
		build := func() []byte { return buildPage(sale, rs, st, f, from) }
		body, cached := f.PageBody(from/DrawPage, build)
		if !cached { // past the last page: an empty one
			body = build()
		}
		ctx.Response.Header.SetCanonical(hdrCacheControl, valCacheRevealed)
		h.answerRaw(ctx, route, aOK, body) // kept for good, or built for this answer alone
		return
	}
	ctx.Response.Header.SetCanonical(hdrCacheControl, valCacheControl)
	h.answerBody(ctx, route, aOK, append(appendDrawHead(make([]byte, 0, 512), sale, rs, st), '}'))
}

var valCacheRevealed = []byte("public, max-age=60")

// buildPage builds the page of f, s's revealed draw, from entry from.
func buildPage(sale *catalog.Sale, rs *room.Sale, st *room.State, f *room.Frozen, from int) []byte {
	b := appendDrawHead(make([]byte, 0, 1024+170*max(0, min(DrawPage, f.Count-from))), sale, rs, st)
	return append(appendEntries(b, &f.Published, from), '}')
}

// appendDrawHead appends /draw's fields up to the entries, without the
// closing brace.
func appendDrawHead(b []byte, sale *catalog.Sale, rs *room.Sale, st *room.State) []byte {
	b = append(b, `{"saleId":`...)
	b = strconv.AppendInt(b, sale.ID, 10)
	b = append(b, `,"access":"`...)
	b = append(b, sale.Mode()...)
	b = append(b, `","state":"`...)
	f := st.Frozen
	switch {
	case f == nil:
		b = append(b, drawOpen...)
	case f.Revealed:
		b = append(b, drawRevealed...)
	default:
		b = append(b, drawFrozen...)
	}
	b = append(b, `","commitment":`...)
	b = appendHashOrNull(b, rs.Commitment)
	b = appendBeacon(b, rs, f)
	b = append(b, `,"count":`...)
	if f == nil {
		return strconv.AppendInt(b, st.Entrants, 10)
	}
	b = strconv.AppendInt(b, int64(f.Count), 10)
	b = appendHashField(b, "root", f.Root)
	b = append(b, `,"frozenAt":"`...)
	b = f.FrozenAt.UTC().AppendFormat(b, rfc3339Milli)
	b = append(b, '"')
	b = appendHead(b, f)
	if f.Revealed {
		b = appendHashField(b, "id", f.ID)
		b = append(b, `,"pages":`...)
		b = strconv.AppendInt(b, int64(pages(f)), 10)
		b = appendHashField(b, "seed", f.Seed)
		b = append(b, `,"committed":`...)
		b = strconv.AppendBool(b, f.Committed)
	}
	return b
}

// appendEntries appends the page of entries from index from, and next when
// more follow.
func appendEntries(b []byte, p *draw.Published, from int) []byte {
	from = min(from, len(p.Leaves))
	to := min(from+DrawPage, len(p.Leaves))
	b = append(b, `,"from":`...)
	b = strconv.AppendInt(b, int64(from), 10)
	b = append(b, `,"entries":[`...)
	for i := from; i < to; i++ {
		if i > from {
			b = append(b, ',')
		}
		b = append(b, `{"leaf":"`...)
		b = hex.AppendEncode(b, p.Leaves[i][:])
		b = append(b, `","draw":"`...)
		b = hex.AppendEncode(b, p.Draws[i][:])
		b = append(b, `","place":`...)
		b = strconv.AppendInt(b, int64(p.Places[i]), 10)
		b = append(b, '}')
	}
	b = append(b, ']')
	if to < len(p.Leaves) {
		b = append(b, `,"next":`...)
		b = strconv.AppendInt(b, int64(to), 10)
	}
	return b
}

func appendHashField(b []byte, name string, h draw.Hash) []byte {
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":"`...)
	b = hex.AppendEncode(b, h[:])
	return append(b, '"')
}

func appendHashOrNull(b []byte, h *draw.Hash) []byte {
	if h == nil {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = hex.AppendEncode(b, h[:])
	return append(b, '"')
}

func (h *Handler) drawMe(ctx *fasthttp.RequestCtx, now time.Time, arg []byte) {
	const route = obs.RouteDrawMe
	sale := h.saleOf(ctx, now, route, arg)
	if sale == nil {
		return
	}
	ctx.Response.Header.SetCanonical(hdrCacheControl, valNoStore)
	user, _, ok := h.user(ctx, now, route)
	if !ok {
		return
	}
	rs, st, ok := h.drawOf(ctx, route, sale)
	if !ok {
		return
	}
	b := append(make([]byte, 0, 1024), `{"saleId":`...)
	b = strconv.AppendInt(b, sale.ID, 10)
	b = append(b, `,"entered":true`...)
	if f := st.Frozen; f != nil && f.Entered(user) {
		e, _ := f.Entry(user)
		h.answerBody(ctx, route, aOK, append(appendEntry(b, rs, f, &e), '}'))
		return
	} else if f != nil {
		// Frozen: the entrants are final, and this one is not among them.
		h.answer(ctx, route, aNotEntered)
		return
	}
	rctx, _ := h.deadlines.get(now)
	nonce, entered, err := h.Room.Nonce(rctx, rs, user)
	switch {
	case err != nil:
		h.Log.Warn("reading a draw entry", "sale", sale.ID, "err", err)
		h.answer(ctx, route, aUnavailable)
	case !entered:
		h.answer(ctx, route, aNotEntered)
	default:
		b = append(b, `,"nonce":"`...)
		b = hex.AppendEncode(b, nonce[:])
		b = append(b, '"')
		b = appendHashField(b, "leaf", draw.Leaf(sale.ID, user, nonce))
		h.answerBody(ctx, route, aOK, append(b, '}'))
	}
}

// appendEntry appends an entry's fields: what the user needs to check
// their own place (their leaf from their id and nonce, its inclusion proof
// under the root, the signed tree head, and once revealed the beacon round,
// the seed against the commitment, their draw and place).
func appendEntry(b []byte, rs *room.Sale, f *room.Frozen, e *room.Entry) []byte {
	b = append(b, `,"nonce":"`...)
	b = hex.AppendEncode(b, e.Nonce[:])
	b = append(b, '"')
	return appendPublicEntry(b, rs, f, e)
}

// appendPublicEntry appends an entry's fields but the nonce: its leaf,
// index, proof, the tree head, and once revealed the beacon, draw, place,
// seed and commitment.
func appendPublicEntry(b []byte, rs *room.Sale, f *room.Frozen, e *room.Entry) []byte {
	b = appendHashField(b, "leaf", e.Leaf)
	b = append(b, `,"index":`...)
	b = strconv.AppendInt(b, int64(e.Index), 10)
	b = append(b, `,"count":`...)
	b = strconv.AppendInt(b, int64(f.Count), 10)
	b = appendHashField(b, "root", f.Root)
	b = append(b, `,"proof":[`...)
	for i, p := range e.Proof {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = hex.AppendEncode(b, p[:])
		b = append(b, '"')
	}
	b = append(b, ']')
	b = appendHead(b, f)
	b = appendBeacon(b, rs, f)
	if !f.Revealed {
		return b
	}
	b = appendHashField(b, "draw", e.Draw)
	b = append(b, `,"place":`...)
	b = strconv.AppendInt(b, int64(e.Place), 10)
	b = appendHashField(b, "seed", f.Seed)
	return appendHashField(b, "commitment", f.Commitment)
}

// appendBeacon appends the sale's beacon round, when a round seals its
// draw: chain, name, round, its time, and its signature once recorded; and
// the tree head's public key.
func appendBeacon(b []byte, rs *room.Sale, f *room.Frozen) []byte {
	if !rs.Sealed() {
		return b
	}
	b = append(b, `,"headKey":"`...)
	b = append(b, rs.HeadKey...)
	b = append(b, `","beacon":{"chain":"`...)
	b = append(b, rs.Chain.Hash...)
	b = append(b, `","name":"`...)
	b = append(b, rs.Chain.Name...)
	b = append(b, `","round":`...)
	b = strconv.AppendUint(b, rs.Round, 10)
	b = append(b, `,"at":"`...)
	b = rs.Chain.TimeOf(rs.Round).UTC().AppendFormat(b, rfc3339Milli)
	b = append(b, '"')
	if f != nil && f.Beacon != nil {
		b = append(b, `,"signature":"`...)
		b = hex.AppendEncode(b, f.Beacon.Signature)
		b = append(b, '"')
	}
	return append(b, '}')
}

// appendHead appends the signed tree head of a sealed, frozen draw.
func appendHead(b []byte, f *room.Frozen) []byte {
	hd := f.Head
	if hd == nil {
		return b
	}
	b = append(b, `,"head":{"sale":`...)
	b = strconv.AppendInt(b, hd.Sale, 10)
	b = append(b, `,"count":`...)
	b = strconv.AppendInt(b, int64(hd.Count), 10)
	b = appendHashField(b, "root", hd.Root)
	b = append(b, `,"frozenAtMs":`...)
	b = strconv.AppendInt(b, hd.FrozenAt.UnixMilli(), 10)
	b = append(b, `,"chain":"`...)
	b = append(b, hd.Chain...)
	b = append(b, `","round":`...)
	b = strconv.AppendUint(b, hd.Round, 10)
	b = append(b, `,"signature":"`...)
	b = hex.AppendEncode(b, f.HeadSig)
	return append(b, `"}`...)
}

// drawLog serves GET .../draw/log: the draw's log as this gateway last read
// it (each body the exact text its hash covers).
func (h *Handler) drawLog(ctx *fasthttp.RequestCtx, now time.Time, arg []byte) {
	const route = obs.RouteDrawLog
	sale, _, st, ok := h.drawSale(ctx, now, route, arg)
	if !ok {
		return
	}
	var log []draw.Entry
	if st.Frozen != nil {
		log = st.Frozen.Log
	}
	b := append(make([]byte, 0, 512+400*len(log)), `{"saleId":`...)
	b = strconv.AppendInt(b, sale.ID, 10)
	b = append(b, `,"entries":[`...)
	for i, e := range log {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"hash":"`...)
		b = hex.AppendEncode(b, e.Hash[:])
		b = append(b, `","body":`...)
		b = strconv.AppendQuote(b, string(e.Body))
		b = append(b, '}')
	}
	ctx.Response.Header.SetCanonical(hdrCacheControl, valCacheControl)
	h.answerBody(ctx, route, aOK, append(b, "]}"...))
}

// valCacheForever marks a content-addressed answer: it never changes.
var valCacheForever = []byte("public, max-age=31536000, immutable")

// revealedUnder returns st's revealed draw when path's draw id
// (".../draw/{id}/{kind}/{rest}") is its address, with rest. A draw not
// revealed, or revealed under another id, has nothing under id; nor has a
// sealed draw whose tree head this gateway could not sign (its pages would
// lack the head another gateway's carry, under the same address).
func revealedUnder(path []byte, rs *room.Sale, st *room.State, kind string) (*room.Frozen, []byte, bool) {
	const n = 2 * len(draw.Hash{})
	i := bytes.Index(path, []byte("/draw/"))
	if i < 0 {
		return nil, nil, false
	}
	p := path[i+len("/draw/"):]
	if len(p) < n+len(kind)+2 || p[n] != '/' || string(p[n+1:n+1+len(kind)]) != kind || p[n+1+len(kind)] != '/' {
		return nil, nil, false
	}
	f := st.Frozen
	id, ok := draw.ParseLowerHash(p[:n])
	if !ok || f == nil || !f.Revealed || (rs.Sealed() && f.Head == nil) || id != f.ID {
		return nil, nil, false
	}
	return f, p[n+len(kind)+2:], true
}

// drawPage serves GET .../draw/{id}/pages/{k}: page k of the revealed draw
// whose address is id (the body of /draw?from=k x DrawPage), immutable: a
// results-day crowd reads the public draw from a CDN, not the gateway.
func (h *Handler) drawPage(ctx *fasthttp.RequestCtx, now time.Time, arg []byte) {
	const route = obs.RouteDrawPage
	sale, rs, st, ok := h.drawSale(ctx, now, route, arg)
	if !ok {
		return
	}
	f, rest, ok := revealedUnder(ctx.Path(), rs, st, "pages")
	k, isPage := pageNumber(rest)
	var body []byte
	if ok && isPage && k < pages(f) {
		body, ok = f.PageBody(k, func() []byte { return buildPage(sale, rs, st, f, k*DrawPage) })
	}
	if !ok || !isPage || body == nil {
		// Not (yet) here: another gateway may have revealed first, so no
		// cache may keep this answer for the address.
		ctx.Response.Header.SetCanonical(hdrCacheControl, valNoStore)
		h.answer(ctx, route, aNotFound)
		return
	}
	ctx.Response.Header.SetCanonical(hdrCacheControl, valCacheForever)
	h.answerRaw(ctx, route, aOK, body) // kept for good: never copied
}

// pages is the number of pages of f, a revealed draw: one at least.
func pages(f *room.Frozen) int { return max(1, (f.Count+DrawPage-1)/DrawPage) }

// pageNumber parses a page number as its address writes it: decimal, no
// sign, no leading zero (so that each page has one address), at most 9
// digits.
func pageNumber(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	k := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		k = 10*k + int(c-'0')
	}
	return k, true
}

// drawEntry serves GET .../draw/{id}/entries/{leaf}: one entrant's result in
// the revealed draw whose address is id, by its leaf (which names no one),
// with its inclusion proof, the tree head and the beacon: what a buyer
// needs to check their place, without their token, from a CDN on results
// day.
func (h *Handler) drawEntry(ctx *fasthttp.RequestCtx, now time.Time, arg []byte) {
	const route = obs.RouteDrawEntry
	sale, rs, st, ok := h.drawSale(ctx, now, route, arg)
	if !ok {
		return
	}
	ctx.Response.Header.SetCanonical(hdrCacheControl, valNoStore) // until found
	f, rest, ok := revealedUnder(ctx.Path(), rs, st, "entries")
	if !ok {
		h.answer(ctx, route, aNotFound)
		return
	}
	leaf, ok := draw.ParseLowerHash(rest)
	if !ok {
		h.answer(ctx, route, aNotEntered)
		return
	}
	e, ok := f.EntryOf(leaf)
	if !ok {
		h.answer(ctx, route, aNotEntered)
		return
	}
	b := append(make([]byte, 0, 2048), `{"saleId":`...)
	b = strconv.AppendInt(b, sale.ID, 10)
	ctx.Response.Header.SetCanonical(hdrCacheControl, valCacheForever)
	h.answerBody(ctx, route, aOK, append(appendPublicEntry(b, rs, f, &e), '}'))
}
