package httpapi

import (
	"encoding/json"
	"time"

	"github.com/valyala/fasthttp"

	"flashsale/gateway/internal/auth"
	"flashsale/gateway/internal/obs"
	"flashsale/gateway/internal/page"
)

// Header names and values of the sale page.
var (
	hdrETag        = []byte("ETag")
	hdrIfNoneMatch = []byte("If-None-Match")
	hdrINMLower    = []byte("if-none-match")
	hdrCSP         = []byte("Content-Security-Policy")
	hdrNoSniff     = []byte("X-Content-Type-Options")
	hdrReferrer    = []byte("Referrer-Policy")
	valNoSniff     = []byte("nosniff")
	valReferrer    = []byte("same-origin")
)

// salePage serves GET /sale/{saleId} (the page: the same bytes for every
// sale id and user), GET /sale/assets/<hashed name> and GET
// /sale/media/<image>. The page's Content-Security-Policy is its sale's
// (page.Policy: the image origins of its branding), from the catalog, and
// the default one for a sale the gateway does not know: the page loads the
// sale itself, so a CDN may serve it before the gateway knows the sale. An
// address under /sale/ that names no sale id is a person's typo: it gets
// the page too (which says so), with 404 and no ETag; a missing asset is a
// machine's request and gets JSON. Nothing here reads Redis, and nothing
// allocates.
func (h *Handler) salePage(ctx *fasthttp.RequestCtx, arg []byte) {
	const route = obs.RoutePage
	if m := ctx.Method(); string(m) != fasthttp.MethodGet && string(m) != fasthttp.MethodHead {
		h.answer(ctx, route, aMethodGet)
		return
	}
	a, pol, status, sale := h.pageAsset(arg)
	if sale != 0 {
		defer h.pageLoaded(sale) // the funnel's page loads
	}
	if a == nil {
		h.answer(ctx, route, aNotFound)
		return
	}
	var buf [64]byte
	tag := a.ETag
	if a == h.Page.Page() {
		tag = h.Page.AppendPageETag(buf[:0], pol)
	}
	r := &ctx.Response
	r.Header.SetCanonical(hdrCacheControl, a.CacheControl)
	if status == fasthttp.StatusOK {
		r.Header.SetCanonical(hdrETag, tag)
		if page.NotModified(peek(ctx, hdrIfNoneMatch, hdrINMLower), tag) {
			r.SetStatusCode(fasthttp.StatusNotModified)
			h.Metrics.Request(route, fasthttp.StatusNotModified)
			return
		}
	}
	csp := pol.CSP
	if a.CSP != nil {
		csp = a.CSP
	}
	r.Header.SetCanonical(hdrNoSniff, valNoSniff)
	r.Header.SetCanonical(hdrReferrer, valReferrer)
	r.Header.SetCanonical(hdrCSP, csp)
	r.SetStatusCode(status)
	r.Header.SetContentTypeBytes(a.ContentType)
	r.SetBodyRaw(a.Body)
	h.Metrics.Request(route, status)
}

// pageAsset finds what arg (the path after "/sale/") names: an asset, an
// image of the media directory or the page, with the page's policy and
// the status to answer; nil when nothing.
func (h *Handler) pageAsset(arg []byte) (*page.Asset, *page.Policy, int, int64) {
	if name, ok := cutPrefix(arg, "assets/"); ok {
		return h.Page.Asset(name), page.DefaultPolicy, fasthttp.StatusOK, 0
	}
	if name, ok := cutPrefix(arg, "media/"); ok {
		return h.Page.Media(name), page.DefaultPolicy, fasthttp.StatusOK, 0
	}
	id, ok := parseID(trimSlash(arg))
	if !ok {
		return h.Page.Page(), page.DefaultPolicy, fasthttp.StatusNotFound, 0
	}
	if s := h.Catalog.Snapshot().Sale(id); s != nil && s.Page != nil {
		return h.Page.Page(), s.Page, fasthttp.StatusOK, id
	}
	return h.Page.Page(), page.DefaultPolicy, fasthttp.StatusOK, id
}

func cutPrefix(b []byte, p string) ([]byte, bool) {
	if hasPrefix(b, p) {
		return b[len(p):], true
	}
	return b, false
}

func trimSlash(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '/' {
		return b[:n-1]
	}
	return b
}

// devTokenLifetime is how long a development sign-in token lasts.
const devTokenLifetime = 12 * time.Hour

// devToken serves POST /api/flash-sales/dev/token, the development sign-in:
// {"userId":"<digits>"} -> {"token":"<HS256 JWT>","expiresAt":"..."}. It
// exists only on a gateway started with -dev and an HS256 secret; anywhere
// else the route is 404 NOT_FOUND, as if it did not exist.
func (h *Handler) devToken(ctx *fasthttp.RequestCtx, now time.Time) {
	const route = obs.RouteDev
	if !h.cfg.Dev || len(h.cfg.DevSecret) == 0 {
		h.answer(ctx, route, aNotFound)
		return
	}
	if string(ctx.Method()) != fasthttp.MethodPost {
		h.answer(ctx, route, aMethodPost)
		return
	}
	if !h.clientAllowed(ctx, now, route) {
		return
	}
	var req struct {
		UserID json.Number `json:"userId"`
		// Tier, when set, is the token's "tier" claim (a presale's
		// usual claim; at most 64 characters).
		Tier string `json:"tier"`
	}
	user, ok := uint64(0), json.Unmarshal(ctx.PostBody(), &req) == nil && len(req.Tier) <= 64
	if ok {
		id, idOK := parseID([]byte(req.UserID.String()))
		user, ok = uint64(id), idOK
	}
	if !ok {
		h.answerBody(ctx, route, aBadRequest, nil)
		return
	}
	extra := map[string]any{}
	if h.cfg.DevIssuer != "" {
		extra["iss"] = h.cfg.DevIssuer
	}
	if h.cfg.DevAudience != "" {
		extra["aud"] = h.cfg.DevAudience
	}
	if req.Tier != "" {
		extra["tier"] = req.Tier
	}
	exp := now.Add(devTokenLifetime)
	tok, err := auth.MintHS256(h.cfg.DevSecret, user, exp, extra)
	if err != nil {
		h.Log.Error("minting a development token", "err", err)
		h.answer(ctx, route, aUnavailable)
		return
	}
	b, _ := json.Marshal(map[string]string{"token": tok, "expiresAt": exp.UTC().Format(rfc3339Milli)})
	ctx.Response.Header.SetCanonical(hdrCacheControl, valNoStore)
	h.answerBody(ctx, route, aOK, b)
}
