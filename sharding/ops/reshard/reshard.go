package reshard

import (
	"context"
	"fmt"
	"io"
	"sort"

	"flashsale/sharding"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

// ReshardReport says what a reshard did.
type ReshardReport struct {
	Sale          int64            `json:"sale"`
	From          int              `json:"from"`
	To            int              `json:"to"`
	Version       int64            `json:"version"`
	Units         map[int64]int64  `json:"units"`
	Buyers        int              `json:"buyers"`
	Orders        int              `json:"orders"`
	MovesFinished int              `json:"movesFinished"`
	Resumed       bool             `json:"resumed"`
	FrozenMillis  float64          `json:"frozenMs"`
	Placement     []tool.Placement `json:"placement"`
	// Unrecorded says why the reshard has no row in PostgreSQL's
	// sale_events (the closing ledger then lacks its units moved).
	Unrecorded string `json:"unrecorded,omitempty"`
}

// Reshard changes sale id to n shards placed over the live masters, keeping
// every unit and buyer (stock.Store.Reshard), and resumes a reshard that
// crashed. Purchases of the sale answer 503 while the old shards are frozen.
func Reshard(ctx context.Context, t *tool.Tool, id int64, n int) (*ReshardReport, error) {
	if n < 1 || n > sharding.MaxShards {
		return nil, tool.Usagef("reshard: --shards %d: want 1..%d", n, sharding.MaxShards)
	}
	if _, err := t.LoadSale(ctx, id); err != nil {
		return nil, err
	}
	top, err := stock.Topology(ctx, t.Redis)
	if err != nil {
		return nil, err
	}
	sale, r, err := t.Store.Reshard(ctx, id, n, top)
	if err != nil {
		return nil, fmt.Errorf("resharding sale %d to %d shards: %w", id, n, err)
	}
	rep := &ReshardReport{Sale: id, From: r.From, To: len(sale.Shards), Version: sale.Version, Units: r.Units,
		Buyers: r.Buyers, Orders: r.Orders, MovesFinished: r.MovesFinished, Resumed: r.Resumed,
		FrozenMillis: float64(r.Frozen.Microseconds()) / 1000}
	if rep.From != rep.To || len(rep.Units) > 0 {
		rep.Unrecorded = t.RecordAct(ctx, id, schema.EventReshard, schema.ReshardDetail{From: rep.From, To: rep.To, Units: rep.Units})
	}
	for i, tag := range sale.Shards {
		rep.Placement = append(rep.Placement, tool.Placement{Shard: i, Tag: tag, Slot: sharding.Slot([]byte("{" + tag + "}")), Master: top.MasterOfTag(tag)})
	}
	return rep, nil
}

// Text renders the reshard.
func (r *ReshardReport) Text(w io.Writer) error {
	if r.From == r.To && len(r.Units) == 0 {
		fmt.Fprintf(w, "sale %d already has %d shards: nothing to do\n", r.Sale, r.To)
		return nil
	}
	resumed := ""
	if r.Resumed {
		resumed = " (resumed a crashed reshard)"
	}
	fmt.Fprintf(w, "resharded sale %d: %d -> %d shards, version %d%s\n", r.Sale, r.From, r.To, r.Version, resumed)
	fmt.Fprintf(w, "buyers moved %d, order records moved %d, journaled moves finished first %d, purchases frozen %.1f ms\n",
		r.Buyers, r.Orders, r.MovesFinished, r.FrozenMillis)
	if r.Unrecorded != "" {
		fmt.Fprintf(w, "warning: not recorded for the sale report: %s\n", r.Unrecorded)
	}
	ids := make([]int64, 0, len(r.Units))
	for id := range r.Units {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	tb := tool.NewTable(w, "item", "units moved")
	for _, id := range ids {
		tb.Row(tool.Itoa(id), tool.Itoa(r.Units[id]))
	}
	if err := tb.Flush(); err != nil {
		return err
	}
	tb = tool.NewTable(w, "shard", "tag", "slot", "master")
	for _, p := range r.Placement {
		tb.Row(tool.Itoa(int64(p.Shard)), p.Tag, tool.Itoa(int64(p.Slot)), p.Master)
	}
	return tb.Flush()
}
