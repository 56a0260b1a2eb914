package ledger

import (
	"context"
	"time"

	"flashsale/sharding/ops/tool"
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
	SoldOut []schema.ItemMoment `json:"soldOut"`
	// Acts are the operator's pause, resume, end and reshard (sale_events).
	Acts []schema.SaleEvent `json:"acts"`
	// LastWindowClose is the latest payment deadline of an order: after it
	// no order of the sale can be paid (zero without orders).
	LastWindowClose time.Time `json:"lastWindowClose,omitzero"`
	// PaymentsByMinute counts the orders paid per minute.
	PaymentsByMinute []schema.MinuteCount `json:"paymentsByMinute"`
}

// readTiming reads the timing of sale id.
func readTiming(ctx context.Context, t *tool.Tool, id int64) (*Timing, error) {
	ot, err := schema.ReadOrderTimes(ctx, t.DB, id)
	if err != nil {
		return nil, err
	}
	tm := &Timing{StartsAt: ot.StartsAt, EndsAt: ot.EndsAt, FirstAccepted: ot.FirstAccepted, LastAccepted: ot.LastAccepted,
		LastWindowClose: ot.LastWindowClose}
	if tm.SoldOut, err = schema.SoldOutMoments(ctx, t.DB, id); err != nil {
		return nil, err
	}
	if tm.PaymentsByMinute, err = schema.PaymentsByMinute(ctx, t.DB, id); err != nil {
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
