package reconcile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

// ReconcileOptions tune Reconcile.
type ReconcileOptions struct {
	// Repair changes Redis; without it Reconcile only reports.
	Repair bool
	// Grace is how old a reservation must be before its absence from
	// PostgreSQL counts as lost (default 30 s): a younger one may still be on
	// its way through Kafka to the writer.
	Grace time.Duration
	// WriterLag reads the writers' consumer group lag on the orders topic
	// (journal.GroupLag). A repair releases an orphan's unit only after it
	// read 0: an orphan has left the hand-off journal, so its event may sit
	// in Kafka unpersisted (a writer stopped or behind for minutes), and its
	// unit must not come back before the writer has had it. nil: no orphan
	// is repaired.
	WriterLag func(context.Context) (int64, error)
}

// Kinds of findings.
const (
	// KindLostBuyer: an active order in PostgreSQL whose user has no buyer
	// record on the home shard (a failover lost the reservation): the user
	// could buy a second time. Repair: RestoreBuyer, and recreate the order
	// record for GET.
	KindLostBuyer = "lost-buyer"
	// KindOrphan: a buyer record whose order PostgreSQL does not know, whose
	// entry is no longer in the hand-off journal and whose reservation is
	// older than the grace period: the hand-off to the writer was lost. Repair: Release with FAILED, which returns the unit.
	KindOrphan = "orphan-reservation"
	// KindOrphanNoItem: like KindOrphan, but the order record is gone too, so
	// the item is unknown. Repair: drop the buyer record (guarded); the unit
	// comes back through the item's drift.
	KindOrphanNoItem = "orphan-reservation-no-record"
	// KindEnded: a buyer record whose order PostgreSQL has ended (EXPIRED,
	// CANCELLED, FAILED) but whose unit Redis still holds. Repair: Release with
	// that status.
	KindEnded = "ended-order-still-held"
	// KindConflict: PostgreSQL and Redis name different active orders of one
	// user. Not repaired directly: the Redis side is an orphan or ended order
	// once its grace has passed, and the lost buyer is restored after that.
	KindConflict = "buyer-conflict"
	// KindMisplaced: a buyer record on a shard that is not the user's home.
	// Reported only.
	KindMisplaced = "buyer-off-home-shard"
	// KindDrift: Q - (S + P + M + H) is not zero for an item after the buyer
	// findings are explained. Repair: compare-and-set on one shard.
	KindDrift = "unit-drift"
	// KindUnknownItem: an item of the Redis description that PostgreSQL does
	// not have. Reported only.
	KindUnknownItem = "item-not-in-postgresql"
)

// Finding is one thing reconcile noticed, and, in a repair, what it did.
type Finding struct {
	Kind   string `json:"kind"`
	Item   int64  `json:"item,omitempty"`
	User   uint64 `json:"user,omitempty"`
	Order  string `json:"order,omitempty"`
	Shard  int    `json:"shard"`
	Status string `json:"status,omitempty"` // the order's status in PostgreSQL
	Units  int64  `json:"units,omitempty"`  // drift, or the units a repair set
	Detail string `json:"detail"`
	// Repair is what a repair did about it ("" when reporting only).
	Repair string `json:"repair,omitempty"`

	tag              string
	oid              sharding.OrderID
	created, expires time.Time
}

// ItemCheck is one item's accounting at one moment.
type ItemCheck struct {
	Item     int64   `json:"item"`
	Q        int64   `json:"q"`
	S        int64   `json:"s"`
	P        int64   `json:"p"`
	Sold     int64   `json:"sold"`
	InFlight int64   `json:"inFlight"` // units in journaled moves: M
	HandOff  int64   `json:"handOff"`  // reservations younger than the grace, not yet in PostgreSQL: H
	Drift    int64   `json:"drift"`    // Q - (S + P + M + H)
	Shards   []int64 `json:"shards"`   // S per shard
}

// Check is one comparison of Redis with PostgreSQL.
type Check struct {
	At           time.Time   `json:"at"`
	Items        []ItemCheck `json:"items"`
	Buyers       int         `json:"buyers"`       // buyer records in Redis
	ActiveOrders int         `json:"activeOrders"` // PENDING + PAID in PostgreSQL
	Findings     []Finding   `json:"findings"`
}

// Clean reports whether the check found nothing.
func (c *Check) Clean() bool { return len(c.Findings) == 0 }

func (c *Check) item(id int64) *ItemCheck {
	for i := range c.Items {
		if c.Items[i].Item == id {
			return &c.Items[i]
		}
	}
	return nil
}

// ReconcileReport is the outcome of reconcile.
type ReconcileReport struct {
	Sale          int64     `json:"sale"`
	Repair        bool      `json:"repair"`
	Grace         string    `json:"grace"`
	MovesFinished int       `json:"movesFinished"`
	Before        *Check    `json:"before"`
	Repairs       []Finding `json:"repairs,omitempty"`
	// Held are the findings of the last repair pass it left alone, each with
	// why (orphans while the writer's lag is not 0 or not known).
	Held  []Finding `json:"notRepaired,omitempty"`
	After *Check    `json:"after,omitempty"`
	// Clean is true when the last check found nothing.
	Clean bool `json:"clean"`
}

// Reconcile compares sale id in Redis with PostgreSQL and, with opt.Repair,
// repairs what it found (see the package doc and the Kind constants), then
// checks again. Every write is guarded: releases by the buyer record, buyer
// restores by HSETNX, unit repairs by compare-and-set after two checks agree.
func Reconcile(ctx context.Context, t *tool.Tool, id int64, opt ReconcileOptions) (*ReconcileReport, error) {
	if err := t.NeedDB(); err != nil {
		return nil, err
	}
	if opt.Grace < 0 {
		return nil, tool.Usagef("reconcile: --grace must not be negative")
	}
	if opt.Grace == 0 {
		opt.Grace = 30 * time.Second
	}
	sale, err := t.LoadSale(ctx, id)
	if err != nil {
		return nil, err
	}
	rep := &ReconcileReport{Sale: id, Repair: opt.Repair, Grace: opt.Grace.String()}
	if rep.Before, err = CheckSale(ctx, t, sale, opt.Grace); err != nil {
		return nil, err
	}
	if !opt.Repair {
		rep.Clean = rep.Before.Clean()
		return rep, nil
	}
	// Moves stuck after a crash would count as in flight for ever; finishing
	// them is safe while moves run (each step is idempotent by move id).
	if rep.MovesFinished, err = t.Store.RecoverMoves(ctx, sale); err != nil {
		return nil, err
	}
	if err := repairPasses(ctx, t, sale, opt, rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// repairPasses repairs what rep.Before found, checking again after each pass,
// for at most four passes or until a check is clean. A pass repairs the buyer
// findings first and the drift only once there were none to repair: buyer
// repairs move units themselves, so a drift seen beside them is not yet the
// drift to set. It records in rep what it repaired, what the last pass left
// alone and the last check.
func repairPasses(ctx context.Context, t *tool.Tool, sale *sale.Sale, opt ReconcileOptions, rep *ReconcileReport) error {
	cur := rep.Before
	for pass := 0; pass < 4 && !cur.Clean(); pass++ {
		fixed, held, err := repairBuyers(ctx, t, sale, cur, opt)
		if err != nil {
			return err
		}
		rep.Repairs, rep.Held = append(rep.Repairs, fixed...), held
		if len(fixed) == 0 {
			if err := repairDrifts(ctx, t, sale, cur, len(held) > 0, opt.Grace, rep); err != nil {
				return err
			}
		}
		if cur, err = CheckSale(ctx, t, sale, opt.Grace); err != nil {
			return err
		}
		if len(fixed) == 0 {
			break
		}
	}
	rep.After = cur
	rep.Clean = cur.Clean()
	return nil
}

// repairDrifts repairs each drift finding of c by repairDrift and appends
// what it did to rep.Repairs; when orphans were left alone (held) it repairs
// none and appends each drift to rep.Held with why.
func repairDrifts(ctx context.Context, t *tool.Tool, sale *sale.Sale, c *Check, held bool, grace time.Duration, rep *ReconcileReport) error {
	for _, f := range c.Findings {
		if f.Kind != KindDrift {
			continue
		}
		if held {
			// The orphans left alone hold their units and count in the
			// drift: setting the stock by it would sell those units a
			// second time once the orphans are released.
			f.Repair = "not repaired: the orphans left alone count in it"
			rep.Held = append(rep.Held, f)
			continue
		}
		done, err := repairDrift(ctx, t, sale, f.Item, f.Units, grace)
		if err != nil {
			return err
		}
		rep.Repairs = append(rep.Repairs, done...)
	}
	return nil
}

// repairBuyers repairs the buyer findings of c and returns them with what was
// done, and the orphans it left alone with why (settledOrphans).
func repairBuyers(ctx context.Context, t *tool.Tool, sale *sale.Sale, c *Check, opt ReconcileOptions) (out, held []Finding, err error) {
	settled, why, err := settledOrphans(ctx, t, c, opt)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range c.Findings {
		if (f.Kind == KindOrphan || f.Kind == KindOrphanNoItem) && !settled[f.oid] {
			f.Repair = "not repaired: " + why
			held = append(held, f)
			continue
		}
		switch f.Kind {
		case KindOrphan, KindEnded:
			status := stock.StatusFailed
			if f.Kind == KindEnded {
				status = f.Status
			}
			rel, err := t.Store.Release(ctx, f.tag, f.Item, f.User, f.oid, status)
			if err != nil {
				return out, held, err
			}
			switch rel {
			case stock.ReleaseFrozen:
				return out, held, fmt.Errorf("releasing order %s on %s: %w", f.oid, f.tag, stock.ErrFrozen)
			case stock.Released:
				f.Repair = "released with " + status + ": unit returned"
			default:
				f.Repair = "already released meanwhile"
			}
		case KindOrphanNoItem:
			ok, err := t.Store.DropBuyer(ctx, f.tag, f.User, f.oid)
			if err != nil {
				return out, held, err
			}
			f.Repair = "buyer record dropped; its unit returns through the item's drift"
			if !ok {
				f.Repair = "buyer record changed meanwhile; left alone"
			}
		case KindLostBuyer:
			ok, err := t.Store.RestoreBuyer(ctx, f.tag, f.User, f.oid)
			if err != nil {
				return out, held, err
			}
			if !ok {
				f.Repair = "the user holds another buyer record now; left alone"
				break
			}
			f.Repair = "buyer record restored"
			ttl := time.Until(f.expires) + time.Hour
			err = t.Store.SetStatus(ctx, f.tag, f.oid, stock.OrderRecord{UserID: f.User, ItemID: f.Item, Status: f.Status,
				Created: f.created, Expires: f.expires}, max(ttl, time.Hour))
			if err != nil {
				return out, held, err
			}
			f.Repair += " with its order record"
		default:
			continue
		}
		out = append(out, f)
	}
	return out, held, nil
}

// WriterLagTimeout bounds the read of the writers' lag in a repair.
const WriterLagTimeout = 10 * time.Second

// settledOrphans returns the orphans of c a repair may release: those still
// unknown to PostgreSQL after a moment at which the writers' consumer group
// had no lag. An orphan's journal entry was gone at the check, so its event,
// if the relay produced it, was in Kafka before the check; no lag after the
// check means the writer had persisted it, and an order PostgreSQL still
// lacks then never reached Kafka: its hand-off was lost. Without that moment
// none is released, and why says so.
func settledOrphans(ctx context.Context, t *tool.Tool, c *Check, opt ReconcileOptions) (settled map[sharding.OrderID]bool, why string, err error) {
	var ids []sharding.OrderID
	for _, f := range c.Findings {
		if f.Kind == KindOrphan || f.Kind == KindOrphanNoItem {
			ids = append(ids, f.oid)
		}
	}
	if len(ids) == 0 {
		return nil, "", nil
	}
	if opt.WriterLag == nil {
		return nil, "the writers' Kafka lag is unknown (its event may wait in Kafka); the writer's ghost sweep releases it once they caught up", nil
	}
	// Bounded: a Kafka that does not answer (or flashctl pointed at none)
	// holds the orphans, it does not hold up the rest of the repair.
	lctx, cancel := context.WithTimeout(ctx, WriterLagTimeout)
	lag, err := opt.WriterLag(lctx)
	cancel()
	if err != nil {
		return nil, fmt.Sprintf("the writers' Kafka lag could not be read (%v): its event may wait in Kafka; the writer's ghost sweep releases it once they caught up", err), nil
	}
	if lag > 0 {
		return nil, fmt.Sprintf("the writers have %d records in Kafka to persist, its event may be one; run again once they caught up (or leave it to the writer's ghost sweep)", lag), nil
	}
	known, err := schema.OrdersByID(ctx, t.DB, ids)
	if err != nil {
		return nil, "", err
	}
	settled = make(map[sharding.OrderID]bool, len(ids))
	for _, id := range ids {
		settled[id] = true
		if _, ok := known[id]; ok {
			settled[id] = false
		}
	}
	return settled, "it reached PostgreSQL after the check", nil
}

// errRace means the units moved under a repair too often for it to finish.
var errRace = errors.New("stock kept changing under the repair; run reconcile again when the sale is quieter")

// repairDrift sets item's drift to zero by compare-and-set on one shard at a
// time. It writes only when two consecutive checks agree on the drift, and
// never sets a shard below zero (a deficit larger than a shard takes more
// than one shard).
func repairDrift(ctx context.Context, t *tool.Tool, sale *sale.Sale, item, seen int64, grace time.Duration) ([]Finding, error) {
	var out []Finding
	for attempt := 0; attempt < 10+len(sale.Shards); attempt++ {
		c, err := CheckSale(ctx, t, sale, grace)
		if err != nil {
			return out, err
		}
		for _, f := range c.Findings {
			if f.Kind != KindDrift && f.Item == item {
				return out, nil // buyer findings first: the caller's next pass
			}
		}
		ic := c.item(item)
		if ic == nil || ic.Drift == 0 {
			return out, nil
		}
		if ic.Drift != seen {
			seen = ic.Drift // moved under us: confirm with the next check
			continue
		}
		shard := 0
		for i, r := range ic.Shards {
			if r > ic.Shards[shard] {
				shard = i
			}
		}
		cur := ic.Shards[shard]
		next := max(cur+ic.Drift, 0)
		ok, err := t.Store.CompareAndSetStock(ctx, sale.Shards[shard], item, cur, next)
		if err != nil {
			return out, err
		}
		if !ok {
			continue // a purchase won the race: re-read
		}
		out = append(out, Finding{Kind: KindDrift, Item: item, Shard: shard, Units: next - cur,
			Detail: fmt.Sprintf("drift %d", ic.Drift),
			Repair: fmt.Sprintf("compare-and-set shard %d from %d to %d", shard, cur, next)})
		seen = ic.Drift - (next - cur)
	}
	return out, fmt.Errorf("repairing drift of item %d: %w", item, errRace)
}

// Text renders the reconcile.
func (r *ReconcileReport) Text(w io.Writer) error {
	fmt.Fprintf(w, "reconcile sale %d (grace %s)\n", r.Sale, r.Grace)
	label := "state"
	if r.Repair {
		label = "before"
	}
	if err := r.Before.text(w, label); err != nil {
		return err
	}
	if r.Repair {
		if r.MovesFinished > 0 {
			fmt.Fprintf(w, "\nfinished %d journaled moves\n", r.MovesFinished)
		}
		fmt.Fprintf(w, "\nrepairs: %s\n", countKinds(r.Repairs))
		shown := map[string]int{}
		for _, f := range r.Repairs {
			if shown[f.Kind]++; shown[f.Kind] > tool.MaxRows {
				continue
			}
			fmt.Fprintf(w, "  %-28s item %d user %d shard %d %s: %s\n", f.Kind, f.Item, f.User, f.Shard, f.Order, f.Repair)
		}
		tool.MoreRows(w, shown)
		if len(r.Held) > 0 {
			fmt.Fprintf(w, "\nnot repaired: %s\n", countKinds(r.Held))
			shown = map[string]int{}
			for _, f := range r.Held {
				if shown[f.Kind]++; shown[f.Kind] > tool.MaxRows {
					continue
				}
				fmt.Fprintf(w, "  %-28s item %d user %d shard %d %s: %s\n", f.Kind, f.Item, f.User, f.Shard, f.Order, f.Repair)
			}
			tool.MoreRows(w, shown)
		}
		if r.After != nil {
			fmt.Fprintln(w)
			if err := r.After.text(w, "after"); err != nil {
				return err
			}
		}
	}
	if r.Clean {
		fmt.Fprintln(w, "\nclean: Redis agrees with PostgreSQL")
	} else {
		fmt.Fprintln(w, "\nNOT CLEAN: see the findings above")
	}
	return nil
}

func (c *Check) text(w io.Writer, label string) error {
	fmt.Fprintf(w, "\n%s: %d buyer records in Redis, %d active orders in PostgreSQL\n", label, c.Buyers, c.ActiveOrders)
	tb := tool.NewTable(w, "item", "Q", "S (redis)", "P (pg)", "sold", "in moves", "hand-offs", "drift")
	for _, it := range c.Items {
		tb.Row(tool.Itoa(it.Item), tool.Itoa(it.Q), tool.Itoa(it.S), tool.Itoa(it.P), tool.Itoa(it.Sold), tool.Itoa(it.InFlight), tool.Itoa(it.HandOff), tool.Itoa(it.Drift))
	}
	if err := tb.Flush(); err != nil {
		return err
	}
	if len(c.Findings) == 0 {
		fmt.Fprintln(w, "findings: none")
		return nil
	}
	fmt.Fprintf(w, "findings: %s\n", countKinds(c.Findings))
	tb = tool.NewTable(w, "kind", "item", "user", "shard", "order", "pg status", "detail")
	shown := map[string]int{}
	for _, f := range c.Findings {
		if shown[f.Kind]++; shown[f.Kind] > tool.MaxRows {
			continue
		}
		tb.Row(f.Kind, tool.Itoa(f.Item), strconv.FormatUint(f.User, 10), tool.Itoa(int64(f.Shard)), f.Order, f.Status, f.Detail)
	}
	if err := tb.Flush(); err != nil {
		return err
	}
	tool.MoreRows(w, shown)
	return nil
}

func countKinds(fs []Finding) string {
	if len(fs) == 0 {
		return "none"
	}
	n := map[string]int{}
	var order []string
	for _, f := range fs {
		if n[f.Kind] == 0 {
			order = append(order, f.Kind)
		}
		n[f.Kind]++
	}
	out := ""
	for i, k := range order {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%d %s", n[k], k)
	}
	return out
}
