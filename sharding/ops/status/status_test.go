package status_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"flashsale/deploy/testenv"
	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/ops/reshard"
	"flashsale/sharding/ops/status"
	"flashsale/sharding/stock"
)

// TestStatusShowsAnUnfinishedReshard: a reshard that stopped (here at the
// drop of the old shards, its user refused DEL) shows in status, with the
// command that finishes it, until that command has run.
func TestStatusShowsAnUnfinishedReshard(t *testing.T) {
	e := opstest.NewEnv(t)
	ctx := context.Background()
	sale := e.NewSale(t, 2, 100)
	top, err := stock.Topology(ctx, e.T.Redis)
	if err != nil {
		t.Fatal(err)
	}
	user := testenv.NewRedisUser(t, "~*", "+@all", "-del")
	if _, _, err := stock.New(user.Client()).Reshard(ctx, sale.ID, 8, top); err == nil {
		t.Fatal("a reshard that may not DEL finished")
	}
	rep, err := status.Status(ctx, e.T, sale.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rs := rep.Reshard; rs == nil || rs.From != 2 || rs.To != 8 || rs.Phase != "published" {
		t.Fatalf("status reshard %+v, want 2 -> 8 published", rep.Reshard)
	}
	var out strings.Builder
	if err := rep.Text(&out); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("flashctl reshard --sale %d --shards 8", sale.ID); !strings.Contains(out.String(), "reshard unfinished: 2 -> 8") || !strings.Contains(out.String(), want) {
		t.Fatalf("status text does not name the unfinished reshard and %q:\n%s", want, out.String())
	}
	if _, err := reshard.Reshard(ctx, e.T, sale.ID, 8); err != nil {
		t.Fatal(err)
	}
	if rep, err = status.Status(ctx, e.T, sale.ID); err != nil || rep.Reshard != nil || len(rep.Shards) != 8 {
		t.Fatalf("after finishing: reshard %+v, %d shards, %v", rep.Reshard, len(rep.Shards), err)
	}
	out.Reset()
	_ = rep.Text(&out)
	if strings.Contains(out.String(), "reshard unfinished") {
		t.Fatalf("status still names a reshard:\n%s", out.String())
	}
}
