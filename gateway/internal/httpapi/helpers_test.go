package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"flashsale/gateway/internal/auth"
	"flashsale/gateway/internal/catalog"
	"flashsale/gateway/internal/limit"
	"flashsale/gateway/internal/obs"
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

type stockKey struct {
	tag  string
	item int64
}

// fakeStore mimics the reserve, release and order scripts in memory.
type fakeStore struct {
	mu       sync.Mutex
	stock    map[stockKey]int64
	buyers   map[string]map[uint64]sharding.OrderID
	records  map[sharding.OrderID]stock.OrderRecord
	err      error // returned by every call when set
	reserves int
	releases int
	holders  int // Holder calls
}

func newFakeStore() *fakeStore {
	return &fakeStore{stock: map[stockKey]int64{}, buyers: map[string]map[uint64]sharding.OrderID{}, records: map[sharding.OrderID]stock.OrderRecord{}}
}

func (f *fakeStore) Reserve(_ context.Context, r stock.Reservation) (stock.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reserves++
	if f.err != nil {
		return stock.Result{}, f.err
	}
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
	if _, ok := f.records[r.OrderID]; ok {
		return stock.Result{Outcome: stock.IDUsed, OrderID: r.OrderID, Left: -1}, nil
	}
	k := stockKey{r.Tag, r.ItemID}
	if f.stock[k] <= 0 {
		return stock.Result{Outcome: stock.SoldOut}, nil
	}
	f.stock[k]--
	b[r.UserID] = r.OrderID
	f.records[r.OrderID] = stock.OrderRecord{UserID: r.UserID, ItemID: r.ItemID, Status: stock.StatusPending, Created: r.Created, Expires: r.Expires}
	return stock.Result{Outcome: stock.Reserved, OrderID: r.OrderID, Left: f.stock[k]}, nil
}

func (f *fakeStore) Release(_ context.Context, tag string, itemID int64, userID uint64, id sharding.OrderID, status string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.releases++
	if f.err != nil {
		return false, f.err
	}
	if f.buyers[tag][userID] != id {
		return false, nil
	}
	delete(f.buyers[tag], userID)
	f.stock[stockKey{tag, itemID}]++
	if status == stock.ReleaseDelete {
		delete(f.records, id)
	} else if rec, ok := f.records[id]; ok {
		rec.Status = status
		f.records[id] = rec
	}
	return true, nil
}

func (f *fakeStore) Order(_ context.Context, _ string, id sharding.OrderID) (stock.OrderRecord, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return stock.OrderRecord{}, false, f.err
	}
	rec, ok := f.records[id]
	return rec, ok, nil
}

func (f *fakeStore) setStatus(id sharding.OrderID, status string, expires time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := f.records[id]
	rec.Status = status
	if !expires.IsZero() {
		rec.Expires = expires
	}
	f.records[id] = rec
}

func (f *fakeStore) counts() (reserves, releases int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reserves, f.releases
}

// fakeProducer records events and answers err.
type fakeProducer struct {
	mu     sync.Mutex
	err    error
	events []orderevent.Event
}

func (p *fakeProducer) Hand(ev *orderevent.Event, _ time.Duration, _ bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	p.events = append(p.events, *ev)
	return nil
}

func (p *fakeProducer) setErr(err error) {
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
}

// env is a handler over fakes with one sale (id 77, item 7 with 2 shards).
type env struct {
	t    testing.TB
	h    *Handler
	st   *fakeStore
	prod *fakeProducer
	cat  *catalog.Catalog
	sale *sharding.Sale
}

type envOpt struct {
	start, end         time.Time
	stockPerShard      int64
	shards             int
	ipBurst, userBurst int
	noRepeatRead       bool
}

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
		Shards: sharding.UniformTags(77, o.shards), Version: 1}
	st := newFakeStore()
	for _, tag := range sale.Shards {
		st.stock[stockKey{tag, 7}] = o.stockPerShard
	}
	src := &fakeSource{st: st, sales: []*sharding.Sale{sale}}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cat := catalog.New(src, catalog.Config{Log: quiet})
	if err := cat.Refresh(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	v, err := auth.New(context.Background(), auth.Config{HS256Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	prod := &fakeProducer{}
	h := New(Config{NoRepeatRead: o.noRepeatRead}, Deps{
		Catalog: cat, Store: st, Producer: prod, Verifier: v,
		IPLimit:   limit.New(limit.Config{Rate: 0.001, Burst: o.ipBurst, MaxKeys: 1024}),
		UserLimit: limit.New(limit.Config{Rate: 0.001, Burst: o.userBurst, MaxKeys: 1024}),
		Metrics:   obs.New(), Log: quiet,
	})
	return &env{t: t, h: h, st: st, prod: prod, cat: cat, sale: sale}
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
	ln := fasthttputil.NewInmemoryListener()
	srv := NewServer(e.h.Handle, ServerConfig{ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, IdleTimeout: time.Minute, Concurrency: 1000})
	go func() { _ = srv.Serve(ln) }()
	e.t.Cleanup(func() { _ = srv.Shutdown(); _ = ln.Close() })
	addr := &net.TCPAddr{IP: net.ParseIP(peer), Port: 40000}
	return &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.DialWithLocalAddr(addr) }}
}

type reply struct {
	status int
	body   string
	header map[string]string
}

func do(t testing.TB, c *fasthttp.Client, method, path, token string, hdr ...string) reply {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
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
	for _, k := range []string{"Retry-After", "Allow", "Cache-Control", "Content-Type"} {
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
	f.holders++
	if f.err != nil {
		return sharding.OrderID{}, false, f.err
	}
	id, ok := f.buyers[tag][userID]
	return id, ok, nil
}
