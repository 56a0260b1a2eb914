package ledger

import (
	"fmt"
	"io"
	"strings"

	"flashsale/sharding/ops/tool"
)

// ledgerText renders the ledger; its last line is the verdict.
func (r *SaleReport) ledgerText(w io.Writer) error {
	l := r.Ledger
	fmt.Fprintln(w, "\nunit ledger (PostgreSQL orders and history, Redis stock per shard, journals and moves, the writers' lag)")
	tb := tool.NewTable(w, "item", "quantity", "paid", "pending", "unsold", "in flight", "balance")
	for _, it := range append(append([]ItemLedger{}, l.Items...), l.Total) {
		name := tool.Itoa(it.Item)
		if it.Item == 0 {
			name = "all"
		}
		tb.Row(name, tool.Itoa(it.Q), tool.Itoa(it.Paid), tool.Itoa(it.Pending), tool.Itoa(it.Unsold), tool.Itoa(it.InFlight.Units()), tool.Itoa(it.Balance))
	}
	if err := tb.Flush(); err != nil {
		return err
	}
	if f := l.Total.InFlight; f.Units() > 0 {
		fmt.Fprintf(w, "  in flight: %d in moves, %d hand-offs, %d in Kafka, %d returns on their way\n", f.Moves, f.HandOffs, f.Kafka, f.Returns)
	}
	fmt.Fprintln(w, "flows:")
	for _, it := range l.Items {
		fmt.Fprintf(w, "  item %d: %s\n", it.Item, it.Flows.text())
	}
	if err := discrepanciesText(w, l.Discrepancies); err != nil {
		return err
	}
	fmt.Fprintf(w, "ledger hash %s\n", r.Hash)
	t := l.Total
	if r.Balanced {
		_, err := fmt.Fprintf(w, "LEDGER BALANCED: every unit of sale %d accounted for: quantity %d = paid %d + pending %d + unsold %d + in flight %d\n",
			r.Sale, t.Q, t.Paid, t.Pending, t.Unsold, t.InFlight.Units())
		return err
	}
	_, err := fmt.Fprintf(w, "LEDGER NOT BALANCED: %d discrepancies in sale %d (quantity %d, paid %d + pending %d + unsold %d + in flight %d)\n",
		len(l.Discrepancies), r.Sale, t.Q, t.Paid, t.Pending, t.Unsold, t.InFlight.Units())
	return err
}

// text is one item's flows on one line.
func (f *Flows) text() string {
	parts := []string{fmt.Sprintf("reserved %d", f.Reserved), "expired " + f.Expired.Text(), "cancelled " + f.Cancelled.Text()}
	for _, x := range f.Failed {
		fate := "unit kept"
		if x.UnitReturned {
			fate = "unit returned"
		}
		parts = append(parts, fmt.Sprintf("failed %d (%s; %s)", x.Orders, x.Reason, fate))
	}
	parts = append(parts, "ghosts reclaimed "+f.Ghosts.Text(),
		fmt.Sprintf("moved by reshards %d (%d reshards)", f.MovedByReshards, f.Reshards), fmt.Sprintf("sold again %d", f.SoldAgain))
	return strings.Join(parts, "; ")
}

// Text is the orders, with how many returned while some are on their way.
func (r Return) Text() string {
	if r.Pending == 0 {
		return tool.Itoa(r.Orders)
	}
	return fmt.Sprintf("%d (%d returned, %d on their way)", r.Orders, r.Returned, r.Pending)
}

// discrepanciesText lists the discrepancies, tool.MaxRows of a kind (--json has
// them all).
func discrepanciesText(w io.Writer, ds []Discrepancy) error {
	if len(ds) == 0 {
		fmt.Fprintln(w, "discrepancies: none")
		return nil
	}
	fmt.Fprintf(w, "discrepancies: %d\n", len(ds))
	tb := tool.NewTable(w, "  kind", "item", "units", "orders", "detail")
	shown := map[string]int{}
	for _, d := range ds {
		if shown[d.Kind]++; shown[d.Kind] > tool.MaxRows {
			continue
		}
		orders := strings.Join(d.Orders, ",")
		if orders == "" {
			orders = "-"
		}
		tb.Row("  "+d.Kind, tool.Itoa(d.Item), tool.Itoa(d.Units), orders, d.Detail)
	}
	if err := tb.Flush(); err != nil {
		return err
	}
	tool.MoreRows(w, shown)
	return nil
}
