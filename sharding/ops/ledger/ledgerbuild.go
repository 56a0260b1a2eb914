package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"flashsale/sharding/ops/reconcile"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

// LedgerOptions tune the reading of a ledger.
type LedgerOptions struct {
	// Grace is how young a reservation missing from PostgreSQL may be and
	// still count as on its way (default 30 s; see ReconcileOptions.Grace).
	Grace time.Duration
	// WriterLag reads the writers' consumer group lag (journal.GroupLag):
	// while it is above 0 a reservation whose journal entry is gone may
	// wait in Kafka, and counts in flight. nil, or an error: unknown, and
	// such a reservation is a discrepancy.
	WriterLag func(context.Context) (int64, error)
}

// WriterLag is what the ledger learned of the writers' consumer lag.
type WriterLag struct {
	Known   bool   `json:"known"`
	Records int64  `json:"records"`
	Error   string `json:"error,omitempty"`
}

// readLedger reads sale's ledger: Redis and PostgreSQL compared by
// reconcile's check (buyer records, orders, units per item), then the
// PostgreSQL side of the flows and the history in one snapshot.
func readLedger(ctx context.Context, t *tool.Tool, sale *sale.Sale, opt LedgerOptions) (*Ledger, WriterLag, *reconcile.Check, error) {
	if opt.Grace <= 0 {
		opt.Grace = 30 * time.Second
	}
	c, err := reconcile.CheckSale(ctx, t, sale, opt.Grace)
	if err != nil {
		return nil, WriterLag{}, nil, err
	}
	lag := readWriterLag(ctx, opt.WriterLag)
	pg, err := readLedgerPG(ctx, t, sale.ID)
	if err != nil {
		return nil, lag, nil, err
	}
	return buildLedger(sale, c, pg, lag.Known && lag.Records > 0), lag, c, nil
}

func readWriterLag(ctx context.Context, read func(context.Context) (int64, error)) WriterLag {
	if read == nil {
		return WriterLag{Error: "not read"}
	}
	lctx, cancel := context.WithTimeout(ctx, reconcile.WriterLagTimeout)
	defer cancel()
	n, err := read(lctx)
	if err != nil {
		return WriterLag{Error: err.Error()}
	}
	if n < 0 {
		return WriterLag{Error: fmt.Sprintf("a lag of %d records", n)}
	}
	return WriterLag{Known: true, Records: n}
}

// buildLedger puts together the ledger of sale from a check of Redis against
// PostgreSQL (c) and PostgreSQL's side (pg); kafkaLag says the writers have
// records to persist.
func buildLedger(sale *sale.Sale, c *reconcile.Check, pg *pgLedger, kafkaLag bool) *Ledger {
	l := &Ledger{Sale: sale.ID, Discrepancies: []Discrepancy{}}
	seen := map[int64]bool{}
	for _, ic := range c.Items {
		it := ItemLedger{Item: ic.Item, Unsold: ic.S, UnsoldByShard: ic.Shards, InFlight: InFlight{Moves: ic.InFlight, HandOffs: ic.HandOff}, Flows: Flows{Failed: []Failure{}}}
		if si := sale.Item(ic.Item); si != nil {
			it.Name, it.Q = si.Name, si.Quantity // Q from PostgreSQL below when it has the item
		}
		seen[ic.Item] = true
		l.Items = append(l.Items, it)
	}
	for id := range pg.items {
		if !seen[id] {
			l.Items = append(l.Items, ItemLedger{Item: id, Flows: Flows{Failed: []Failure{}}})
			l.Discrepancies = append(l.Discrepancies, Discrepancy{Kind: "item-not-in-redis", Item: id,
				Detail: "PostgreSQL has the item, the sale's description in Redis does not: its unsold units are nowhere"})
		}
	}
	slices.SortFunc(l.Items, func(a, b ItemLedger) int { return cmp.Compare(a.Item, b.Item) })
	for i := range l.Items {
		l.fromPostgres(&l.Items[i], pg)
	}
	for _, f := range c.Findings {
		l.finding(f, pg, kafkaLag)
	}
	l.Discrepancies = append(l.Discrepancies, pg.history...)
	l.finish()
	return l
}

// fromPostgres fills it's quantity, orders and flows from pg.
func (l *Ledger) fromPostgres(it *ItemLedger, pg *pgLedger) {
	for _, r := range pg.reshards {
		it.Flows.MovedByReshards += r.Units[it.Item]
	}
	it.Flows.Reshards = int64(len(pg.reshards))
	p := pg.items[it.Item]
	if p == nil {
		return // reconcile's item-not-in-postgresql finding names it
	}
	moved, reshards := it.Flows.MovedByReshards, it.Flows.Reshards
	it.Q, it.Paid, it.Pending, it.Flows = p.Q, p.Paid, p.Pending, p.flows
	it.Flows.MovedByReshards, it.Flows.Reshards = moved, reshards
	if p.Sold != p.Paid+p.Pending {
		l.Discrepancies = append(l.Discrepancies, Discrepancy{Kind: KindSoldCount, Item: it.Item, Units: p.Sold - (p.Paid + p.Pending),
			Detail: fmt.Sprintf("items.sold is %d, PENDING + PAID orders are %d", p.Sold, p.Paid+p.Pending)})
	}
}

// finding turns one of reconcile's findings into the ledger's terms: a unit
// in flight (a return whose outbox row is on its way, a reservation that may
// wait in Kafka), nothing (drift, which the ledger computes itself; a unit
// kept by design), or a discrepancy naming the order.
func (l *Ledger) finding(f reconcile.Finding, pg *pgLedger, kafkaLag bool) {
	it := l.item(f.Item)
	switch f.Kind {
	case reconcile.KindDrift:
		return
	case reconcile.KindEnded:
		returns := f.Status != stock.StatusFailed || schema.FailureReturnsUnit(pg.failures[f.Order])
		switch {
		case !returns:
			return // failed and kept (sold out in PostgreSQL): it absorbed a unit Redis had beyond the quantity
		case pg.undone[f.Order] && it != nil:
			it.InFlight.Returns++
			return
		}
		f.Kind, f.Detail = KindReturnNotHeld, fmt.Sprintf("%s order whose return Redis applied, yet its buyer record still holds the unit", f.Status)
	case reconcile.KindOrphan:
		if kafkaLag && it != nil {
			it.InFlight.Kafka++
			return
		}
		// Reconcile's detail says how long ago: the ledger holds no clock
		// reading, or two reports of the same books would differ.
		f.Detail = "reserved longer ago than the grace, never reached PostgreSQL, its journal entry gone"
	}
	d := Discrepancy{Kind: f.Kind, Item: f.Item, Detail: fmt.Sprintf("user %d, shard %d: %s", f.User, f.Shard, f.Detail)}
	if f.Order != "" {
		d.Orders = []string{f.Order}
	}
	if f.Kind == reconcile.KindOrphan || f.Kind == reconcile.KindOrphanNoItem || f.Kind == KindReturnNotHeld {
		d.Units = 1
	}
	if f.Kind == reconcile.KindMisplaced || f.Kind == reconcile.KindUnknownItem {
		d.Detail = f.Detail
	}
	l.Discrepancies = append(l.Discrepancies, d)
}

func (l *Ledger) item(id int64) *ItemLedger {
	for i := range l.Items {
		if l.Items[i].Item == id {
			return &l.Items[i]
		}
	}
	return nil
}

// shardsText is per-shard unsold units, for a discrepancy's detail.
func shardsText(per []int64) string {
	out := ""
	for i, n := range per {
		if i > 0 {
			out += ","
		}
		out += strconv.FormatInt(n, 10)
	}
	return out
}
