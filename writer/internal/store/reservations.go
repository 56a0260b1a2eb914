package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flashsale/sharding/orderevent"
)

// orderColumns is the six columns of new orders rows, one slice a column, as
// the unnest($1..$6) of an INSERT takes them.
type orderColumns struct {
	ids              [][16]byte
	sales, items     []int64
	users            []int64
	created, expires []time.Time
}

func newOrderColumns(n int) orderColumns {
	return orderColumns{
		ids:   make([][16]byte, 0, n),
		sales: make([]int64, 0, n), items: make([]int64, 0, n), users: make([]int64, 0, n),
		created: make([]time.Time, 0, n), expires: make([]time.Time, 0, n),
	}
}

func (c *orderColumns) add(e *orderevent.Event) {
	c.ids = append(c.ids, e.OrderID)
	c.sales = append(c.sales, e.SaleID)
	c.items = append(c.items, e.ItemID)
	c.users = append(c.users, int64(e.UserID))
	c.created = append(c.created, e.Created.UTC())
	c.expires = append(c.expires, e.Expires.UTC())
}

// reservations is one batch's reservations on their way into orders.
type reservations struct {
	b        *Batch
	cols     orderColumns     // distinct order ids, in batch order
	byID     map[[16]byte]int // order id -> index in b.Events
	inserted map[[16]byte]bool
}

// allocation is how the inserted orders share the items' units left.
type allocation struct {
	accepted []int           // batch indexes of the orders that stay PENDING
	sold     map[int64]int64 // item -> units to add to items.sold
	failIDs  [][16]byte      // orders to mark FAILED, with failWhy
	failWhy  []string
}

// insertReservations inserts the batch's reservations and settles items.sold:
// it inserts them as PENDING, tells the skipped apart (known order or second
// active order of a user), gives each item's units left to its new orders in
// batch order, and stores the rest FAILED with their reason and an outbox row.
// res.Inserted gets the batch indexes of the orders that are now PENDING.
func (s *Store) insertReservations(ctx context.Context, tx pgx.Tx, b *Batch, res *Result) error {
	r := collectReservations(b, res)
	if r == nil {
		return nil
	}
	if err := r.insertPending(ctx, tx); err != nil {
		return err
	}
	refused, err := r.classifySkipped(ctx, tx, res)
	if err != nil {
		return err
	}
	left, err := r.lockItems(ctx, tx)
	if err != nil {
		return err
	}
	a := r.allocate(left)
	if err := raiseSold(ctx, tx, a.sold); err != nil {
		return err
	}
	if err := markFailed(ctx, tx, a.failIDs, a.failWhy); err != nil {
		return err
	}
	failIDs, err := storeRefused(ctx, tx, b, refused, a.failIDs)
	if err != nil {
		return err
	}
	if len(failIDs) > 0 {
		effects, err := outboxFrom(ctx, tx, failIDs, StatusFailed)
		if err != nil {
			return err
		}
		res.Effects = append(res.Effects, effects...)
		res.Failed += len(effects)
	}
	res.Inserted = a.accepted
	return nil
}

// collectReservations gathers the batch's reservations, counting an order id
// repeated within the batch as a duplicate. It returns nil when there are none.
func collectReservations(b *Batch, res *Result) *reservations {
	n := 0
	for i := range b.Events {
		if b.Events[i].Type == orderevent.Reserved {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	r := &reservations{b: b, cols: newOrderColumns(n), byID: make(map[[16]byte]int, n)}
	for i := range b.Events {
		e := &b.Events[i]
		if e.Type != orderevent.Reserved {
			continue
		}
		if _, dup := r.byID[e.OrderID]; dup {
			res.Duplicates++
			continue
		}
		r.byID[e.OrderID] = i
		r.cols.add(e)
	}
	return r
}

// insertPendingSQL inserts reservations ($1..$6, as orderColumns) as PENDING
// orders with their history rows and returns the ids really inserted.
var insertPendingSQL = `
	WITH ins AS (
		INSERT INTO orders (id, sale_id, item_id, user_id, status, created_at, expires_at, updated_at)
		SELECT u.id, u.sale_id, u.item_id, u.user_id, 'PENDING', u.created_at, u.expires_at, now()
		FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::bigint[], $5::timestamptz[], $6::timestamptz[])
		     WITH ORDINALITY AS u(id, sale_id, item_id, user_id, created_at, expires_at, ord)
		ORDER BY u.ord
		ON CONFLICT DO NOTHING
		RETURNING id, sale_id, item_id, user_id
	), ` + historyFrom("h", "ins", StatusPending, CauseReserve, "NULL") + `
	SELECT id FROM ins`

// insertPending inserts the reservations as PENDING orders and records which
// were really inserted. ON CONFLICT DO NOTHING without a target skips both a
// known order id (a duplicate) and a second active order of a user (the
// partial unique index); classifySkipped tells the two apart.
func (r *reservations) insertPending(ctx context.Context, tx pgx.Tx) error {
	c := &r.cols
	rows, err := tx.Query(ctx, insertPendingSQL, c.ids, c.sales, c.items, c.users, c.created, c.expires)
	if err != nil {
		return fmt.Errorf("inserting reservations: %w", err)
	}
	r.inserted = make(map[[16]byte]bool, len(c.ids))
	var id [16]byte
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error { r.inserted[id] = true; return nil })
	if err != nil {
		return fmt.Errorf("inserting reservations: %w", err)
	}
	return nil
}

// classifySkipped sorts the reservations insertPending skipped: an order id
// already stored is a duplicate (counted in res); any other is a second active
// order of its user, returned as batch indexes to be stored FAILED.
func (r *reservations) classifySkipped(ctx context.Context, tx pgx.Tx, res *Result) (refused []int, err error) {
	if len(r.inserted) == len(r.cols.ids) {
		return nil, nil
	}
	var skipped [][16]byte
	for _, oid := range r.cols.ids {
		if !r.inserted[oid] {
			skipped = append(skipped, oid)
		}
	}
	rows, err := tx.Query(ctx, `SELECT id FROM orders WHERE id = ANY($1::uuid[])`, skipped)
	if err != nil {
		return nil, fmt.Errorf("finding duplicate reservations: %w", err)
	}
	known := make(map[[16]byte]bool, len(skipped))
	var id [16]byte
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error { known[id] = true; return nil })
	if err != nil {
		return nil, fmt.Errorf("finding duplicate reservations: %w", err)
	}
	for _, oid := range skipped {
		if known[oid] {
			res.Duplicates++
		} else {
			refused = append(refused, r.byID[oid])
		}
	}
	return refused, nil
}

// itemStock is one locked item: its sale and the units it has left.
type itemStock struct {
	sale, left int64
}

// lockItems locks the items of the inserted orders in id order (so concurrent
// writers never deadlock on them) and returns their units left. An item
// missing from the result does not exist.
func (r *reservations) lockItems(ctx context.Context, tx pgx.Tx) (map[int64]*itemStock, error) {
	want := map[int64]bool{}
	for _, oid := range r.cols.ids {
		if r.inserted[oid] {
			want[r.b.Events[r.byID[oid]].ItemID] = true
		}
	}
	left := make(map[int64]*itemStock, len(want))
	if len(want) == 0 {
		return left, nil
	}
	itemIDs := make([]int64, 0, len(want))
	for it := range want {
		itemIDs = append(itemIDs, it)
	}
	rows, err := tx.Query(ctx, `SELECT id, sale_id, quantity - sold FROM items WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`, itemIDs)
	if err != nil {
		return nil, fmt.Errorf("locking items: %w", err)
	}
	var it, sale, l int64
	_, err = pgx.ForEachRow(rows, []any{&it, &sale, &l}, func() error { left[it] = &itemStock{sale, l}; return nil })
	if err != nil {
		return nil, fmt.Errorf("locking items: %w", err)
	}
	return left, nil
}

// allocate accepts, per item and in batch order, as many inserted orders as it
// has units left; the others fail as sold out, or as an unknown item when the
// item does not exist in the order's sale.
func (r *reservations) allocate(left map[int64]*itemStock) allocation {
	a := allocation{sold: map[int64]int64{}}
	for _, oid := range r.cols.ids {
		if !r.inserted[oid] {
			continue
		}
		i := r.byID[oid]
		e := &r.b.Events[i]
		st := left[e.ItemID]
		switch {
		case st == nil || st.sale != e.SaleID:
			a.failIDs, a.failWhy = append(a.failIDs, oid), append(a.failWhy, FailUnknownItem)
		case st.left <= 0:
			a.failIDs, a.failWhy = append(a.failIDs, oid), append(a.failWhy, FailSoldOut)
		default:
			st.left--
			a.sold[e.ItemID]++
			a.accepted = append(a.accepted, i)
		}
	}
	return a
}

// raiseSold adds the allocated units to items.sold.
func raiseSold(ctx context.Context, tx pgx.Tx, sold map[int64]int64) error {
	if len(sold) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(sold))
	n := make([]int64, 0, len(sold))
	for it, c := range sold {
		ids, n = append(ids, it), append(n, c)
	}
	_, err := tx.Exec(ctx, `
		UPDATE items SET sold = items.sold + u.n
		FROM unnest($1::bigint[], $2::bigint[]) AS u(id, n)
		WHERE items.id = u.id`, ids, n)
	if err != nil {
		return fmt.Errorf("raising sold counts: %w", err)
	}
	return nil
}

// markFailed moves just-inserted orders ids to FAILED with their reasons why.
func markFailed(ctx context.Context, tx pgx.Tx, ids [][16]byte, why []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `
		WITH f AS (
			UPDATE orders SET status = 'FAILED', failure = u.why, updated_at = now()
			FROM unnest($1::uuid[], $2::text[]) AS u(id, why)
			WHERE orders.id = u.id
			RETURNING orders.id, orders.sale_id, orders.item_id, orders.user_id, orders.failure
		), `+historyFrom("h", "f", StatusFailed, CauseFailure, "failure")+`
		SELECT 1`, ids, why)
	if err != nil {
		return fmt.Errorf("marking refused orders failed: %w", err)
	}
	return nil
}

// storeRefused stores the second active orders of their users (batch indexes
// refused) as FAILED orders and returns failIDs with their ids appended.
func storeRefused(ctx context.Context, tx pgx.Tx, b *Batch, refused []int, failIDs [][16]byte) ([][16]byte, error) {
	if len(refused) == 0 {
		return failIDs, nil
	}
	c := newOrderColumns(len(refused))
	for _, i := range refused {
		c.add(&b.Events[i])
	}
	_, err := tx.Exec(ctx, `
		WITH f AS (
			INSERT INTO orders (id, sale_id, item_id, user_id, status, created_at, expires_at, updated_at, failure)
			SELECT u.id, u.sale_id, u.item_id, u.user_id, 'FAILED', u.created_at, u.expires_at, now(), $7
			FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::bigint[], $5::timestamptz[], $6::timestamptz[])
			     AS u(id, sale_id, item_id, user_id, created_at, expires_at)
			ON CONFLICT (id) DO NOTHING
			RETURNING id, sale_id, item_id, user_id, failure
		), `+historyFrom("h", "f", StatusFailed, CauseFailure, "failure")+`
		SELECT 1`, c.ids, c.sales, c.items, c.users, c.created, c.expires, FailActiveOrder)
	if err != nil {
		return nil, fmt.Errorf("storing refused orders: %w", err)
	}
	return append(failIDs, c.ids...), nil
}
