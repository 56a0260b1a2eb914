// Package httpapi is the gateway's public HTTP API on fasthttp, and the only
// package that imports fasthttp.
//
// A purchase is refused as early and as cheaply as possible: route and item
// id, per-IP bucket, sale window, the item's sold-out flag, the token, the
// per-user bucket, the user's home-shard sold-out flag, and only then one
// Redis round trip: the reserve script, which takes the unit and journals the
// order event together, acknowledged by a replica. The request never waits on
// Kafka: a relay (package journal) moves the journal there. Every refusal
// before Redis writes a precomputed body and allocates nothing.
//
// The files: httpapi.go routing and the shared refusals, purchase.go the
// purchase, settle.go the void of an attempt whose answer could not be given
// and its background retries, orders.go GET, pay and cancel, and the sale
// description.
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
	"encoding/binary"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"flashsale/gateway/internal/catalog"
	"flashsale/gateway/internal/limit"
	"flashsale/gateway/internal/obs"
	"flashsale/gateway/internal/page"
	"flashsale/gateway/internal/pow"
	"flashsale/gateway/internal/presale"
	"flashsale/gateway/internal/room"
	"flashsale/gateway/internal/ticket"
	"flashsale/sharding"
	"flashsale/sharding/api"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

// Store is what the handler needs from Redis (stock.Store).
type Store interface {
	// Reserve runs the reserve script: unit, buyer record, order record and
	// journal entry in one step.
	Reserve(ctx context.Context, r stock.Reservation) (stock.Result, error)
	// Void undoes a purchase attempt whose answer was not given in time.
	Void(ctx context.Context, r stock.Reservation) (stock.VoidOutcome, error)
	// Act journals a pay or cancel request.
	Act(ctx context.Context, a stock.ActRequest) (string, error)
	// VoidAct undoes a pay or cancel attempt whose answer was not given in time.
	VoidAct(ctx context.Context, a stock.ActRequest) (stock.VoidOutcome, error)
	// Order reads an order record.
	Order(ctx context.Context, tag string, userID uint64, id sharding.OrderID) (stock.OrderRecord, bool, error)
	// Holder reads the order a user holds in a sale from the user's home
	// shard: one plain read, no script.
	Holder(ctx context.Context, tag string, userID uint64) (id sharding.OrderID, found bool, err error)
}

// Borrower moves units of an item from a donor shard to a user's home shard
// that ran dry (stock.Store): MoveOut takes them from the donor, journaled
// there; the reservation credits them to the home shard in its own script;
// DropMove then clears the donor's journal. ReadStock reads each shard's
// units, moves in flight included; a shard that did not answer reads
// stock.Unknown and the others still count.
type Borrower interface {
	MoveOut(ctx context.Context, itemID int64, from, to string, want int64) (moveID string, units int64, err error)
	DropMove(ctx context.Context, from, moveID string) error
	ReadStock(ctx context.Context, sale *sale.Sale, itemID int64) ([]int64, error)
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
	// Budget bounds the Redis work of one request (default 250ms).
	Budget time.Duration
	// ReleaseBudget bounds the void of a purchase attempt whose answer could
	// not be given in time (default 500ms); the 503 waits for it.
	ReleaseBudget time.Duration
	// OrderTTL is the lifetime of the order record in Redis (default 24h).
	OrderTTL time.Duration
	// JournalBound is the most entries a shard's hand-off journal holds
	// before purchases, pays and cancels on it are refused (default 50,000).
	JournalBound int
	// TrustedProxies are the peers whose X-Forwarded-For names the client.
	TrustedProxies []netip.Prefix
	// NoRepeatRead sends every repeat click to the reserve script (see
	// Handler.repeat).
	NoRepeatRead bool
	// Dev enables the development sign-in (POST /api/flash-sales/dev/token),
	// which mints HS256 tokens with DevSecret (and DevIssuer, DevAudience
	// when set); without Dev, or without a secret, the route is 404.
	Dev                    bool
	DevSecret              []byte
	DevIssuer, DevAudience string
}

// Deps are the handler's collaborators; all are required except Borrower
// and Log.
type Deps struct {
	Catalog   *catalog.Catalog
	Store     Store
	Verifier  Verifier
	IPLimit   Limiter
	UserLimit Limiter
	Metrics   *obs.Metrics
	// Page is the sale page; when nil, New renders it with page.Config{}.
	Page *page.Site
	// Tickets signs and verifies purchase tickets; when nil, New makes keys
	// of its own (valid on this handler only).
	Tickets *ticket.Keys
	// Room, when set, serves the waiting rooms and raffles of the sales
	// that have one; without it every sale admits at once.
	Room *room.Room
	// Presale, when set, serves the presale phase of the sales that have
	// one; without it a presale is closed to everyone (PRESALE_ONLY).
	Presale *presale.Gate
	// Proofs, when set, issues and checks the proof of work of sales (or an
	// operator) that ask for one, at the difficulty ProofLevel chooses.
	Proofs     *pow.Issuer
	ProofLevel *pow.Level
	// Borrower, when set, serves users whose home shard ran dry from the
	// item's other shards; without it they are told SOLD_OUT until the shard
	// is refilled.
	Borrower Borrower
	// Fence, when set, says which shards this gateway may journal on now
	// (journal.Fence): a purchase, pay or cancel on another is answered 503,
	// nothing sent. Without it every shard may be written.
	Fence Fence
	Log   *slog.Logger
}

// Fence says whether this gateway's fence mark on a shard is fresh enough
// to journal an entry there (journal.Fence). It must not allocate.
type Fence interface {
	Fresh(tag string, now time.Time) bool
}

// Handler serves the public API. It is safe for concurrent use.
type Handler struct {
	cfg Config
	Deps
	seedHi, seedLo uint64
	counter        atomic.Uint64
	winners        *winners
	deadlines      *deadlines
	retries        *retryQueue
	readers        sync.Map // *catalog.Item -> *freshReader
}

// New returns a handler. Close stops its background retries.
func New(cfg Config, d Deps) *Handler {
	if cfg.Budget <= 0 {
		cfg.Budget = 250 * time.Millisecond
	}
	if cfg.ReleaseBudget <= 0 {
		cfg.ReleaseBudget = 500 * time.Millisecond
	}
	if cfg.OrderTTL <= 0 {
		cfg.OrderTTL = 24 * time.Hour
	}
	if cfg.JournalBound <= 0 {
		cfg.JournalBound = DefaultJournalBound
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Proofs != nil && d.ProofLevel == nil {
		d.ProofLevel = &pow.Level{}
	}
	if d.Tickets == nil {
		d.Tickets = ticket.Random()
	}
	if d.Page == nil {
		d.Page = page.Default()
	}
	h := &Handler{cfg: cfg, Deps: d, winners: newWinners(), deadlines: newDeadlines(cfg.Budget)}
	h.retries = newRetryQueue(h, retryQueueLen)
	var seed [16]byte
	_, _ = rand.Read(seed[:]) // crypto/rand.Read never fails on supported platforms
	h.seedHi, h.seedLo = binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])
	return h
}

// DefaultJournalBound is the default of Config.JournalBound.
const DefaultJournalBound = stock.DefaultJournalBound

// Close stops the background retry queue; voids still queued are logged.
func (h *Handler) Close() { h.retries.close() }

// RetriesPending returns the voids waiting in the background queue.
func (h *Handler) RetriesPending() int { return h.retries.pending() }

// PendingVoidTags adds to dst the shards where a void of this gateway waits
// to land (queued, or being tried): journal.Fence does not beat them.
func (h *Handler) PendingVoidTags(dst map[string]bool) { h.retries.pendingTags(dst) }

// fenced reports whether tag may not be journaled on now, and then answers
// 503 on route: this gateway's fence mark there is stale (it could not reach
// the shard's master lately, or has a void for it still to land), and an
// entry it wrote could be taken by a relay before a void of it landed.
func (h *Handler) fenced(ctx *fasthttp.RequestCtx, route obs.Route, tag string, now time.Time) bool {
	if h.Fence == nil || h.Fence.Fresh(tag, now) {
		return false
	}
	h.Metrics.Fenced()
	h.answer(ctx, route, aUnavailable)
	return true
}

// Handle is the fasthttp request handler.
func (h *Handler) Handle(ctx *fasthttp.RequestCtx) {
	now := time.Now()
	route, arg := Route(ctx.Path())
	switch route {
	case obs.RoutePurchase:
		if h.method(ctx, route, fasthttp.MethodPost) {
			h.purchase(ctx, now, arg)
		}
	case obs.RouteOrder:
		if h.method(ctx, route, fasthttp.MethodGet) {
			h.order(ctx, now, arg)
		}
	case obs.RoutePay, obs.RouteCancel:
		if h.method(ctx, route, fasthttp.MethodPost) {
			h.payOrCancel(ctx, now, route, arg)
		}
	case obs.RouteSale:
		if h.method(ctx, route, fasthttp.MethodGet) {
			h.sale(ctx, now, arg)
		}
	case obs.RouteHeld:
		if h.method(ctx, route, fasthttp.MethodGet) {
			h.heldOrder(ctx, now, arg)
		}
	case obs.RouteTicket:
		if h.method(ctx, route, fasthttp.MethodPost) {
			h.ticket(ctx, now, arg)
		}
	case obs.RouteDraw:
		if h.method(ctx, route, fasthttp.MethodGet) {
			h.drawPublished(ctx, now, arg)
		}
	case obs.RouteDrawMe:
		if h.method(ctx, route, fasthttp.MethodGet) {
			h.drawMe(ctx, now, arg)
		}
	case obs.RouteDrawLog:
		if h.method(ctx, route, fasthttp.MethodGet) {
			h.drawLog(ctx, now, arg)
		}
	case obs.RouteDrawEntry:
		if h.method(ctx, route, fasthttp.MethodGet) {
			h.drawEntry(ctx, now, arg)
		}
	case obs.RouteDrawPage:
		if h.method(ctx, route, fasthttp.MethodGet) {
			h.drawPage(ctx, now, arg)
		}
	case obs.RoutePage:
		h.salePage(ctx, arg)
	case obs.RouteDev:
		h.devToken(ctx, now)
	case obs.RouteTime:
		if h.method(ctx, route, fasthttp.MethodGet) {
			h.serverTime(ctx, now)
		}
	default:
		h.answer(ctx, route, aNotFound)
	}
}

// method reports whether the request's method is want (GET or POST; a GET
// route takes HEAD too, which fasthttp answers without the body, as HTTP
// wants of every GET resource); when it is not, it has answered 405 naming
// what the route takes in Allow.
func (h *Handler) method(ctx *fasthttp.RequestCtx, route obs.Route, want string) bool {
	if m := ctx.Method(); string(m) == want || (want == fasthttp.MethodGet && string(m) == fasthttp.MethodHead) {
		return true
	}
	if want == fasthttp.MethodPost {
		h.answer(ctx, route, aMethodPost)
	} else {
		h.answer(ctx, route, aMethodGet)
	}
	return false
}

// clientAllowed applies the per-IP bucket; on refusal it has answered 429.
func (h *Handler) clientAllowed(ctx *fasthttp.RequestCtx, now time.Time, route obs.Route) bool {
	var peer netip.Addr
	if tcp, ok := ctx.RemoteAddr().(interface{ AddrPort() netip.AddrPort }); ok {
		peer = tcp.AddrPort().Addr()
	}
	client := peer
	if len(h.cfg.TrustedProxies) > 0 {
		var buf [maxXFFLines][]byte
		if lines, ok := xffLines(&ctx.Request.Header, &buf); ok {
			client = limit.ClientIPLines(peer, lines, h.cfg.TrustedProxies)
		}
	}
	ok, retry := h.IPLimit.Allow(now, limit.IPKey(client))
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
	tok, ok := bearer(&ctx.Request.Header)
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

func (h *Handler) observe(route obs.Route, start time.Time) {
	h.Metrics.Observe(route, time.Since(start).Seconds())
}

// answerOrder answers {"orderId":"...","status":"..."} or, with an empty
// status, {"error":"ALREADY_PURCHASED","orderId":"..."}.
func (h *Handler) answerOrder(ctx *fasthttp.RequestCtx, route obs.Route, a answer, id sharding.OrderID, status string) {
	var buf [96]byte
	var b []byte
	if status == "" {
		b = append(buf[:0], `{"error":"`+api.AlreadyPurchased+`","orderId":"`...)
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
	if body == nil {
		h.answerRaw(ctx, route, a, answers[a].body)
		return
	}
	h.status(ctx, route, a)
	ctx.Response.SetBody(body)
}

// answerRaw is answerBody for a body that never changes (a's own, or a
// page built once and kept): it is sent as is, not copied.
func (h *Handler) answerRaw(ctx *fasthttp.RequestCtx, route obs.Route, a answer, body []byte) {
	h.status(ctx, route, a)
	ctx.Response.SetBodyRaw(body)
}

// status writes a's status line and headers, and counts it.
func (h *Handler) status(ctx *fasthttp.RequestCtx, route obs.Route, a answer) {
	spec := &answers[a]
	r := &ctx.Response
	r.SetStatusCode(spec.status)
	r.Header.SetContentTypeBytes(contentJSON)
	if spec.allow != nil {
		r.Header.SetCanonical(hdrAllow, spec.allow)
	}
	h.Metrics.Request(route, spec.status)
}

func peek(ctx *fasthttp.RequestCtx, canonical, lower []byte) []byte {
	if v := ctx.Request.Header.PeekCanonical(canonical); v != nil {
		return v
	}
	return ctx.Request.Header.PeekCanonical(lower)
}
