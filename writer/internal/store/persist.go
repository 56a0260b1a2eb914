package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flashsale/sharding"
	"flashsale/sharding/orderevent"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

// Order statuses, as stored in orders.status and releases.status: the same
// words as the Redis order record (package stock).
const (
	StatusPending   = stock.StatusPending
	StatusPaid      = stock.StatusPaid
	StatusExpired   = stock.StatusExpired
	StatusCancelled = stock.StatusCancelled
	StatusFailed    = stock.StatusFailed
)

// Failure reasons written to orders.failure (package schema says what each
// means for the unit).
const (
	FailSoldOut     = schema.FailSoldOut
	FailUnknownItem = schema.FailUnknownItem
	FailActiveOrder = schema.FailActiveOrder
	FailGhost       = schema.FailGhost
)

// Effect is one committed status change that Redis must learn about: an
// outbox row of the releases table, with the order's times so that a lost
// Redis record can be recreated.
type Effect struct {
	OrderID sharding.OrderID
	SaleID  int64
	ItemID  int64
	UserID  uint64
	Status  string // PAID, FAILED, EXPIRED or CANCELLED
	Created time.Time
	Expires time.Time
	// Ghost marks a FAILED order the ghost sweep recorded (RecordGhosts):
	// its unit goes back, as an expired or cancelled one does.
	Ghost bool
}

// Releases reports whether applying e returns a unit to Redis stock.
func (e *Effect) Releases() bool {
	return e.Status == StatusExpired || e.Status == StatusCancelled || (e.Status == StatusFailed && e.Ghost)
}

// Batch is the decoded events of one poll, in record order.
type Batch struct {
	Events []orderevent.Event
}

// Result is what Persist did with a batch.
type Result struct {
	// Inserted holds the indexes in Batch.Events of the reservations that
	// became new PENDING orders.
	Inserted []int
	// Duplicates counts reservations whose order id was already stored (or
	// repeated within the batch): they changed nothing.
	Duplicates int
	// Effects are the status changes committed by the batch (FAILED
	// reservations, payments, cancellations), for the outbox.
	Effects []Effect
	// Failed, Paid and Cancelled count the effects by kind.
	Failed, Paid, Cancelled int
	// Parked counts payments and cancellations for orders not stored yet,
	// kept in pending_actions until their reservation arrives.
	Parked int
	// Late counts payments and cancellations of orders that had already left
	// PENDING (a pay racing an expiry, say): they changed nothing.
	Late int
}

// Persist writes one batch in one transaction: reservations inserted
// idempotently by order id, items.sold raised for the rows really inserted,
// rows PostgreSQL must refuse (sold count over quantity, unknown item, a second
// active order of the user) stored as FAILED with the reason, then payments and
// cancellations applied to PENDING orders only. On error nothing is written and
// the caller retries the whole batch; a retry is harmless because every step
// is idempotent.
//
// Within a batch, reservations are applied before payments and cancellations.
// No reservation can depend on a cancellation in its own batch: the unit (and
// the buyer record) a cancellation frees reaches Redis only after this
// transaction commits, so a purchase using it is produced after it.
//
// An order refused as sold out (or for an unknown item) never gives its unit
// back to Redis: PostgreSQL refuses it only when Redis let through more than
// PostgreSQL accepts (stock lost in a failover), and returning the unit would
// let Redis sell it again, to be refused again, in a loop. An order refused as
// the user's second active order does give its unit back, together with the
// buyer record of the user's real order (see DuplicateOf): that ends the loop
// instead of starting one.
func (s *Store) Persist(ctx context.Context, b *Batch) (Result, error) {
	var res Result
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return res, fmt.Errorf("beginning batch transaction: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	if err := s.insertReservations(ctx, tx, b, &res); err != nil {
		return res, err
	}
	accepted := res.Inserted
	actions := make([]action, 0, len(b.Events)-len(accepted))
	if len(accepted) > 0 {
		// Actions parked before their reservation apply first: they were
		// produced earlier than anything in this batch for the same order.
		parked, err := takeParked(ctx, tx, b, accepted)
		if err != nil {
			return res, err
		}
		actions = append(actions, parked...)
	}
	for i := range b.Events {
		e := &b.Events[i]
		switch e.Type {
		case orderevent.Pay:
			actions = append(actions, action{id: e.OrderID, status: StatusPaid})
		case orderevent.Cancel:
			actions = append(actions, action{id: e.OrderID, status: StatusCancelled})
		}
	}
	if len(actions) > 0 {
		if err := applyActions(ctx, tx, actions, &res); err != nil {
			return res, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return res, fmt.Errorf("committing batch: %w", err)
	}
	return res, nil
}

// outboxFrom writes outbox rows for orders ids, which the transaction has just
// moved to status, and returns them as effects.
func outboxFrom(ctx context.Context, tx pgx.Tx, ids [][16]byte, status string) ([]Effect, error) {
	rows, err := tx.Query(ctx, `
		WITH o AS (
			SELECT id, sale_id, item_id, user_id, created_at, expires_at
			FROM orders WHERE id = ANY($1::uuid[]) AND status = $2
		), w AS (
			INSERT INTO releases (order_id, sale_id, item_id, user_id, status)
			SELECT id, sale_id, item_id, user_id, $2 FROM o
			ON CONFLICT (order_id) DO NOTHING
		)
		SELECT id, sale_id, item_id, user_id, created_at, expires_at FROM o`, ids, status)
	if err != nil {
		return nil, fmt.Errorf("writing %s outbox rows: %w", status, err)
	}
	effects, err := scanEffects(rows, status)
	if err != nil {
		return nil, fmt.Errorf("writing %s outbox rows: %w", status, err)
	}
	return effects, nil
}

// scanEffects reads rows of (id, sale_id, item_id, user_id, created_at,
// expires_at) into effects of status.
func scanEffects(rows pgx.Rows, status string) ([]Effect, error) {
	var out []Effect
	var e Effect
	var id [16]byte
	var user int64
	_, err := pgx.ForEachRow(rows, []any{&id, &e.SaleID, &e.ItemID, &user, &e.Created, &e.Expires}, func() error {
		e.OrderID, e.UserID, e.Status = id, uint64(user), status
		e.Created, e.Expires = e.Created.UTC(), e.Expires.UTC()
		out = append(out, e)
		return nil
	})
	return out, err
}

type action struct {
	id     sharding.OrderID
	status string // PAID or CANCELLED
}

// takeParked removes and returns the actions parked for the orders just
// accepted.
func takeParked(ctx context.Context, tx pgx.Tx, b *Batch, accepted []int) ([]action, error) {
	ids := make([][16]byte, len(accepted))
	for k, i := range accepted {
		ids[k] = b.Events[i].OrderID
	}
	rows, err := tx.Query(ctx, `DELETE FROM pending_actions WHERE order_id = ANY($1::uuid[]) RETURNING order_id, action`, ids)
	if err != nil {
		return nil, fmt.Errorf("taking parked actions: %w", err)
	}
	var out []action
	var id [16]byte
	var st string
	_, err = pgx.ForEachRow(rows, []any{&id, &st}, func() error {
		out = append(out, action{id: id, status: st})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("taking parked actions: %w", err)
	}
	return out, nil
}

// applyActions pays and cancels PENDING orders. Of several actions on one
// order the first wins: after it the order is no longer PENDING, so the later
// ones could not change it anyway.
func applyActions(ctx context.Context, tx pgx.Tx, actions []action, res *Result) error {
	seen := make(map[sharding.OrderID]bool, len(actions))
	var pay, cancel [][16]byte
	for _, a := range actions {
		if seen[a.id] {
			res.Late++
			continue
		}
		seen[a.id] = true
		if a.status == StatusPaid {
			pay = append(pay, a.id)
		} else {
			cancel = append(cancel, a.id)
		}
	}
	done := make(map[[16]byte]bool, len(seen))
	paid, err := applyStatus(ctx, tx, payOrders, pay, StatusPaid, done)
	if err != nil {
		return fmt.Errorf("applying payments: %w", err)
	}
	cancelled, err := applyStatus(ctx, tx, cancelOrders, cancel, StatusCancelled, done)
	if err != nil {
		return fmt.Errorf("applying cancellations: %w", err)
	}
	res.Paid += len(paid)
	res.Cancelled += len(cancelled)
	res.Effects = append(append(res.Effects, paid...), cancelled...)
	if len(done) == len(seen) {
		return nil
	}
	// The rest either left PENDING already (late) or are not stored yet
	// (parked until their reservation lands).
	var rest [][16]byte
	var restStatus []string
	for _, a := range actions {
		if !done[a.id] && seen[a.id] {
			rest = append(rest, a.id)
			restStatus = append(restStatus, a.status)
			seen[a.id] = false
		}
	}
	return parkActions(ctx, tx, rest, restStatus, res)
}

// payOrders marks PENDING orders ($1) PAID, records the release of their
// buyers' records and the change in their history.
var payOrders = `
	WITH p AS (
		UPDATE orders SET status = 'PAID', paid_at = now(), updated_at = now()
		WHERE id = ANY($1::uuid[]) AND status = 'PENDING'
		RETURNING id, sale_id, item_id, user_id, created_at, expires_at
	), w AS (
		INSERT INTO releases (order_id, sale_id, item_id, user_id, status)
		SELECT id, sale_id, item_id, user_id, 'PAID' FROM p
		ON CONFLICT (order_id) DO NOTHING
	), ` + historyFrom("h", "p", StatusPaid, CausePay, "NULL") + `
	SELECT id, sale_id, item_id, user_id, created_at, expires_at FROM p`

// cancelOrders marks PENDING orders ($1) CANCELLED, takes them off their
// items' sold counts and records the release of their units.
var cancelOrders = releaseOrders(StatusCancelled)

// expireOrders is the same for orders whose payment window closed (ExpireDue).
var expireOrders = releaseOrders(StatusExpired)

// releaseOrders is the query that ends PENDING orders ($1) in status
// (CANCELLED or EXPIRED, a constant), takes them off their items' sold counts,
// records the release of their units and the change in their history,
// returning the orders it ended.
func releaseOrders(status string) string {
	cause := CauseCancel
	if status == StatusExpired {
		cause = CauseExpiry
	}
	return `
	WITH c AS (
		UPDATE orders SET status = '` + status + `', updated_at = now()
		WHERE id = ANY($1::uuid[]) AND status = 'PENDING'
		RETURNING id, sale_id, item_id, user_id, created_at, expires_at
	), d AS (
		UPDATE items SET sold = items.sold - x.n
		FROM (SELECT item_id, count(*) AS n FROM c GROUP BY item_id) AS x
		WHERE items.id = x.item_id
	), w AS (
		INSERT INTO releases (order_id, sale_id, item_id, user_id, status)
		SELECT id, sale_id, item_id, user_id, '` + status + `' FROM c
		ON CONFLICT (order_id) DO NOTHING
	), ` + historyFrom("h", "c", status, cause, "NULL") + `
	SELECT id, sale_id, item_id, user_id, created_at, expires_at FROM c`
}

// applyStatus runs query (payOrders or cancelOrders) on ids and returns the
// effects of the orders it moved to status, marking them in done.
func applyStatus(ctx context.Context, tx pgx.Tx, query string, ids [][16]byte, status string, done map[[16]byte]bool) ([]Effect, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, query, ids)
	if err != nil {
		return nil, err
	}
	effects, err := scanEffects(rows, status)
	if err != nil {
		return nil, err
	}
	for _, e := range effects {
		done[e.OrderID] = true
	}
	return effects, nil
}

// parkActions keeps the actions (ids, statuses) on orders not stored yet
// until their reservation lands; the others were late (their order had left
// PENDING already).
func parkActions(ctx context.Context, tx pgx.Tx, ids [][16]byte, statuses []string, res *Result) error {
	tag, err := tx.Exec(ctx, `
		INSERT INTO pending_actions (order_id, action)
		SELECT u.id, u.action FROM unnest($1::uuid[], $2::text[]) AS u(id, action)
		WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = u.id)
		ON CONFLICT (order_id) DO NOTHING`, ids, statuses)
	if err != nil {
		return fmt.Errorf("parking early actions: %w", err)
	}
	res.Parked += int(tag.RowsAffected())
	res.Late += len(ids) - int(tag.RowsAffected())
	return nil
}

// DuplicateOf reports, for an order stored FAILED because its user already
// held an active order in the sale (FailActiveOrder), that active order. ok is
// false for any other order, including orders FAILED for another reason.
//
// Such a FAILED order is the trace of a buyer record Redis lost (a failover):
// Redis took a unit for it that PostgreSQL will never count. The outbox gives
// that unit back and restores the buyer record of the real order, so the
// user cannot buy a third time; that cannot loop, unlike returning the unit of
// an order PostgreSQL refused as sold out.
func (s *Store) DuplicateOf(ctx context.Context, id sharding.OrderID) (active sharding.OrderID, ok bool, err error) {
	var a [16]byte
	err = s.pool.QueryRow(ctx, `
		SELECT a.id FROM orders f
		JOIN orders a ON a.sale_id = f.sale_id AND a.user_id = f.user_id AND a.id <> f.id
		     AND a.status IN ('PENDING', 'PAID')
		WHERE f.id = $1 AND f.status = 'FAILED' AND f.failure = $2`, [16]byte(id), FailActiveOrder).Scan(&a)
	if errors.Is(err, pgx.ErrNoRows) {
		return active, false, nil
	}
	if err != nil {
		return active, false, fmt.Errorf("looking up the active order of %s: %w", id, err)
	}
	return sharding.OrderID(a), true, nil
}
