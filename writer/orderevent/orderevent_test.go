package orderevent

import (
	"errors"
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
	other := sharding.NewOrderID(43, 7, 9).String()
	cases := map[string]string{
		"not json":       `{"v":1,`,
		"empty":          ``,
		"array":          `[1,2]`,
		"version":        strings.Replace(good, `"v":1`, `"v":2`, 1),
		"no version":     strings.Replace(good, `"v":1,`, ``, 1),
		"type":           strings.Replace(good, `"reserved"`, `"refund"`, 1),
		"order id":       strings.Replace(good, e.OrderID.String(), "123e4567-e89b-12d3-a456-426614174000", 1),
		"other sale":     strings.Replace(good, e.OrderID.String(), other, 1),
		"sale id":        strings.Replace(good, `"saleId":42`, `"saleId":0`, 1),
		"item id":        strings.Replace(good, `"itemId":7`, `"itemId":-7`, 1),
		"user id":        strings.Replace(good, `"userId":1234567890123`, `"userId":0`, 1),
		"user id type":   strings.Replace(good, `"userId":1234567890123`, `"userId":"x"`, 1),
		"no expires":     strings.Replace(good, `,"expiresAt":1764500600123`, ``, 1),
		"reversed times": strings.Replace(good, `"expiresAt":1764500600123`, `"expiresAt":1`, 1),
	}
	for name, in := range cases {
		_, err := Decode([]byte(in))
		if err == nil {
			t.Errorf("%s: %s accepted", name, in)
			continue
		}
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: error %v does not wrap ErrMalformed", name, err)
		}
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
		if err != nil || again.OrderID != ev.OrderID || again.Type != ev.Type || again.UserID != ev.UserID {
			t.Fatalf("re-encoding %q: %+v %v", b, again, err)
		}
	})
}
