package schema

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The reads of the closing ledger (`flashctl sale report`): the sale's side
// of the books in one snapshot, and the timing of the sale.

// ItemRow is one row of items: its quantity and the sold count the writer
// keeps.
type ItemRow struct {
	ID, Quantity, Sold int64
}

// SaleItems reads the items of sale id.
func SaleItems(ctx context.Context, q Querier, id int64) ([]ItemRow, error) {
	rows, err := q.Query(ctx, `SELECT id, quantity, sold FROM items WHERE sale_id = $1`, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[ItemRow])
}

// OrderCount is a count of a sale's orders of one item in one status, with
// one failure reason ("" for none), whose outbox row Redis has applied or
// not (an order without an outbox row counts as not applied).
type OrderCount struct {
	Item    int64
	Status  string
	Reason  string
	Applied bool
	N       int64
}

// HistoryGap is an order whose row and history disagree: Kind "missing" for
// history without a row (Status ""), "row" for a row whose status (Status)
// is not its history's last (Last, "" for no history).
type HistoryGap struct {
	Kind   string
	Order  string
	Item   int64
	Status string
	Last   string
	User   int64
}

// LedgerRows is what the closing ledger reads of a sale from PostgreSQL, all
// from one moment: the items, their orders counted, the outbox rows Redis has
// not applied yet, the reason of every FAILED order, the orders whose row and
// history disagree and the reshards' records.
type LedgerRows struct {
	Items       []ItemRow
	OrderCounts []OrderCount
	Undone      []string          // order ids whose outbox row is not applied yet
	Failures    map[string]string // FAILED order id -> its reason
	HistoryGaps []HistoryGap
	// Reshards are the details (sale_events.detail, ReshardDetail's JSON)
	// of the sale's reshards, in the order they were recorded.
	Reshards []string
}

// ReadLedger reads sale id's side of the ledger in one REPEATABLE READ
// read-only transaction, so that every count comes from the same moment.
func ReadLedger(ctx context.Context, pool *pgxpool.Pool, id int64) (*LedgerRows, error) {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("reading the ledger of sale %d: %w", id, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	l := &LedgerRows{Failures: map[string]string{}}
	for _, read := range []func(context.Context, pgx.Tx, int64, *LedgerRows) error{
		readItems, readOrderCounts, readOutbox, readFailures, readHistoryGaps, readReshards,
	} {
		if err := read(ctx, tx, id, l); err != nil {
			return nil, fmt.Errorf("reading the ledger of sale %d: %w", id, err)
		}
	}
	return l, nil
}

func readItems(ctx context.Context, tx pgx.Tx, id int64, l *LedgerRows) error {
	var err error
	l.Items, err = SaleItems(ctx, tx, id)
	return err
}

// readOrderCounts counts the sale's orders per item, status, failure reason
// and whether their outbox row was applied.
func readOrderCounts(ctx context.Context, tx pgx.Tx, id int64, l *LedgerRows) error {
	rows, err := tx.Query(ctx, `
		SELECT o.item_id, o.status, coalesce(o.failure, ''), coalesce(r.done_at IS NOT NULL, false), count(*)
		FROM orders o LEFT JOIN releases r ON r.order_id = o.id
		WHERE o.sale_id = $1 GROUP BY 1, 2, 3, 4`, id)
	if err != nil {
		return err
	}
	l.OrderCounts, err = pgx.CollectRows(rows, pgx.RowToStructByPos[OrderCount])
	return err
}

// readOutbox reads the sale's outbox rows Redis has not applied yet.
func readOutbox(ctx context.Context, tx pgx.Tx, id int64, l *LedgerRows) error {
	rows, err := tx.Query(ctx, `SELECT order_id::text FROM releases WHERE sale_id = $1 AND done_at IS NULL`, id)
	if err != nil {
		return err
	}
	l.Undone, err = pgx.CollectRows(rows, pgx.RowTo[string])
	return err
}

// readFailures reads the reason of every FAILED order of the sale.
func readFailures(ctx context.Context, tx pgx.Tx, id int64, l *LedgerRows) error {
	rows, err := tx.Query(ctx, `SELECT id::text, coalesce(failure, '') FROM orders WHERE sale_id = $1 AND status = 'FAILED'`, id)
	if err != nil {
		return err
	}
	var oid, why string
	_, err = pgx.ForEachRow(rows, []any{&oid, &why}, func() error { l.Failures[oid] = why; return nil })
	return err
}

// lastStatus is the SQL of an order's last recorded status: the latest row of
// its history (a reservation and its parked pay share one transaction time:
// the final status wins).
const lastStatus = `ORDER BY h.at DESC, (h.status <> 'PENDING') DESC LIMIT 1`

// readHistoryGaps finds the orders whose row and history disagree: history
// without a row, a row without history, a row whose status is not its
// history's last.
func readHistoryGaps(ctx context.Context, tx pgx.Tx, id int64, l *LedgerRows) error {
	rows, err := tx.Query(ctx, `
		SELECT 'missing', g.order_id::text, g.item_id, '', l.status, g.user_id
		FROM (SELECT DISTINCT order_id, item_id, user_id FROM order_history WHERE sale_id = $1) g
		CROSS JOIN LATERAL (SELECT h.status FROM order_history h WHERE h.sale_id = $1 AND h.order_id = g.order_id `+lastStatus+`) l
		WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = g.order_id)
		UNION ALL
		SELECT 'row', o.id::text, o.item_id, o.status, coalesce(l.status, ''), o.user_id
		FROM orders o LEFT JOIN LATERAL (SELECT h.status FROM order_history h
		     WHERE h.sale_id = o.sale_id AND h.order_id = o.id `+lastStatus+`) l ON true
		WHERE o.sale_id = $1 AND l.status IS DISTINCT FROM o.status`, id)
	if err != nil {
		return err
	}
	l.HistoryGaps, err = pgx.CollectRows(rows, pgx.RowToStructByPos[HistoryGap])
	return err
}

// readReshards reads the records of the sale's reshards (sale_events).
func readReshards(ctx context.Context, tx pgx.Tx, id int64, l *LedgerRows) error {
	rows, err := tx.Query(ctx, `SELECT detail::text FROM sale_events WHERE sale_id = $1 AND kind = 'reshard' ORDER BY at, id`, id)
	if err != nil {
		return err
	}
	l.Reshards, err = pgx.CollectRows(rows, pgx.RowTo[string])
	return err
}

// OrderTimes are a sale's window and, from its orders, the first and last
// reservation (orders.created_at, the gateway's clock) and the latest payment
// deadline of an order not FAILED; each zero when the sale has no such order.
type OrderTimes struct {
	StartsAt, EndsAt                             time.Time
	FirstAccepted, LastAccepted, LastWindowClose time.Time
}

// ReadOrderTimes reads the order times of sale id.
func ReadOrderTimes(ctx context.Context, q Querier, id int64) (OrderTimes, error) {
	var tm OrderTimes
	var first, last, close *time.Time
	err := q.QueryRow(ctx, `
		SELECT s.starts_at, s.ends_at, min(o.created_at), max(o.created_at), max(o.expires_at) FILTER (WHERE o.status <> 'FAILED')
		FROM sales s LEFT JOIN orders o ON o.sale_id = s.id WHERE s.id = $1 GROUP BY s.id`, id).
		Scan(&tm.StartsAt, &tm.EndsAt, &first, &last, &close)
	if err != nil {
		return tm, fmt.Errorf("reading the timing of sale %d: %w", id, err)
	}
	tm.StartsAt, tm.EndsAt = tm.StartsAt.UTC(), tm.EndsAt.UTC()
	tm.FirstAccepted, tm.LastAccepted, tm.LastWindowClose = utcOrZero(first), utcOrZero(last), utcOrZero(close)
	return tm, nil
}

func utcOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// ItemMoment is a moment of one item.
type ItemMoment struct {
	Item int64     `json:"item"`
	At   time.Time `json:"at,omitzero"`
}

// MinuteCount is a count in one minute (starting at Minute, UTC).
type MinuteCount struct {
	Minute time.Time `json:"minute"`
	Count  int64     `json:"count"`
}

// SoldOutMoments finds, per item of sale id, the first moment its units held
// (orders that became PENDING, from their reservation; less the expired and
// cancelled, from their history's time) reached its quantity; zero when they
// never did.
func SoldOutMoments(ctx context.Context, q Querier, id int64) ([]ItemMoment, error) {
	rows, err := q.Query(ctx, `
		WITH e AS (
			SELECT item_id, created_at AS at, 1 AS d FROM orders WHERE sale_id = $1 AND status <> 'FAILED'
			UNION ALL
			SELECT item_id, at, -1 FROM order_history WHERE sale_id = $1 AND status IN ('EXPIRED', 'CANCELLED')
		), held AS (
			SELECT item_id, at, sum(d) OVER (PARTITION BY item_id ORDER BY at, d ROWS UNBOUNDED PRECEDING) AS n FROM e
		)
		SELECT i.id, (SELECT min(h.at) FROM held h WHERE h.item_id = i.id AND h.n >= i.quantity)
		FROM items i WHERE i.sale_id = $1 ORDER BY i.id`, id)
	if err != nil {
		return nil, fmt.Errorf("reading when sale %d sold out: %w", id, err)
	}
	out := []ItemMoment{}
	var m ItemMoment
	var at *time.Time
	_, err = pgx.ForEachRow(rows, []any{&m.Item, &at}, func() error {
		m.At = utcOrZero(at)
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading when sale %d sold out: %w", id, err)
	}
	return out, nil
}

// PaymentsByMinute counts sale id's payments per minute of their history.
func PaymentsByMinute(ctx context.Context, q Querier, id int64) ([]MinuteCount, error) {
	rows, err := q.Query(ctx, `
		SELECT date_trunc('minute', at), count(*) FROM order_history
		WHERE sale_id = $1 AND status = 'PAID' GROUP BY 1 ORDER BY 1`, id)
	if err != nil {
		return nil, fmt.Errorf("reading the payments of sale %d: %w", id, err)
	}
	out := []MinuteCount{}
	var m MinuteCount
	_, err = pgx.ForEachRow(rows, []any{&m.Minute, &m.Count}, func() error {
		m.Minute = m.Minute.UTC()
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the payments of sale %d: %w", id, err)
	}
	return out, nil
}
