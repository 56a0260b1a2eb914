package journal

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/orderevent"
)

func goodFields() map[string]string {
	id := sharding.NewOrderID(42, 1, 2)
	now := time.Now().UnixMilli()
	return map[string]string{"t": "reserved", "o": id.String(), "s": "42", "i": "7", "u": "1001",
		"c": itoa(now), "x": itoa(now + 600000)}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// An entry decodes through orderevent.FromFields (whose own tests check every
// field's range), and an error names the entry it came from.
func TestEntryDecode(t *testing.T) {
	e := Entry{ID: "1-0", Fields: goodFields()}
	ev, err := e.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != orderevent.Reserved || ev.SaleID != 42 || ev.ItemID != 7 || ev.UserID != 1001 || !ev.At.Equal(ev.Created) {
		t.Fatalf("decoded %+v", ev)
	}
	f := goodFields()
	f["s"] = "43"
	_, err = (&Entry{ID: "9-9", Fields: f}).Decode()
	if !errors.Is(err, orderevent.ErrMalformed) || !strings.Contains(err.Error(), "9-9") || !strings.Contains(err.Error(), "saleId") {
		t.Fatalf("got %v, want a malformed-event error naming entry 9-9 and saleId", err)
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
