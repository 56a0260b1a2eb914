package ops

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flashsale/writer/schema"
)

// Timing is when things happened in a sale, from PostgreSQL: its window,
// the first and last reservation answered 202 (orders.created_at, the
// gateway's clock), when each item first sold out, the operator's acts, the
// close of the last payment window and the payments per minute (the order
// history's times, PostgreSQL's clock).
type Timing struct {
	StartsAt time.Time `json:"startsAt"`
	EndsAt   time.Time `json:"endsAt"`
	// FirstAccepted and LastAccepted are the first and last reservation of
	// an order PostgreSQL holds; zero when it holds none.
	FirstAccepted time.Time `json:"firstAccepted,omitzero"`
	LastAccepted  time.Time `json:"lastAccepted,omitzero"`
	// SoldOut is, per item, the first moment its quantity was all held by
	// orders (reservations counted at their 202, returns at their
	// expiry or cancel); zero when it never was.
	SoldOut []ItemMoment `json:"soldOut"`
	// Acts are the operator's pause, resume, end and reshard (sale_events).
	Acts []schema.SaleEvent `json:"acts"`
	// LastWindowClose is the latest payment deadline of an order: after it
	// no order of the sale can be paid (zero without orders).
	LastWindowClose time.Time `json:"lastWindowClose,omitzero"`
	// PaymentsByMinute counts the orders paid per minute.
	PaymentsByMinute []MinuteCount `json:"paymentsByMinute"`
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

// readTiming reads the timing of sale id.
func (t *Tool) readTiming(ctx context.Context, id int64) (*Timing, error) {
	tm := &Timing{SoldOut: []ItemMoment{}, PaymentsByMinute: []MinuteCount{}}
	var first, last, close *time.Time
	err := t.DB.QueryRow(ctx, `
		SELECT s.starts_at, s.ends_at, min(o.created_at), max(o.created_at), max(o.expires_at) FILTER (WHERE o.status <> 'FAILED')
		FROM sales s LEFT JOIN orders o ON o.sale_id = s.id WHERE s.id = $1 GROUP BY s.id`, id).
		Scan(&tm.StartsAt, &tm.EndsAt, &first, &last, &close)
	if err != nil {
		return nil, fmt.Errorf("reading the timing of sale %d: %w", id, err)
	}
	tm.StartsAt, tm.EndsAt = tm.StartsAt.UTC(), tm.EndsAt.UTC()
	tm.FirstAccepted, tm.LastAccepted, tm.LastWindowClose = utcOrZero(first), utcOrZero(last), utcOrZero(close)
	if tm.SoldOut, err = t.soldOutMoments(ctx, id); err != nil {
		return nil, err
	}
	if tm.PaymentsByMinute, err = t.paymentsByMinute(ctx, id); err != nil {
		return nil, err
	}
	if tm.Acts, err = schema.SaleEvents(ctx, t.DB, id); err != nil {
		return nil, err
	}
	if tm.Acts == nil {
		tm.Acts = []schema.SaleEvent{}
	}
	return tm, nil
}

func utcOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// soldOutMoments finds, per item, the first moment its units held (orders
// that became PENDING, from their reservation; less the expired and
// cancelled, from their history's time) reached its quantity.
func (t *Tool) soldOutMoments(ctx context.Context, id int64) ([]ItemMoment, error) {
	rows, err := t.DB.Query(ctx, `
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

// paymentsByMinute counts the sale's payments per minute of their history.
func (t *Tool) paymentsByMinute(ctx context.Context, id int64) ([]MinuteCount, error) {
	rows, err := t.DB.Query(ctx, `
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
