package e2e_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/rueidis"

	"flashsale/sharding"
	"flashsale/sharding/api"
	"flashsale/sharding/ops/ledger"
	"flashsale/sharding/ops/reconcile"
	"flashsale/writer/schema"
)

// checkHandCount compares the report's ledger with a count by hand: the
// orders by status and reason in PostgreSQL, the units left in Redis and the
// reshard's record, and with what the test did.
func (l *ledgerSale) checkHandCount(t *testing.T, rep *ledger.SaleReport) {
	t.Helper()
	ctx := context.Background()
	byStatus := map[string]int64{}
	var total int64
	rows, err := l.pool.Query(ctx, `SELECT status, coalesce(failure, ''), count(*) FROM orders WHERE sale_id = $1 GROUP BY 1, 2`, l.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var st, why string
		var n int64
		if err := rows.Scan(&st, &why, &n); err != nil {
			t.Fatal(err)
		}
		byStatus[st+" "+why] += n
		total += n
	}
	rows.Close()
	var moved int64
	if err := l.pool.QueryRow(ctx, `SELECT coalesce(sum((detail->'units'->>$2)::bigint), 0) FROM sale_events
		WHERE sale_id = $1 AND kind = 'reshard'`, l.ID, strconv.FormatInt(l.item, 10)).Scan(&moved); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"PAID ": 13, "CANCELLED ": 3, "EXPIRED ": 9, "FAILED " + schema.FailActiveOrder: 1, "FAILED " + schema.FailGhost: 1}
	for k, n := range want {
		if byStatus[k] != n {
			t.Errorf("PostgreSQL holds %d orders %q, the test made %d: %v", byStatus[k], k, n, byStatus)
		}
	}
	it := rep.Ledger.Items[0]
	f := it.Flows
	got := []int64{it.Q, it.Paid, it.Pending, it.Unsold, it.InFlight.Units(), it.Balance, f.Reserved, f.Expired.Orders, f.Expired.Returned,
		f.Cancelled.Orders, f.Cancelled.Returned, f.Ghosts.Orders, f.Ghosts.Returned, f.MovedByReshards, f.Reshards, f.SoldAgain}
	hand := []int64{20, byStatus["PAID "], byStatus["PENDING "], l.unsold(t), 0, 0, total, byStatus["EXPIRED "], byStatus["EXPIRED "],
		byStatus["CANCELLED "], byStatus["CANCELLED "], byStatus["FAILED "+schema.FailGhost], byStatus["FAILED "+schema.FailGhost], moved, 1, total - 20}
	if !slices.Equal(got, hand) || it.Unsold != 20-byStatus["PAID "] || moved == 0 {
		t.Fatalf("report vs hand count (Q paid pending unsold in-flight balance reserved expired returned cancelled returned ghosts returned moved reshards sold-again):\n  report %v\n  hand   %v", got, hand)
	}
	failed := map[string]bool{}
	for _, x := range f.Failed {
		failed[x.Reason] = x.UnitReturned && x.Orders == 1
	}
	if len(failed) != 2 || !failed[schema.FailActiveOrder] || !failed[schema.FailGhost] {
		t.Fatalf("failures %+v, want one second active order and one ghost, units returned", f.Failed)
	}
}

// checkFunnelAndTiming checks the gateways' funnel against what the test
// sent, and the timing against what it did.
func (l *ledgerSale) checkFunnelAndTiming(t *testing.T, rep *ledger.SaleReport) {
	t.Helper()
	fn := rep.Funnel
	if fn == nil || len(fn.Gateways) != 2 || len(fn.Errors) > 0 {
		t.Fatalf("funnel %+v, want both gateways read", fn)
	}
	accepted := api.AnswerAccepted.String()
	if fn.Total.Purchases[accepted] != int64(l.accepted) || fn.Gateways[0].Purchases[accepted]+fn.Gateways[1].Purchases[accepted] != int64(l.accepted) ||
		fn.Total.PageLoads != 2 || fn.Total.Tickets[api.AnswerIssued.String()] != 2 || fn.Paid != 13 {
		t.Fatalf("funnel %+v, want %d 202s, 2 page loads, 2 tickets, 13 paid", fn.Total, l.accepted)
	}
	tm := rep.Timing
	var kinds []string
	for _, a := range tm.Acts {
		kinds = append(kinds, a.Kind)
	}
	var paid int64
	for _, m := range tm.PaymentsByMinute {
		paid += m.Count
	}
	if strings.Join(kinds, ",") != "pause,resume,reshard,end" || paid != 13 || tm.FirstAccepted.IsZero() || tm.LastAccepted.Before(tm.FirstAccepted) ||
		len(tm.SoldOut) != 1 || tm.SoldOut[0].At.IsZero() || !tm.LastWindowClose.After(tm.LastAccepted) {
		t.Fatalf("timing %+v: want the acts pause,resume,reshard,end, 13 payments, a sell-out and the last window after the last 202", tm)
	}
}

// screenshotReport opens the HTML report in a real Chromium, checks its
// verdict and saves a screenshot, ledger-report.png, with the browser tests'
// (artifactsDir).
func screenshotReport(t *testing.T, page string) {
	t.Helper()
	tb := newTab(t, browser(t), "en", "ledger", 1280, 900, false)
	tb.do(chromedp.Navigate("file://"+page), chromedp.WaitVisible("#verdict"))
	if v := tb.text("balanced"); v != "LEDGER BALANCED" {
		t.Fatalf("the page's verdict %q", v)
	}
	tb.shot("report")
	t.Logf("screenshot: %s", strings.Join(tb.shots, " "))
}

// plantFaults plants three faults one after the other; each must make the
// report exit 1 naming what is wrong, and the first two, undone, must give
// the books back with the same hash.
func (l *ledgerSale) plantFaults(t *testing.T, clean *ledger.SaleReport) {
	t.Helper()
	ctx := context.Background()
	c := l.rs.Client()
	rem, err := l.rs.Remaining(ctx, l.Sale, l.item)
	if err != nil {
		t.Fatal(err)
	}
	shard := slices.IndexFunc(rem, func(n int64) bool { return n > 0 })
	key := string(sharding.AppendStockKey(nil, l.Shards[shard], l.item))
	l.redis(t, c.B().Decr().Key(key).Build())
	l.wantFault(t, "a unit removed from a shard", ledger.KindUnbalanced, nil)
	l.redis(t, c.B().Incr().Key(key).Build())
	l.wantClean(t, clean.Hash)

	var paid, cancelled string
	var user int64
	if err := l.pool.QueryRow(ctx, `SELECT id::text, user_id FROM orders WHERE sale_id = $1 AND status = 'PAID' ORDER BY id LIMIT 1`, l.ID).Scan(&paid, &user); err != nil {
		t.Fatal(err)
	}
	buyers := string(sharding.AppendBuyersKey(nil, l.Shards[sharding.HomeShard(uint64(user), l.ID, len(l.Shards))]))
	u := strconv.FormatInt(user, 10)
	l.redis(t, c.B().Hdel().Key(buyers).Field(u).Build())
	l.wantFault(t, "a PAID order's buyer record dropped", reconcile.KindLostBuyer, []string{paid})
	l.redis(t, c.B().Hset().Key(buyers).FieldValue().FieldValue(u, paid).Build())
	l.wantClean(t, clean.Hash)

	if err := l.pool.QueryRow(ctx, `SELECT id::text FROM orders WHERE sale_id = $1 AND status = 'CANCELLED' ORDER BY id LIMIT 1`, l.ID).Scan(&cancelled); err != nil {
		t.Fatal(err)
	}
	if _, err := l.pool.Exec(ctx, `DELETE FROM orders WHERE id = ANY($1::uuid[])`, []string{paid, cancelled}); err != nil {
		t.Fatal(err)
	}
	l.wantFault(t, "order rows deleted from PostgreSQL", ledger.KindOrderMissing, []string{paid, cancelled})
}

func (l *ledgerSale) redis(t *testing.T, cmd rueidis.Completed) {
	t.Helper()
	c := l.rs.Client()
	if err := c.Do(context.Background(), cmd).Error(); err != nil {
		t.Fatal(err)
	}
}

// wantFault takes the report and wants exit 1, not balanced, and a
// discrepancy of kind naming exactly orders (none for nil) for the item.
func (l *ledgerSale) wantFault(t *testing.T, what, kind string, orders []string) {
	t.Helper()
	code, rep := l.jsonReport(t)
	var named []string
	found := false
	for _, d := range rep.Ledger.Discrepancies {
		if d.Kind == kind && d.Item == l.item {
			found = true
			named = append(named, d.Orders...)
		}
	}
	slices.Sort(named)
	slices.Sort(orders)
	if code != 1 || rep.Balanced || !found || !slices.Equal(named, orders) {
		b, _ := json.MarshalIndent(rep.Ledger.Discrepancies, "", "  ")
		t.Fatalf("%s: exit %d, balanced %v; want exit 1 and a %s discrepancy naming %v:\n%s", what, code, rep.Balanced, kind, orders, b)
	}
	_, text, _ := l.report(t)
	if !strings.Contains(text, "LEDGER NOT BALANCED") || !strings.Contains(text, kind) {
		t.Fatalf("%s: the text does not say so:\n%s", what, text)
	}
	for _, o := range orders {
		if !strings.Contains(text, o) {
			t.Fatalf("%s: the text does not name order %s:\n%s", what, o, text)
		}
	}
}

// wantClean wants the books balanced again, with hash.
func (l *ledgerSale) wantClean(t *testing.T, hash string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, rep := l.jsonReport(t)
		if code == 0 && rep.Balanced && rep.Hash == hash {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after undoing the fault: exit %d, balanced %v, hash %s, want %s: %+v", code, rep.Balanced, rep.Hash, hash, rep.Ledger.Discrepancies)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
