package ops

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/ops/ledger"
	"flashsale/sharding/ops/reconcile"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

// writerOrder plays the writer for one order: its row in status, its
// history (PENDING, then status) and, for an ended order, its outbox row,
// applied (the unit returned to Redis by release.lua, as the outbox does).
func writerOrder(e *opstest.Env, t testing.TB, sale *sale.Sale, item int64, user uint64, id sharding.OrderID, status string) {
	t.Helper()
	ctx := context.Background()
	e.InsertOrder(t, sale.ID, item, user, id, status, time.Now())
	for _, st := range []string{stock.StatusPending, status} {
		cause := map[string]string{stock.StatusPending: "reserve", stock.StatusPaid: "pay", stock.StatusCancelled: "cancel", stock.StatusExpired: "expiry"}[st]
		opstest.Must(t, pgExec(ctx, e, `INSERT INTO order_history (order_id, sale_id, item_id, user_id, status, cause) VALUES ($1::uuid, $2, $3, $4, $5, $6)
			ON CONFLICT DO NOTHING`, id.String(), sale.ID, item, int64(user), st, cause))
	}
	if status != stock.StatusExpired && status != stock.StatusCancelled {
		return
	}
	tag := sale.Shards[sharding.HomeShard(user, sale.ID, len(sale.Shards))]
	if rel, err := e.T.Store.Release(ctx, tag, item, user, id, status); err != nil || rel != stock.Released {
		t.Fatalf("releasing %s: %v %v", id, rel, err)
	}
	opstest.Must(t, pgExec(ctx, e, `INSERT INTO releases (order_id, sale_id, item_id, user_id, status, done_at) VALUES ($1::uuid, $2, $3, $4, $5, now())`,
		id.String(), sale.ID, item, int64(user), status))
}

func pgExec(ctx context.Context, e *opstest.Env, sql string, args ...any) error {
	_, err := e.Pool.Exec(ctx, sql, args...)
	return err
}

// reportSale is a sale of 10 units over 2 shards whose 6 buyers reached
// PostgreSQL through a hand-played writer: 3 paid, 1 pending, 1 cancelled
// and 1 expired (their units back), so Q 10 = paid 3 + pending 1 + unsold 6.
func reportSale(t *testing.T, e *opstest.Env) (*sale.Sale, map[string]sharding.OrderID, map[string]uint64) {
	t.Helper()
	sale := e.NewSale(t, 2, 10)
	t.Cleanup(func() {
		_, _ = e.Pool.Exec(context.Background(), `DELETE FROM order_history WHERE sale_id = $1`, sale.ID)
		_, _ = e.Pool.Exec(context.Background(), `DELETE FROM releases WHERE sale_id = $1`, sale.ID)
	})
	item := sale.Items[0].ID
	sh := opstest.NewShopper(e.T.Store, sale)
	ids, owners := map[string]sharding.OrderID{}, map[string]uint64{}
	for i, u := range opstest.Users(6) {
		r, err := sh.Buy(context.Background(), item, u)
		if err != nil || r.Outcome != stock.Reserved {
			t.Fatalf("buy: %+v %v", r, err)
		}
		status := []string{stock.StatusPaid, stock.StatusPaid, stock.StatusPaid, stock.StatusPending, stock.StatusCancelled, stock.StatusExpired}[i]
		writerOrder(e, t, sale, item, u, r.OrderID, status)
		ids[status], owners[status] = r.OrderID, u
	}
	e.SyncSold(t, sale.ID)
	return sale, ids, owners
}

// saleReport runs `flashctl --json sale report` on sale and returns the exit
// code and the report.
func saleReport(t *testing.T, sale int64, group, topic string) (int, *ledger.SaleReport) {
	t.Helper()
	code, out, errOut := runMain("--json", "sale", "report", "--sale", strconv.FormatInt(sale, 10), "--grace", "1ms",
		"--writer-group", group, "--orders-topic", topic)
	var rep ledger.SaleReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("sale report: exit %d, %v: %s %s", code, err, out, errOut)
	}
	return code, &rep
}

// TestReportBalances: a sale whose every unit is accounted for balances,
// exits 0, counts what the hand-played writer did, and gives the same hash
// when taken again.
func TestReportBalances(t *testing.T) {
	e := opstest.NewEnv(t)
	sale, _, _ := reportSale(t, e)
	_, group, topic := opstest.WriterLag(t, 0)
	code, rep := saleReport(t, sale.ID, group, topic)
	it := rep.Ledger.Items[0]
	got := []int64{it.Q, it.Paid, it.Pending, it.Unsold, it.InFlight.Units(), it.Balance, it.Flows.Reserved, it.Flows.Expired.Returned, it.Flows.Cancelled.Returned}
	if code != ExitOK || !rep.Balanced || !slices.Equal(got, []int64{10, 3, 1, 6, 0, 0, 6, 1, 1}) || !rep.Lag.Known {
		t.Fatalf("exit %d, balanced %v, item %v (lag %+v), want 0, true, [10 3 1 6 0 0 6 1 1]: %+v", code, rep.Balanced, got, rep.Lag, rep.Ledger.Discrepancies)
	}
	// Again with --json after the command, where kubectl's users put it.
	code, out, errOut := runMain("sale", "report", "--sale", strconv.FormatInt(sale.ID, 10), "--grace", "1ms",
		"--writer-group", group, "--orders-topic", topic, "--json")
	var again ledger.SaleReport
	if err := json.Unmarshal([]byte(out), &again); err != nil || code != ExitOK {
		t.Fatalf("sale report ... --json: exit %d, %v: %s %s", code, err, out, errOut)
	}
	if again.Hash != rep.Hash {
		t.Fatalf("the same books hashed %s, then %s", rep.Hash, again.Hash)
	}
}

// TestReportPlantedFaults plants three faults in a balanced sale, one at a
// time, and wants each to make the report exit 1 naming what is wrong: a
// unit taken from a shard (no order behind it: its shard's units are
// shown), a PAID order's buyer record dropped (Redis's buyers), a CANCELLED
// order's row deleted (its unit came back, so only its history can tell).
// Undone, each gives the clean books back with the same hash.
func TestReportPlantedFaults(t *testing.T) {
	e := opstest.NewEnv(t)
	ctx := context.Background()
	sale, ids, owners := reportSale(t, e)
	item := sale.Items[0].ID
	_, group, topic := opstest.WriterLag(t, 0)
	_, clean := saleReport(t, sale.ID, group, topic)
	if !clean.Balanced {
		t.Fatalf("not balanced before the faults: %+v", clean.Ledger.Discrepancies)
	}
	tagOf := func(u uint64) string { return sale.Shards[sharding.HomeShard(u, sale.ID, len(sale.Shards))] }
	stockKey := string(sharding.AppendStockKey(nil, tagOf(owners[stock.StatusPaid]), item))
	buyers := string(sharding.AppendBuyersKey(nil, tagOf(owners[stock.StatusPaid])))
	paidUser := strconv.FormatUint(owners[stock.StatusPaid], 10)
	for _, f := range []struct {
		what, kind string
		orders     []string
		plant      func() error
		undo       func() error
	}{
		{"a unit taken from a shard", ledger.KindUnbalanced, nil,
			func() error { return e.C.Do(ctx, e.C.B().Decr().Key(stockKey).Build()).Error() },
			func() error { return e.C.Do(ctx, e.C.B().Incr().Key(stockKey).Build()).Error() }},
		{"a PAID order's buyer record dropped", reconcile.KindLostBuyer, []string{ids[stock.StatusPaid].String()},
			func() error { return e.C.Do(ctx, e.C.B().Hdel().Key(buyers).Field(paidUser).Build()).Error() },
			func() error {
				return e.C.Do(ctx, e.C.B().Hset().Key(buyers).FieldValue().FieldValue(paidUser, ids[stock.StatusPaid].String()).Build()).Error()
			}},
		{"a CANCELLED order's row deleted", ledger.KindOrderMissing, []string{ids[stock.StatusCancelled].String()},
			func() error {
				return e.Pool.QueryRow(ctx, `DELETE FROM orders WHERE id = $1::uuid RETURNING status`, ids[stock.StatusCancelled].String()).Scan(new(string))
			},
			func() error {
				e.InsertOrder(t, sale.ID, item, owners[stock.StatusCancelled], ids[stock.StatusCancelled], stock.StatusCancelled, time.Now())
				return nil
			}},
	} {
		opstest.Must(t, f.plant())
		code, rep := saleReport(t, sale.ID, group, topic)
		var named []string
		found := false
		for _, d := range rep.Ledger.Discrepancies {
			if d.Kind == f.kind {
				found = true
				named = append(named, d.Orders...)
			}
		}
		if code != ExitFail || rep.Balanced || !found || !slices.Equal(named, f.orders) {
			t.Fatalf("%s: exit %d, balanced %v, discrepancies %+v; want exit 1 and %s naming %v", f.what, code, rep.Balanced, rep.Ledger.Discrepancies, f.kind, f.orders)
		}
		if f.kind == ledger.KindUnbalanced && !strings.Contains(rep.Ledger.Discrepancies[0].Detail, "per shard") {
			t.Fatalf("%s: the discrepancy does not show the shards: %s", f.what, rep.Ledger.Discrepancies[0].Detail)
		}
		opstest.Must(t, f.undo())
		if code, rep := saleReport(t, sale.ID, group, topic); code != ExitOK || rep.Hash != clean.Hash {
			t.Fatalf("%s undone: exit %d, hash %s, want 0 and %s: %+v", f.what, code, rep.Hash, clean.Hash, rep.Ledger.Discrepancies)
		}
	}
}
