package ops

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/ops/ledger"
	"flashsale/sharding/ops/reshard"
	"flashsale/sharding/ops/saleops"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/sale"
	"flashsale/writer/schema"
)

// TestActsAreRecorded: pause, resume and end write their act in
// sale_events for the closing report's timing; a reshard writes the units
// it moved. Without PostgreSQL the act still stands (the kill switch never
// waits on it) and the report of the command says it is unrecorded.
func TestActsAreRecorded(t *testing.T) {
	e := opstest.NewEnv(t)
	ctx := context.Background()
	s := e.NewSale(t, 2, 10)
	t.Cleanup(func() {
		_, _ = e.Pool.Exec(context.Background(), `DELETE FROM sale_events WHERE sale_id = $1`, s.ID)
	})
	for _, state := range []string{sale.StatePaused, ""} {
		if rep, err := saleops.SetSaleState(ctx, e.T, s.ID, state); err != nil || rep.Unrecorded != "" {
			t.Fatalf("%q: %+v %v", state, rep, err)
		}
	}
	if _, err := reshard.Reshard(ctx, e.T, s.ID, 3); err != nil {
		t.Fatal(err)
	}
	noDB := tool.NewTool(e.C, nil)
	rep, err := saleops.SetSaleState(ctx, noDB, s.ID, sale.StatePaused)
	if err != nil || !strings.Contains(rep.Unrecorded, "no PostgreSQL") || rep.Status != "PAUSED" {
		t.Fatalf("pause without PostgreSQL: %+v %v; want it paused, and unrecorded", rep, err)
	}
	var out bytes.Buffer
	if err := rep.Text(&out); err != nil || !strings.Contains(out.String(), "warning: in force, but not recorded for the sale report: no PostgreSQL") {
		t.Fatalf("text %q (%v)", out.String(), err)
	}
	evs, err := schema.SaleEvents(ctx, e.Pool, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ev := range evs {
		kinds = append(kinds, ev.Kind)
	}
	if strings.Join(kinds, ",") != "pause,resume,reshard" {
		t.Fatalf("acts %v, want pause, resume, reshard", kinds)
	}
	if d, err := ledger.ParseReshard(string(evs[2].Detail)); err != nil || d.From != 2 || d.To != 3 || d.Units[s.Items[0].ID] != 10 {
		t.Fatalf("reshard record %s (%v), want 2 -> 3 shards moving the 10 units", evs[2].Detail, err)
	}
}
