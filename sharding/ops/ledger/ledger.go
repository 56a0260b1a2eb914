package ledger

import (
	"cmp"
	"fmt"
	"slices"
)

// Ledger is the unit ledger of a sale: per item, where every unit of its
// quantity is, and the flows that put it there. It holds counts only, no
// clock reading, so the same settled sale gives the same Ledger and the same
// hash (SaleReport.Hash). It balances when every item's Balance is 0 and
// Discrepancies is empty.
type Ledger struct {
	Sale          int64         `json:"sale"`
	Items         []ItemLedger  `json:"items"`
	Total         ItemLedger    `json:"total"` // the items summed (Item 0)
	Discrepancies []Discrepancy `json:"discrepancies"`
}

// ItemLedger is one item's units: Q = Paid + Pending + Unsold + InFlight.
type ItemLedger struct {
	Item    int64  `json:"item"`
	Name    string `json:"name,omitempty"`
	Q       int64  `json:"quantity"` // items.quantity (PostgreSQL)
	Paid    int64  `json:"paid"`     // PAID orders (PostgreSQL)
	Pending int64  `json:"pending"`  // PENDING orders (PostgreSQL)
	Unsold  int64  `json:"unsold"`   // S: units on the item's Redis shards
	// UnsoldByShard is Unsold per shard, in the sale's shard order.
	UnsoldByShard []int64  `json:"unsoldByShard,omitempty"`
	InFlight      InFlight `json:"inFlight"`
	// Balance is Q - (Paid + Pending + Unsold + InFlight.Units()): 0 when
	// every unit is accounted for; above 0 units are missing, below 0 more
	// exist than the quantity.
	Balance int64 `json:"balance"`
	Flows   Flows `json:"flows"`
}

// InFlight are units on their way between two durable places.
type InFlight struct {
	// Moves: units journaled in moves between shards (borrows, a reshard).
	Moves int64 `json:"moves"`
	// HandOffs: reservations not in PostgreSQL yet, whose journal entry is
	// still in the shard's journal or that are younger than the grace.
	HandOffs int64 `json:"handOffs"`
	// Kafka: reservations whose journal entry is gone and that PostgreSQL
	// lacks while the writers' consumer group has lag (their event may wait
	// in Kafka).
	Kafka int64 `json:"kafka"`
	// Returns: units of orders PostgreSQL ended (expired, cancelled, failed
	// with the unit returned) whose outbox row has not reached Redis yet.
	Returns int64 `json:"returns"`
}

// Units is the sum of the in-flight units.
func (f InFlight) Units() int64 { return f.Moves + f.HandOffs + f.Kafka + f.Returns }

// Flows explain an item's ledger: what reservations, returns and moves did.
type Flows struct {
	// Reserved: orders of the item in PostgreSQL, whatever their status
	// (every 202 that reached it, and the ghosts the sweep recorded).
	Reserved  int64  `json:"reserved"`
	Expired   Return `json:"expired"`
	Cancelled Return `json:"cancelled"`
	// Failed: FAILED orders by reason, each with whether its unit goes back.
	Failed []Failure `json:"failed"`
	// Ghosts: reservations the writer's sweep reclaimed (also in Failed).
	Ghosts Return `json:"ghosts"`
	// MovedByReshards: units a reshard moved to a new layout (flashctl's
	// record in sale_events), over Reshards reshards.
	MovedByReshards int64 `json:"movedByReshards"`
	Reshards        int64 `json:"reshards"`
	// SoldAgain: reservations beyond the quantity (Reserved + reservations
	// in flight - Q, at least 0): each took a unit an expiry, a cancel or a
	// failure had given back.
	SoldAgain int64 `json:"soldAgain"`
}

// Return counts orders whose unit goes back to stock: Returned once Redis
// applied their outbox row, Pending before.
type Return struct {
	Orders   int64 `json:"orders"`
	Returned int64 `json:"returned"`
	Pending  int64 `json:"pending"`
}

// Failure is the FAILED orders of one reason.
type Failure struct {
	Reason string `json:"reason"`
	Orders int64  `json:"orders"`
	// UnitReturned: the reason gives the unit back (the user's second active
	// order, a ghost); otherwise it is kept (sold out in PostgreSQL, an
	// unknown item: Redis let through a unit PostgreSQL never had).
	UnitReturned bool `json:"unitReturned"`
}

// Discrepancy is one thing that does not add up, with the orders behind it
// (none for units no order accounts for).
type Discrepancy struct {
	Kind   string   `json:"kind"`
	Item   int64    `json:"item,omitempty"`
	Units  int64    `json:"units,omitempty"`
	Orders []string `json:"orders,omitempty"` // sorted
	Detail string   `json:"detail"`
}

// Kinds of discrepancy the ledger adds to reconcile's findings (Kind*).
const (
	// KindUnbalanced: Q - (paid + pending + unsold + in flight) is not 0.
	KindUnbalanced = "unbalanced"
	// KindOrderMissing: the order's history is in PostgreSQL, its row is
	// not (deleted by hand, or lost).
	KindOrderMissing = "order-missing"
	// KindHistoryMissing: an order row with no history (written by
	// something other than the writer, or before migration 00002).
	KindHistoryMissing = "history-missing"
	// KindStatusMismatch: the order's status differs from the last status
	// its history recorded (changed by hand).
	KindStatusMismatch = "status-not-in-history"
	// KindSoldCount: items.sold differs from the PENDING and PAID orders.
	KindSoldCount = "sold-count"
	// KindReturnNotHeld: an ended order whose outbox row Redis applied, yet
	// Redis still holds its unit.
	KindReturnNotHeld = "return-applied-unit-still-held"
)

// Balanced reports whether every unit is accounted for.
func (l *Ledger) Balanced() bool {
	if len(l.Discrepancies) > 0 {
		return false
	}
	for _, it := range l.Items {
		if it.Balance != 0 {
			return false
		}
	}
	return true
}

// finish computes each item's balance and sold-again, adds an unbalanced
// discrepancy per item that does not balance, sums the total and sorts the
// discrepancies (kind, item, first order) so that equal ledgers are equal
// byte for byte.
func (l *Ledger) finish() {
	l.Total = ItemLedger{Flows: Flows{Failed: []Failure{}}}
	for i := range l.Items {
		it := &l.Items[i]
		it.Balance = it.Q - (it.Paid + it.Pending + it.Unsold + it.InFlight.Units())
		it.Flows.SoldAgain = max(0, it.Flows.Reserved+it.InFlight.HandOffs+it.InFlight.Kafka-it.Q)
		if it.Balance != 0 {
			l.Discrepancies = append(l.Discrepancies, Discrepancy{Kind: KindUnbalanced, Item: it.Item, Units: it.Balance,
				Detail: fmt.Sprintf("Q %d - (paid %d + pending %d + unsold %d [per shard %s] + in flight %d) = %d: %s", it.Q, it.Paid, it.Pending,
					it.Unsold, shardsText(it.UnsoldByShard), it.InFlight.Units(), it.Balance, unbalancedWhy(it.Balance))})
		}
		l.Total.add(it)
	}
	for i := range l.Discrepancies {
		slices.Sort(l.Discrepancies[i].Orders)
	}
	slices.SortFunc(l.Discrepancies, func(a, b Discrepancy) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Item, b.Item),
			cmp.Compare(first(a.Orders), first(b.Orders)), cmp.Compare(a.Detail, b.Detail))
	})
}

func unbalancedWhy(b int64) string {
	if b > 0 {
		return "units missing (taken from a shard outside the scripts, or an order's row gone)"
	}
	return "more units than the quantity (an oversell in the making: stock added outside the scripts, a double return)"
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// add adds it's units and flows to t.
func (t *ItemLedger) add(it *ItemLedger) {
	t.Q, t.Paid, t.Pending, t.Unsold, t.Balance = t.Q+it.Q, t.Paid+it.Paid, t.Pending+it.Pending, t.Unsold+it.Unsold, t.Balance+it.Balance
	t.InFlight = InFlight{t.InFlight.Moves + it.InFlight.Moves, t.InFlight.HandOffs + it.InFlight.HandOffs,
		t.InFlight.Kafka + it.InFlight.Kafka, t.InFlight.Returns + it.InFlight.Returns}
	f, g := &t.Flows, &it.Flows
	f.Reserved, f.MovedByReshards, f.SoldAgain = f.Reserved+g.Reserved, f.MovedByReshards+g.MovedByReshards, f.SoldAgain+g.SoldAgain
	f.Reshards = max(f.Reshards, g.Reshards)
	f.Expired, f.Cancelled, f.Ghosts = f.Expired.plus(g.Expired), f.Cancelled.plus(g.Cancelled), f.Ghosts.plus(g.Ghosts)
	for _, x := range g.Failed {
		k := slices.IndexFunc(f.Failed, func(y Failure) bool { return y.Reason == x.Reason })
		if k < 0 {
			f.Failed = append(f.Failed, x)
			continue
		}
		f.Failed[k].Orders += x.Orders
	}
	slices.SortFunc(f.Failed, func(a, b Failure) int { return cmp.Compare(a.Reason, b.Reason) })
}

func (r Return) plus(o Return) Return {
	return Return{r.Orders + o.Orders, r.Returned + o.Returned, r.Pending + o.Pending}
}
