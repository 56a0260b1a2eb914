package ledger

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"flashsale/sharding"
	"flashsale/sharding/ops/tool"
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

// readLedgerPG reads sale id's side of the ledger (schema.ReadLedger, one
// snapshot) and checks each row as the schema's constraints promise it.
func readLedgerPG(ctx context.Context, t *tool.Tool, id int64) (*pgLedger, error) {
	rows, err := schema.ReadLedger(ctx, t.DB, id)
	if err != nil {
		return nil, err
	}
	l := &pgLedger{items: map[int64]*pgItem{}, undone: map[string]bool{}, failures: rows.Failures}
	if err := l.fill(rows); err != nil {
		return nil, fmt.Errorf("reading the ledger of sale %d: %w", id, err)
	}
	return l, nil
}

// fill checks rows and puts them in l.
func (l *pgLedger) fill(rows *schema.LedgerRows) error {
	for _, r := range rows.Items {
		if err := checkItemRow(r.ID, r.Quantity, r.Sold); err != nil {
			return err
		}
		l.items[r.ID] = &pgItem{Q: r.Quantity, Sold: r.Sold, flows: Flows{Failed: []Failure{}}}
	}
	for _, c := range rows.OrderCounts {
		if err := checkOrderCount(c.Item, c.Status, c.N); err != nil {
			return err
		}
		if it := l.items[c.Item]; it != nil { // else an item of no sale's (FAILED as unknown): no unit of this sale
			it.count(c.Status, c.Reason, c.Applied, c.N)
		}
	}
	for _, oid := range rows.Undone {
		l.undone[oid] = true
	}
	for _, g := range rows.HistoryGaps {
		l.history = append(l.history, historyGap(g.Kind, g.Order, g.Item, g.Status, g.Last, uint64(g.User)))
	}
	for _, raw := range rows.Reshards {
		d, err := ParseReshard(raw)
		if err != nil {
			return err
		}
		l.reshards = append(l.reshards, d)
	}
	return nil
}

// checkItemRow checks an items row as the schema's constraints promise it:
// a quantity above 0 and a sold count within it.
func checkItemRow(item, q, sold int64) error {
	if item < 1 || q < 1 || sold < 0 || sold > q {
		return fmt.Errorf("item %d: quantity %d and sold %d out of range (want quantity >= 1, 0 <= sold <= quantity)", item, q, sold)
	}
	return nil
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

// ParseReshard reads and checks a reshard's record (sale_events.detail).
func ParseReshard(raw string) (schema.ReshardDetail, error) {
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
