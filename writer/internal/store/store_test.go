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
	"github.com/jackc/pgx/v5/pgxpool"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/orderevent"
	"flashsale/sharding/sale"
	"flashsale/writer/internal/store"
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

// rulesSale is a fresh sale of one item of two units on the real PostgreSQL,
// for one subtest of TestPersistRules.
type rulesSale struct {
	t     *testing.T
	ctx   context.Context
	pool  *pgxpool.Pool
	store *store.Store
	sale  *sale.Sale
	item  int64
}

func newRulesSale(t *testing.T, pool *pgxpool.Pool) *rulesSale {
	t.Helper()
	ctx := context.Background()
	saleID := 1_000_000 + rand.Int64N(sharding.MaxSaleID-1_000_000)
	item := saleID*100 + 1
	s := &sale.Sale{ID: saleID, Name: "rules", StartsAt: time.Now().Add(-time.Hour), EndsAt: time.Now().Add(time.Hour),
		Items: []sale.Item{{ID: item, Name: "i", Price: 1, Currency: "EUR", Quantity: 2}}, Shards: []string{"t"}}
	r := &rulesSale{t: t, ctx: ctx, pool: pool, store: store.New(pool), sale: s, item: item}
	if err := r.store.CreateSale(ctx, s, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, q := range []string{`DELETE FROM pending_actions WHERE order_id IN (SELECT id FROM orders WHERE sale_id = $1)`,
			`DELETE FROM releases WHERE sale_id = $1`, `DELETE FROM orders WHERE sale_id = $1`,
			`DELETE FROM order_history WHERE sale_id = $1`,
			`DELETE FROM items WHERE sale_id = $1`, `DELETE FROM sales WHERE id = $1`} {
			_, _ = pool.Exec(ctx, q, saleID)
		}
	})
	return r
}

// reserve is a reservation of item by user, due in a minute.
func (r *rulesSale) reserve(user uint64, item int64) orderevent.Event {
	now := time.Now()
	return orderevent.Event{Type: orderevent.Reserved, OrderID: sharding.NewOrderID(r.sale.ID, rand.Uint64(), rand.Uint32()),
		SaleID: r.sale.ID, ItemID: item, UserID: user, Created: now, Expires: now.Add(time.Minute)}
}

// as is e's order with another event type (a payment or a cancellation).
func as(e orderevent.Event, typ orderevent.Type) orderevent.Event {
	e.Type = typ
	return e
}

func (r *rulesSale) persist(events ...orderevent.Event) (store.Result, error) {
	return r.store.Persist(r.ctx, &store.Batch{Events: events})
}

// status is the stored status and failure reason of e's order.
func (r *rulesSale) status(e orderevent.Event) (status string, why *string) {
	r.t.Helper()
	id := [16]byte(e.OrderID)
	if err := r.pool.QueryRow(r.ctx, `SELECT status, failure FROM orders WHERE id = $1`, id).Scan(&status, &why); err != nil {
		r.t.Fatal(err)
	}
	return status, why
}

// sold is items.sold of the sale's item.
func (r *rulesSale) sold() (n int64) {
	r.t.Helper()
	if err := r.pool.QueryRow(r.ctx, `SELECT sold FROM items WHERE id = $1`, r.item).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// outbox counts the sale's outbox rows not applied yet.
func (r *rulesSale) outbox() (n int) {
	r.t.Helper()
	if err := r.pool.QueryRow(r.ctx, `SELECT count(*) FROM releases WHERE sale_id = $1 AND done_at IS NULL`, r.sale.ID).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// TestPersistRules checks, on the real PostgreSQL, the rows PostgreSQL
// refuses (FAILED with a reason, no sold change), duplicates, early payments,
// cancellations, expiry and the outbox, each on a sale of its own.
func TestPersistRules(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	pool := testenv.NewPool(t)
	if err := store.Migrate(context.Background(), pool, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		test func(*testing.T, *rulesSale)
	}{
		{"a second create is refused", persistCreateTwice},
		{"refused reservations are FAILED with their reason", persistRefused},
		{"a cancel frees the unit for an order whose payment came first", persistCancelFreesUnit},
		{"expiry ends the due PENDING orders only", persistExpiry},
		{"the outbox replays every effect once", persistOutboxReplay},
		{"every status change writes its history row", persistHistory},
		{"a ghost is stored FAILED and its outbox row returns the unit", persistGhost},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, newRulesSale(t, pool)) })
	}
}

// persistCreateTwice: a second CreateSale of the same sale is refused.
func persistCreateTwice(t *testing.T, r *rulesSale) {
	if err := r.store.CreateSale(r.ctx, r.sale, func(context.Context) error { return nil }); !errors.Is(err, store.ErrSaleExists) {
		t.Fatalf("second create: %v, want ErrSaleExists", err)
	}
}

// persistRefused: the rows PostgreSQL must refuse (second active order, sold
// out, unknown item) are stored FAILED with their reason, and sold counts only
// the accepted.
func persistRefused(t *testing.T, r *rulesSale) {
	r1, r2, r3 := r.reserve(1, r.item), r.reserve(2, r.item), r.reserve(3, r.item)
	again := r.reserve(1, r.item)     // user 1's second active order
	unknown := r.reserve(4, r.item+1) // no such item
	res, err := r.persist(r1, r1, r2, again, r3, unknown)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Inserted) != 2 || res.Duplicates != 1 || res.Failed != 3 {
		t.Fatalf("first batch: %+v; want 2 inserted, 1 duplicate, 3 failed", res)
	}
	for e, want := range map[*orderevent.Event]string{&again: store.FailActiveOrder, &r3: store.FailSoldOut, &unknown: store.FailUnknownItem} {
		if st, why := r.status(*e); st != store.StatusFailed || why == nil || *why != want {
			t.Errorf("user %d: status %s (%v), want FAILED: %s", e.UserID, st, why, want)
		}
	}
	if n := r.sold(); n != 2 {
		t.Fatalf("sold %d, want 2", n)
	}
	if n := r.outbox(); n != 3 {
		t.Fatalf("%d undone outbox rows, want the 3 FAILED", n)
	}
}

// persistCancelFreesUnit: a cancel gives its unit back in PostgreSQL; an order
// whose payment arrived first fits then and is paid; later actions on a
// cancelled order change nothing.
func persistCancelFreesUnit(t *testing.T, r *rulesSale) {
	r1, r2, early := r.reserve(1, r.item), r.reserve(2, r.item), r.reserve(5, r.item)
	res, err := r.persist(as(early, orderevent.Pay))
	if err != nil || res.Parked != 1 {
		t.Fatalf("early payment: %+v, %v; want parked", res, err)
	}
	if res, err := r.persist(r1, r2); err != nil || len(res.Inserted) != 2 {
		t.Fatalf("reservations: %+v, %v", res, err)
	}
	// Cancel r1: the unit comes back in PostgreSQL and an outbox row is
	// written; the early order then fits and its parked payment applies.
	res, err = r.persist(as(r1, orderevent.Cancel))
	if err != nil || res.Cancelled != 1 {
		t.Fatalf("cancel: %+v, %v", res, err)
	}
	res, err = r.persist(early)
	if err != nil || res.Paid != 1 || len(res.Inserted) != 1 {
		t.Fatalf("early reservation: %+v, %v", res, err)
	}
	if st, _ := r.status(early); st != store.StatusPaid {
		t.Fatalf("early order %s, want PAID", st)
	}
	if st, _ := r.status(r1); st != store.StatusCancelled {
		t.Fatalf("cancelled order %s, want CANCELLED", st)
	}
	if n := r.sold(); n != 2 {
		t.Fatalf("sold %d, want 2 (r2 pending, early paid)", n)
	}
	// A second cancel and a pay of a cancelled order change nothing.
	res, err = r.persist(as(r1, orderevent.Cancel), as(r1, orderevent.Pay))
	if err != nil || res.Cancelled != 0 || res.Paid != 0 || res.Late != 2 {
		t.Fatalf("late actions: %+v, %v", res, err)
	}
	if n := r.outbox(); n != 2 {
		t.Fatalf("%d undone outbox rows, want CANCELLED and PAID", n)
	}
}

// persistExpiry: expiry ends the due PENDING orders and leaves the paid ones.
func persistExpiry(t *testing.T, r *rulesSale) {
	pending, paid := r.reserve(2, r.item), r.reserve(5, r.item)
	if res, err := r.persist(pending, paid, as(paid, orderevent.Pay)); err != nil || len(res.Inserted) != 2 || res.Paid != 1 {
		t.Fatalf("setup: %+v, %v", res, err)
	}
	if _, err := r.pool.Exec(r.ctx, `UPDATE orders SET expires_at = now() - interval '1 second' WHERE sale_id = $1`, r.sale.ID); err != nil {
		t.Fatal(err)
	}
	effects, err := r.store.ExpireDue(r.ctx, 100, []int64{r.sale.ID}, store.ClaimAll)
	if err != nil || len(effects) != 1 || effects[0].OrderID != pending.OrderID || !effects[0].Releases() {
		t.Fatalf("expiry: %+v, %v; want the pending order", effects, err)
	}
	if n := r.sold(); n != 1 {
		t.Fatalf("sold %d after expiry, want 1", n)
	}
	if n := r.outbox(); n != 2 {
		t.Fatalf("%d undone outbox rows, want PAID and EXPIRED", n)
	}
}

// persistOutboxReplay: every effect waits in the outbox until a replay applies
// it.
func persistOutboxReplay(t *testing.T, r *rulesSale) {
	r1, r2, r3 := r.reserve(1, r.item), r.reserve(2, r.item), r.reserve(3, r.item)
	if res, err := r.persist(r1, r2, r3, as(r1, orderevent.Cancel), as(r2, orderevent.Pay)); err != nil || res.Effects == nil {
		t.Fatalf("setup: %+v, %v", res, err)
	}
	// 1 FAILED (sold out) + 1 CANCELLED + 1 PAID.
	if n := r.outbox(); n != 3 {
		t.Fatalf("%d undone outbox rows, want 3", n)
	}
	apply := func(_ context.Context, es []store.Effect) []sharding.OrderID {
		ids := make([]sharding.OrderID, len(es))
		for i := range es {
			ids[i] = es[i].OrderID
		}
		return ids
	}
	n, err := r.store.ReplayOutbox(r.ctx, 0, 100, []int64{r.sale.ID}, apply)
	if err != nil || n != 3 {
		t.Fatalf("replay: %d, %v; want 3", n, err)
	}
	if n := r.outbox(); n != 0 {
		t.Fatalf("%d undone outbox rows after the replay, want 0", n)
	}
}
