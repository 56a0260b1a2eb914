// Package audit checks a sale's invariants (SPEC.md) after a bench run,
// against PostgreSQL (the source of truth) and the stock left in Redis:
//
//   - P <= Q for every item: P its PENDING or PAID orders, Q items.quantity;
//   - items.sold = P;
//   - no user holds two active (PENDING or PAID) orders in the sale;
//   - every order answered 202 is in the orders table (FAILED counts as
//     present: it is visible, and its unit must be back in stock);
//   - Q = S + P once the system settled, S the stock left in Redis summed
//     over the item's shards.
//
// Check takes its inputs as values and two small interfaces, so tests can
// plant bad data and see it caught. The SQL it runs is the writer's
// (writer/schema's reads): the writer owns PostgreSQL.
package audit

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"flashsale/sharding"
	"flashsale/sharding/sale"
	"flashsale/writer/schema"
)

// DB is the part of *pgxpool.Pool the audit uses (schema.Querier).
type DB interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Stock is the part of *stock.Store the audit uses.
type Stock interface {
	LoadSale(ctx context.Context, id int64) (*sale.Sale, error)
	Remaining(ctx context.Context, sale *sale.Sale, itemID int64) ([]int64, error)
}

// Accepted is one purchase answered 202.
type Accepted struct {
	Order  sharding.OrderID
	ItemID int64
}

// Input is what the audit checks.
type Input struct {
	SaleID   int64
	Accepted []Accepted // every 202, duplicates (replays) allowed
}

// Item is one item's row of the audit.
type Item struct {
	ID        int64 `json:"id"`
	Q         int64 `json:"quantity"`      // items.quantity in PostgreSQL
	QRedis    int64 `json:"quantityRedis"` // the quantity in the sale description in Redis
	Sold      int64 `json:"sold"`          // items.sold
	P         int64 `json:"active"`        // PENDING + PAID orders
	Pending   int64 `json:"pending"`
	Paid      int64 `json:"paid"`
	Expired   int64 `json:"expired"`
	Cancelled int64 `json:"cancelled"`
	Failed    int64 `json:"failed"`
	S         int64 `json:"redisStock"` // stock left in Redis over all shards
	A         int64 `json:"accepted"`   // distinct order ids answered 202
	InDB      bool  `json:"inDatabase"`
	InRedis   bool  `json:"inRedis"`
}

// Report is the audit's outcome. It fails when Failures is not empty.
type Report struct {
	SaleID          int64         `json:"saleId"`
	Items           []Item        `json:"items"`
	Orders          int64         `json:"orders"`   // every order of the sale in PostgreSQL
	Accepted        int           `json:"accepted"` // distinct order ids answered 202
	Missing         int           `json:"missing"`  // 202 order ids not in PostgreSQL
	MissingSample   []string      `json:"missingSample,omitempty"`
	Duplicates      int           `json:"duplicateUsers"` // users with two or more active orders
	DuplicateSample []int64       `json:"duplicateSample,omitempty"`
	Failed          int64         `json:"failed"` // FAILED orders
	Oversold        int64         `json:"oversold"`
	Settled         bool          `json:"settled"`
	SettleWait      time.Duration `json:"settleWaitNs"`
	Failures        []string      `json:"failures"`
}

// OK reports whether every invariant held.
func (r *Report) OK() bool { return len(r.Failures) == 0 }

const sampleSize = 10

// Check reads the sale's state and checks the invariants.
func Check(ctx context.Context, db DB, st Stock, in Input) (*Report, error) {
	r := &Report{SaleID: in.SaleID, Failures: []string{}}
	items := map[int64]*Item{}
	item := func(id int64) *Item {
		if items[id] == nil {
			items[id] = &Item{ID: id}
		}
		return items[id]
	}
	if err := readItems(ctx, db, in.SaleID, item); err != nil {
		return nil, err
	}
	if err := countOrders(ctx, db, r, item); err != nil {
		return nil, err
	}
	dups, err := schema.DuplicateBuyers(ctx, db, in.SaleID)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	r.Duplicates, r.DuplicateSample = len(dups), dups[:min(len(dups), sampleSize)]
	ids := distinctAccepted(in.Accepted, item)
	r.Accepted = len(ids)
	if len(ids) > 0 {
		lost, err := schema.MissingOrders(ctx, db, ids)
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		r.Missing, r.MissingSample = len(lost), lost[:min(len(lost), sampleSize)]
	}
	if err := readRedis(ctx, st, in.SaleID, item); err != nil {
		return nil, err
	}
	for _, it := range items {
		r.Items = append(r.Items, *it)
	}
	slices.SortFunc(r.Items, func(a, b Item) int { return cmp.Compare(a.ID, b.ID) })
	r.judge()
	return r, nil
}

func readItems(ctx context.Context, db DB, sale int64, item func(int64) *Item) error {
	rows, err := schema.SaleItems(ctx, db, sale)
	if err != nil {
		return fmt.Errorf("audit: reading items: %w", err)
	}
	for _, x := range rows {
		it := item(x.ID)
		it.Q, it.Sold, it.InDB = x.Quantity, x.Sold, true
	}
	return nil
}

func countOrders(ctx context.Context, db DB, r *Report, item func(int64) *Item) error {
	rows, err := schema.OrderStatusCounts(ctx, db, r.SaleID)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	for _, x := range rows {
		it := item(x.Item)
		r.Orders += x.N
		switch x.Status {
		case "PENDING":
			it.Pending += x.N
		case "PAID":
			it.Paid += x.N
		case "EXPIRED":
			it.Expired += x.N
		case "CANCELLED":
			it.Cancelled += x.N
		case "FAILED":
			it.Failed += x.N
		}
		it.P = it.Pending + it.Paid
	}
	return nil
}

// distinctAccepted returns the distinct order ids answered 202 and counts
// them per item.
func distinctAccepted(acc []Accepted, item func(int64) *Item) []string {
	seen := make(map[sharding.OrderID]bool, len(acc))
	ids := make([]string, 0, len(acc))
	for _, a := range acc {
		if !seen[a.Order] {
			seen[a.Order] = true
			ids = append(ids, a.Order.String())
			item(a.ItemID).A++
		}
	}
	return ids
}

func readRedis(ctx context.Context, st Stock, saleID int64, item func(int64) *Item) error {
	sale, err := st.LoadSale(ctx, saleID)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	for _, si := range sale.Items {
		left, err := st.Remaining(ctx, sale, si.ID)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		it := item(si.ID)
		it.InRedis, it.QRedis = true, si.Quantity
		for _, n := range left {
			it.S += n
		}
	}
	return nil
}

// judge fills Failures from the counts.
func (r *Report) judge() {
	fail := func(format string, args ...any) { r.Failures = append(r.Failures, fmt.Sprintf(format, args...)) }
	if len(r.Items) == 0 {
		fail("sale %d has no items in PostgreSQL or Redis", r.SaleID)
	}
	for _, it := range r.Items {
		r.Failed += it.Failed
		switch {
		case !it.InDB:
			fail("item %d: not in PostgreSQL (in Redis: %v)", it.ID, it.InRedis)
			continue
		case !it.InRedis:
			fail("item %d: not in the sale description in Redis", it.ID)
			continue
		}
		if it.P > it.Q {
			r.Oversold += it.P - it.Q
			fail("item %d: OVERSOLD: %d active orders for %d units", it.ID, it.P, it.Q)
		}
		if it.Sold != it.P {
			fail("item %d: items.sold is %d but %d orders are PENDING or PAID", it.ID, it.Sold, it.P)
		}
		if it.Q != it.S+it.P {
			fail("item %d: Q=%d but S+P=%d+%d=%d (%+d units unaccounted for)", it.ID, it.Q, it.S, it.P, it.S+it.P, it.Q-it.S-it.P)
		}
		if it.QRedis != it.Q {
			fail("item %d: quantity %d in PostgreSQL but %d in Redis's sale description", it.ID, it.Q, it.QRedis)
		}
	}
	if r.Duplicates > 0 {
		fail("%d users hold two or more active orders (e.g. %v)", r.Duplicates, r.DuplicateSample)
	}
	if r.Missing > 0 {
		fail("%d orders answered 202 are not in PostgreSQL (e.g. %s)", r.Missing, strings.Join(r.MissingSample, ", "))
	}
}

// snapshot is what Settle watches.
type snapshot struct{ orders, active, stock int64 }

func take(ctx context.Context, db DB, st Stock, sale *sale.Sale) (snapshot, error) {
	var s snapshot
	var err error
	if s.orders, s.active, err = schema.OrderProgress(ctx, db, sale.ID); err != nil {
		return s, fmt.Errorf("audit: %w", err)
	}
	for _, it := range sale.Items {
		left, err := st.Remaining(ctx, sale, it.ID)
		if err != nil {
			return s, fmt.Errorf("audit: %w", err)
		}
		for _, n := range left {
			s.stock += n
		}
	}
	return s, nil
}

// Settle waits until the sale's order count, active orders and Redis stock
// have stayed unchanged for quiet and the order count reached want (the
// distinct 202s), polling every poll, for at most max. It reports whether
// the state settled and how long it waited; progress, when not nil, gets a
// line per change.
func Settle(ctx context.Context, db DB, st Stock, saleID int64, want int, quiet, max, poll time.Duration, progress io.Writer) (bool, time.Duration, error) {
	start := time.Now()
	sale, err := st.LoadSale(ctx, saleID)
	if err != nil {
		return false, 0, fmt.Errorf("audit: %w", err)
	}
	var last snapshot
	lastChange := time.Now()
	first := true
	for {
		s, err := take(ctx, db, st, sale)
		if err != nil {
			return false, time.Since(start), err
		}
		if first || s != last {
			if progress != nil {
				fmt.Fprintf(progress, "settle: %d orders (%d active, want %d accepted), %d units left in Redis\n", s.orders, s.active, want, s.stock)
			}
			last, lastChange, first = s, time.Now(), false
		}
		if s.orders >= int64(want) && time.Since(lastChange) >= quiet {
			return true, time.Since(start), nil
		}
		if time.Since(start) >= max {
			return false, time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return false, time.Since(start), ctx.Err()
		case <-time.After(poll):
		}
	}
}

// WriteText prints the report as a table.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "audit of sale %d (settled: %v after %v)\n", r.SaleID, r.Settled, r.SettleWait.Round(time.Millisecond))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "item\tQ\tsold\tP\tpending\tpaid\texpired\tcancelled\tfailed\tS(redis)\tQ-S-P\t202s\t")
	for _, it := range r.Items {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", it.ID, it.Q, it.Sold, it.P, it.Pending, it.Paid,
			it.Expired, it.Cancelled, it.Failed, it.S, it.Q-it.S-it.P, it.A)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "orders in PostgreSQL %d, distinct 202s %d, oversold %d, duplicate buyers %d, lost %d, failed %d\n",
		r.Orders, r.Accepted, r.Oversold, r.Duplicates, r.Missing, r.Failed)
	if r.OK() {
		_, err := fmt.Fprintln(w, "audit: PASS")
		return err
	}
	for _, f := range r.Failures {
		fmt.Fprintln(w, "audit: FAIL:", f)
	}
	return nil
}
