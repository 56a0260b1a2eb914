package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"
	"github.com/twmb/franz-go/pkg/kgo"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/journal"
	"flashsale/sharding/ops/saleops"
	"flashsale/sharding/orderevent"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/internal/app"
	"flashsale/writer/internal/config"
	"flashsale/writer/internal/obs"
	"flashsale/writer/internal/store"
)

// stack skips unless the real stack is up and the run is not -short.
func stack(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the local stack (run without -short)")
	}
	testenv.Require(t, "postgres", "kafka", "redis")
}

// testConfig returns a writer configuration on the local stack for topic and
// group, with short timers and no admin server. Its expiry and outbox replay
// are limited to sale s, so other tests' orders in the shared database are
// left alone.
func testConfig(topic, group string, s *sale.Sale) config.Config {
	c := config.Default()
	c.Postgres.URL = testenv.DatabaseURL()
	c.Redis.Addrs = testenv.RedisAddrs()
	c.Kafka.Brokers = testenv.KafkaBrokers()
	c.Topic, c.DeadLetter, c.Group = topic, topic+".dlq", group
	c.Admin = ""
	c.FetchMaxWait = 20 * time.Millisecond
	c.SessionTimeout = 6 * time.Second
	c.ExpiryInterval = time.Hour
	c.OutboxInterval = 200 * time.Millisecond
	c.OutboxGrace = 500 * time.Millisecond
	c.RetryMin, c.RetryMax = 20*time.Millisecond, 500*time.Millisecond
	c.ShutdownGrace = 10 * time.Second
	c.Sales = []int64{s.ID}
	c.GhostInterval = 0 // ghost_test.go steps its sweeps itself
	return c
}

func testLog(t *testing.T) *slog.Logger {
	if os.Getenv("WRITER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// running is an App running in the background.
type running struct {
	*app.App
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// startApp builds and runs an App; it is stopped when the test ends.
func startApp(t *testing.T, cfg config.Config) *running {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := app.New(ctx, cfg, testLog(t))
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	rctx, rcancel := context.WithCancel(context.Background())
	r := &running{App: a, cancel: rcancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(rctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop cancels the app, waits for Run, and closes it.
func (r *running) stop(t *testing.T) {
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("app.Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("app did not stop within 30s")
		}
		r.Close()
	})
}

// newStores connects the test's own PostgreSQL pool (schema migrated) and
// Redis stock store.
func newStores(t *testing.T) (*store.Store, *stock.Store) {
	t.Helper()
	pool := testenv.NewPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := store.Migrate(ctx, pool, nil); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return store.New(pool), stock.New(testenv.NewRedis(t))
}

// newSale creates a sale with a random id, one item per quantity, on shards
// shards, in PostgreSQL and Redis.
func newSale(t *testing.T, st *store.Store, rs *stock.Store, shards int, quantities ...int64) *sale.Sale {
	t.Helper()
	id := 1_000_000 + rand.Int64N(sharding.MaxSaleID-1_000_000)
	s := &sale.Sale{
		ID: id, Name: t.Name(),
		StartsAt: time.Now().Add(-time.Hour).UTC().Truncate(time.Second), EndsAt: time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second),
		PaymentWindow: sale.Duration(10 * time.Minute),
	}
	for i, q := range quantities {
		s.Items = append(s.Items, sale.Item{ID: id*100 + int64(i) + 1, Name: "item", Price: 100, Currency: "EUR", Quantity: q})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := saleops.CreateSale(ctx, st.Pool(), rs, s, shards); err != nil {
		t.Fatalf("creating sale: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kept sale %d in PostgreSQL and Redis for inspection", s.ID)
			return
		}
		dropSale(t, st, rs, s)
	})
	return s
}

// dropSale deletes a test sale from the shared PostgreSQL and Redis.
func dropSale(t *testing.T, st *store.Store, rs *stock.Store, s *sale.Sale) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, q := range []string{
		`DELETE FROM releases WHERE sale_id = $1`,
		`DELETE FROM pending_actions WHERE order_id IN (SELECT id FROM orders WHERE sale_id = $1)`,
		`DELETE FROM orders WHERE sale_id = $1`,
		`DELETE FROM items WHERE sale_id = $1`,
		`DELETE FROM sales WHERE id = $1`,
	} {
		if _, err := st.Pool().Exec(ctx, q, s.ID); err != nil {
			t.Logf("dropping sale %d: %v", s.ID, err)
		}
	}
	c := rs.Client()
	cmds := rueidis.Commands{
		c.B().Del().Key(sharding.SaleKey(s.ID)).Build(),
		c.B().Srem().Key(sharding.SalesKey).Member(strconv.FormatInt(s.ID, 10)).Build(),
	}
	for _, tag := range s.Shards {
		cmds = append(cmds, c.B().Del().Key(string(sharding.AppendBuyersKey(nil, tag))).Build())
		for _, it := range s.Items {
			cmds = append(cmds, c.B().Del().Key(string(sharding.AppendStockKey(nil, tag, it.ID))).Build())
		}
	}
	for _, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Logf("dropping sale %d from redis: %v", s.ID, err)
		}
	}
}

// reserved returns a reservation event of user for item, made now.
func reserved(s *sale.Sale, item int64, user uint64, window time.Duration) orderevent.Event {
	now := time.Now()
	return orderevent.Event{
		Type: orderevent.Reserved, OrderID: sharding.NewOrderID(s.ID, rand.Uint64(), rand.Uint32()),
		SaleID: s.ID, ItemID: item, UserID: user, Created: now, Expires: now.Add(window), At: now,
	}
}

// reservations returns reservation events of item for users 1..n, made now
// (not in Redis: for the writer alone).
func reservations(s *sale.Sale, item int64, n int, window time.Duration) []orderevent.Event {
	events := make([]orderevent.Event, n)
	for i := range events {
		events[i] = reserved(s, item, uint64(i+1), window)
	}
	return events
}

// persistOrders has a writer with cfg persist events, produced to cfg.Topic,
// and stops it again: afterwards the orders are in PostgreSQL and no writer
// runs.
func persistOrders(t *testing.T, cfg config.Config, events []orderevent.Event) {
	t.Helper()
	loader := startApp(t, cfg)
	produce(t, newProducer(t, cfg.Topic), events)
	n := float64(len(events))
	waitFor(t, 60*time.Second, fmt.Sprintf("%d orders persisted", len(events)), func() bool { return obs.Value(loader.Metrics.Persisted) >= n })
	loader.stop(t)
}

// dueOrders is the start of an expiry test: a sale (3 shards, 2n units) with
// n orders reserved in Redis and persisted by a writer that stopped again, all
// due already; before is the item's Redis stock after the reservations.
type dueOrders struct {
	st     *store.Store
	rs     *stock.Store
	s      *sale.Sale
	item   int64
	cfg    config.Config // the loader's: expiry off
	before int64
}

func newDueOrders(t *testing.T, n int, topicPrefix string) dueOrders {
	t.Helper()
	stack(t)
	st, rs := newStores(t)
	s := newSale(t, st, rs, 3, int64(2*n))
	d := dueOrders{st: st, rs: rs, s: s, item: s.Items[0].ID}
	events := reserveInRedis(t, rs, s, d.item, n, time.Millisecond)
	d.before = redisLeft(t, rs, s, d.item)
	d.cfg = testConfig(testenv.NewTopic(t, topicPrefix), groupName(t), s)
	persistOrders(t, d.cfg, events)
	return d
}

// newProducer returns a Kafka producer closed when the test ends.
func newProducer(t *testing.T, topic string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers()...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(2*time.Millisecond))
	if err != nil {
		t.Fatalf("kafka producer: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produce writes events to the producer's topic and waits for the acks.
func produce(t *testing.T, cl *kgo.Client, events []orderevent.Event) {
	t.Helper()
	recs := make([]*kgo.Record, len(events))
	for i := range events {
		recs[i] = &kgo.Record{Key: orderevent.AppendKey(nil, &events[i]), Value: orderevent.AppendJSON(nil, &events[i])}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing %d events: %v", len(events), err)
	}
}

// waitFor polls cond every 10ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// counts returns the sale's orders by status and its items' total sold. It
// tries a few times: after a PostgreSQL restart the pool may hand out a
// connection the server already closed, which fails once and is discarded.
func counts(t *testing.T, pool *pgxpool.Pool, saleID int64) (map[string]int64, int64) {
	t.Helper()
	var err error
	for try := 0; try < 5; try++ {
		var out map[string]int64
		var sold int64
		if out, sold, err = countOnce(pool, saleID); err == nil {
			return out, sold
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("counting orders: %v", err)
	return nil, 0
}

func countOnce(pool *pgxpool.Pool, saleID int64) (map[string]int64, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := pool.Query(ctx, `SELECT status, count(*) FROM orders WHERE sale_id = $1 GROUP BY status`, saleID)
	if err != nil {
		return nil, 0, err
	}
	out := map[string]int64{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, 0, err
		}
		out[st] = n
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	var sold int64
	if err := pool.QueryRow(ctx, `SELECT coalesce(sum(sold), 0)::bigint FROM items WHERE sale_id = $1`, saleID).Scan(&sold); err != nil {
		return nil, 0, err
	}
	return out, sold, nil
}

func total(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// redisLeft returns the stock of item left in Redis over all shards.
func redisLeft(t *testing.T, rs *stock.Store, s *sale.Sale, item int64) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	layout, err := rs.LoadSale(ctx, s.ID)
	if err != nil {
		t.Fatalf("loading sale: %v", err)
	}
	rem, err := rs.Remaining(ctx, layout, item)
	if err != nil {
		t.Fatalf("remaining: %v", err)
	}
	var n int64
	for _, r := range rem {
		n += r
	}
	return n
}

// reserveInRedis reserves one unit for each user through the stock store, as
// a gateway would, and returns the reservation events.
func reserveInRedis(t *testing.T, rs *stock.Store, s *sale.Sale, item int64, users int, window time.Duration) []orderevent.Event {
	t.Helper()
	return reserveFrom(t, rs, s, item, 1, users, window)
}

// reserveFrom is reserveInRedis for users first .. first+users-1.
func reserveFrom(t *testing.T, rs *stock.Store, s *sale.Sale, item int64, first uint64, users int, window time.Duration) []orderevent.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	events := make([]orderevent.Event, users)
	errs := make(chan error, users)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range events {
		events[i] = reserved(s, item, first+uint64(i), window)
		wg.Add(1)
		sem <- struct{}{}
		go func(e *orderevent.Event) {
			defer wg.Done()
			defer func() { <-sem }()
			tag := s.Shards[sharding.HomeShard(e.UserID, s.ID, len(s.Shards))]
			res, err := rs.Reserve(ctx, stock.Reservation{Tag: tag, SaleID: s.ID, ItemID: e.ItemID, UserID: e.UserID, OrderID: e.OrderID,
				Attempt: e.UserID, Created: e.Created, Expires: e.Expires, TTL: time.Hour})
			if err == nil && res.Outcome != stock.Reserved {
				// The home shard ran dry: the test sizes stock so this
				// never happens.
				err = context.Canceled
			}
			if err != nil {
				errs <- err
			}
		}(&events[i])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("reserving in redis: %v", err)
	}
	return events
}

// startRelay runs a journal relay, as a gateway does, moving the journals of
// sale s to topic until the test ends.
func startRelay(t *testing.T, rs *stock.Store, topic string, s *sale.Sale) *journal.Relay {
	t.Helper()
	kc, err := kgo.NewClient(journal.ProducerOpts(testenv.KafkaBrokers())...)
	if err != nil {
		t.Fatal(err)
	}
	shards := make([]journal.Shard, len(s.Shards))
	for i, tag := range s.Shards {
		shards[i] = journal.Shard{SaleID: s.ID, Tag: tag}
	}
	r := journal.New(journal.Config{Topic: topic, Log: testLog(t), Recover: rs.RecoverStalled}, rs.Client(), kc,
		func() []journal.Shard { return append([]journal.Shard(nil), shards...) }, nopObserver{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; kc.Close() })
	return r
}

type nopObserver struct{}

func (nopObserver) Journal(journal.Shard, int64, time.Duration) {}
func (nopObserver) Released(journal.Shard)                      {}
func (nopObserver) Relayed(int)                                 {}
func (nopObserver) Failed(string)                               {}
