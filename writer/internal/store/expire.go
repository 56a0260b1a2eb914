package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flashsale/sharding"
)

// Due is an order whose payment window has ended by PostgreSQL's clock, as
// ExpireDue hands it to the claim.
type Due struct {
	OrderID sharding.OrderID
	SaleID  int64
	UserID  uint64
}

// ExpireDue moves up to limit PENDING orders whose payment window ended (of
// the given sales; all sales when sales is empty) to EXPIRED, takes them out
// of items.sold and writes their outbox rows, in one transaction. Rows another
// writer holds (an expiry running elsewhere, or a payment being applied) are
// skipped, not waited for, so several writers expire disjoint sets.
//
// Between selecting the due rows (locked) and expiring them, claim is asked
// which of them may be expired: the Redis side has the last word on the
// deadline (a pay accepted before it marks the order record there, and the
// claim makes later pays refuse; see expire_claim.lua), so a pay answered 202
// before the deadline is never expired, whatever the clocks of the gateway,
// Redis and PostgreSQL say. claim returns the ids it claimed; an error aborts
// the pass with nothing expired.
func (s *Store) ExpireDue(ctx context.Context, limit int, sales []int64,
	claim func(context.Context, []Due) ([]sharding.OrderID, error)) ([]Effect, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("expiring orders: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.Query(ctx, `
		SELECT id, sale_id, user_id FROM orders
		WHERE status = 'PENDING' AND expires_at < now()
		  AND ($2::bigint[] IS NULL OR sale_id = ANY($2::bigint[]))
		ORDER BY expires_at
		LIMIT $1
		FOR UPDATE SKIP LOCKED`, limit, nilIfEmpty(sales))
	if err != nil {
		return nil, fmt.Errorf("expiring orders: %w", err)
	}
	var due []Due
	var d Due
	var id [16]byte
	var user int64
	if _, err = pgx.ForEachRow(rows, []any{&id, &d.SaleID, &user}, func() error {
		d.OrderID, d.UserID = id, uint64(user)
		due = append(due, d)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("expiring orders: %w", err)
	}
	if len(due) == 0 {
		return nil, nil
	}
	claimed, err := claim(ctx, due)
	if err != nil {
		return nil, fmt.Errorf("expiring orders: claiming in redis: %w", err)
	}
	if len(claimed) == 0 {
		return nil, nil
	}
	raw := make([][16]byte, len(claimed))
	for i, c := range claimed {
		raw[i] = c
	}
	rows, err = tx.Query(ctx, expireOrders, raw)
	if err != nil {
		return nil, fmt.Errorf("expiring orders: %w", err)
	}
	effects, err := scanEffects(rows, StatusExpired)
	if err != nil {
		return nil, fmt.Errorf("expiring orders: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("expiring orders: %w", err)
	}
	return effects, nil
}

// NextDue returns how long, by PostgreSQL's clock, until the earliest
// PENDING order of the given sales (all sales when sales is empty) is due to
// expire: zero or less when one is due already, ok false when none is
// pending. It reads one row of the partial index orders_pending_expiry.
func (s *Store) NextDue(ctx context.Context, sales []int64) (d time.Duration, ok bool, err error) {
	var secs *float64
	err = s.pool.QueryRow(ctx, `
		SELECT extract(epoch FROM min(expires_at) - clock_timestamp())::float8 FROM orders
		WHERE status = 'PENDING' AND ($1::bigint[] IS NULL OR sale_id = ANY($1::bigint[]))`,
		nilIfEmpty(sales)).Scan(&secs)
	if err != nil {
		return 0, false, fmt.Errorf("reading the next payment deadline: %w", err)
	}
	if secs == nil {
		return 0, false, nil
	}
	return time.Duration(*secs * float64(time.Second)), true, nil
}

// ClaimAll is an ExpireDue claim that claims every due order: for a sale
// with no Redis side (tests of PostgreSQL alone, a sale whose records are
// gone).
func ClaimAll(_ context.Context, due []Due) ([]sharding.OrderID, error) {
	out := make([]sharding.OrderID, len(due))
	for i, d := range due {
		out[i] = d.OrderID
	}
	return out, nil
}

// MarkDone records that Redis has applied the outbox rows of ids.
func (s *Store) MarkDone(ctx context.Context, ids []sharding.OrderID) error {
	if len(ids) == 0 {
		return nil
	}
	raw := make([][16]byte, len(ids))
	for i, id := range ids {
		raw[i] = id
	}
	_, err := s.pool.Exec(ctx, `UPDATE releases SET done_at = now() WHERE order_id = ANY($1::uuid[]) AND done_at IS NULL`, raw)
	if err != nil {
		return fmt.Errorf("marking outbox rows done: %w", err)
	}
	return nil
}

// ReplayOutbox claims up to limit outbox rows (of the given sales; all when
// sales is empty) not yet applied and older than
// grace (younger rows are normally being applied by the writer that committed
// them), calls apply with them while holding their row locks, and marks the
// ones apply reports as applied done, in one transaction. Rows claimed by
// another writer are skipped. It returns how many rows were applied.
func (s *Store) ReplayOutbox(ctx context.Context, grace time.Duration, limit int, sales []int64,
	apply func(context.Context, []Effect) []sharding.OrderID) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("replaying outbox: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.Query(ctx, `
		SELECT r.order_id, r.sale_id, r.item_id, r.user_id, r.status, o.created_at, o.expires_at,
		       r.status = 'FAILED' AND o.failure IS NOT DISTINCT FROM $4
		FROM releases r JOIN orders o ON o.id = r.order_id
		WHERE r.done_at IS NULL AND r.created_at < now() - make_interval(secs => $1::float8)
		  AND ($3::bigint[] IS NULL OR r.sale_id = ANY($3::bigint[]))
		ORDER BY r.created_at
		LIMIT $2
		FOR UPDATE OF r SKIP LOCKED`, grace.Seconds(), limit, nilIfEmpty(sales), FailGhost)
	if err != nil {
		return 0, fmt.Errorf("replaying outbox: %w", err)
	}
	var effects []Effect
	var e Effect
	var id [16]byte
	var user int64
	_, err = pgx.ForEachRow(rows, []any{&id, &e.SaleID, &e.ItemID, &user, &e.Status, &e.Created, &e.Expires, &e.Ghost}, func() error {
		e.OrderID, e.UserID = id, uint64(user)
		e.Created, e.Expires = e.Created.UTC(), e.Expires.UTC()
		effects = append(effects, e)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("replaying outbox: %w", err)
	}
	if len(effects) == 0 {
		return 0, nil
	}
	applied := apply(ctx, effects)
	if len(applied) > 0 {
		raw := make([][16]byte, len(applied))
		for i, id := range applied {
			raw[i] = id
		}
		if _, err := tx.Exec(ctx, `UPDATE releases SET done_at = now() WHERE order_id = ANY($1::uuid[])`, raw); err != nil {
			return 0, fmt.Errorf("replaying outbox: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("replaying outbox: %w", err)
	}
	return len(applied), nil
}

// nilIfEmpty turns an empty sale filter into SQL NULL ("every sale").
func nilIfEmpty(sales []int64) []int64 {
	if len(sales) == 0 {
		return nil
	}
	return sales
}

// Existing reports which of ids are order rows (in any status).
func (s *Store) Existing(ctx context.Context, ids []sharding.OrderID) (map[sharding.OrderID]bool, error) {
	out := make(map[sharding.OrderID]bool, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	raw := make([][16]byte, len(ids))
	for i, id := range ids {
		raw[i] = id
	}
	rows, err := s.pool.Query(ctx, `SELECT id FROM orders WHERE id = ANY($1::uuid[])`, raw)
	if err != nil {
		return nil, fmt.Errorf("looking up orders: %w", err)
	}
	var id [16]byte
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { out[id] = true; return nil }); err != nil {
		return nil, fmt.Errorf("looking up orders: %w", err)
	}
	return out, nil
}
