package audit

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

// fixture plants one sale with one item in PostgreSQL and Redis.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	pool  *pgxpool.Pool
	rc    rueidis.Client
	st    *stock.Store
	sale  *sale.Sale
	item  int64
	n     uint32
	added []Accepted
}

func newFixture(t *testing.T, quantity int64) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs PostgreSQL and Redis")
	}
	testenv.Require(t, "postgres", "redis")
	f := &fixture{t: t, ctx: context.Background(), pool: testenv.NewPool(t), rc: testenv.NewRedis(t)}
	f.st = stock.New(f.rc)
	if err := schema.Migrate(f.ctx, f.pool, nil); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	id := rand.Int64N(sharding.MaxSaleID-1) + 1
	f.item = id*16 + 1
	now := time.Now().UTC().Truncate(time.Second)
	f.sale = &sale.Sale{ID: id, Name: "audit test", StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour),
		Items:  []sale.Item{{ID: f.item, Name: "thing", Price: 100, Currency: "EUR", Quantity: quantity}},
		Shards: sharding.UniformTags(id, 4)}
	if _, err := f.pool.Exec(f.ctx, `INSERT INTO sales (id, name, starts_at, ends_at, shards) VALUES ($1, $2, $3, $4, 4)`,
		id, f.sale.Name, f.sale.StartsAt, f.sale.EndsAt); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(f.ctx, `INSERT INTO items (id, sale_id, name, price, currency, quantity) VALUES ($1, $2, 'thing', 100, 'EUR', $3)`,
		f.item, id, quantity); err != nil {
		t.Fatal(err)
	}
	// The description goes under its key only, not into the sales index, so no
	// gateway sharing this Redis starts serving the test's sale.
	b, err := json.Marshal(f.sale)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.rc.Do(f.ctx, f.rc.B().Set().Key(sharding.SaleKey(id)).Value(string(b)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = f.pool.Exec(ctx, `DELETE FROM orders WHERE sale_id = $1`, id)
		_, _ = f.pool.Exec(ctx, `DELETE FROM items WHERE sale_id = $1`, id)
		_, _ = f.pool.Exec(ctx, `DELETE FROM sales WHERE id = $1`, id)
		f.rc.Do(ctx, f.rc.B().Del().Key(sharding.SaleKey(id)).Build())
		for _, tag := range f.sale.Shards {
			f.rc.Do(ctx, f.rc.B().Del().Key(string(sharding.AppendStockKey(nil, tag, f.item))).Build())
		}
	})
	return f
}

// setStock puts units on the item's shards, spread as the preload does.
func (f *fixture) setStock(units int64) {
	f.t.Helper()
	for i, q := range sharding.Split(units, len(f.sale.Shards)) {
		k := string(sharding.AppendStockKey(nil, f.sale.Shards[i], f.item))
		if err := f.rc.Do(f.ctx, f.rc.B().Set().Key(k).Value(strconv.FormatInt(q, 10)).Build()).Error(); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) setSold(n int64) {
	f.t.Helper()
	if _, err := f.pool.Exec(f.ctx, `UPDATE items SET sold = $2 WHERE id = $1`, f.item, n); err != nil {
		f.t.Fatal(err)
	}
}

// order inserts an order with status for a new user and records it as
// answered 202; persisted false records the 202 without the row (a lost order).
func (f *fixture) order(status string, persisted bool) sharding.OrderID {
	f.t.Helper()
	f.n++
	id := sharding.NewOrderID(f.sale.ID, rand.Uint64(), f.n)
	if persisted {
		now := time.Now()
		if _, err := f.pool.Exec(f.ctx, `INSERT INTO orders (id, sale_id, item_id, user_id, status, created_at, expires_at)
			VALUES ($1::text::uuid, $2, $3, $4, $5, $6, $7)`, id.String(), f.sale.ID, f.item, int64(f.n), status, now, now.Add(10*time.Minute)); err != nil {
			f.t.Fatal(err)
		}
	}
	f.added = append(f.added, Accepted{Order: id, ItemID: f.item})
	return id
}

func (f *fixture) check() *Report {
	f.t.Helper()
	// A replayed 202 repeats an order id; the audit must count it once.
	in := Input{SaleID: f.sale.ID, Accepted: append(append([]Accepted{}, f.added...), f.added[0])}
	r, err := Check(f.ctx, f.pool, f.st, in)
	if err != nil {
		f.t.Fatal(err)
	}
	var b strings.Builder
	_ = r.WriteText(&b)
	f.t.Log("\n" + b.String())
	return r
}

func TestAuditPassesOnCleanSale(t *testing.T) {
	f := newFixture(t, 10)
	f.order("PENDING", true)
	f.order("PENDING", true)
	f.order("PAID", true)
	f.order("CANCELLED", true)
	f.order("EXPIRED", true)
	f.setSold(3)
	f.setStock(7)
	ok, _, err := Settle(f.ctx, f.pool, f.st, f.sale.ID, 5, 0, 5*time.Second, 50*time.Millisecond, nil)
	if err != nil || !ok {
		t.Fatalf("settle = %v, %v", ok, err)
	}
	r := f.check()
	if !r.OK() {
		t.Fatalf("clean sale failed the audit: %v", r.Failures)
	}
	if r.Accepted != 5 || r.Orders != 5 || len(r.Items) != 1 || r.Items[0].P != 3 || r.Items[0].S != 7 {
		t.Fatalf("report = %+v", r)
	}
}

func TestAuditCatchesOversellAndLostOrder(t *testing.T) {
	f := newFixture(t, 3)
	for range 4 { // four active orders for three units
		f.order("PENDING", true)
	}
	lost := f.order("PENDING", false) // answered 202, never persisted
	f.setSold(3)                      // the CHECK keeps sold <= quantity; the orders tell the truth
	f.setStock(0)
	r := f.check()
	if r.OK() {
		t.Fatal("the audit passed an oversold sale with a lost order")
	}
	if r.Oversold != 1 {
		t.Errorf("oversold = %d, want 1", r.Oversold)
	}
	if r.Missing != 1 || r.MissingSample[0] != lost.String() {
		t.Errorf("missing = %d %v, want %s", r.Missing, r.MissingSample, lost)
	}
	want := []string{"OVERSOLD", "items.sold is 3 but 4", "Q=3 but S+P=0+4=4", "not in PostgreSQL"}
	all := strings.Join(r.Failures, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("failures lack %q:\n%s", w, all)
		}
	}
}

func TestAuditCatchesStockLeak(t *testing.T) {
	f := newFixture(t, 10)
	f.order("PENDING", true)
	f.order("CANCELLED", true) // its unit never came back to Redis
	f.setSold(1)
	f.setStock(8)
	r := f.check()
	if r.OK() || !strings.Contains(strings.Join(r.Failures, "\n"), "+1 units unaccounted") {
		t.Fatalf("a unit reserved for ever went unnoticed: %v", r.Failures)
	}
}
