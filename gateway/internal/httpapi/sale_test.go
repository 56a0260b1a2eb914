package httpapi

import (
	"encoding/json"
	"testing"
	"time"
)

func TestSaleDescription(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 3})
	c := e.serve("10.0.0.1")
	r := do(t, c, "GET", "/api/flash-sales/sales/77", "")
	want(t, r, 200, "")
	if r.header["Cache-Control"] != "public, max-age=1" {
		t.Fatalf("Cache-Control %q", r.header["Cache-Control"])
	}
	var d struct {
		SaleID        int64  `json:"saleId"`
		Name          string `json:"name"`
		Status        string `json:"status"`
		StartsAt      string `json:"startsAt"`
		EndsAt        string `json:"endsAt"`
		PaymentWindow string `json:"paymentWindow"`
		Items         []struct {
			ItemID, Price, Quantity int64
			Remaining               *int64
			Name, Currency          string
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.body), &d); err != nil {
		t.Fatalf("%s: %v", r.body, err)
	}
	if d.SaleID != 77 || d.Name != `Test "sale"` || len(d.Items) != 1 || d.Items[0].Remaining == nil || *d.Items[0].Remaining != 6 ||
		d.Items[0].Quantity != 6 || d.Items[0].Price != 1999 || d.PaymentWindow != "10m0s" || d.Status != "ACTIVE" {
		t.Fatalf("description %s", r.body)
	}
	want(t, do(t, c, "GET", "/api/flash-sales/sales/78", ""), 404, `{"error":"SALE_NOT_FOUND"}`)
	want(t, do(t, c, "GET", "/api/flash-sales/sales/x", ""), 404, `{"error":"SALE_NOT_FOUND"}`)
}

func TestServerTime(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 1})
	c := e.serve("10.0.0.1")
	before := time.Now().Truncate(time.Millisecond)
	r := do(t, c, "GET", "/api/flash-sales/time", "")
	want(t, r, 200, "")
	var got struct {
		ServerTime string `json:"serverTime"`
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339, got.ServerTime)
	if err != nil || len(got.ServerTime) != len("2006-01-02T15:04:05.000Z") || at.Before(before) || at.After(time.Now()) {
		t.Fatalf("serverTime %q (%v): want RFC 3339 with ms, now", got.ServerTime, err)
	}
	if cc := r.header["Cache-Control"]; cc != "no-store" {
		t.Fatalf("Cache-Control %q", cc)
	}
	want(t, do(t, c, "POST", "/api/flash-sales/time", ""), 405, `{"error":"METHOD_NOT_ALLOWED"}`)
}
