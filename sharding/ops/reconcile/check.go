package reconcile

import (
	"context"
	"fmt"
	"sort"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

type buyerRec struct {
	shard int
	oid   sharding.OrderID
}

// checker is one check in progress: what it has read and found so far.
type checker struct {
	t       *tool.Tool
	sale    *sale.Sale
	grace   time.Duration
	now     time.Time
	c       *Check
	buyers  map[uint64]buyerRec // buyer records on their home shard, by user
	handOff map[int64]int64     // item -> reservations on their way to PostgreSQL
}

// CheckSale reads PostgreSQL, then Redis, and explains what it sees: buyer records
// PostgreSQL does not match, active orders Redis does not hold, and each
// item's units.
func CheckSale(ctx context.Context, t *tool.Tool, sale *sale.Sale, grace time.Duration) (*Check, error) {
	now := time.Now()
	k := &checker{t: t, sale: sale, grace: grace, now: now, c: &Check{At: now.UTC()}, handOff: map[int64]int64{}}
	totals, err := schema.SaleItemTotals(ctx, t.DB, sale.ID)
	if err != nil {
		return nil, err
	}
	active, err := schema.ActiveOrders(ctx, t.DB, sale.ID)
	if err != nil {
		return nil, err
	}
	k.c.ActiveOrders = len(active)
	if err := k.readBuyers(ctx); err != nil {
		return nil, err
	}
	if err := k.explainBuyers(ctx, active); err != nil {
		return nil, err
	}
	k.explainActive(active)
	if err := k.checkItems(ctx, totals); err != nil {
		return nil, err
	}
	return k.c, nil
}

func (k *checker) add(f Finding) { k.c.Findings = append(k.c.Findings, f) }

// readBuyers reads every shard's buyer records; one off its user's home shard
// is a finding and is not counted.
func (k *checker) readBuyers(ctx context.Context) error {
	k.buyers = map[uint64]buyerRec{}
	for i, tag := range k.sale.Shards {
		m, err := k.t.Store.Buyers(ctx, tag)
		if err != nil {
			return err
		}
		for u, oid := range m {
			if home := sharding.HomeShard(u, k.sale.ID, len(k.sale.Shards)); home != i {
				k.add(Finding{Kind: KindMisplaced, User: u, Order: oid.String(), Shard: i,
					Detail: fmt.Sprintf("buyer record on shard %d, home is shard %d", i, home)})
				continue
			}
			k.buyers[u] = buyerRec{shard: i, oid: oid}
		}
	}
	k.c.Buyers = len(k.buyers)
	return nil
}

// explainBuyers explains, in user order, each buyer record that names no
// active order of its user in PostgreSQL.
func (k *checker) explainBuyers(ctx context.Context, active []schema.Order) error {
	byID := make(map[sharding.OrderID]schema.Order, len(active))
	for _, o := range active {
		byID[o.ID] = o
	}
	var unmatched []uint64
	var ids []sharding.OrderID
	for u, b := range k.buyers {
		if o, ok := byID[b.oid]; ok && o.UserID == u {
			continue
		}
		unmatched = append(unmatched, u)
		ids = append(ids, b.oid)
	}
	known, err := schema.OrdersByID(ctx, k.t.DB, ids)
	if err != nil {
		return err
	}
	sort.Slice(unmatched, func(i, j int) bool { return unmatched[i] < unmatched[j] })
	for _, u := range unmatched {
		b := k.buyers[u]
		f := Finding{User: u, Order: b.oid.String(), Shard: b.shard, tag: k.sale.Shards[b.shard], oid: b.oid}
		if o, ok := known[b.oid]; ok {
			k.explainKnown(f, o)
			continue
		}
		if err := k.explainUnpersisted(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// explainKnown: PostgreSQL knows the buyer record's order o, but not as an
// active order of this user when the check read it.
func (k *checker) explainKnown(f Finding, o schema.Order) {
	f.Item, f.Status = o.ItemID, o.Status
	switch {
	case o.UserID != f.User:
		f.Kind, f.Detail = KindConflict, fmt.Sprintf("PostgreSQL has this order for user %d", o.UserID)
	case o.Status == stock.StatusPending || o.Status == stock.StatusPaid:
		k.handOff[o.ItemID]++ // reached PostgreSQL while this check ran
		return
	default:
		f.Kind, f.Detail = KindEnded, "PostgreSQL ended the order but Redis still holds its unit"
	}
	k.add(f)
}

// explainUnpersisted: PostgreSQL does not know the buyer record's order. Still
// in the hand-off journal (Kafka away, however long), or young enough to be on
// its way, it is in flight; otherwise it is an orphan.
func (k *checker) explainUnpersisted(ctx context.Context, f Finding) error {
	rec, found, err := k.t.Store.Order(ctx, f.tag, f.User, f.oid)
	if err != nil {
		return err
	}
	journaled := false
	if found {
		if journaled, err = k.t.Store.InJournal(ctx, f.tag, rec.Journal); err != nil {
			return err
		}
	}
	switch {
	case found && (journaled || k.now.Sub(rec.Created) < k.grace):
		k.handOff[rec.ItemID]++
		return nil
	case found:
		f.Kind, f.Item = KindOrphan, rec.ItemID
		f.Detail = fmt.Sprintf("reserved %s ago, never reached PostgreSQL", k.now.Sub(rec.Created).Round(time.Second))
	default:
		f.Kind, f.Detail = KindOrphanNoItem, "neither PostgreSQL nor an order record knows this order"
	}
	k.add(f)
	return nil
}

// explainActive explains each active order in PostgreSQL whose user's buyer
// record does not name it.
func (k *checker) explainActive(active []schema.Order) {
	for _, o := range active {
		b, ok := k.buyers[o.UserID]
		if ok && b.oid == o.ID {
			continue
		}
		home := sharding.HomeShard(o.UserID, k.sale.ID, len(k.sale.Shards))
		f := Finding{Item: o.ItemID, User: o.UserID, Order: o.ID.String(), Shard: home, Status: o.Status,
			tag: k.sale.Shards[home], oid: o.ID, created: o.Created, expires: o.Expires}
		if ok {
			f.Kind, f.Detail = KindConflict, fmt.Sprintf("Redis holds order %s for this user", b.oid)
		} else {
			f.Kind, f.Detail = KindLostBuyer, "active in PostgreSQL, no buyer record in Redis: the user could buy twice"
		}
		k.add(f)
	}
}

// checkItems accounts each item's units: Q - (S + P + M + H) should be zero.
func (k *checker) checkItems(ctx context.Context, totals map[int64]schema.ItemTotals) error {
	moves, err := k.t.Store.PendingMoves(ctx, k.sale)
	if err != nil {
		return err
	}
	for _, it := range k.sale.Items {
		rem, err := k.t.Store.Remaining(ctx, k.sale, it.ID)
		if err != nil {
			return err
		}
		ic := ItemCheck{Item: it.ID, S: tool.Sum(rem), Shards: rem, HandOff: k.handOff[it.ID]}
		for _, m := range moves {
			if m.ItemID == it.ID {
				ic.InFlight += m.Units
			}
		}
		tot, ok := totals[it.ID]
		if !ok {
			k.add(Finding{Kind: KindUnknownItem, Item: it.ID, Detail: "the Redis description names an item PostgreSQL does not have"})
			k.c.Items = append(k.c.Items, ic)
			continue
		}
		ic.Q, ic.P, ic.Sold = tot.Quantity, tot.Active, tot.Sold
		ic.Drift = ic.Q - (ic.S + ic.P + ic.InFlight + ic.HandOff)
		if ic.Drift != 0 {
			k.add(Finding{Kind: KindDrift, Item: it.ID, Units: ic.Drift,
				Detail: fmt.Sprintf("Q %d - (S %d + P %d + moves %d + hand-offs %d) = %d", ic.Q, ic.S, ic.P, ic.InFlight, ic.HandOff, ic.Drift)})
		}
		k.c.Items = append(k.c.Items, ic)
	}
	return nil
}
