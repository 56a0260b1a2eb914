package store

import (
	"context"
	"fmt"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/orderevent"
)

// Ghost is a reservation the ghost sweep judged a ghost, with what Redis's
// order record says of it.
type Ghost struct {
	OrderID sharding.OrderID
	SaleID  int64
	ItemID  int64
	UserID  uint64
	Created time.Time // the record's; the zero time or one out of range reads now
	Expires time.Time
}

// RecordGhosts stores each ghost as a FAILED order (reason FailGhost) with
// its history row and an outbox row that returns its unit, in one
// transaction, and returns the effects of those it stored. A ghost whose
// order id PostgreSQL holds by now (its event arrived after all) is left out:
// the insert is the judgement's last check, atomic with the record, so the
// sweep releases only what it recorded. The outbox row makes the release
// survive a writer that dies before Redis applied it (Effect.Releases).
func (s *Store) RecordGhosts(ctx context.Context, gs []Ghost) ([]Effect, error) {
	if len(gs) == 0 {
		return nil, nil
	}
	now := time.Now()
	c := newOrderColumns(len(gs))
	for _, g := range gs {
		e := orderevent.Event{OrderID: g.OrderID, SaleID: g.SaleID, ItemID: g.ItemID, UserID: g.UserID,
			Created: inRange(g.Created, now), Expires: inRange(g.Expires, now)}
		c.add(&e)
	}
	rows, err := s.pool.Query(ctx, `
		WITH g AS (
			INSERT INTO orders (id, sale_id, item_id, user_id, status, created_at, expires_at, updated_at, failure)
			SELECT u.id, u.sale_id, u.item_id, u.user_id, 'FAILED', u.created_at, u.expires_at, now(), $7
			FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::bigint[], $5::timestamptz[], $6::timestamptz[])
			     AS u(id, sale_id, item_id, user_id, created_at, expires_at)
			ON CONFLICT (id) DO NOTHING
			RETURNING id, sale_id, item_id, user_id, created_at, expires_at, failure
		), w AS (
			INSERT INTO releases (order_id, sale_id, item_id, user_id, status)
			SELECT id, sale_id, item_id, user_id, 'FAILED' FROM g
			ON CONFLICT (order_id) DO NOTHING
		), `+historyFrom("h", "g", StatusFailed, CauseGhost, "failure")+`
		SELECT id, sale_id, item_id, user_id, created_at, expires_at FROM g`,
		c.ids, c.sales, c.items, c.users, c.created, c.expires, FailGhost)
	if err != nil {
		return nil, fmt.Errorf("recording ghost reservations: %w", err)
	}
	effects, err := scanEffects(rows, StatusFailed)
	if err != nil {
		return nil, fmt.Errorf("recording ghost reservations: %w", err)
	}
	for i := range effects {
		effects[i].Ghost = true
	}
	return effects, nil
}

// inRange returns t, or now when t is outside the times an order event may
// carry (a record written by hand, a mangled field).
func inRange(t, now time.Time) time.Time {
	if ms := t.UnixMilli(); ms < orderevent.MinUnixMilli || ms > orderevent.MaxUnixMilli {
		return now
	}
	return t
}
