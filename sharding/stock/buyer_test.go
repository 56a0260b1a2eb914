package stock_test

import (
	"strings"
	"testing"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/stock"
)

// TestBuyerRecordIsValidated: a buyer record comes from Redis, another
// process. A bare order id (what the ops tool restores) names an order and
// carries nothing; one that carries its order (lua/order.lua) decodes to
// it; anything else is refused with an error, never read as an order.
func TestBuyerRecordIsValidated(t *testing.T) {
	id := sharding.NewOrderID(7, 1, 2)
	bare, err := stock.ParseBuyer(id.String())
	if err != nil || bare.Lazy || bare.OrderID != id {
		t.Fatalf("bare order id: %+v %v", bare, err)
	}
	good := id.String() + "|3|1765000000000|1765000600000|1765000000001-4|99|1765000000000|1765086400000|"
	b, err := stock.ParseBuyer(good)
	if err != nil || !b.Lazy || b.OrderID != id || b.ItemID != 3 || b.Journal != "1765000000001-4" || b.Attempt != "99" ||
		b.Persisted || !b.Created.Equal(time.UnixMilli(1765000000000)) || !b.Expires.Equal(time.UnixMilli(1765000600000)) ||
		!b.Deadline.Equal(time.UnixMilli(1765086400000)) {
		t.Fatalf("lazy record: %+v %v", b, err)
	}
	if rec := b.Record(42); rec.UserID != 42 || rec.ItemID != 3 || rec.Status != stock.StatusPending || rec.Journal != b.Journal || rec.Persisted {
		t.Fatalf("its order: %+v", rec)
	}
	if b, err := stock.ParseBuyer(good + "1"); err != nil || !b.Persisted || !b.Record(42).Persisted {
		t.Fatalf("marked persisted: %+v %v", b, err)
	}
	field := func(i int, v string) string {
		f := strings.Split(good, "|")
		f[i] = v
		return strings.Join(f, "|")
	}
	for _, tc := range []struct{ name, v string }{
		{"empty", ""},
		{"not an order id", "order-1"},
		{"order id of another version", strings.Replace(id.String(), "-8", "-4", 1)},
		{"too few fields", id.String() + "|3|1765000000000"},
		{"too many fields", good + "|x"},
		{"item not a number", field(1, "x")},
		{"item zero", field(1, "0")},
		{"created not a number", field(2, "soon")},
		{"expires before created", field(3, "1")},
		{"journal id malformed", field(4, "17650-x")},
		{"journal id missing", field(4, "")},
		{"attempt empty", field(5, "")},
		{"attempt created not a number", field(6, "x")},
		{"deadline not a number", field(7, "never")},
		{"deadline zero", field(7, "0")},
		{"persisted neither 1 nor empty", field(8, "yes")},
	} {
		if b, err := stock.ParseBuyer(tc.v); err == nil {
			t.Errorf("%s: %q decoded to %+v, want an error", tc.name, tc.v, b)
		}
	}
}
