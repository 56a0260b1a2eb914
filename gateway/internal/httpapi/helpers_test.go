package httpapi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"flashsale/gateway/internal/auth"
	"flashsale/gateway/internal/catalog"
	"flashsale/gateway/internal/limit"
	"flashsale/gateway/internal/mac"
	"flashsale/gateway/internal/obs"
	"flashsale/gateway/internal/page"
	"flashsale/gateway/internal/pow"
	"flashsale/gateway/internal/room"
	"flashsale/gateway/internal/ticket"
	"flashsale/sharding"
	"flashsale/sharding/stock"
	"flashsale/writer/orderevent"
)

var testSecret = []byte("test-secret-0123456789abcdef")

// fakeSource serves sales and stock readings from a fakeStore.
type fakeSource struct {
	st    *fakeStore
	sales []*sharding.Sale
}

func (f *fakeSource) Sales(context.Context) ([]*sharding.Sale, error) { return f.sales, nil }

func (f *fakeSource) Available(_ context.Context, sale *sharding.Sale, itemID int64) ([]int64, error) {
	f.st.mu.Lock()
	defer f.st.mu.Unlock()
	out := make([]int64, len(sale.Shards))
	for i, tag := range sale.Shards {
		out[i] = f.st.stock[stockKey{tag, itemID}]
	}
	return out, nil
}

// ReadStock reads the shards as stock.Store.ReadStock does: a shard in
// the store's unread set reads stock.Unknown.
func (f *fakeSource) ReadStock(ctx context.Context, sale *sharding.Sale, itemID int64) ([]int64, error) {
	out, _ := f.Available(ctx, sale, itemID)
	f.st.mu.Lock()
	defer f.st.mu.Unlock()
	for i, tag := range sale.Shards {
		if f.st.unread[tag] {
			out[i] = stock.Unknown
		}
	}
	return out, nil
}

// MoveOut takes up to want units from the donor shard (Borrower); a shard
// in the unread set does not answer.
func (f *fakeSource) MoveOut(_ context.Context, itemID int64, from, _ string, want int64) (string, int64, error) {
	f.st.mu.Lock()
	defer f.st.mu.Unlock()
	if f.st.unread[from] {
		return "", 0, errRedisDown
	}
	k := stockKey{from, itemID}
	n := min(want, f.st.stock[k])
	f.st.stock[k] -= n
	f.st.moves++
	return fmt.Sprintf("move-%d", f.st.moves), n, nil
}

func (f *fakeSource) DropMove(context.Context, string, string) error { return nil }

type stockKey struct {
	tag  string
	item int64
}

// fakeStore mimics the reserve, void, act and order scripts in memory,
// journal included.
type fakeStore struct {
	mu      sync.Mutex
	stock   map[stockKey]int64
	buyers  map[string]map[uint64]sharding.OrderID
	records map[sharding.OrderID]*fakeRecord
	events  []fakeEvent     // the journal, over every shard
	err     error           // returned by every call when set
	unread  map[string]bool // shards whose stock reading and moves fail (fakeSource)
	moves   int
	// lostReply makes Reserve apply the script and then report an error, as
	// when the reply is lost on the way back.
	lostReply bool
	voidErr   error // returned by Void and VoidAct when set
	// lostActs makes that many Act calls apply and then report an error;
	// actErr fails every Act call before it applies.
	lostActs int
	actErr   error
	taken    bool // a relay has taken every journal entry so far
	bound    int  // journal bound, when > 0
	reserves int
	voids    int
	holders  int // Holder calls
	calls    int // every call of the Store interface: what would reach Redis
}

// redisCalls returns the number of Store calls so far.
func (f *fakeStore) redisCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

type fakeRecord struct {
	stock.OrderRecord
	attempt uint64
	event   int    // index in events, -1 when none
	q       string // accepted request: pay, cancel, exp
	qEvent  int    // index in events of the request's entry
	holders map[uint64]bool
	fenced  map[uint64]bool // voided pay and cancel attempts
}

type fakeEvent struct {
	orderevent.Event
	deleted, taken bool
}

func newFakeStore() *fakeStore {
	return &fakeStore{stock: map[stockKey]int64{}, buyers: map[string]map[uint64]sharding.OrderID{}, records: map[sharding.OrderID]*fakeRecord{}}
}

func (f *fakeStore) Reserve(_ context.Context, r stock.Reservation) (stock.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.reserves++
	if f.err != nil {
		return stock.Result{}, f.err
	}
	res, err := f.reserve(r)
	if f.lostReply {
		return stock.Result{}, errRedisDown
	}
	return res, err
}

func (f *fakeStore) reserve(r stock.Reservation) (stock.Result, error) {
	if f.bound > 0 && f.backlog() >= f.bound {
		return stock.Result{}, stock.ErrJournalFull
	}
	k := stockKey{r.Tag, r.ItemID}
	f.stock[k] += r.Credit.Units
	b := f.buyers[r.Tag]
	if b == nil {
		b = map[uint64]sharding.OrderID{}
		f.buyers[r.Tag] = b
	}
	if held, ok := b[r.UserID]; ok {
		if held == r.OrderID {
			return stock.Result{Outcome: stock.Reserved, OrderID: held, Left: -1, Replay: true}, nil
		}
		return stock.Result{Outcome: stock.AlreadyPurchased, OrderID: held, Left: -1}, nil
	}
	if rec, ok := f.records[r.OrderID]; ok && !(rec.Status == stock.StatusVoid && rec.attempt != r.Attempt) {
		return stock.Result{Outcome: stock.IDUsed, OrderID: r.OrderID, Left: -1}, nil
	}
	if f.stock[k] <= 0 {
		return stock.Result{Outcome: stock.SoldOut}, nil
	}
	f.stock[k]--
	b[r.UserID] = r.OrderID
	f.events = append(f.events, fakeEvent{Event: orderevent.Event{Type: orderevent.Reserved, OrderID: r.OrderID, SaleID: r.SaleID,
		ItemID: r.ItemID, UserID: r.UserID, Created: r.Created, Expires: r.Expires, At: r.Created}, taken: f.taken})
	f.records[r.OrderID] = &fakeRecord{OrderRecord: stock.OrderRecord{UserID: r.UserID, ItemID: r.ItemID, Status: stock.StatusPending,
		Created: r.Created, Expires: r.Expires}, attempt: r.Attempt, event: len(f.events) - 1}
	return stock.Result{Outcome: stock.Reserved, OrderID: r.OrderID, Left: f.stock[k]}, nil
}

func (f *fakeStore) backlog() int {
	n := 0
	for _, e := range f.events {
		if !e.deleted {
			n++
		}
	}
	return n
}

func (f *fakeStore) Void(_ context.Context, r stock.Reservation) (stock.VoidOutcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.voids++
	if f.voidErr != nil {
		return 0, f.voidErr
	}
	rec, ok := f.records[r.OrderID]
	if !ok {
		f.records[r.OrderID] = &fakeRecord{OrderRecord: stock.OrderRecord{UserID: r.UserID, Status: stock.StatusVoid}, attempt: r.Attempt, event: -1}
		return stock.VoidFenced, nil
	}
	if rec.attempt != r.Attempt || rec.Status != stock.StatusPending || f.buyers[r.Tag][r.UserID] != r.OrderID {
		return stock.VoidNothing, nil
	}
	if rec.event >= 0 && (f.events[rec.event].taken || f.events[rec.event].deleted) {
		return stock.VoidStands, nil
	}
	if rec.event >= 0 {
		f.events[rec.event].deleted = true
	}
	delete(f.buyers[r.Tag], r.UserID)
	f.stock[stockKey{r.Tag, r.ItemID}]++
	rec.Status = stock.StatusVoid
	return stock.Voided, nil
}

func (f *fakeStore) Act(_ context.Context, a stock.ActRequest) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return "", f.err
	}
	if f.actErr != nil {
		return "", f.actErr
	}
	v, err := f.act(a)
	if f.lostActs > 0 {
		f.lostActs--
		return "", errRedisDown
	}
	return v, err
}

func (f *fakeStore) act(a stock.ActRequest) (string, error) {
	rec, ok := f.records[a.OrderID]
	if ok && rec.fenced[a.Attempt] {
		return stock.ActVoided, nil
	}
	if !ok || rec.UserID != a.UserID || rec.Status == stock.StatusVoid {
		return stock.ActNotFound, nil
	}
	if rec.Status != stock.StatusPending {
		return rec.Status, nil
	}
	switch {
	case rec.q == "exp":
		return stock.StatusExpired, nil
	case rec.q == a.Action:
		rec.holders[a.Attempt] = true
		return stock.ActAgain, nil
	case rec.q == stock.ActPay:
		return stock.StatusPaid, nil
	case rec.q == stock.ActCancel:
		return stock.StatusCancelled, nil
	}
	if !time.Now().Before(rec.Expires) {
		return stock.StatusExpired, nil
	}
	if f.bound > 0 && f.backlog() >= f.bound {
		return stock.ActFull, nil
	}
	typ := orderevent.Pay
	if a.Action == stock.ActCancel {
		typ = orderevent.Cancel
	}
	f.events = append(f.events, fakeEvent{Event: orderevent.Event{Type: typ, OrderID: a.OrderID, SaleID: a.SaleID, ItemID: rec.ItemID,
		UserID: a.UserID, Created: rec.Created, Expires: rec.Expires, At: a.At}, taken: f.taken})
	rec.q, rec.qEvent, rec.holders = a.Action, len(f.events)-1, map[uint64]bool{a.Attempt: true}
	return stock.ActOK, nil
}

// VoidAct is void_act.lua: fence the attempt; the last holder of the
// request to let go takes it back unless a relay took it.
func (f *fakeStore) VoidAct(_ context.Context, a stock.ActRequest) (stock.VoidOutcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.voids++
	if f.voidErr != nil {
		return 0, f.voidErr
	}
	rec, ok := f.records[a.OrderID]
	if !ok {
		return stock.VoidNothing, nil
	}
	if rec.fenced == nil {
		rec.fenced = map[uint64]bool{}
	}
	rec.fenced[a.Attempt] = true
	if !rec.holders[a.Attempt] {
		if rec.q != "" {
			return stock.VoidNothing, nil
		}
		return stock.VoidFenced, nil
	}
	if rec.Status != stock.StatusPending {
		return stock.VoidStands, nil
	}
	delete(rec.holders, a.Attempt)
	if len(rec.holders) > 0 {
		return stock.VoidNothing, nil
	}
	if f.events[rec.qEvent].taken {
		return stock.VoidStands, nil
	}
	f.events[rec.qEvent].deleted = true
	rec.q = ""
	return stock.Voided, nil
}

func (f *fakeStore) Order(_ context.Context, _ string, id sharding.OrderID) (stock.OrderRecord, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return stock.OrderRecord{}, false, f.err
	}
	rec, ok := f.records[id]
	if !ok {
		return stock.OrderRecord{}, false, nil
	}
	r := rec.OrderRecord
	r.Request = rec.q
	return r, true, nil
}

func (f *fakeStore) setStatus(id sharding.OrderID, status string, expires time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := f.records[id]
	rec.Status = status
	if !expires.IsZero() {
		rec.Expires = expires
	}
}

// journal returns the events journaled and not voided, in order.
func (f *fakeStore) journal() []orderevent.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []orderevent.Event
	for _, e := range f.events {
		if !e.deleted {
			out = append(out, e.Event)
		}
	}
	return out
}

// release is the writer's release.lua: the unit back, the buyer record gone,
// the final status on the record.
func (f *fakeStore) release(tag string, itemID int64, userID uint64, id sharding.OrderID, status string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.buyers[tag][userID] != id {
		return false
	}
	delete(f.buyers[tag], userID)
	f.stock[stockKey{tag, itemID}]++
	f.records[id].Status = status
	return true
}

func (f *fakeStore) counts() (reserves, voids int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reserves, f.voids
}

func (f *fakeStore) set(fn func(f *fakeStore)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// env is a handler over fakes with one sale (id 77, item 7 with 2 shards).
type env struct {
	t    testing.TB
	h    *Handler
	st   *fakeStore
	cat  *catalog.Catalog
	sale *sharding.Sale
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
	waitingRoom        *sharding.Room
	powDifficulty      int
	dev                bool // the development sign-in, with testSecret
	borrow             bool // the handler borrows from the fakeSource
	brand              *sharding.Brand
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
	sale := &sharding.Sale{ID: 77, Name: "Test \"sale\"", StartsAt: o.start.Truncate(time.Second), EndsAt: o.end.Truncate(time.Second),
		Items:  []sharding.Item{{ID: 7, Name: "Widget", Price: 1999, Currency: "JPY", Quantity: o.stockPerShard * int64(o.shards)}},
		Shards: sharding.UniformTags(77, o.shards), Version: 1, TicketRequired: o.ticketRequired,
		WaitingRoom: o.waitingRoom, PowDifficulty: o.powDifficulty, Brand: o.brand}
	sale.Items[0].Image = o.itemImage
	if o.tickets == nil {
		o.tickets, _ = ticket.New(testTicketKey, nil, 0)
	}
	st := newFakeStore()
	for _, tag := range sale.Shards {
		st.stock[stockKey{tag, 7}] = o.stockPerShard
	}
	src := &fakeSource{st: st, sales: []*sharding.Sale{sale}}
	var borrower Borrower
	if o.borrow {
		borrower = src
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cat := catalog.New(src, catalog.Config{Log: quiet})
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
		Page: o.page,
	})
	t.Cleanup(h.Close)
	return &env{t: t, h: h, st: st, cat: cat, sale: sale, tickets: o.tickets}
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

func (f *fakeStore) Holder(_ context.Context, tag string, userID uint64) (sharding.OrderID, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.holders++
	if f.err != nil {
		return sharding.OrderID{}, false, f.err
	}
	id, ok := f.buyers[tag][userID]
	return id, ok, nil
}

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
