package stock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/stock"
)

// A drift reading the writer publishes is read back by the gateways as it
// was; a sale with none is absent; a reading another process mangled is an
// error naming the sale and the field, and the other sales still come back.
func TestDriftPublishedAndRead(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	good, bad, none := randomSaleID(), randomSaleID(), randomSaleID()
	t.Cleanup(func() {
		for _, id := range []int64{good, bad} {
			c.Do(context.Background(), c.B().Del().Key(sharding.DriftKey(id)).Build())
		}
	})
	at := time.UnixMilli(time.Now().UnixMilli())
	if err := s.PublishDrift(ctx, good, stock.DriftReading{At: at, Items: map[int64]int64{good*10 + 1: 0, good*10 + 2: -2}}); err != nil {
		t.Fatal(err)
	}
	rs, err := s.ReadDrifts(ctx, []int64{good, none})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := rs[good]
	if !ok || !r.At.Equal(at) || len(r.Items) != 2 || r.Items[good*10+2] != -2 || r.Items[good*10+1] != 0 {
		t.Fatalf("read back %+v (ok %v), want at %v and {..1: 0, ..2: -2}", r, ok, at)
	}
	if _, ok := rs[none]; ok {
		t.Fatalf("a sale with no reading came back: %+v", rs[none])
	}
	if ttl, err := c.Do(ctx, c.B().Pttl().Key(sharding.DriftKey(good)).Build()).AsInt64(); err != nil || ttl <= 0 {
		t.Fatalf("the reading does not expire: pttl %d %v", ttl, err)
	}
	for _, tc := range []struct{ field, value, want string }{
		{"at", "yesterday", `field "at" is "yesterday"`},
		{"at", "5", `field "at" is "5"`},
		{"17", "lots", `field "17" is "lots"`},
		{"item", "0", `field "item" is "0"`},
		{"-3", "0", `field "-3" is "0"`},
	} {
		k := sharding.DriftKey(bad)
		c.Do(ctx, c.B().Del().Key(k).Build())
		if err := c.Do(ctx, c.B().Hset().Key(k).FieldValue().FieldValue("at", "1700000000000").FieldValue(tc.field, tc.value).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		rs, err := s.ReadDrifts(ctx, []int64{bad, good})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "sale") {
			t.Fatalf("%s=%q: err %v, want one naming the sale and %s", tc.field, tc.value, err, tc.want)
		}
		if _, ok := rs[bad]; ok || len(rs) != 1 {
			t.Fatalf("%s=%q: readings %+v, want the good sale's only", tc.field, tc.value, rs)
		}
	}
}
