package orderevent

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"flashsale/sharding"
)

func goodFields() map[string]string {
	id := sharding.NewOrderID(42, 1, 2)
	now := time.Now().UnixMilli()
	return map[string]string{FieldType: "reserved", FieldOrder: id.String(), FieldSale: "42", FieldItem: "7",
		FieldUser: "1001", FieldCreated: itoa(now), FieldExpires: itoa(now + 600000)}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Every field of a journal entry comes from Redis, another process: each bad
// one is refused with the field named, and a good one decodes to its event.
func TestFromFields(t *testing.T) {
	ev, err := FromFields(goodFields())
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != Reserved || ev.SaleID != 42 || ev.ItemID != 7 || ev.UserID != 1001 || !ev.At.Equal(ev.Created) {
		t.Fatalf("decoded %+v", ev)
	}
	pay := goodFields()
	pay[FieldType], pay[FieldAt] = "pay", itoa(time.Now().UnixMilli()+5)
	if ev, err := FromFields(pay); err != nil || ev.Type != Pay || ev.At.Equal(ev.Created) {
		t.Fatalf("pay: %+v %v", ev, err)
	}
	// The second version of the reservation's entry, which the reserve
	// scripts write: type JournalReserved, the sale from the order id.
	v2 := goodFields()
	v2[FieldType] = JournalReserved
	delete(v2, FieldSale)
	if ev, err := FromFields(v2); err != nil || ev.Type != Reserved || ev.SaleID != 42 {
		t.Fatalf("second version: %+v %v", ev, err)
	}
	v2[FieldSale] = "43" // a sale field there still must name the order's sale
	if _, err := FromFields(v2); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "saleId says 43") {
		t.Fatalf("second version, another sale: %v", err)
	}
	// Only a reservation may leave the sale out.
	noSale := goodFields()
	noSale[FieldType] = "pay"
	delete(noSale, FieldSale)
	if _, err := FromFields(noSale); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "saleId (s)") {
		t.Fatalf("pay without a sale: %v", err)
	}
	old := goodFields()
	delete(old, FieldSale)
	if _, err := FromFields(old); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "saleId (s)") {
		t.Fatalf("first version without a sale: %v", err)
	}
	now := time.Now().UnixMilli()
	cases := []struct {
		name, field, value, want string
	}{
		{"unknown type", FieldType, "refund", "type"},
		{"order id", FieldOrder, "not-a-uuid", "orderId"},
		{"sale not a number", FieldSale, "x", "saleId (s)"},
		{"sale of another order", FieldSale, "43", "saleId says 43"},
		{"sale zero", FieldSale, "0", "saleId 0"},
		{"item zero", FieldItem, "0", "itemId 0"},
		{"item past int64", FieldItem, "9223372036854775808", "itemId (i)"},
		{"user zero", FieldUser, "0", "userId 0"},
		{"user negative", FieldUser, "-1", "userId (u)"},
		{"user past int64", FieldUser, "18446744073709551615", "userId"},
		{"created zero", FieldCreated, "0", "createdAt 0"},
		{"expires before created", FieldExpires, "1", "expiresAt 1"},
		{"missing expires", FieldExpires, "", "expiresAt (x)"},
		{"window longer than the writer takes", FieldExpires, itoa(now + 8*24*3600*1000), "expiresAt"},
		{"at not a number", FieldAt, "soon", "at (at)"},
		{"at in 2200", FieldAt, "7258118400001", "at 7258118400001"},
		{"missing item", FieldItem, "", "itemId (i)"},
	}
	for _, c := range cases {
		f := goodFields()
		f[c.field] = c.value
		_, err := FromFields(f)
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a malformed-event error naming %q", c.name, err, c.want)
		}
	}
}

// A journal entry and its Kafka record are one event: FromFields of the
// fields the scripts write and Decode of AppendJSON agree.
func TestFieldsAndJSONAgree(t *testing.T) {
	f := goodFields()
	f[FieldType], f[FieldAt] = "cancel", f[FieldCreated]
	ev, err := FromFields(f)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(AppendJSON(nil, &ev))
	if err != nil || back != ev {
		t.Fatalf("Decode(AppendJSON(%+v)) = %+v, %v", ev, back, err)
	}
}

// TestPosition: the relay's journal header round-trips, and a malformed one
// (from another process) is refused, so the writer marks its order by
// itself instead of raising a watermark it cannot trust.
func TestPosition(t *testing.T) {
	for _, p := range []Position{{Shard: "s7:1:0", Entry: "1765000000000-3"}, // an older relay's
		{Shard: "s7:1:0", Entry: "1765000000000-3", Prev: NoPrev},
		{Shard: "s7:1:0", Entry: "1765000000000-3", Prev: "1765000000000-2"}} {
		got, ok := ParsePosition(AppendPosition(nil, p))
		if !ok || got != p {
			t.Fatalf("round trip of %+v: %+v %v", p, got, ok)
		}
	}
	for _, v := range []string{"", "s7:1:0", "s7:1:0 ", " 1-1", "s7 1:0 1-1", "{s7} 1-1", "s7:1:0 1-x", "s7:1:0 1765000000000",
		"s7:1:0 5-1 ", "s7:1:0 5-1 x", "s7:1:0 5-1 5-1", "s7:1:0 5-1 6-0", "s7:1:0 5-1 4-0 3-0"} {
		if p, ok := ParsePosition([]byte(v)); ok {
			t.Errorf("ParsePosition(%q) = %+v, want refused", v, p)
		}
	}
}
