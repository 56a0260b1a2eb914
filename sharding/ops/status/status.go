package status

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/redis/rueidis"

	"flashsale/sharding"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

// StatusReport is one snapshot of a sale.
type StatusReport struct {
	Sale    int64               `json:"sale"`
	Name    string              `json:"name"`
	Version int64               `json:"version"`
	State   string              `json:"state"`
	At      time.Time           `json:"at"`
	Shards  []ShardStatus       `json:"shards"`
	Items   []ItemStatus        `json:"items"`
	Moves   []stock.PendingMove `json:"pendingMoves"`
	// Reshard is the sale's unfinished reshard, if any.
	Reshard *stock.PendingReshard `json:"reshard,omitempty"`
	// PostgreSQL is false when the tool has no database: Q, P and sold are then
	// unknown and drift is not computed.
	PostgreSQL bool `json:"postgresql"`
}

// ShardStatus is one shard of the sale.
type ShardStatus struct {
	Shard  int    `json:"shard"`
	Tag    string `json:"tag"`
	Master string `json:"master"`
	// Buyers is the number of buyer records on the shard: users whose home is
	// this shard and who hold an order in the sale (any item).
	Buyers int64 `json:"buyers"`
	// Units is the units left per item, in the order of StatusReport.Items.
	Units []int64 `json:"units"`
}

// ItemStatus is one item's totals.
type ItemStatus struct {
	Item     int64  `json:"item"`
	Name     string `json:"name"`
	Q        int64  `json:"q"`        // quantity (PostgreSQL)
	S        int64  `json:"s"`        // units on the Redis shards
	P        int64  `json:"p"`        // PENDING + PAID orders (PostgreSQL)
	Sold     int64  `json:"sold"`     // items.sold (PostgreSQL)
	InFlight int64  `json:"inFlight"` // units in journaled moves
	// Drift is Q - (S + P + InFlight): reservations on their way to the writer
	// show here for a moment during a sale; reconcile tells them apart.
	Drift   int64 `json:"drift"`
	SoldOut bool  `json:"soldOut"` // every shard is at 0 and no move is in flight
}

// Status takes one snapshot of sale id.
func Status(ctx context.Context, t *tool.Tool, id int64) (*StatusReport, error) {
	sale, err := t.LoadSale(ctx, id)
	if err != nil {
		return nil, err
	}
	top, err := stock.Topology(ctx, t.Redis)
	if err != nil {
		return nil, err
	}
	rep := &StatusReport{Sale: id, Name: sale.Name, Version: sale.Version, State: tool.SaleState(sale, time.Now()), At: time.Now().UTC()}
	hlen := make(rueidis.Commands, len(sale.Shards))
	for i, tag := range sale.Shards {
		hlen[i] = t.Redis.B().Hlen().Key(string(sharding.AppendBuyersKey(nil, tag))).Build()
	}
	for i, r := range t.Redis.DoMulti(ctx, hlen...) {
		n, err := r.AsInt64()
		if err != nil {
			return nil, fmt.Errorf("counting buyers of shard %d: %w", i, err)
		}
		rep.Shards = append(rep.Shards, ShardStatus{Shard: i, Tag: sale.Shards[i], Master: top.MasterOfTag(sale.Shards[i]), Buyers: n})
	}
	if rep.Moves, err = t.Store.PendingMoves(ctx, sale); err != nil {
		return nil, err
	}
	if rep.Reshard, err = t.Store.PendingReshard(ctx, id); err != nil {
		return nil, err
	}
	var totals map[int64]schema.ItemTotals
	if t.DB != nil {
		if totals, err = schema.SaleItemTotals(ctx, t.DB, id); err != nil {
			return nil, err
		}
		rep.PostgreSQL = true
	}
	for _, it := range sale.Items {
		rem, err := t.Store.Remaining(ctx, sale, it.ID)
		if err != nil {
			return nil, err
		}
		is := ItemStatus{Item: it.ID, Name: it.Name, Q: it.Quantity, S: tool.Sum(rem)}
		for i, r := range rem {
			rep.Shards[i].Units = append(rep.Shards[i].Units, r)
		}
		for _, m := range rep.Moves {
			if m.ItemID == it.ID {
				is.InFlight += m.Units
			}
		}
		if tot, ok := totals[it.ID]; ok {
			is.Q, is.P, is.Sold = tot.Quantity, tot.Active, tot.Sold
			is.Drift = is.Q - (is.S + is.P + is.InFlight)
		}
		is.SoldOut = is.S == 0 && is.InFlight == 0
		rep.Items = append(rep.Items, is)
	}
	if rep.State == "ACTIVE" && allSoldOut(rep.Items) {
		rep.State = "SOLD_OUT"
	}
	return rep, nil
}

func allSoldOut(items []ItemStatus) bool {
	for _, it := range items {
		if !it.SoldOut {
			return false
		}
	}
	return len(items) > 0
}

// Watch calls Status every interval and renders each snapshot with render,
// until ctx ends or, with count > 0, count snapshots were rendered.
func Watch(ctx context.Context, t *tool.Tool, id int64, interval time.Duration, count int, render func(*StatusReport) error) error {
	if interval <= 0 {
		interval = time.Second
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for n := 0; count <= 0 || n < count; n++ {
		if n > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
		}
		rep, err := Status(ctx, t, id)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if err := render(rep); err != nil {
			return err
		}
	}
	return nil
}

// Text renders the snapshot.
func (r *StatusReport) Text(w io.Writer) error {
	fmt.Fprintf(w, "sale %d %q  version %d  %s  at %s\n\n", r.Sale, r.Name, r.Version, r.State, r.At.Format(time.RFC3339))
	head := []string{"shard", "tag", "master", "buyers"}
	for _, it := range r.Items {
		head = append(head, fmt.Sprintf("item %d", it.Item))
	}
	tb := tool.NewTable(w, head...)
	for _, s := range r.Shards {
		row := []string{tool.Itoa(int64(s.Shard)), s.Tag, s.Master, tool.Itoa(s.Buyers)}
		for _, u := range s.Units {
			row = append(row, tool.Itoa(u))
		}
		tb.Row(row...)
	}
	if err := tb.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tb = tool.NewTable(w, "item", "Q", "S (redis)", "P (pg)", "sold", "in moves", "Q-(S+P+M)", "state")
	for _, it := range r.Items {
		state := "selling"
		if it.SoldOut {
			state = "SOLD OUT"
		}
		if r.PostgreSQL {
			tb.Row(tool.Itoa(it.Item), tool.Itoa(it.Q), tool.Itoa(it.S), tool.Itoa(it.P), tool.Itoa(it.Sold), tool.Itoa(it.InFlight), tool.Itoa(it.Drift), state)
		} else {
			tb.Row(tool.Itoa(it.Item), tool.Itoa(it.Q), tool.Itoa(it.S), "-", "-", tool.Itoa(it.InFlight), "-", state)
		}
	}
	if err := tb.Flush(); err != nil {
		return err
	}
	if !r.PostgreSQL {
		fmt.Fprintln(w, "(no PostgreSQL: Q is the sale description's quantity; P, sold and drift unknown)")
	}
	if rs := r.Reshard; rs != nil {
		fmt.Fprintf(w, "reshard unfinished: %d -> %d shards, phase %s", rs.From, rs.To, rs.Phase)
		if rs.Phase == "copying" {
			fmt.Fprint(w, " (once its old shards are fenced, purchases answer 503 until it ends)")
		}
		fmt.Fprintf(w, "; if no reshard is running, finish it: flashctl reshard --sale %d --shards %d\n", r.Sale, rs.To)
	}
	if len(r.Moves) > 0 {
		fmt.Fprintln(w, "\npending moves:")
		tb = tool.NewTable(w, "move", "item", "units", "from", "to")
		for _, m := range r.Moves {
			tb.Row(m.ID, tool.Itoa(m.ItemID), tool.Itoa(m.Units), m.From, m.To)
		}
		return tb.Flush()
	}
	fmt.Fprintln(w, "pending moves: none")
	return nil
}
