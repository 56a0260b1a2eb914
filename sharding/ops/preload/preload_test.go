package preload_test

import (
	"flashsale/sharding/draw/beacon"
	"testing"

	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/ops/preload"
	"flashsale/sharding/ops/saleops"
	"flashsale/sharding/sale"
)

// TestForcedPreloadKeepsTheFrontDoor: a forced preload rebuilds the sale
// from PostgreSQL; the live description's access and draw stay.
func TestForcedPreloadKeepsTheFrontDoor(t *testing.T) {
	cur, err := saleops.ParseSale([]byte(opstest.QueuePresaleYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	saleops.NewDraw(cur, beacon.Dev)
	cur.Shards, cur.Version = []string{"s42:a", "s42:b"}, 3
	fromPG := &sale.Sale{ID: 42, Name: cur.Name, StartsAt: cur.StartsAt, EndsAt: cur.EndsAt, Items: cur.Items}
	if err := preload.PlacePreload(fromPG, cur, 2, nil); err != nil {
		t.Fatal(err)
	}
	if err := fromPG.Validate(); err != nil {
		t.Fatal(err)
	}
	if fromPG.Mode() != sale.AccessQueue || fromPG.WaitingRoom != cur.WaitingRoom || fromPG.Draw != cur.Draw || fromPG.Presale != cur.Presale || !fromPG.TicketRequired {
		t.Fatalf("preloaded %+v, want the live sale's access and draw", fromPG)
	}
}
