package orderevent

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"flashsale/sharding"
)

func sample() Event {
	now := time.UnixMilli(1764500000123).UTC()
	return Event{Type: Reserved, OrderID: sharding.NewOrderID(42, 7, 9), SaleID: 42, ItemID: 7,
		UserID: 1234567890123, Created: now, Expires: now.Add(10 * time.Minute), At: now}
}

func TestRoundTrip(t *testing.T) {
	for _, typ := range []Type{Reserved, Pay, Cancel} {
		e := sample()
		e.Type = typ
		b := AppendJSON(nil, &e)
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if got != e {
			t.Fatalf("round trip of %s:\n got %+v\nwant %+v", b, got, e)
		}
	}
	e := sample()
	if k := string(AppendKey(nil, &e)); k != "7" {
		t.Fatalf("key %q", k)
	}
}

func TestDecodeRejects(t *testing.T) {
	e := sample()
	good := string(AppendJSON(nil, &e))
	if _, err := Decode([]byte(good)); err != nil {
		t.Fatalf("sample %s: %v", good, err)
	}
	other := sharding.NewOrderID(43, 7, 9).String()
	const (
		created = `"createdAt":1764500000123`
		expires = `"expiresAt":1764500600123`
		at      = `"at":1764500000123`
	)
	// field is the member the error must name.
	cases := []struct{ name, field, in string }{
		{"not json", "", `{"v":1,`},
		{"empty", "", ``},
		{"array", "", `[1,2]`},
		{"version", "v", strings.Replace(good, `"v":1`, `"v":2`, 1)},
		{"no version", "v", strings.Replace(good, `"v":1,`, ``, 1)},
		{"type", "type", strings.Replace(good, `"reserved"`, `"refund"`, 1)},
		{"no type", "type", strings.Replace(good, `"type":"reserved",`, ``, 1)},
		{"type number", "type", strings.Replace(good, `"reserved"`, `1`, 1)},
		{"order id", "orderId", strings.Replace(good, e.OrderID.String(), "123e4567-e89b-12d3-a456-426614174000", 1)},
		{"no order id", "orderId", strings.Replace(good, `"orderId":"`+e.OrderID.String()+`",`, ``, 1)},
		{"other sale", "orderId", strings.Replace(good, e.OrderID.String(), other, 1)},
		{"sale id zero", "saleId", strings.Replace(good, `"saleId":42`, `"saleId":0`, 1)},
		{"sale id above 2^32-1", "saleId", strings.Replace(good, `"saleId":42`, `"saleId":4294967296`, 1)},
		{"no sale id", "saleId", strings.Replace(good, `"saleId":42,`, ``, 1)},
		{"item id negative", "itemId", strings.Replace(good, `"itemId":7`, `"itemId":-7`, 1)},
		{"item id zero", "itemId", strings.Replace(good, `"itemId":7`, `"itemId":0`, 1)},
		{"item id 2^63", "itemId", strings.Replace(good, `"itemId":7`, `"itemId":9223372036854775808`, 1)},
		{"item id fraction", "itemId", strings.Replace(good, `"itemId":7`, `"itemId":7.5`, 1)},
		{"no item id", "itemId", strings.Replace(good, `"itemId":7,`, ``, 1)},
		{"user id zero", "userId", strings.Replace(good, `"userId":1234567890123`, `"userId":0`, 1)},
		{"user id type", "userId", strings.Replace(good, `"userId":1234567890123`, `"userId":"x"`, 1)},
		{"user id 2^64-1", "userId", strings.Replace(good, `"userId":1234567890123`, `"userId":18446744073709551615`, 1)},
		{"user id 2^63", "userId", strings.Replace(good, `"userId":1234567890123`, `"userId":9223372036854775808`, 1)},
		{"user id 2^64", "userId", strings.Replace(good, `"userId":1234567890123`, `"userId":18446744073709551616`, 1)},
		{"user id negative", "userId", strings.Replace(good, `"userId":1234567890123`, `"userId":-1`, 1)},
		{"no user id", "userId", strings.Replace(good, `"userId":1234567890123,`, ``, 1)},
		{"no created", "createdAt", strings.Replace(good, created+`,`, ``, 1)},
		{"created zero", "createdAt", strings.Replace(good, created, `"createdAt":0`, 1)},
		{"created negative", "createdAt", strings.Replace(good, created, `"createdAt":-1`, 1)},
		{"created in 2019", "createdAt", strings.Replace(good, created, `"createdAt":1577836799999`, 1)},
		{"created in 2200", "createdAt", strings.Replace(good, created, `"createdAt":7258118400001`, 1)},
		{"created max int64", "createdAt", strings.Replace(good, created, `"createdAt":9223372036854775807`, 1)},
		{"created string", "createdAt", strings.Replace(good, created, `"createdAt":"1764500000123"`, 1)},
		{"no expires", "expiresAt", strings.Replace(good, `,`+expires, ``, 1)},
		{"expires max int64", "expiresAt", strings.Replace(good, expires, `"expiresAt":9223372036854775807`, 1)},
		{"expires zero", "expiresAt", strings.Replace(good, expires, `"expiresAt":0`, 1)},
		{"created 0, expires max int64", "createdAt", strings.Replace(strings.Replace(good, created, `"createdAt":0`, 1), expires, `"expiresAt":9223372036854775807`, 1)},
		{"reversed times", "expiresAt", strings.Replace(good, expires, `"expiresAt":1764499999999`, 1)},
		{"expires equals created", "expiresAt", strings.Replace(good, expires, `"expiresAt":1764500000123`, 1)},
		{"window over a week", "expiresAt", strings.Replace(good, expires, `"expiresAt":1765104800124`, 1)},
		{"no at", "at", strings.Replace(good, `,`+at, ``, 1)},
		{"at zero", "at", strings.Replace(good, at, `"at":0`, 1)},
		{"at of the zero time", "at", strings.Replace(good, at, `"at":-62135596800000`, 1)},
		{"at in 2200", "at", strings.Replace(good, at, `"at":7258118400001`, 1)},
		{"at string", "at", strings.Replace(good, at, `"at":"now"`, 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.in == good {
				t.Fatalf("case does not change the sample")
			}
			_, err := Decode([]byte(c.in))
			if err == nil {
				t.Fatalf("%s accepted", c.in)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			if !strings.Contains(err.Error(), c.field) {
				t.Fatalf("error %q does not name %s", err, c.field)
			}
		})
	}
}

func TestDecodeAcceptsTheEdges(t *testing.T) {
	e := sample()
	e.UserID, e.ItemID, e.SaleID = math.MaxInt64, math.MaxInt64, sharding.MaxSaleID
	e.OrderID = sharding.NewOrderID(sharding.MaxSaleID, 7, 9)
	e.Created = time.UnixMilli(MinUnixMilli).UTC()
	e.Expires = e.Created.Add(MaxPaymentWindow)
	e.At = time.UnixMilli(MaxUnixMilli).UTC()
	b := AppendJSON(nil, &e)
	got, err := Decode(b)
	if err != nil || got != e {
		t.Fatalf("Decode(%s) = %+v, %v; want %+v", b, got, err, e)
	}
	e.Expires = e.Created.Add(time.Millisecond)
	if _, err := Decode(AppendJSON(nil, &e)); err != nil {
		t.Fatalf("one-millisecond window: %v", err)
	}
	// Unknown members are ignored, so producers may add fields first.
	b = AppendJSON(nil, &e)
	b = append(b[:len(b)-1], `,"later":{"x":[1]}}`...)
	if _, err := Decode(b); err != nil {
		t.Fatalf("unknown member: %s: %v", b, err)
	}
}

func FuzzDecode(f *testing.F) {
	e := sample()
	f.Add(AppendJSON(nil, &e))
	f.Add([]byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Decode(AppendJSON(nil, &ev))
		if err != nil || again != ev {
			t.Fatalf("re-encoding %q: %+v %v", b, again, err)
		}
		window := ev.Expires.Sub(ev.Created)
		if ev.UserID > math.MaxInt64 || ev.ItemID <= 0 || window <= 0 || window > MaxPaymentWindow ||
			ev.Created.UnixMilli() < MinUnixMilli || ev.At.UnixMilli() > MaxUnixMilli {
			t.Fatalf("accepted %q: %+v", b, ev)
		}
	})
}
