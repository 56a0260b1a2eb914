package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/writer/internal/store"
	"flashsale/writer/orderevent"
)

func TestIsTransient(t *testing.T) {
	yes := []error{
		&pgconn.PgError{Code: "57P01"}, &pgconn.PgError{Code: "08006"}, &pgconn.PgError{Code: "40P01"},
		fmt.Errorf("x: %w", context.DeadlineExceeded), io.ErrUnexpectedEOF, &net.OpError{Op: "dial", Err: errors.New("refused")},
		errors.New("conn closed"),
	}
	no := []error{nil, &pgconn.PgError{Code: "23505"}, &pgconn.PgError{Code: "42P01"}, errors.New("boom"), context.Canceled}
	for _, err := range yes {
		if !store.IsTransient(err) {
			t.Errorf("IsTransient(%v) = false", err)
		}
	}
	for _, err := range no {
		if store.IsTransient(err) {
			t.Errorf("IsTransient(%v) = true", err)
		}
	}
}

// TestPersistRules checks, on the real PostgreSQL, the rows PostgreSQL
// refuses (FAILED with a reason, no sold change), duplicates, early payments,
// cancellations and expiry.
func TestPersistRules(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	pool := testenv.NewPool(t)
	ctx := context.Background()
	if err := store.Migrate(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	st := store.New(pool)
	saleID := 1_000_000 + rand.Int64N(sharding.MaxSaleID-1_000_000)
	item := saleID*100 + 1
	s := &sharding.Sale{ID: saleID, Name: "rules", StartsAt: time.Now().Add(-time.Hour), EndsAt: time.Now().Add(time.Hour),
		Items: []sharding.Item{{ID: item, Name: "i", Price: 1, Currency: "EUR", Quantity: 2}}, Shards: []string{"t"}}
	if err := st.CreateSale(ctx, s, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, q := range []string{`DELETE FROM releases WHERE sale_id = $1`, `DELETE FROM orders WHERE sale_id = $1`,
			`DELETE FROM items WHERE sale_id = $1`, `DELETE FROM sales WHERE id = $1`} {
			_, _ = pool.Exec(ctx, q, saleID)
		}
	})
	if err := st.CreateSale(ctx, s, func(context.Context) error { return nil }); !errors.Is(err, store.ErrSaleExists) {
		t.Fatalf("second create: %v, want ErrSaleExists", err)
	}
	ev := func(typ orderevent.Type, user uint64, it int64) orderevent.Event {
		now := time.Now()
		return orderevent.Event{Type: typ, OrderID: sharding.NewOrderID(saleID, rand.Uint64(), rand.Uint32()),
			SaleID: saleID, ItemID: it, UserID: user, Created: now, Expires: now.Add(time.Minute)}
	}
	r1, r2, r3 := ev(orderevent.Reserved, 1, item), ev(orderevent.Reserved, 2, item), ev(orderevent.Reserved, 3, item)
	again := ev(orderevent.Reserved, 1, item)     // user 1's second active order
	unknown := ev(orderevent.Reserved, 4, item+1) // no such item
	early := ev(orderevent.Reserved, 5, item)     // its payment comes first
	pay := early
	pay.Type = orderevent.Pay

	res, err := st.Persist(ctx, &store.Batch{Events: []orderevent.Event{pay}})
	if err != nil || res.Parked != 1 {
		t.Fatalf("early payment: %+v, %v; want parked", res, err)
	}
	res, err = st.Persist(ctx, &store.Batch{Events: []orderevent.Event{r1, r1, r2, again, r3, unknown}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Inserted) != 2 || res.Duplicates != 1 || res.Failed != 3 {
		t.Fatalf("first batch: %+v; want 2 inserted, 1 duplicate, 3 failed", res)
	}
	status := func(e orderevent.Event) (st string, why *string) {
		id := [16]byte(e.OrderID)
		if err := pool.QueryRow(ctx, `SELECT status, failure FROM orders WHERE id = $1`, id).Scan(&st, &why); err != nil {
			t.Fatal(err)
		}
		return st, why
	}
	sold := func() (n int64) {
		if err := pool.QueryRow(ctx, `SELECT sold FROM items WHERE id = $1`, item).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for e, want := range map[*orderevent.Event]string{&again: store.FailActiveOrder, &r3: store.FailSoldOut, &unknown: store.FailUnknownItem} {
		if st, why := status(*e); st != store.StatusFailed || why == nil || *why != want {
			t.Errorf("user %d: status %s (%v), want FAILED: %s", e.UserID, st, why, want)
		}
	}
	if n := sold(); n != 2 {
		t.Fatalf("sold %d, want 2", n)
	}

	// Cancel r1: the unit comes back in PostgreSQL and an outbox row is written;
	// the early order then fits and its parked payment applies.
	cancel := r1
	cancel.Type = orderevent.Cancel
	res, err = st.Persist(ctx, &store.Batch{Events: []orderevent.Event{cancel}})
	if err != nil || res.Cancelled != 1 {
		t.Fatalf("cancel: %+v, %v", res, err)
	}
	res, err = st.Persist(ctx, &store.Batch{Events: []orderevent.Event{early}})
	if err != nil || res.Paid != 1 || len(res.Inserted) != 1 {
		t.Fatalf("early reservation: %+v, %v", res, err)
	}
	if st, _ := status(early); st != store.StatusPaid {
		t.Fatalf("early order %s, want PAID", st)
	}
	if st, _ := status(r1); st != store.StatusCancelled {
		t.Fatalf("cancelled order %s, want CANCELLED", st)
	}
	if n := sold(); n != 2 {
		t.Fatalf("sold %d, want 2 (r2 pending, early paid)", n)
	}
	// A second cancel and a pay of a cancelled order change nothing.
	pay1 := r1
	pay1.Type = orderevent.Pay
	res, err = st.Persist(ctx, &store.Batch{Events: []orderevent.Event{cancel, pay1}})
	if err != nil || res.Cancelled != 0 || res.Paid != 0 || res.Late != 2 {
		t.Fatalf("late actions: %+v, %v", res, err)
	}

	// Expiry: r2 is due; the paid order is not.
	if _, err := pool.Exec(ctx, `UPDATE orders SET expires_at = now() - interval '1 second' WHERE sale_id = $1`, saleID); err != nil {
		t.Fatal(err)
	}
	effects, err := st.ExpireDue(ctx, 100, []int64{saleID}, store.ClaimAll)
	if err != nil || len(effects) != 1 || effects[0].OrderID != r2.OrderID || !effects[0].Releases() {
		t.Fatalf("expiry: %+v, %v; want r2", effects, err)
	}
	if n := sold(); n != 1 {
		t.Fatalf("sold %d after expiry, want 1", n)
	}
	var outbox int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM releases WHERE sale_id = $1 AND done_at IS NULL`, saleID).Scan(&outbox); err != nil {
		t.Fatal(err)
	}
	// 3 FAILED + 1 CANCELLED + 1 PAID + 1 EXPIRED.
	if outbox != 6 {
		t.Fatalf("%d undone outbox rows, want 6", outbox)
	}
	n, err := st.ReplayOutbox(ctx, 0, 100, []int64{saleID}, func(_ context.Context, es []store.Effect) []sharding.OrderID {
		ids := make([]sharding.OrderID, len(es))
		for i := range es {
			ids[i] = es[i].OrderID
		}
		return ids
	})
	if err != nil || n != 6 {
		t.Fatalf("replay: %d, %v; want 6", n, err)
	}
}
