package ops

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"flashsale/sharding"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

// pgLedger is what the ledger reads from PostgreSQL, in one read-only
// snapshot: the items, their orders by status, the outbox rows not applied
// yet, the orders whose row and history disagree, and the reshards.
type pgLedger struct {
	items    map[int64]*pgItem
	undone   map[string]bool   // order id -> its outbox row is not applied yet
	failures map[string]string // FAILED order id -> its reason
	history  []Discrepancy     // orders whose row and history disagree
	reshards []schema.ReshardDetail
}

// pgItem is one item's quantity, sold count and orders by status.
type pgItem struct {
	Q, Sold       int64
	Paid, Pending int64
	flows         Flows
}

var orderStatuses = map[string]bool{stock.StatusPending: true, stock.StatusPaid: true, stock.StatusExpired: true,
	stock.StatusCancelled: true, stock.StatusFailed: true}

// readLedgerPG reads sale id's side of the ledger in one REPEATABLE READ
// read-only transaction, so that every count comes from the same moment.
func (t *Tool) readLedgerPG(ctx context.Context, id int64) (*pgLedger, error) {
	tx, err := t.DB.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("reading the ledger of sale %d: %w", id, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	l := &pgLedger{items: map[int64]*pgItem{}, undone: map[string]bool{}, failures: map[string]string{}}
	for _, read := range []func(context.Context, pgx.Tx, int64, *pgLedger) error{
		readItems, readOrderCounts, readOutbox, readFailures, readHistoryGaps, readReshards,
	} {
		if err := read(ctx, tx, id, l); err != nil {
			return nil, fmt.Errorf("reading the ledger of sale %d: %w", id, err)
		}
	}
	return l, nil
}

func readItems(ctx context.Context, tx pgx.Tx, id int64, l *pgLedger) error {
	rows, err := tx.Query(ctx, `SELECT id, quantity, sold FROM items WHERE sale_id = $1`, id)
	if err != nil {
		return err
	}
	var item, q, sold int64
	_, err = pgx.ForEachRow(rows, []any{&item, &q, &sold}, func() error {
		if err := checkItemRow(item, q, sold); err != nil {
			return err
		}
		l.items[item] = &pgItem{Q: q, Sold: sold, flows: Flows{Failed: []Failure{}}}
		return nil
	})
	return err
}

// checkItemRow checks an items row as the schema's constraints promise it:
// a quantity above 0 and a sold count within it.
func checkItemRow(item, q, sold int64) error {
	if item < 1 || q < 1 || sold < 0 || sold > q {
		return fmt.Errorf("item %d: quantity %d and sold %d out of range (want quantity >= 1, 0 <= sold <= quantity)", item, q, sold)
	}
	return nil
}

// readOrderCounts counts the sale's orders per item, status, failure reason
// and whether their outbox row was applied.
func readOrderCounts(ctx context.Context, tx pgx.Tx, id int64, l *pgLedger) error {
	rows, err := tx.Query(ctx, `
		SELECT o.item_id, o.status, coalesce(o.failure, ''), coalesce(r.done_at IS NOT NULL, false), count(*)
		FROM orders o LEFT JOIN releases r ON r.order_id = o.id
		WHERE o.sale_id = $1 GROUP BY 1, 2, 3, 4`, id)
	if err != nil {
		return err
	}
	var (
		item, n        int64
		status, reason string
		applied        bool
	)
	_, err = pgx.ForEachRow(rows, []any{&item, &status, &reason, &applied, &n}, func() error {
		if err := checkOrderCount(item, status, n); err != nil {
			return err
		}
		it := l.items[item]
		if it == nil {
			return nil // an item of no sale's (FAILED as unknown): no unit of this sale
		}
		it.count(status, reason, applied, n)
		return nil
	})
	return err
}

// checkOrderCount checks a count of orders of item in status.
func checkOrderCount(item int64, status string, n int64) error {
	if !orderStatuses[status] {
		return fmt.Errorf("orders of item %d have status %q, none of PENDING, PAID, EXPIRED, CANCELLED, FAILED", item, status)
	}
	if n < 1 {
		return fmt.Errorf("a count of %d %s orders of item %d", n, status, item)
	}
	return nil
}

// count adds n orders of status (with reason, and whether the outbox row was
// applied) to the item's counts and flows.
func (it *pgItem) count(status, reason string, applied bool, n int64) {
	f := &it.flows
	f.Reserved += n
	ret := Return{Orders: n}
	if applied {
		ret.Returned = n
	} else {
		ret.Pending = n
	}
	switch status {
	case stock.StatusPaid:
		it.Paid += n
	case stock.StatusPending:
		it.Pending += n
	case stock.StatusExpired:
		f.Expired = f.Expired.plus(ret)
	case stock.StatusCancelled:
		f.Cancelled = f.Cancelled.plus(ret)
	case stock.StatusFailed:
		if reason == schema.FailGhost {
			f.Ghosts = f.Ghosts.plus(ret)
		}
		for i := range f.Failed {
			if f.Failed[i].Reason == reason {
				f.Failed[i].Orders += n
				return
			}
		}
		f.Failed = append(f.Failed, Failure{Reason: reason, Orders: n, UnitReturned: schema.FailureReturnsUnit(reason)})
		slices.SortFunc(f.Failed, func(a, b Failure) int { return cmp.Compare(a.Reason, b.Reason) })
	}
}

// readOutbox reads the sale's outbox rows Redis has not applied yet.
func readOutbox(ctx context.Context, tx pgx.Tx, id int64, l *pgLedger) error {
	rows, err := tx.Query(ctx, `SELECT order_id::text FROM releases WHERE sale_id = $1 AND done_at IS NULL`, id)
	if err != nil {
		return err
	}
	var oid string
	_, err = pgx.ForEachRow(rows, []any{&oid}, func() error { l.undone[oid] = true; return nil })
	return err
}

// readFailures reads the reason of every FAILED order of the sale.
func readFailures(ctx context.Context, tx pgx.Tx, id int64, l *pgLedger) error {
	rows, err := tx.Query(ctx, `SELECT id::text, coalesce(failure, '') FROM orders WHERE sale_id = $1 AND status = 'FAILED'`, id)
	if err != nil {
		return err
	}
	var oid, why string
	_, err = pgx.ForEachRow(rows, []any{&oid, &why}, func() error { l.failures[oid] = why; return nil })
	return err
}

// lastStatus is the SQL of an order's last recorded status: the latest row of
// its history (a reservation and its parked pay share one transaction time:
// the final status wins).
const lastStatus = `ORDER BY h.at DESC, (h.status <> 'PENDING') DESC LIMIT 1`

// readHistoryGaps finds the orders whose row and history disagree: history
// without a row (order-missing), a row without history (history-missing), a
// row whose status is not its history's last (status-not-in-history).
func readHistoryGaps(ctx context.Context, tx pgx.Tx, id int64, l *pgLedger) error {
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
	var kind, oid, status, last string
	var item, user int64
	_, err = pgx.ForEachRow(rows, []any{&kind, &oid, &item, &status, &last, &user}, func() error {
		l.history = append(l.history, historyGap(kind, oid, item, status, last, uint64(user)))
		return nil
	})
	return err
}

// historyGap is the discrepancy of one order whose row (status; kind "row")
// or lack of one (kind "missing") disagrees with its history's last status.
func historyGap(kind, oid string, item int64, status, last string, user uint64) Discrepancy {
	d := Discrepancy{Item: item, Orders: []string{oid}}
	switch {
	case kind == "missing":
		d.Kind = KindOrderMissing
		d.Detail = fmt.Sprintf("its history (last %s, user %d) is in PostgreSQL, its order row is not", last, user)
		if last == stock.StatusPending || last == stock.StatusPaid {
			d.Units = 1
			d.Detail += ": the unit it held is counted nowhere"
		}
	case last == "":
		d.Kind, d.Detail = KindHistoryMissing, fmt.Sprintf("%s order with no history (not written by the writer)", status)
	default:
		d.Kind, d.Detail = KindStatusMismatch, fmt.Sprintf("the row says %s, its history's last status is %s", status, last)
	}
	return d
}

// readReshards reads the units the sale's reshards moved (sale_events).
func readReshards(ctx context.Context, tx pgx.Tx, id int64, l *pgLedger) error {
	rows, err := tx.Query(ctx, `SELECT detail::text FROM sale_events WHERE sale_id = $1 AND kind = 'reshard' ORDER BY at, id`, id)
	if err != nil {
		return err
	}
	var raw string
	_, err = pgx.ForEachRow(rows, []any{&raw}, func() error {
		d, err := parseReshard(raw)
		l.reshards = append(l.reshards, d)
		return err
	})
	return err
}

// parseReshard reads and checks a reshard's record (sale_events.detail).
func parseReshard(raw string) (schema.ReshardDetail, error) {
	var d schema.ReshardDetail
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		return d, fmt.Errorf("a reshard record %q: %w", raw, err)
	}
	if d.From < 1 || d.From > sharding.MaxShards || d.To < 1 || d.To > sharding.MaxShards {
		return d, fmt.Errorf("a reshard record from %d to %d shards: want 1..%d", d.From, d.To, sharding.MaxShards)
	}
	for item, n := range d.Units {
		if n < 0 || item < 1 {
			return d, fmt.Errorf("a reshard record moved %d units of item %s: want 0 or more units of an item id from 1", n, strconv.FormatInt(item, 10))
		}
	}
	return d, nil
}
