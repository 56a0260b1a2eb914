package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/orderevent"
	"flashsale/writer/internal/store"
)

// history returns e's history rows as "STATUS/cause[/detail]", in the order
// written.
func (r *rulesSale) history(e orderevent.Event) []string {
	r.t.Helper()
	rows, err := r.pool.Query(r.ctx, `SELECT status, cause, coalesce(detail, '') FROM order_history
		WHERE order_id = $1 ORDER BY at, CASE status WHEN 'PENDING' THEN 0 ELSE 1 END`, [16]byte(e.OrderID))
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var st, cause, detail string
		if err := rows.Scan(&st, &cause, &detail); err != nil {
			r.t.Fatal(err)
		}
		row := st + "/" + cause
		if detail != "" {
			row += "/" + detail
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	return out
}

// persistHistory: every way an order changes writes one history row with
// its cause, in the batch that made the change, and a batch retried writes
// none twice.
func persistHistory(t *testing.T, r *rulesSale) {
	paid, cancelled, expired := r.reserve(1, r.item), r.reserve(2, r.item), r.reserve(3, r.item)
	again := r.reserve(1, r.item) // user 1's second active order
	batch := []orderevent.Event{paid, cancelled, again, as(paid, orderevent.Pay), as(cancelled, orderevent.Cancel)}
	for range 2 { // the retry of a committed batch
		if _, err := r.persist(batch...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.persist(expired); err != nil { // the unit the cancel freed
		t.Fatal(err)
	}
	if _, err := r.pool.Exec(r.ctx, `UPDATE orders SET expires_at = now() - interval '1 second' WHERE id = $1`, [16]byte(expired.OrderID)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.ExpireDue(r.ctx, 100, []int64{r.sale.ID}, store.ClaimAll); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"paid":      {"PENDING/reserve", "PAID/pay"},
		"cancelled": {"PENDING/reserve", "CANCELLED/cancel"},
		"expired":   {"PENDING/reserve", "EXPIRED/expiry"},
		"again":     {"FAILED/failure/" + store.FailActiveOrder},
	}
	for name, e := range map[string]orderevent.Event{"paid": paid, "cancelled": cancelled, "expired": expired, "again": again} {
		if got := r.history(e); !slices.Equal(got, want[name]) {
			t.Errorf("%s order's history %q, want %q", name, got, want[name])
		}
	}
	// One unit is free again (the expiry's): the second and third orders are
	// refused as sold out, inserted PENDING and FAILED in the same batch;
	// both rows are there.
	late1, late2, late3 := r.reserve(7, r.item), r.reserve(8, r.item), r.reserve(9, r.item)
	if _, err := r.persist(late1, late2, late3); err != nil {
		t.Fatal(err)
	}
	got := r.history(late3)
	if len(got) != 2 || got[0] != "PENDING/reserve" || got[1] != "FAILED/failure/"+store.FailSoldOut {
		t.Fatalf("sold-out order's history %q, want PENDING then FAILED (%s)", got, store.FailSoldOut)
	}
	var n int
	if err := r.pool.QueryRow(r.ctx, `SELECT count(*) FROM order_history WHERE sale_id = $1`, r.sale.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 12 {
		t.Fatalf("%d history rows for the sale, want 12 (2+2+2+1, and 1+2+2 for the late three)", n)
	}
}

// persistGhost: RecordGhosts stores a ghost FAILED with its reason, its
// history row and an outbox row that replays as a release (a writer that
// died before Redis applied it), and leaves out a ghost whose order
// PostgreSQL holds by now.
func persistGhost(t *testing.T, r *rulesSale) {
	arrived := r.reserve(2, r.item)
	if _, err := r.persist(arrived); err != nil {
		t.Fatal(err)
	}
	ghostID := sharding.NewOrderID(r.sale.ID, 77, 77)
	created := time.Now().Add(-time.Minute)
	effects, err := r.store.RecordGhosts(r.ctx, []store.Ghost{
		{OrderID: ghostID, SaleID: r.sale.ID, ItemID: r.item, UserID: 1, Created: created, Expires: created.Add(time.Minute)},
		{OrderID: arrived.OrderID, SaleID: r.sale.ID, ItemID: r.item, UserID: 2},
		// A record whose times are not times (written by hand): stored with now.
		{OrderID: sharding.NewOrderID(r.sale.ID, 78, 78), SaleID: r.sale.ID, ItemID: r.item, UserID: 3, Created: time.UnixMilli(1)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(effects) != 2 || effects[0].OrderID == arrived.OrderID || effects[1].OrderID == arrived.OrderID {
		t.Fatalf("recorded %+v, want the two ghosts and not the order that arrived", effects)
	}
	ghost := orderevent.Event{OrderID: ghostID}
	if st, why := r.status(ghost); st != store.StatusFailed || why == nil || *why != store.FailGhost {
		t.Fatalf("ghost stored %s (%v), want FAILED: %s", st, why, store.FailGhost)
	}
	if got := r.history(ghost); len(got) != 1 || got[0] != "FAILED/ghost-sweep/"+store.FailGhost {
		t.Fatalf("ghost's history %q", got)
	}
	if st, _ := r.status(arrived); st != store.StatusPending {
		t.Fatalf("the order that arrived is %s now, want PENDING untouched", st)
	}
	var seen []string
	_, err = r.store.ReplayOutbox(r.ctx, 0, 100, []int64{r.sale.ID}, func(_ context.Context, es []store.Effect) []sharding.OrderID {
		for _, e := range es {
			seen = append(seen, fmt.Sprintf("%s releases=%v", e.Status, e.Releases()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "FAILED releases=true,FAILED releases=true" {
		t.Fatalf("replayed %v, want both ghosts as releases", seen)
	}
}
