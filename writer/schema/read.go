package schema

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flashsale/sharding"
	"flashsale/sharding/sale"
)

// The reads of the other binaries: flashctl (sale, preload, status,
// reconcile, the closing ledger) and the bench's audit read the writer's
// tables through the functions of this file, ledger.go and audit.go, so that
// a schema change touches this folder alone (TestNoSQLOutsideTheWriter).
// None of them writes.

// Querier is what a read needs of a pool or a transaction: *pgxpool.Pool
// and pgx.Tx have it.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ReadSale reads sale id and its items, with their branding (migration
// 00003) and the sale's front door (00004), which the writer applies at
// start and `flashctl sale create` before it writes; a preload runs
// read-only. shards is sales.shards (0 when NULL); found is false for an
// unknown sale.
func ReadSale(ctx context.Context, q Querier, id int64) (sl *sale.Sale, shards int, found bool, err error) {
	var (
		s      sale.Sale
		window float64
		n      *int32
		brand  []byte
		door   []byte
	)
	err = q.QueryRow(ctx, `
		SELECT name, starts_at, ends_at, EXTRACT(EPOCH FROM payment_window)::float8, shards, brand, front_door
		FROM sales WHERE id = $1`, id).Scan(&s.Name, &s.StartsAt, &s.EndsAt, &window, &n, &brand, &door)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("reading sale %d from postgresql: %w", id, err)
	}
	if s.Brand, err = ParseBrand(brand); err != nil {
		return nil, 0, false, fmt.Errorf("reading sale %d from postgresql: %w", id, err)
	}
	fd, err := ParseFrontDoor(door)
	if err != nil {
		return nil, 0, false, fmt.Errorf("reading sale %d from postgresql: %w", id, err)
	}
	fd.Apply(&s)
	s.ID = id
	s.StartsAt, s.EndsAt = s.StartsAt.UTC(), s.EndsAt.UTC()
	s.PaymentWindow = sale.Duration(time.Duration(window * float64(time.Second)))
	if n != nil {
		shards = int(*n)
	}
	rows, err := q.Query(ctx, `SELECT id, name, price, currency, quantity, image, description FROM items WHERE sale_id = $1 ORDER BY id`, id)
	if err != nil {
		return nil, 0, false, fmt.Errorf("reading items of sale %d: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var it sale.Item
		if err := rows.Scan(&it.ID, &it.Name, &it.Price, &it.Currency, &it.Quantity, &it.Image, &it.Description); err != nil {
			return nil, 0, false, fmt.Errorf("reading items of sale %d: %w", id, err)
		}
		s.Items = append(s.Items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, false, fmt.Errorf("reading items of sale %d: %w", id, err)
	}
	return &s, shards, true, nil
}

// DrawHeadKey reads the secret key of sale id's tree head kept with the
// sale (hex; "" when it has none).
func DrawHeadKey(ctx context.Context, q Querier, id int64) (string, error) {
	var key *string
	if err := q.QueryRow(ctx, `SELECT draw_head_key FROM sales WHERE id = $1`, id).Scan(&key); err != nil {
		return "", fmt.Errorf("reading the tree-head key of sale %d from postgresql: %w", id, err)
	}
	if key == nil {
		return "", nil
	}
	return *key, nil
}

// DrawSeed reads the secret seed of sale id's draw kept with the sale (""
// for none: an open sale, or one created before migration 00004).
func DrawSeed(ctx context.Context, q Querier, id int64) (string, error) {
	var seed *string
	if err := q.QueryRow(ctx, `SELECT draw_seed FROM sales WHERE id = $1`, id).Scan(&seed); err != nil {
		return "", fmt.Errorf("reading the draw seed of sale %d from postgresql: %w", id, err)
	}
	if seed == nil {
		return "", nil
	}
	return *seed, nil
}

// ItemTotals is one item's numbers in PostgreSQL.
type ItemTotals struct {
	Quantity int64 // items.quantity: Q
	Sold     int64 // items.sold, kept by the writer
	Active   int64 // PENDING + PAID orders: P
}

// SaleItemTotals reads Q, sold and P of every item of sale id.
func SaleItemTotals(ctx context.Context, q Querier, id int64) (map[int64]ItemTotals, error) {
	rows, err := q.Query(ctx, `
		SELECT i.id, i.quantity, i.sold,
		       (SELECT count(*) FROM orders o
		         WHERE o.sale_id = i.sale_id AND o.item_id = i.id AND o.status IN ('PENDING', 'PAID'))
		FROM items i WHERE i.sale_id = $1`, id)
	if err != nil {
		return nil, fmt.Errorf("reading item totals of sale %d: %w", id, err)
	}
	defer rows.Close()
	out := map[int64]ItemTotals{}
	for rows.Next() {
		var item int64
		var v ItemTotals
		if err := rows.Scan(&item, &v.Quantity, &v.Sold, &v.Active); err != nil {
			return nil, fmt.Errorf("reading item totals of sale %d: %w", id, err)
		}
		out[item] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading item totals of sale %d: %w", id, err)
	}
	return out, nil
}

// Order is one row of orders, as reconcile needs it.
type Order struct {
	ID      sharding.OrderID
	ItemID  int64
	UserID  uint64
	Status  string
	Created time.Time
	Expires time.Time
}

const orderColumns = `id::text, item_id, user_id, status, created_at, expires_at`

func scanOrders(rows pgx.Rows) ([]Order, error) {
	defer rows.Close()
	var out []Order
	for rows.Next() {
		var (
			o    Order
			id   string
			user int64
		)
		if err := rows.Scan(&id, &o.ItemID, &user, &o.Status, &o.Created, &o.Expires); err != nil {
			return nil, err
		}
		oid, ok := sharding.ParseOrderID([]byte(id))
		if !ok {
			// Not an id a gateway minted: the order cannot be on any shard.
			continue
		}
		o.ID, o.UserID = oid, uint64(user)
		out = append(out, o)
	}
	return out, rows.Err()
}

// ActiveOrders reads the PENDING and PAID orders of sale id.
func ActiveOrders(ctx context.Context, q Querier, id int64) ([]Order, error) {
	rows, err := q.Query(ctx, `SELECT `+orderColumns+` FROM orders
		WHERE sale_id = $1 AND status IN ('PENDING', 'PAID')`, id)
	if err != nil {
		return nil, fmt.Errorf("reading active orders of sale %d: %w", id, err)
	}
	out, err := scanOrders(rows)
	if err != nil {
		return nil, fmt.Errorf("reading active orders of sale %d: %w", id, err)
	}
	return out, nil
}

// OrdersByID reads the orders with the given ids, whatever their status.
func OrdersByID(ctx context.Context, q Querier, ids []sharding.OrderID) (map[sharding.OrderID]Order, error) {
	out := make(map[sharding.OrderID]Order, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	text := make([]string, len(ids))
	for i, id := range ids {
		text[i] = id.String()
	}
	rows, err := q.Query(ctx, `SELECT `+orderColumns+` FROM orders WHERE id = ANY($1::uuid[])`, text)
	if err != nil {
		return nil, fmt.Errorf("reading orders by id: %w", err)
	}
	list, err := scanOrders(rows)
	if err != nil {
		return nil, fmt.Errorf("reading orders by id: %w", err)
	}
	for _, o := range list {
		out[o.ID] = o
	}
	return out, nil
}
