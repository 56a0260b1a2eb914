package journal

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"flashsale/sharding"
	"flashsale/writer/orderevent"
)

func goodFields() map[string]string {
	id := sharding.NewOrderID(42, 1, 2)
	now := time.Now().UnixMilli()
	return map[string]string{"t": "reserved", "o": id.String(), "s": "42", "i": "7", "u": "1001",
		"c": itoa(now), "x": itoa(now + 600000)}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Every field of an entry comes from Redis, another process: each bad one is
// refused with the field named, and a good one decodes to its event.
func TestEntryDecode(t *testing.T) {
	e := Entry{ID: "1-0", Fields: goodFields()}
	ev, err := e.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != orderevent.Reserved || ev.SaleID != 42 || ev.ItemID != 7 || ev.UserID != 1001 || !ev.At.Equal(ev.Created) {
		t.Fatalf("decoded %+v", ev)
	}
	pay := goodFields()
	pay["t"], pay["at"] = "pay", pay["c"]
	if ev, err := (&Entry{ID: "1-1", Fields: pay}).Decode(); err != nil || ev.Type != orderevent.Pay {
		t.Fatalf("pay: %+v %v", ev, err)
	}
	now := time.Now().UnixMilli()
	cases := []struct {
		name, field, value, want string
	}{
		{"unknown type", "t", "refund", "type"},
		{"order id", "o", "not-a-uuid", "order id"},
		{"sale not a number", "s", "x", "invalid syntax"},
		{"sale of another order", "s", "43", "sale 43"},
		{"item zero", "i", "0", "item 0"},
		{"user zero", "u", "0", "user 0"},
		{"user past int64", "u", "18446744073709551615", "user"},
		{"created zero", "c", "0", "created 0"},
		{"expires before created", "x", "1", "expires 1"},
		{"window longer than the writer takes", "x", itoa(now + 8*24*3600*1000), "expiresAt"},
		{"at not a number", "at", "soon", "at"},
		{"missing item", "i", "", "invalid syntax"},
	}
	for _, c := range cases {
		f := goodFields()
		f[c.field] = c.value
		_, err := (&Entry{ID: "9-9", Fields: f}).Decode()
		if !errors.Is(err, errEntry) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a malformed-entry error naming %q", c.name, err, c.want)
		}
	}
}

func TestIDTime(t *testing.T) {
	if tm, ok := IDTime("1700000000123-4"); !ok || tm.UnixMilli() != 1700000000123 {
		t.Fatalf("IDTime: %v %v", tm, ok)
	}
	for _, bad := range []string{"", "abc", "12x-1"} {
		if _, ok := IDTime(bad); ok {
			t.Errorf("IDTime(%q) accepted", bad)
		}
	}
}
