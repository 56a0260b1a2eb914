package ledger

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"flashsale/sharding/ops/reconcile"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

// ledgerCase is a balanced sale of one item of 10 units (3 paid, 2 pending,
// 3 unsold over two shards, 1 in a move, 1 on its way to PostgreSQL) with
// what a test changes in it.
func ledgerCase() (*sale.Sale, *reconcile.Check, *pgLedger) {
	s := &sale.Sale{ID: 9, Items: []sale.Item{{ID: 1, Name: "a", Quantity: 10}}, Shards: []string{"t0", "t1"}}
	c := &reconcile.Check{Items: []reconcile.ItemCheck{{Item: 1, Q: 10, S: 3, P: 5, Sold: 5, InFlight: 1, HandOff: 1, Shards: []int64{1, 2}}}}
	it := &pgItem{Q: 10, Sold: 5, flows: Flows{Failed: []Failure{}}}
	for _, x := range []struct {
		status, reason string
		n              int64
	}{{"PAID", "", 3}, {"PENDING", "", 2}, {"EXPIRED", "", 4}, {"CANCELLED", "", 1}, {"FAILED", schema.FailGhost, 1}, {"FAILED", schema.FailSoldOut, 1}} {
		it.count(x.status, x.reason, true, x.n)
	}
	pg := &pgLedger{items: map[int64]*pgItem{1: it}, undone: map[string]bool{}, failures: map[string]string{},
		reshards: []schema.ReshardDetail{{From: 2, To: 4, Units: map[int64]int64{1: 6}}}}
	return s, c, pg
}

const orderA = "00000009-0000-8000-8000-00000000000a"

// TestLedgerBuild checks how the ledger reads each finding of reconcile's
// check and each history gap: a unit in flight, nothing, or a discrepancy
// naming the order.
func TestLedgerBuild(t *testing.T) {
	cases := []struct {
		name     string
		change   func(c *reconcile.Check, pg *pgLedger)
		balanced bool
		kinds    []string // of the discrepancies, sorted
		returns  int64    // units in flight back to Redis
		kafka    int64
	}{
		{"balanced", func(*reconcile.Check, *pgLedger) {}, true, nil, 0, 0},
		{"reconcile's drift is the ledger's to compute", func(c *reconcile.Check, _ *pgLedger) {
			c.Findings = append(c.Findings, reconcile.Finding{Kind: reconcile.KindDrift, Item: 1, Units: 1})
		}, true, nil, 0, 0},
		{"an expiry whose outbox row is on its way", func(c *reconcile.Check, pg *pgLedger) {
			c.Items[0].S--
			pg.undone[orderA] = true
			c.Findings = append(c.Findings, reconcile.Finding{Kind: reconcile.KindEnded, Item: 1, Order: orderA, Status: stock.StatusExpired})
		}, true, nil, 1, 0},
		{"an expiry applied while its unit is still held", func(c *reconcile.Check, _ *pgLedger) {
			c.Items[0].S--
			c.Findings = append(c.Findings, reconcile.Finding{Kind: reconcile.KindEnded, Item: 1, Order: orderA, Status: stock.StatusExpired})
		}, false, []string{KindReturnNotHeld, KindUnbalanced}, 0, 0},
		{"a unit kept by an order failed as sold out", func(c *reconcile.Check, pg *pgLedger) {
			pg.failures[orderA] = schema.FailSoldOut
			c.Findings = append(c.Findings, reconcile.Finding{Kind: reconcile.KindEnded, Item: 1, Order: orderA, Status: stock.StatusFailed})
		}, true, nil, 0, 0},
		{"a reservation that may wait in Kafka", func(c *reconcile.Check, _ *pgLedger) {
			c.Items[0].S--
			c.Findings = append(c.Findings, reconcile.Finding{Kind: reconcile.KindOrphan, Item: 1, Order: orderA})
		}, true, nil, 0, 1},
		{"a lost buyer record", func(c *reconcile.Check, _ *pgLedger) {
			c.Findings = append(c.Findings, reconcile.Finding{Kind: reconcile.KindLostBuyer, Item: 1, Order: orderA, User: 5})
		}, false, []string{reconcile.KindLostBuyer}, 0, 0},
		{"a unit removed from a shard", func(c *reconcile.Check, _ *pgLedger) {
			c.Items[0].S--
			c.Items[0].Shards[1]--
		}, false, []string{KindUnbalanced}, 0, 0},
		{"an order row deleted", func(c *reconcile.Check, pg *pgLedger) {
			pg.items[1].Paid--
			pg.items[1].Sold--
			pg.history = append(pg.history, historyGap("missing", orderA, 1, "", stock.StatusPaid, 5))
		}, false, []string{KindOrderMissing, KindUnbalanced}, 0, 0},
		{"items.sold off", func(c *reconcile.Check, pg *pgLedger) { pg.items[1].Sold++ }, false, []string{KindSoldCount}, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sale, c, pg := ledgerCase()
			tc.change(c, pg)
			l := buildLedger(sale, c, pg, tc.name == "a reservation that may wait in Kafka")
			var kinds []string
			for _, d := range l.Discrepancies {
				kinds = append(kinds, d.Kind)
				if d.Kind != KindUnbalanced && d.Kind != KindSoldCount && !slices.Equal(d.Orders, []string{orderA}) {
					t.Errorf("%s names orders %v, want %s", d.Kind, d.Orders, orderA)
				}
			}
			if l.Balanced() != tc.balanced || !slices.Equal(kinds, tc.kinds) {
				t.Fatalf("balanced %v, discrepancies %v; want %v, %v\n%+v", l.Balanced(), kinds, tc.balanced, tc.kinds, l.Discrepancies)
			}
			if f := l.Items[0].InFlight; f.Returns != tc.returns || f.Kafka != tc.kafka || f.Moves != 1 || f.HandOffs != 1 {
				t.Fatalf("in flight %+v, want returns %d, Kafka %d, 1 move, 1 hand-off", f, tc.returns, tc.kafka)
			}
		})
	}
}

// TestLedgerFlows: the flows sum what the orders did, by status and reason,
// and the total row sums the items.
func TestLedgerFlows(t *testing.T) {
	sale, c, pg := ledgerCase()
	l := buildLedger(sale, c, pg, false)
	f := l.Items[0].Flows
	if f.Reserved != 12 || f.Expired.Returned != 4 || f.Cancelled.Orders != 1 || f.Ghosts.Orders != 1 || f.MovedByReshards != 6 || f.Reshards != 1 {
		t.Fatalf("flows %+v", f)
	}
	// 12 reserved + 1 on its way = 13 reservations of 10 units: 3 sold again.
	if f.SoldAgain != 3 {
		t.Fatalf("sold again %d, want 3", f.SoldAgain)
	}
	if len(f.Failed) != 2 || !f.Failed[0].UnitReturned || f.Failed[1].UnitReturned {
		t.Fatalf("failures %+v, want the ghost's unit returned, the sold-out's kept", f.Failed)
	}
	if l.Total.Q != 10 || l.Total.Paid != 3 || l.Total.InFlight.Units() != 2 || len(l.Total.Flows.Failed) != 2 {
		t.Fatalf("total %+v", l.Total)
	}
}

// TestLedgerHash: the hash covers the ledger only, is the same for the same
// books however the findings came in, and changes with a single unit.
func TestLedgerHash(t *testing.T) {
	hash := func(change func(c *reconcile.Check, pg *pgLedger)) string {
		sale, c, pg := ledgerCase()
		change(c, pg)
		h, err := LedgerHash(buildLedger(sale, c, pg, false))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	two := func(c *reconcile.Check, _ *pgLedger) {
		c.Findings = append(c.Findings, reconcile.Finding{Kind: reconcile.KindLostBuyer, Item: 1, Order: orderA}, reconcile.Finding{Kind: reconcile.KindLostBuyer, Item: 1, Order: "b"})
	}
	swapped := func(c *reconcile.Check, _ *pgLedger) {
		c.Findings = append(c.Findings, reconcile.Finding{Kind: reconcile.KindLostBuyer, Item: 1, Order: "b"}, reconcile.Finding{Kind: reconcile.KindLostBuyer, Item: 1, Order: orderA})
	}
	if a, b := hash(two), hash(swapped); a != b || !strings.HasPrefix(a, "sha256:") || len(a) != len("sha256:")+64 {
		t.Fatalf("the same books hash %s and %s", a, b)
	}
	orphan := func(ago string) func(c *reconcile.Check, _ *pgLedger) {
		return func(c *reconcile.Check, _ *pgLedger) {
			c.Findings = append(c.Findings, reconcile.Finding{Kind: reconcile.KindOrphan, Item: 1, Order: orderA, Detail: "reserved " + ago + " ago, never reached PostgreSQL"})
		}
	}
	if a, b := hash(orphan("54s")), hash(orphan("2m0s")); a != b {
		t.Fatal("the same orphan, a minute later, hashed differently: the ledger holds a clock reading")
	}
	if a, b := hash(func(*reconcile.Check, *pgLedger) {}), hash(func(c *reconcile.Check, _ *pgLedger) { c.Items[0].Shards[0]++ }); a == b {
		t.Fatal("a unit more on a shard did not change the hash")
	}
}

// TestReportRenders: the text ends with the verdict, the JSON carries the
// ledger and its hash, and the HTML page has the look and the verdict.
func TestReportRenders(t *testing.T) {
	sale, c, pg := ledgerCase()
	for _, balanced := range []bool{true, false} {
		if !balanced {
			c.Findings = append(c.Findings, reconcile.Finding{Kind: reconcile.KindLostBuyer, Item: 1, Order: orderA, User: 5})
		}
		l := buildLedger(sale, c, pg, false)
		h, _ := LedgerHash(l)
		rep := &SaleReport{Sale: 9, Name: "n", State: "ENDED", Ledger: l, Balanced: l.Balanced(), Hash: h, Timing: &Timing{}}
		var text, js, page bytes.Buffer
		if err := rep.Text(&text); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(text.String()), "\n")
		want := "LEDGER BALANCED: every unit of sale 9 accounted for"
		if !balanced {
			want = "LEDGER NOT BALANCED: 1 discrepancies in sale 9"
		}
		if last := lines[len(lines)-1]; !strings.HasPrefix(last, want) || lines[len(lines)-2] != "ledger hash "+h {
			t.Fatalf("text ends %q, want %q after the hash:\n%s", last, want, text.String())
		}
		if !balanced && !strings.Contains(text.String(), orderA) {
			t.Fatalf("the text does not name the order:\n%s", text.String())
		}
		if err := tool.Write(&js, rep, true); err != nil {
			t.Fatal(err)
		}
		var back SaleReport
		if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Hash != h || back.Ledger == nil || back.Balanced != balanced {
			t.Fatalf("JSON %v: %s", err, js.String())
		}
		if err := rep.WriteHTML(&page); err != nil {
			t.Fatal(err)
		}
		verdict := `id="balanced">LEDGER BALANCED`
		if !balanced {
			verdict = "<h2>LEDGER NOT BALANCED</h2>"
		}
		if p := page.String(); !strings.Contains(p, verdict) || !strings.Contains(p, h) || !strings.Contains(p, ".cards{display:grid") {
			t.Fatalf("the page lacks the verdict %q, the hash or the look", verdict)
		}
	}
}

// Rows read from PostgreSQL are input: out of range, they stop the report
// with a message naming the row.
func TestLedgerRowsChecked(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{checkItemRow(1, 0, 0), "quantity 0 and sold 0 out of range"},
		{checkItemRow(1, 5, 6), "quantity 5 and sold 6 out of range"},
		{checkOrderCount(1, "LOST", 1), `status "LOST", none of`},
		{checkOrderCount(1, "PAID", 0), "a count of 0 PAID orders"},
		{second(ParseReshard(`{"from":0,"to":2}`)), "from 0 to 2 shards"},
		{second(ParseReshard(`{"from":2,"to":4,"units":{"7":-3}}`)), "moved -3 units of item 7"},
		{second(ParseReshard(`not json`)), `a reshard record "not json"`},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%v, want an error with %q", tc.err, tc.want)
		}
	}
	if err := checkItemRow(1, 5, 5); err != nil {
		t.Error(err)
	}
	if d, err := ParseReshard(`{"from":2,"to":4,"units":{"7":3}}`); err != nil || d.Units[7] != 3 {
		t.Errorf("%+v %v", d, err)
	}
}

func second[T any](_ T, err error) error { return err }
