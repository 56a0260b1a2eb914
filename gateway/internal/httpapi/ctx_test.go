package httpapi

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"flashsale/gateway/internal/auth"
	"flashsale/gateway/internal/room"
	"flashsale/sharding"
	"flashsale/sharding/draw"
	"flashsale/sharding/sale"
)

// newCtx builds a RequestCtx for method and path from peer with headers
// (name, value pairs), as the server would hand it to the handler.
func newCtx(method, path, peer string, hdr ...string) *fasthttp.RequestCtx {
	var req fasthttp.Request
	req.Header.DisableNormalizing()
	req.Header.SetMethod(method)
	req.SetRequestURI(path)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	ctx := new(fasthttp.RequestCtx)
	ctx.Init(&req, &net.TCPAddr{IP: net.ParseIP(peer), Port: 40000}, nil)
	return ctx
}

// run serves ctx once and returns the status; the response is reset first, as
// the server does between requests.
func run(h *Handler, ctx *fasthttp.RequestCtx) int {
	ctx.Response.Reset()
	h.Handle(ctx)
	return ctx.Response.StatusCode()
}

// pathCase is one cheap path through the handler for alloc tests and
// benchmarks.
type pathCase struct {
	name   string
	status int
	setup  func(tb testing.TB) (*Handler, *fasthttp.RequestCtx)
}

func cheapPaths() []pathCase {
	branded := envOpt{stockPerShard: 1, itemImage: "https://img.shop.example/a.webp", brand: &sale.Brand{Shop: "Hokusai", Accent: "#0a58ca"}}
	return []pathCase{
		{"draw-page-revealed", 200, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e, rs, users := raffleEnv(tb)
			seed := draw.NewSeed()
			f := e.h.Room.Preset(rs, room.State{Cursor: 1, Entrants: 10, Final: true, At: time.Now()}, users, &seed)
			return e.h, newCtx("GET", drawPath+"/"+f.ID.String()+"/pages/0", "10.0.0.1")
		}},
		{"sale-page-branded", 200, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, branded)
			return e.h, newCtx("GET", "/sale/77", "10.0.0.1", "Accept-Language", "ja")
		}},
		{"sale-page-branded-not-modified", 304, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, branded)
			tag := e.h.Page.AppendPageETag(nil, e.cat.Snapshot().Sale(77).Page)
			return e.h, newCtx("GET", "/sale/77", "10.0.0.1", "If-None-Match", string(tag))
		}},
		{"sold-out", 410, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 0})
			return e.h, newCtx("POST", purchasePath, "10.0.0.1", "Authorization", "Bearer "+e.token(1))
		}},
		{"rate-limited-ip", 429, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 0, ipBurst: 1})
			ctx := newCtx("POST", purchasePath, "10.0.0.1", "Authorization", "Bearer "+e.token(1))
			run(e.h, ctx)
			return e.h, ctx
		}},
		{"sold-out-behind-proxy-two-xff-lines", 410, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 0, trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
			ctx := newCtx("POST", purchasePath, "10.0.0.1", "Authorization", "Bearer "+e.token(1), "X-Forwarded-For", "198.51.100.7, 10.1.1.1")
			ctx.Request.Header.Add("x-forwarded-for", "203.0.113.9")
			return e.h, ctx
		}},
		{"rate-limited-user", 429, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 1, userBurst: 1})
			ctx := newCtx("POST", purchasePath, "10.0.0.1", "Authorization", "Bearer "+e.token(1))
			run(e.h, ctx) // 202: the burst is spent
			return e.h, ctx
		}},
		{"unauthorized-missing", 401, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 1})
			return e.h, newCtx("POST", purchasePath, "10.0.0.1")
		}},
		{"unauthorized-bad-signature", 401, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 1})
			tok, _ := auth.MintHS256([]byte("another-secret-0123456789"), 1, farFuture, nil)
			return e.h, newCtx("POST", purchasePath, "10.0.0.1", "Authorization", "Bearer "+tok)
		}},
		{"cached-token-shard-sold-out", 410, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			// A repeat click: the token is cached, the item still has stock on
			// another shard, the user's home shard is flagged.
			e := newEnv(tb, envOpt{stockPerShard: 1, shards: 2})
			user := uint64(1)
			it := e.cat.Snapshot().Item(7)
			home := homeShard(user)
			e.st.setStock(e.sale.Shards[home], 0)
			it.Flags.MarkShard(home)
			return e.h, newCtx("POST", purchasePath, "10.0.0.1", "Authorization", "Bearer "+e.token(user))
		}},
		{"winner-repeat-after-sold-out", 409, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 1, shards: 1})
			ctx := newCtx("POST", purchasePath, "10.0.0.1", "Authorization", "Bearer "+e.token(1))
			run(e.h, ctx)                                                                             // 202
			run(e.h, newCtx("POST", purchasePath, "10.0.0.1", "Authorization", "Bearer "+e.token(2))) // 410 sets the flag
			e.h.Store = memoHolder(e.h.Store)
			return e.h, ctx
		}},
		{"queued-poll-with-pass", 202, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			// A queued user polls the waiting room with its pass (no Redis
			// client exists: the poll is answered from the pass alone).
			e := newEnv(tb, envOpt{stockPerShard: 5, waitingRoom: &sale.Room{}, ticketRequired: true})
			return e.h, newCtx("POST", ticketPath, "10.0.0.1", "Authorization", "Bearer "+e.token(1), "X-Queue-Pass", e.pass(1, 3))
		}},
		{"queued-poll-committed-draw", 202, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			// The same with a draw committed at the sale's creation: the
			// room's view of the sale (its parsed commitment) is made once
			// with the catalog, not on each poll.
			e := newEnv(tb, envOpt{stockPerShard: 5, waitingRoom: &sale.Room{}, ticketRequired: true,
				draw: &sale.DrawCommitment{Commitment: strings.Repeat("ab", 32)}})
			return e.h, newCtx("POST", ticketPath, "10.0.0.1", "Authorization", "Bearer "+e.token(1), "X-Queue-Pass", e.pass(1, 3))
		}},
		{"queued-poll-forged-pass", 403, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 5, waitingRoom: &sale.Room{}, ticketRequired: true})
			return e.h, newCtx("POST", ticketPath, "10.0.0.1", "Authorization", "Bearer "+e.token(1), "X-Queue-Pass", e.pass(2, 3))
		}},
		{"proof-required", 428, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 5, powDifficulty: 12, ticketRequired: true})
			return e.h, newCtx("POST", ticketPath, "10.0.0.1", "Authorization", "Bearer "+e.token(1))
		}},
		{"proof-invalid", 403, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 5, powDifficulty: 12, ticketRequired: true})
			return e.h, newCtx("POST", ticketPath, "10.0.0.1", "Authorization", "Bearer "+e.token(1), "X-Proof", "abc:12")
		}},
		{"known-buyer-repeat-read", 409, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			// Before the sell-out: a buyer this gateway answered clicks again;
			// the handler reads the buyer record (remembered after the first
			// read, see memoHolder: the allocations counted are the
			// handler's own).
			e := newEnv(tb, envOpt{stockPerShard: 5})
			ctx := newCtx("POST", purchasePath, "10.0.0.1", "Authorization", "Bearer "+e.token(1))
			run(e.h, ctx) // 202
			e.h.Store = memoHolder(e.h.Store)
			return e.h, ctx
		}},
		{"sale-not-started", 403, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 1, start: farFuture, end: farFuture.AddDate(0, 0, 1)})
			return e.h, newCtx("POST", purchasePath, "10.0.0.1")
		}},
		{"item-not-found", 404, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 1})
			return e.h, newCtx("POST", "/api/flash-sales/items/12345/purchase", "10.0.0.1")
		}},
		{"ticket-required", 403, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 1, ticketRequired: true})
			return e.h, newCtx("POST", purchasePath, "10.0.0.1", "Authorization", "Bearer "+e.token(1))
		}},
		{"ticket-invalid", 403, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 1, ticketRequired: true})
			return e.h, newCtx("POST", purchasePath, "10.0.0.1", "Authorization", "Bearer "+e.token(1), "X-Purchase-Ticket", e.ticket(2, time.Now()))
		}},
		{"ticket-valid-shard-sold-out", 410, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			// The ticket check passes, then the flagged home shard refuses.
			e := newEnv(tb, envOpt{stockPerShard: 1, shards: 1, ticketRequired: true})
			e.st.setStock(e.sale.Shards[0], 0)
			e.cat.Snapshot().Item(7).Flags.MarkShard(0)
			return e.h, newCtx("POST", purchasePath, "10.0.0.1", "Authorization", "Bearer "+e.token(1), "X-Purchase-Ticket", e.ticket(1, time.Now()))
		}},
		{"ticket-admitted", 200, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 1})
			return e.h, newCtx("POST", "/api/flash-sales/sales/77/ticket", "10.0.0.1", "Authorization", "Bearer "+e.token(1))
		}},
		{"sale-page", 200, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 1})
			return e.h, newCtx("GET", "/sale/77", "10.0.0.1")
		}},
		{"sale-page-not-modified", 304, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 1})
			return e.h, newCtx("GET", "/sale/77", "10.0.0.1", "If-None-Match", string(e.h.Page.Page().ETag))
		}},
		{"sale-page-asset", 200, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 1})
			return e.h, newCtx("GET", e.h.Page.Assets()[0], "10.0.0.1")
		}},
		{"server-time", 200, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 1})
			return e.h, newCtx("GET", "/api/flash-sales/time", "10.0.0.1")
		}},
		{"sale-description", 200, func(tb testing.TB) (*Handler, *fasthttp.RequestCtx) {
			e := newEnv(tb, envOpt{stockPerShard: 1})
			return e.h, newCtx("GET", "/api/flash-sales/sales/77", "10.0.0.1")
		}},
	}
}

// holderKey names a buyer record.
type holderKey struct {
	tag  string
	user uint64
}

// memoStore remembers the buyer records Holder read: the cheap-path tests
// count the handler's allocations, not those of the Redis client's read
// (stock.Store's cost is measured in its own package).
type memoStore struct {
	Store
	mu   sync.Mutex
	seen map[holderKey]sharding.OrderID
}

func memoHolder(s Store) Store { return &memoStore{Store: s, seen: map[holderKey]sharding.OrderID{}} }

func (m *memoStore) Holder(ctx context.Context, tag string, user uint64) (sharding.OrderID, bool, error) {
	m.mu.Lock()
	id, ok := m.seen[holderKey{tag, user}]
	m.mu.Unlock()
	if ok {
		return id, true, nil
	}
	id, ok, err := m.Store.Holder(ctx, tag, user)
	if ok && err == nil {
		m.mu.Lock()
		m.seen[holderKey{tag, user}] = id
		m.mu.Unlock()
	}
	return id, ok, err
}
