package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flashsale/sharding"
	"flashsale/sharding/sale"
	"flashsale/writer/schema"
)

// The queries below read the writer's schema (writer/schema/migrations);
// the tool never writes PostgreSQL.

// pgSale reads sale id and its items from PostgreSQL, with their branding
// (migration 00003) and the sale's front door (00004), which the writer
// applies at start and sale create before it writes; a preload runs
// read-only. shards is sales.shards (0
// when NULL); found is false for an unknown sale.
func (t *Tool) pgSale(ctx context.Context, id int64) (sl *sale.Sale, shards int, found bool, err error) {
	var (
		s      sale.Sale
		window float64
		n      *int32
		brand  []byte
		door   []byte
	)
	err = t.DB.QueryRow(ctx, `
		SELECT name, starts_at, ends_at, EXTRACT(EPOCH FROM payment_window)::float8, shards, brand, front_door
		FROM sales WHERE id = $1`, id).Scan(&s.Name, &s.StartsAt, &s.EndsAt, &window, &n, &brand, &door)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("reading sale %d from postgresql: %w", id, err)
	}
	if s.Brand, err = schema.ParseBrand(brand); err != nil {
		return nil, 0, false, fmt.Errorf("reading sale %d from postgresql: %w", id, err)
	}
	fd, err := schema.ParseFrontDoor(door)
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
	rows, err := t.DB.Query(ctx, `SELECT id, name, price, currency, quantity, image, description FROM items WHERE sale_id = $1 ORDER BY id`, id)
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

// pgSeed reads the secret seed of sale id's draw kept with the sale ("" for
// none: an open sale, or one created before migration 00004).
func (t *Tool) pgSeed(ctx context.Context, id int64) (string, error) {
	var seed *string
	if err := t.DB.QueryRow(ctx, `SELECT draw_seed FROM sales WHERE id = $1`, id).Scan(&seed); err != nil {
		return "", fmt.Errorf("reading the draw seed of sale %d from postgresql: %w", id, err)
	}
	if seed == nil {
		return "", nil
	}
	return *seed, nil
}

// itemTotals is one item's numbers in PostgreSQL.
type itemTotals struct {
	Quantity int64 // items.quantity: Q
	Sold     int64 // items.sold, kept by the writer
	Active   int64 // PENDING + PAID orders: P
}

// pgTotals reads Q, sold and P of every item of sale id.
func (t *Tool) pgTotals(ctx context.Context, id int64) (map[int64]itemTotals, error) {
	rows, err := t.DB.Query(ctx, `
		SELECT i.id, i.quantity, i.sold,
		       (SELECT count(*) FROM orders o
		         WHERE o.sale_id = i.sale_id AND o.item_id = i.id AND o.status IN ('PENDING', 'PAID'))
		FROM items i WHERE i.sale_id = $1`, id)
	if err != nil {
		return nil, fmt.Errorf("reading item totals of sale %d: %w", id, err)
	}
	defer rows.Close()
	out := map[int64]itemTotals{}
	for rows.Next() {
		var item int64
		var v itemTotals
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

// pgOrder is one row of orders, as reconcile needs it.
type pgOrder struct {
	ID      sharding.OrderID
	ItemID  int64
	UserID  uint64
	Status  string
	Created time.Time
	Expires time.Time
}

const orderColumns = `id::text, item_id, user_id, status, created_at, expires_at`

func scanOrders(rows pgx.Rows) ([]pgOrder, error) {
	defer rows.Close()
	var out []pgOrder
	for rows.Next() {
		var (
			o    pgOrder
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

// pgActiveOrders reads the PENDING and PAID orders of sale id.
func (t *Tool) pgActiveOrders(ctx context.Context, id int64) ([]pgOrder, error) {
	rows, err := t.DB.Query(ctx, `SELECT `+orderColumns+` FROM orders
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

// pgOrdersByID reads the orders with the given ids, whatever their status.
func (t *Tool) pgOrdersByID(ctx context.Context, ids []sharding.OrderID) (map[sharding.OrderID]pgOrder, error) {
	out := make(map[sharding.OrderID]pgOrder, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	text := make([]string, len(ids))
	for i, id := range ids {
		text[i] = id.String()
	}
	rows, err := t.DB.Query(ctx, `SELECT `+orderColumns+` FROM orders WHERE id = ANY($1::uuid[])`, text)
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
