package schema

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The reads of the bench's audit (bench/internal/audit), which checks a
// sale's invariants after a run.

// StatusCount is how many orders of one item have one status.
type StatusCount struct {
	Item   int64
	Status string
	N      int64
}

// OrderStatusCounts counts sale id's orders per item and status.
func OrderStatusCounts(ctx context.Context, q Querier, id int64) ([]StatusCount, error) {
	rows, err := q.Query(ctx, `SELECT item_id, status, count(*) FROM orders WHERE sale_id = $1 GROUP BY 1, 2`, id)
	if err != nil {
		return nil, fmt.Errorf("counting the orders of sale %d: %w", id, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[StatusCount])
	if err != nil {
		return nil, fmt.Errorf("counting the orders of sale %d: %w", id, err)
	}
	return out, nil
}

// DuplicateBuyers returns, in order, the users holding two or more active
// (PENDING or PAID) orders in sale id.
func DuplicateBuyers(ctx context.Context, q Querier, id int64) ([]int64, error) {
	rows, err := q.Query(ctx, `SELECT user_id FROM orders
		WHERE sale_id = $1 AND status IN ('PENDING','PAID') GROUP BY user_id HAVING count(*) > 1 ORDER BY user_id`, id)
	if err != nil {
		return nil, fmt.Errorf("looking for users with two active orders in sale %d: %w", id, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("looking for users with two active orders in sale %d: %w", id, err)
	}
	return out, nil
}

// MissingOrders returns, in order, the order ids (canonical UUID text) of
// ids that no row of orders has.
func MissingOrders(ctx context.Context, q Querier, ids []string) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT o::text FROM unnest($1::text[]::uuid[]) AS o
		WHERE NOT EXISTS (SELECT 1 FROM orders WHERE id = o) ORDER BY 1`, ids)
	if err != nil {
		return nil, fmt.Errorf("looking for missing orders: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("looking for missing orders: %w", err)
	}
	return out, nil
}

// OrderProgress counts sale id's orders and, of them, the active ones
// (PENDING or PAID).
func OrderProgress(ctx context.Context, q Querier, id int64) (orders, active int64, err error) {
	err = q.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status IN ('PENDING','PAID'))
		FROM orders WHERE sale_id = $1`, id).Scan(&orders, &active)
	if err != nil {
		return 0, 0, fmt.Errorf("counting the orders of sale %d: %w", id, err)
	}
	return orders, active, nil
}
