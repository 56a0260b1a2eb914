package store_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/orderevent"
	"flashsale/sharding/sale"
	"flashsale/writer/internal/store"
)

// BenchmarkPersist measures PostgreSQL persistence alone: one op is one
// transaction of 5,000 new reservations (the writer's default batch). The
// Kafka-to-rows figure is logged by TestPersistAndReplay in package app.
func BenchmarkPersist(b *testing.B) {
	pool := testenv.NewPool(b)
	ctx := context.Background()
	if err := store.Migrate(ctx, pool, nil); err != nil {
		b.Fatal(err)
	}
	st := store.New(pool)
	const batch = 5000
	saleID := 1_000_000 + rand.Int64N(sharding.MaxSaleID-1_000_000)
	item := saleID*100 + 1
	s := &sale.Sale{ID: saleID, Name: "bench", StartsAt: time.Now().Add(-time.Hour), EndsAt: time.Now().Add(time.Hour),
		Items: []sale.Item{{ID: item, Name: "i", Price: 1, Currency: "EUR", Quantity: 1 << 40}}, Shards: []string{"t"}}
	if err := st.CreateSale(ctx, s, func(context.Context) error { return nil }); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for _, q := range []string{`DELETE FROM order_history WHERE sale_id = $1`, `DELETE FROM orders WHERE sale_id = $1`, `DELETE FROM items WHERE sale_id = $1`, `DELETE FROM sales WHERE id = $1`} {
			_, _ = pool.Exec(ctx, q, saleID)
		}
	})
	user := uint64(0)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		events := make([]orderevent.Event, batch)
		now := time.Now()
		for i := range events {
			user++
			events[i] = orderevent.Event{Type: orderevent.Reserved, OrderID: sharding.NewOrderID(saleID, rand.Uint64(), rand.Uint32()),
				SaleID: saleID, ItemID: item, UserID: user, Created: now, Expires: now.Add(time.Minute)}
		}
		b.StartTimer()
		res, err := st.Persist(ctx, &store.Batch{Events: events})
		if err != nil || len(res.Inserted) != batch {
			b.Fatalf("persist: %d inserted, %v", len(res.Inserted), err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "orders/s")
}
