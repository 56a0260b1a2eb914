package app_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/stock"
)

// The gateway exports the writer's drift reading of its sales, published in
// Redis, with the reading's age (it cannot take one: the orders are in
// PostgreSQL): the value follows the writer's next reading, an item the sale
// does not have is not exported, an old reading shows its age, and with no
// reading there is no value and the age counts from when one was due.
func TestGatewayExportsTheWritersDrift(t *testing.T) {
	s := start(t, 10, 2, nil, "")
	ctx := context.Background()
	units := fmt.Sprintf(`flashsale_gateway_stock_drift_units{item="%d",sale="%d"} `, s.item, s.sale.ID)
	age := fmt.Sprintf(`flashsale_gateway_stock_drift_age_seconds{sale="%d"} `, s.sale.ID)
	metric := func(body, prefix string) (float64, bool) {
		for _, l := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(l, prefix); ok {
				f, err := strconv.ParseFloat(v, 64)
				return f, err == nil
			}
		}
		return 0, false
	}
	wait := func(what string, ok func(body string) bool) string {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			code, body := s.doAt(s.app.AdminAddr(), "GET", "/metrics")
			if code == 200 && ok(body) {
				return body
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not exported within 5s; /metrics has:\n%s", what, grep(body, "drift"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	publish := func(at time.Time, d int64) {
		t.Helper()
		if err := s.store.PublishDrift(ctx, s.sale.ID, stock.DriftReading{At: at, Items: map[int64]int64{s.item: d, 999: 5}}); err != nil {
			t.Fatal(err)
		}
	}
	publish(time.Now(), 0)
	wait("a reading of 0", func(b string) bool { v, ok := metric(b, units); return ok && v == 0 })
	publish(time.Now().Add(-3*time.Second), -2)
	body := wait("an oversell of 2, read 3s ago", func(b string) bool {
		v, ok := metric(b, units)
		a, aok := metric(b, age)
		return ok && v == -2 && aok && a >= 3
	})
	if strings.Contains(body, `item="999"`) {
		t.Fatalf("an item the sale does not have is exported:\n%s", grep(body, "drift"))
	}
	// The reading goes (it expired, or the writer never read the sale): no
	// drift value, and an age that counts from when one was due (here the
	// gateway's start, later than ten minutes before the sale's).
	c := s.store.Client()
	if err := c.Do(ctx, c.B().Del().Key(sharding.DriftKey(s.sale.ID)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	body = wait("no reading", func(b string) bool { _, ok := metric(b, units); return !ok })
	if a, ok := metric(body, age); !ok || a > 60 {
		t.Fatalf("no reading: age %v (exported %v), want the seconds since the gateway started", a, ok)
	}
}

// grep returns body's lines holding s.
func grep(body, s string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
