package httpapi

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"flashsale/deploy/testenv"
	"flashsale/gateway/internal/auth"
	"flashsale/gateway/internal/catalog"
	"flashsale/gateway/internal/limit"
	"flashsale/gateway/internal/mac"
	"flashsale/gateway/internal/obs"
	"flashsale/gateway/internal/page"
	"flashsale/gateway/internal/pow"
	"flashsale/gateway/internal/presale"
	"flashsale/gateway/internal/room"
	"flashsale/gateway/internal/ticket"
	"flashsale/lua"
	"flashsale/sharding"
	"flashsale/sharding/orderevent"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

var testSecret = []byte("test-secret-0123456789abcdef")

// scriptStore is the handler tests' Store, Borrower and catalog source: the
// real scripts (stock.Store) on a redis-server of the test's own, with the
// faults a test injects around them (an unreachable Redis, a reply lost
// after the script ran, a void that cannot land). It replaces a Go twin of
// the scripts that drifted from them: the twin's replay left an order's
// attempt alone after reserve.lua's replay took it over, so the handler
// tests modelled the very bug that change had removed.
type scriptStore struct {
	t     testing.TB
	real  *stock.Store
	c     rueidis.Client
	sales []*sale.Sale

	mu  sync.Mutex
	err error // returned by every call when set
	// lostReply makes Reserve apply the script and then report an error, as
	// when the reply is lost on the way back.
	lostReply bool
	voidErr   error // returned by Void and VoidAct when set
	// freezeOnVoid fences the void's shard, as a reshard does, right
	// before Void or VoidAct runs.
	freezeOnVoid bool
	// lostActs makes that many Act calls apply and then report an error;
	// actErr fails every Act call before it applies.
	lostActs int
	actErr   error
	// taken makes a relay take every journal entry the moment it is
	// written (the shard's taken watermark follows the journal's end).
	taken    bool
	bound    int             // journal bound of every call, when > 0
	unread   map[string]bool // shards whose stock reading and moves fail
	reserves int
	voids    int
	holders  int // Holder calls
	calls    int // every call of the Store interface: what would reach Redis
}

func newScriptStore(t testing.TB, sales []*sale.Sale) *scriptStore {
	c := testenv.LoneRedis(t)
	st := &scriptStore{t: t, real: stock.New(c), c: c, sales: sales}
	if err := st.real.LoadScripts(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}

// fault runs a Store call's bookkeeping under mu and returns the injected
// error, if any.
func (f *scriptStore) fault(count *int) (lost, taken bool, bound int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if count != nil {
		*count++
	}
	return f.lostReply, f.taken, f.bound, f.err
}

func (f *scriptStore) Sales(context.Context) ([]*sale.Sale, error) { return f.sales, nil }

// ReadStock reads the shards as stock.Store.ReadStock does; a shard in the
// unread set reads stock.Unknown.
func (f *scriptStore) ReadStock(ctx context.Context, sale *sale.Sale, itemID int64) ([]int64, error) {
	out, err := f.real.ReadStock(ctx, sale, itemID)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, tag := range sale.Shards {
		if f.unread[tag] {
			out[i] = stock.Unknown
		}
	}
	return out, nil
}

// MoveOut runs move_out.lua; a shard in the unread set does not answer.
func (f *scriptStore) MoveOut(ctx context.Context, itemID int64, from, to string, want int64) (string, int64, error) {
	f.mu.Lock()
	down := f.unread[from]
	f.mu.Unlock()
	if down {
		return "", 0, errRedisDown
	}
	return f.real.MoveOut(ctx, itemID, from, to, want)
}

func (f *scriptStore) DropMove(ctx context.Context, from, id string) error {
	return f.real.DropMove(ctx, from, id)
}

func (f *scriptStore) Reserve(ctx context.Context, r stock.Reservation) (stock.Result, error) {
	lost, taken, bound, err := f.fault(&f.reserves)
	if err != nil {
		return stock.Result{}, err
	}
	if bound > 0 {
		r.Bound = bound
	}
	res, err := f.real.Reserve(ctx, r)
	if taken {
		f.takeAll(r.Tag)
	}
	if lost {
		return stock.Result{}, errRedisDown
	}
	return res, err
}

func (f *scriptStore) Void(ctx context.Context, r stock.Reservation) (stock.VoidOutcome, error) {
	if err := f.voidFault(r.Tag); err != nil {
		return 0, err
	}
	return f.real.Void(ctx, r)
}

// voidFault counts a void (of a purchase, a pay or a cancel) on tag's shard,
// fences the shard when freezeOnVoid, and returns the injected voidErr, if
// any.
func (f *scriptStore) voidFault(tag string) error {
	f.fault(&f.voids)
	f.mu.Lock()
	freeze, err := f.freezeOnVoid, f.voidErr
	f.mu.Unlock()
	if freeze {
		f.freeze(tag, true)
	}
	return err
}

// freeze sets (on) or deletes the fence of tag's shard.
func (f *scriptStore) freeze(tag string, on bool) {
	fence := string(sharding.AppendFenceKey(nil, tag))
	cmd := f.c.B().Del().Key(fence).Build()
	if on {
		cmd = f.c.B().Set().Key(fence).Value("1").Build()
	}
	if err := f.c.Do(context.Background(), cmd).Error(); err != nil {
		f.t.Fatal(err)
	}
}

func (f *scriptStore) Act(ctx context.Context, a stock.ActRequest) (string, error) {
	_, taken, bound, err := f.fault(nil)
	f.mu.Lock()
	aerr, lost := f.actErr, f.lostActs > 0
	if lost {
		f.lostActs--
	}
	f.mu.Unlock()
	if err != nil {
		return "", err
	}
	if aerr != nil {
		return "", aerr
	}
	if bound > 0 {
		a.Bound = bound
	}
	v, err := f.real.Act(ctx, a)
	if taken {
		f.takeAll(a.Tag)
	}
	if lost {
		return "", errRedisDown
	}
	return v, err
}

func (f *scriptStore) VoidAct(ctx context.Context, a stock.ActRequest) (stock.VoidOutcome, error) {
	if err := f.voidFault(a.Tag); err != nil {
		return 0, err
	}
	return f.real.VoidAct(ctx, a)
}

func (f *scriptStore) Order(ctx context.Context, tag string, userID uint64, id sharding.OrderID) (stock.OrderRecord, bool, error) {
	if _, _, _, err := f.fault(nil); err != nil {
		return stock.OrderRecord{}, false, err
	}
	return f.real.Order(ctx, tag, userID, id)
}

func (f *scriptStore) Holder(ctx context.Context, tag string, userID uint64) (sharding.OrderID, bool, error) {
	if _, _, _, err := f.fault(&f.holders); err != nil {
		return sharding.OrderID{}, false, err
	}
	return f.real.Holder(ctx, tag, userID)
}

// redisCalls returns the number of Store calls so far.
func (f *scriptStore) redisCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *scriptStore) counts() (reserves, voids int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reserves, f.voids
}

func (f *scriptStore) set(fn func(f *scriptStore)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// do runs a command on the test's Redis, failing the test on an error.
func (f *scriptStore) do(cmd rueidis.Completed) rueidis.RedisResult {
	f.t.Helper()
	r := f.c.Do(context.Background(), cmd)
	if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) {
		f.t.Fatal(err)
	}
	return r
}

// takeAll moves tag's taken watermark to its journal's last entry, as a
// relay that took every entry would.
func (f *scriptStore) takeAll(tag string) {
	es, _ := f.do(f.c.B().Xrevrange().Key(string(sharding.AppendEventsKey(nil, tag))).End("+").Start("-").Count(1).Build()).AsXRange()
	if len(es) == 1 {
		f.do(f.c.B().Set().Key(string(sharding.AppendTakenKey(nil, tag))).Value(es[0].ID).Build())
	}
}

// setStock sets item 7's units on tag's shard.
func (f *scriptStore) setStock(tag string, n int64) {
	f.do(f.c.B().Set().Key(string(sharding.AppendStockKey(nil, tag, 7))).Value(strconv.FormatInt(n, 10)).Build())
}

// stockOf reads item 7's units on tag's shard.
func (f *scriptStore) stockOf(tag string) int64 {
	n, err := f.do(f.c.B().Get().Key(string(sharding.AppendStockKey(nil, tag, 7))).Build()).AsInt64()
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// buyers returns tag's buyer records.
func (f *scriptStore) buyers(tag string) map[uint64]sharding.OrderID {
	b, err := f.real.Buyers(context.Background(), tag)
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

// dropBuyers deletes every buyer record of the sales.
func (f *scriptStore) dropBuyers() {
	for _, s := range f.sales {
		for _, tag := range s.Shards {
			f.do(f.c.B().Del().Key(string(sharding.AppendBuyersKey(nil, tag))).Build())
		}
	}
}

// record reads the order record of id on tag's shard, field by field.
func (f *scriptStore) record(tag string, id sharding.OrderID) map[string]string {
	m, err := f.do(f.c.B().Hgetall().Key(string(sharding.AppendOrderKey(nil, tag, id))).Build()).AsStrMap()
	if err != nil {
		f.t.Fatal(err)
	}
	return m
}

// patch sets fields of the order record of id on tag's shard (name, value,
// ...), as a script or the writer would: first it opens the record of an
// order its buyer record holds (lua/order.lua), as a script's first change
// of the order does.
func (f *scriptStore) patch(tag string, id sharding.OrderID, kv ...string) {
	buyers := string(sharding.AppendBuyersKey(nil, tag))
	m, err := f.do(f.c.B().Hgetall().Key(buyers).Build()).AsStrMap()
	if err != nil {
		f.t.Fatal(err)
	}
	for u, v := range m {
		if strings.HasPrefix(v, id.String()) {
			open := rueidis.NewLuaScript(lua.OpenOrder)
			if err := open.Exec(context.Background(), f.c, []string{string(sharding.AppendOrderKey(nil, tag, id)), buyers},
				[]string{u, id.String()}).Error(); err != nil {
				f.t.Fatal(err)
			}
		}
	}
	cmd := f.c.B().Hset().Key(string(sharding.AppendOrderKey(nil, tag, id))).FieldValue()
	for i := 0; i+1 < len(kv); i += 2 {
		cmd = cmd.FieldValue(kv[i], kv[i+1])
	}
	f.do(cmd.Build())
}

// orders returns every order record on tag's shard by order id.
func (f *scriptStore) orders(tag string) map[sharding.OrderID]map[string]string {
	prefix := string(sharding.AppendOrderKey(nil, tag, sharding.OrderID{}))
	prefix = prefix[:len(prefix)-36]
	keys, err := f.do(f.c.B().Keys().Pattern(prefix + "*").Build()).AsStrSlice()
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[sharding.OrderID]map[string]string{}
	for _, k := range keys {
		id, ok := sharding.ParseOrderID([]byte(k[len(prefix):]))
		if !ok {
			f.t.Fatalf("order key %q", k)
		}
		out[id] = f.record(tag, id)
	}
	return out
}

// journal returns the events journaled on the sales' shards and not voided,
// decoded as the relay decodes them.
func (f *scriptStore) journal() []orderevent.Event {
	var out []orderevent.Event
	for _, s := range f.sales {
		for _, tag := range s.Shards {
			es, err := f.do(f.c.B().Xrange().Key(string(sharding.AppendEventsKey(nil, tag))).Start("-").End("+").Build()).AsXRange()
			if err != nil {
				f.t.Fatal(err)
			}
			for _, e := range es {
				ev, err := orderevent.FromFields(e.FieldValues)
				if err != nil {
					f.t.Fatalf("journal entry %s: %v", e.ID, err)
				}
				out = append(out, ev)
			}
		}
	}
	return out
}

// release is the writer's release.lua: the unit back, the buyer record gone,
// the final status on the record.
func (f *scriptStore) release(tag string, itemID int64, userID uint64, id sharding.OrderID, status string) bool {
	rel, err := f.real.Release(context.Background(), tag, itemID, userID, id, status)
	if err != nil || rel == stock.ReleaseFrozen {
		f.t.Fatal(rel, err)
	}
	return rel == stock.Released
}

// env is a handler with one sale (id 77, item 7 with 2 shards) over the real
// scripts on a Redis of its own (scriptStore).
type env struct {
	t    testing.TB
	h    *Handler
	st   *scriptStore
	cat  *catalog.Catalog
	sale *sale.Sale
	// tickets are the handler's ticket keys.
	tickets *ticket.Keys
}

// ticket mints a ticket for user in the env's sale, issued at at.
func (e *env) ticket(user uint64, at time.Time) string {
	b, _ := e.tickets.Append(nil, user, e.sale.ID, at)
	return string(b)
}

type envOpt struct {
	start, end         time.Time
	stockPerShard      int64
	shards             int
	ipBurst, userBurst int
	noRepeatRead       bool
	trusted            []netip.Prefix
	ticketRequired     bool
	tickets            *ticket.Keys // default: keys of testTicketKey
	waitingRoom        *sale.Room
	access             string               // the sale's access mode ("": by waitingRoom)
	raffle             *sale.Raffle         // a raffle's entries
	draw               *sale.DrawCommitment // a queue's published commitment
	presale            *sale.Presale
	powDifficulty      int
	dev                bool // the development sign-in, with testSecret
	borrow             bool // the handler borrows (scriptStore as its Borrower)
	brand              *sale.Brand
	itemImage          string
	page               *page.Site // default: page.Default()
}

// testFrontDoorRing signs the queue passes and challenges of newEnv's handlers.
var testFrontDoorRing, _ = mac.NewRing([]byte("test-front-door-0123456789"), nil)

var testTicketKey = []byte("test-ticket-key-0123456789")

func newEnv(t testing.TB, o envOpt) *env {
	t.Helper()
	now := time.Now()
	if o.start.IsZero() {
		o.start, o.end = now.Add(-time.Hour), now.Add(time.Hour)
	}
	if o.shards == 0 {
		o.shards = 2
	}
	if o.ipBurst == 0 {
		o.ipBurst = 1 << 30
	}
	if o.userBurst == 0 {
		o.userBurst = 1 << 30
	}
	s := &sale.Sale{ID: 77, Name: "Test \"sale\"", StartsAt: o.start.Truncate(time.Second), EndsAt: o.end.Truncate(time.Second),
		Items:  []sale.Item{{ID: 7, Name: "Widget", Price: 1999, Currency: "JPY", Quantity: o.stockPerShard * int64(o.shards)}},
		Shards: sharding.UniformTags(77, o.shards), Version: 1, TicketRequired: o.ticketRequired,
		WaitingRoom: o.waitingRoom, Draw: o.draw, Presale: o.presale, PowDifficulty: o.powDifficulty, Brand: o.brand,
		Access: o.access, Raffle: o.raffle}
	s.Items[0].Image = o.itemImage
	if o.tickets == nil {
		o.tickets, _ = ticket.New(testTicketKey, nil, 0)
	}
	st := newScriptStore(t, []*sale.Sale{s})
	for _, tag := range s.Shards {
		st.setStock(tag, o.stockPerShard)
	}
	var borrower Borrower
	if o.borrow {
		borrower = st
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cat := catalog.New(st, catalog.Config{Log: quiet})
	if err := cat.Refresh(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	v, err := auth.New(context.Background(), auth.Config{HS256Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	var devSecret []byte
	if o.dev {
		devSecret = testSecret
	}
	h := New(Config{NoRepeatRead: o.noRepeatRead, TrustedProxies: o.trusted, Dev: o.dev, DevSecret: devSecret}, Deps{
		Catalog: cat, Store: st, Verifier: v,
		IPLimit:   limit.New(limit.Config{Rate: 0.001, Burst: o.ipBurst, MaxKeys: 1024}),
		UserLimit: limit.New(limit.Config{Rate: 0.001, Burst: o.userBurst, MaxKeys: 1024}),
		Metrics:   obs.New(), Log: quiet, Tickets: o.tickets, Borrower: borrower,
		// The room has no Redis client: a poll with a pass must not need one.
		Room: must(room.New(nil, room.Config{Ring: testFrontDoorRing, Log: quiet})), Proofs: pow.NewIssuer(testFrontDoorRing, 0),
		Presale: presale.New(nil, nil, quiet), // claims only: no list, no cap
		Page:    o.page,
	})
	t.Cleanup(h.Close)
	return &env{t: t, h: h, st: st, cat: cat, sale: s, tickets: o.tickets}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// pass returns a queue pass of user's n-th late place in sale 77.
func (e *env) pass(user, n uint64) string {
	return string(room.AppendPass(nil, testFrontDoorRing, room.Pass{Kind: room.Late, SaleID: 77, UserID: user, Number: n, Expires: e.sale.EndsAt.Unix()}))
}

// tierToken is token with a "tier" claim (a presale's).
func (e *env) tierToken(user uint64, tier string) string {
	e.t.Helper()
	tok, err := auth.MintHS256(testSecret, user, time.Now().Add(time.Hour), map[string]any{"tier": tier})
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

func (e *env) token(user uint64) string {
	e.t.Helper()
	tok, err := auth.MintHS256(testSecret, user, time.Now().Add(time.Hour), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

// serve starts a fasthttp server with the handler on an in-memory listener and
// returns a client that dials it from peer.
func (e *env) serve(peer string) *fasthttp.Client {
	ln := e.listen()
	addr := &net.TCPAddr{IP: net.ParseIP(peer), Port: 40000}
	return &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.DialWithLocalAddr(addr) }}
}

// raw sends request bytes exactly as written (header names, repeats and all)
// from peer and returns the response.
func (e *env) raw(peer, request string) (int, string) {
	e.t.Helper()
	ln := e.listen()
	conn, err := ln.DialWithLocalAddr(&net.TCPAddr{IP: net.ParseIP(peer), Port: 40001})
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(strings.ReplaceAll(request, "\n", "\r\n"))); err != nil {
		e.t.Fatal(err)
	}
	var resp fasthttp.Response
	if err := resp.Read(bufio.NewReader(conn)); err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode(), string(resp.Body())
}

func (e *env) listen() *fasthttputil.InmemoryListener {
	ln := fasthttputil.NewInmemoryListener()
	srv := NewServer(e.h.Handle, ServerConfig{ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, IdleTimeout: time.Minute, Concurrency: 1000})
	go func() { _ = srv.Serve(ln) }()
	e.t.Cleanup(func() { _ = srv.Shutdown(); _ = ln.Close() })
	return ln
}

type reply struct {
	status int
	body   string
	header map[string]string
}

func do(t testing.TB, c *fasthttp.Client, method, path, token string, hdr ...string) reply {
	t.Helper()
	return doBody(t, c, method, path, token, "", hdr...)
}

// rawPost posts body to path without a token.
func rawPost(t testing.TB, c *fasthttp.Client, path, body string) reply {
	t.Helper()
	return doBody(t, c, "POST", path, "", body, "Content-Type", "application/json")
}

func doBody(t testing.TB, c *fasthttp.Client, method, path, token, body string, hdr ...string) reply {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetBodyString(body)
	req.Header.SetMethod(method)
	req.SetRequestURI("http://gateway" + path)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if err := c.DoTimeout(req, resp, 5*time.Second); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	r := reply{status: resp.StatusCode(), body: string(resp.Body()), header: map[string]string{}}
	for _, k := range []string{"Retry-After", "Allow", "Cache-Control", "Content-Type", "ETag", "Content-Security-Policy", "Set-Cookie"} {
		if v := resp.Header.Peek(k); v != nil {
			r.header[k] = string(v)
		}
	}
	return r
}

var errRedisDown = errors.New("redis: i/o timeout")

var farFuture = time.Now().Add(24 * 365 * time.Hour)

func homeShard(user uint64) int { return sharding.HomeShard(user, 77, 2) }

// counterValue reads a counter of h's registry: the child whose one label
// has value label.
func counterValue(t *testing.T, h *Handler, name, label string) float64 {
	t.Helper()
	fams, err := h.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == label {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s{%s}", name, label)
	return 0
}
