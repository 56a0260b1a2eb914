package schema

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"flashsale/sharding/sale"
)

// The sale rows: the ops tool (`flashctl sale create|list|show`) writes and
// reads them with these functions, the writer's tests too, so the SQL of a
// sale lives next to the schema it belongs to.

// ErrSaleExists is returned by CreateSale for a sale id already stored.
var ErrSaleExists = errors.New("sale already exists")

// CreateSale inserts sale and its items in one transaction and, before
// committing, calls publish (which preloads Redis); when publish fails nothing
// is committed. An existing sale id or item id is refused with a clear error.
func CreateSale(ctx context.Context, pool *pgxpool.Pool, sale *sale.Sale, publish func(context.Context) error) error {
	return CreateSaleSeeded(ctx, pool, sale, func(ctx context.Context) (DrawSecrets, error) { return DrawSecrets{}, publish(ctx) })
}

// DrawSecrets are the secret halves of a sale's draw, as Redis holds them:
// the seed and the tree head's key (hex; "" for none).
type DrawSecrets struct {
	Seed, HeadKey string
}

// CreateSaleSeeded is CreateSale for a sale with a draw: publish returns the
// draw's secrets as it left them in Redis (empty for none), which are kept
// with the sale's front door (FrontDoor, as sale stands after publish), so
// that a preload from PostgreSQL alone restores both.
func CreateSaleSeeded(ctx context.Context, pool *pgxpool.Pool, sale *sale.Sale, publish func(context.Context) (DrawSecrets, error)) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("creating sale: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	brand, err := brandJSON(sale.Brand)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO sales (id, name, starts_at, ends_at, payment_window, shards, brand, created_at)
		VALUES ($1, $2, $3, $4, make_interval(secs => $5::float8), $6, $7, now())`,
		sale.ID, sale.Name, sale.StartsAt.UTC(), sale.EndsAt.UTC(), sale.Window().Seconds(), len(sale.Shards), brand)
	if err != nil {
		var pg *pgconn.PgError
		if errors.As(err, &pg) && pg.Code == "23505" {
			return fmt.Errorf("sale %d: %w in PostgreSQL", sale.ID, ErrSaleExists)
		}
		return fmt.Errorf("inserting sale %d: %w", sale.ID, err)
	}
	for _, it := range sale.Items {
		_, err := tx.Exec(ctx, `
			INSERT INTO items (id, sale_id, name, price, currency, quantity, sold, image, description)
			VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8)`, it.ID, sale.ID, it.Name, it.Price, it.Currency, it.Quantity, it.Image, it.Description)
		if err != nil {
			var pg *pgconn.PgError
			if errors.As(err, &pg) && pg.Code == "23505" {
				return fmt.Errorf("item id %d is already used by another sale", it.ID)
			}
			return fmt.Errorf("inserting item %d: %w", it.ID, err)
		}
	}
	sec, err := publish(ctx)
	if err != nil {
		return err
	}
	door, err := frontDoorJSON(sale)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE sales SET front_door = $2, draw_seed = NULLIF($3, ''), draw_head_key = NULLIF($4, '') WHERE id = $1`,
		sale.ID, door, sec.Seed, sec.HeadKey); err != nil {
		return fmt.Errorf("recording the front door of sale %d: %w", sale.ID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("committing sale %d: %w", sale.ID, err)
	}
	return nil
}

// SaleExists reports whether sale id is stored.
func SaleExists(ctx context.Context, pool *pgxpool.Pool, id int64) (bool, error) {
	var ok bool
	err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sales WHERE id = $1)`, id).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("looking up sale %d: %w", id, err)
	}
	return ok, nil
}

// SaleRow is one line of ListSales.
type SaleRow struct {
	ID       int64
	Name     string
	StartsAt time.Time
	EndsAt   time.Time
	Window   time.Duration
	Shards   int
	Items    int
	Quantity int64
	Sold     int64
}

// ListSales returns every sale, newest start first.
func ListSales(ctx context.Context, pool *pgxpool.Pool) ([]SaleRow, error) {
	rows, err := pool.Query(ctx, `
		SELECT s.id, s.name, s.starts_at, s.ends_at, extract(epoch FROM s.payment_window)::float8, s.shards,
		       count(i.id), coalesce(sum(i.quantity), 0)::bigint, coalesce(sum(i.sold), 0)::bigint
		FROM sales s LEFT JOIN items i ON i.sale_id = s.id
		GROUP BY s.id ORDER BY s.starts_at DESC, s.id`)
	if err != nil {
		return nil, fmt.Errorf("listing sales: %w", err)
	}
	var out []SaleRow
	var r SaleRow
	var win float64
	_, err = pgx.ForEachRow(rows, []any{&r.ID, &r.Name, &r.StartsAt, &r.EndsAt, &win, &r.Shards, &r.Items, &r.Quantity, &r.Sold}, func() error {
		r.Window = time.Duration(win * float64(time.Second))
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing sales: %w", err)
	}
	return out, nil
}

// ItemStats is one item of a sale with its orders counted by status.
type ItemStats struct {
	ID       int64
	Name     string
	Price    int64
	Currency string
	Quantity int64
	Sold     int64
	ByStatus map[string]int64
}

// SaleStats returns sale id's row and its items with order counts by status;
// found is false for an unknown sale.
func SaleStats(ctx context.Context, pool *pgxpool.Pool, id int64) (row SaleRow, items []ItemStats, found bool, err error) {
	var win float64
	err = pool.QueryRow(ctx, `
		SELECT id, name, starts_at, ends_at, extract(epoch FROM payment_window)::float8, shards
		FROM sales WHERE id = $1`, id).Scan(&row.ID, &row.Name, &row.StartsAt, &row.EndsAt, &win, &row.Shards)
	if errors.Is(err, pgx.ErrNoRows) {
		return row, nil, false, nil
	}
	if err != nil {
		return row, nil, false, fmt.Errorf("reading sale %d: %w", id, err)
	}
	row.Window = time.Duration(win * float64(time.Second))
	rows, err := pool.Query(ctx, `SELECT id, name, price, currency, quantity, sold FROM items WHERE sale_id = $1 ORDER BY id`, id)
	if err != nil {
		return row, nil, false, fmt.Errorf("reading items of sale %d: %w", id, err)
	}
	var it ItemStats
	_, err = pgx.ForEachRow(rows, []any{&it.ID, &it.Name, &it.Price, &it.Currency, &it.Quantity, &it.Sold}, func() error {
		it.ByStatus = map[string]int64{}
		items = append(items, it)
		row.Items++
		row.Quantity += it.Quantity
		row.Sold += it.Sold
		return nil
	})
	if err != nil {
		return row, nil, false, fmt.Errorf("reading items of sale %d: %w", id, err)
	}
	rows, err = pool.Query(ctx, `SELECT item_id, status, count(*) FROM orders WHERE sale_id = $1 GROUP BY item_id, status`, id)
	if err != nil {
		return row, nil, false, fmt.Errorf("counting orders of sale %d: %w", id, err)
	}
	var item, n int64
	var st string
	_, err = pgx.ForEachRow(rows, []any{&item, &st, &n}, func() error {
		for i := range items {
			if items[i].ID == item {
				items[i].ByStatus[st] = n
			}
		}
		return nil
	})
	if err != nil {
		return row, nil, false, fmt.Errorf("counting orders of sale %d: %w", id, err)
	}
	return row, items, true, nil
}
