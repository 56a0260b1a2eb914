package obs

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// ForgetSale drops the series of one sale and its items and no other's.
func TestForgetSaleDropsItsSeries(t *testing.T) {
	m := New()
	for _, s := range []int64{1, 2} {
		m.Sale(s, true, false)
		m.Stock(s, s*10, []string{"a", "b"}, []int64{3, 4})
		m.SoldOut(s*10, false)
	}
	names := []string{"flashsale_gateway_stock_units", "flashsale_gateway_sale_selling", "flashsale_gateway_sale_paused", "flashsale_gateway_soldout"}
	if n, err := testutil.GatherAndCount(m.Registry, names...); err != nil || n != 10 {
		t.Fatalf("before: %d series (%v), want 10", n, err)
	}
	m.ForgetSale(1, []int64{10})
	if n, err := testutil.GatherAndCount(m.Registry, names...); err != nil || n != 5 {
		t.Fatalf("after: %d series (%v), want sale 2's 5", n, err)
	}
	want := `
# HELP flashsale_gateway_soldout 1 when the item's local sold-out flag is set.
# TYPE flashsale_gateway_soldout gauge
flashsale_gateway_soldout{item="20"} 0
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "flashsale_gateway_soldout"); err != nil {
		t.Fatal(err)
	}
}

// A reshard's new shards replace the old ones' stock gauges (their stock
// moved): no phantom units for the alerts to sum.
func TestStockGaugesFollowAReshard(t *testing.T) {
	m := New()
	m.Stock(1, 10, []string{"a", "b"}, []int64{3, 4})
	m.Stock(1, 10, []string{"a", "b"}, []int64{2, 4})
	m.Stock(1, 10, []string{"c", "d", "e"}, []int64{2, 2, 2})
	want := `
# HELP flashsale_gateway_stock_units Units left on one shard of an item, as of the catalog's last reading (every refresh, 1 s; flagged items every poll, 200 ms).
# TYPE flashsale_gateway_stock_units gauge
flashsale_gateway_stock_units{item="10",sale="1",shard="c"} 2
flashsale_gateway_stock_units{item="10",sale="1",shard="d"} 2
flashsale_gateway_stock_units{item="10",sale="1",shard="e"} 2
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "flashsale_gateway_stock_units"); err != nil {
		t.Fatal(err)
	}
}
