package schema_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/draw"
	"flashsale/sharding/sale"
	"flashsale/writer/schema"
)

// drawPool connects the real PostgreSQL, migrated, or skips (fails under
// FLASHSALE_REQUIRE_STACK=1) without it.
func drawPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the local stack's PostgreSQL (run without -short)")
	}
	pool := testenv.NewPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := schema.Migrate(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	return pool
}

// drawSale creates a sale of access mode access (with a random id) in
// PostgreSQL, dropped with its log when the test ends.
func drawSale(t *testing.T, pool *pgxpool.Pool, access string) *sale.Sale {
	t.Helper()
	id := 1_000_000 + rand.Int64N(sharding.MaxSaleID-1_000_000)
	s := &sale.Sale{ID: id, Name: t.Name(), StartsAt: time.Now().Add(-time.Hour).UTC().Truncate(time.Second),
		EndsAt: time.Now().Add(time.Hour).UTC().Truncate(time.Second), Access: access, TicketRequired: access != sale.AccessOpen,
		Items: []sale.Item{{ID: id*100 + 1, Name: "i", Price: 1, Currency: "EUR", Quantity: 1}}, Shards: []string{"t"}}
	ctx := context.Background()
	if err := schema.CreateSale(ctx, pool, s, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, q := range []string{`DELETE FROM draw_log WHERE sale_id = $1`, `DELETE FROM items WHERE sale_id = $1`, `DELETE FROM sales WHERE id = $1`} {
			if _, err := pool.Exec(ctx, q, id); err != nil {
				t.Logf("dropping sale %d: %v", id, err)
			}
		}
	})
	return s
}

// entries chains bodies into a log.
func entries(t *testing.T, bodies ...string) []draw.Entry {
	t.Helper()
	var out []draw.Entry
	var prev draw.Hash
	for _, b := range bodies {
		en := draw.Entry{Body: []byte(b), Hash: draw.ChainHash(prev, []byte(b))}
		out, prev = append(out, en), en.Hash
	}
	return out
}

func sameEntries(a, b []draw.Entry) bool {
	return slices.EqualFunc(a, b, func(x, y draw.Entry) bool { return x.Hash == y.Hash && string(x.Body) == string(y.Body) })
}

// TestInsertDrawLogIsIdempotentAndNeverOverwrites: on the real PostgreSQL,
// inserting a log again, or a longer one, adds only the entries missing; an
// entry offered at a held seq with another hash, or with the held hash and
// another body, is refused with a *DrawLogConflict naming the seq and both
// hashes, and the row held stays; ReadDrawLog gives the log back in order.
func TestInsertDrawLogIsIdempotentAndNeverOverwrites(t *testing.T) {
	pool := drawPool(t)
	ctx := context.Background()
	s := drawSale(t, pool, sale.AccessQueue)
	log := entries(t, `{"seq":0}`, `{"seq":1}`, `{"seq":2}`)

	if got, err := schema.ReadDrawLog(ctx, pool, s.ID); err != nil || len(got) != 0 {
		t.Fatalf("a sale without a log: %v, %v", got, err)
	}
	for _, step := range []struct {
		log  []draw.Entry
		want int
	}{{log[:2], 2}, {log, 1}, {log, 0}, {log[:1], 0}} {
		n, err := schema.InsertDrawLog(ctx, pool, s.ID, step.log)
		if err != nil || n != step.want {
			t.Fatalf("inserting %d entries: %d inserted, %v; want %d", len(step.log), n, err, step.want)
		}
	}
	got, err := schema.ReadDrawLog(ctx, pool, s.ID)
	if err != nil || !sameEntries(got, log) {
		t.Fatalf("read back: %v, %v", got, err)
	}

	other := entries(t, `{"seq":0}`, `{"seq":1,"x":1}`, `{"seq":2}`, `{"seq":3}`)
	n, err := schema.InsertDrawLog(ctx, pool, s.ID, other)
	var c *schema.DrawLogConflict
	if !errors.As(err, &c) || n != 0 || c.Sale != s.ID || c.Seq != 1 || c.Held != log[1].Hash || c.Offered != other[1].Hash || c.SameHash {
		t.Fatalf("another entry at seq 1: %d inserted, %v (%+v)", n, err, c)
	}
	if msg := err.Error(); !strings.Contains(msg, log[1].Hash.String()) || !strings.Contains(msg, other[1].Hash.String()) {
		t.Errorf("the conflict does not name both hashes: %s", msg)
	}
	forged := slices.Clone(log)
	forged[2].Body = []byte(`{"seq":2,"forged":true}`) // the hash held, another body
	if _, err := schema.InsertDrawLog(ctx, pool, s.ID, forged); !errors.As(err, &c) || c.Seq != 2 || !c.SameHash {
		t.Fatalf("the held hash with another body: %v", err)
	}
	if got, err := schema.ReadDrawLog(ctx, pool, s.ID); err != nil || !sameEntries(got, log) {
		t.Fatalf("after the conflicts PostgreSQL holds %v (%v), want the log first inserted", got, err)
	}
}

// TestDrawnSalesListsQueuesAndRaffles: DrawnSales lists a queue sale with
// its times and access, not an open sale, nor one ended before the bound.
func TestDrawnSalesListsQueuesAndRaffles(t *testing.T) {
	pool := drawPool(t)
	ctx := context.Background()
	queue := drawSale(t, pool, sale.AccessQueue)
	open := drawSale(t, pool, sale.AccessOpen)
	find := func(after time.Time) map[int64]*sale.Sale {
		t.Helper()
		list, err := schema.DrawnSales(ctx, pool, after)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int64]*sale.Sale{}
		for _, s := range list {
			out[s.ID] = s
		}
		return out
	}
	got := find(time.Now().Add(-time.Hour))
	if q := got[queue.ID]; q == nil || q.Mode() != sale.AccessQueue || !q.EndsAt.Equal(queue.EndsAt) || !q.StartsAt.Equal(queue.StartsAt) {
		t.Fatalf("the queue sale: %+v", q)
	}
	if got[open.ID] != nil {
		t.Fatal("an open sale listed as drawn")
	}
	if got := find(queue.EndsAt); got[queue.ID] != nil {
		t.Fatal("a sale listed after its end")
	}
}
