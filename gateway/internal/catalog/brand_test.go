package catalog

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"flashsale/gateway/internal/page"
	"flashsale/sharding/sale"
)

// TestDescriptionCarriesTheBranding: the public description serves the
// sale's branding and each item's image and description; the sale's page
// policy names its image origins; a change (a new Version) is served at the
// next refresh.
func TestDescriptionCarriesTheBranding(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	s := testSale(1, 1, 1, now.Add(-time.Hour), now.Add(time.Hour), 10, 11)
	s.Brand = &sale.Brand{Shop: "Hokusai <Shoes>", Logo: "/sale/media/logo.svg", Accent: "#0a58ca"}
	s.Items[0].Image, s.Items[0].Description = "https://img.shop.example/a.webp", "Canvas.\nSizes 22–30."
	src := &source{stock: map[int64][]int64{10: {3}, 11: {3}}, sales: []*sale.Sale{s}}
	c := New(src, Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := c.Refresh(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	var d struct {
		Brand *sale.Brand
		Items []struct{ Image, Description string }
	}
	got := c.Snapshot().Sale(1)
	if err := json.Unmarshal(got.Description(), &d); err != nil || d.Brand == nil || *d.Brand != *s.Brand ||
		d.Items[0].Image != s.Items[0].Image || d.Items[0].Description != s.Items[0].Description || d.Items[1].Image != "" {
		t.Fatalf("description %s: %v", got.Description(), err)
	}
	if strings.Contains(string(got.Description()), `"banner"`) || strings.Contains(string(got.Description()), `"image":""`) {
		t.Errorf("empty branding fields are served: %s", got.Description())
	}
	if csp := string(got.Page.CSP); !strings.Contains(csp, "img-src 'self' data: https://img.shop.example;") {
		t.Fatalf("page policy %q", csp)
	}

	next := *s
	next.Version, next.Brand = 2, &sale.Brand{Banner: "Free shipping"}
	next.Items = []sale.Item{s.Items[0], s.Items[1]}
	next.Items[0].Image = ""
	src.mu.Lock()
	src.sales = []*sale.Sale{&next}
	src.mu.Unlock()
	if err := c.Refresh(context.Background(), now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	got = c.Snapshot().Sale(1)
	if desc := string(got.Description()); !strings.Contains(desc, `"brand":{"banner":"Free shipping"}`) || strings.Contains(desc, "Hokusai") {
		t.Fatalf("description after the change: %s", desc)
	}
	if got.Page != page.DefaultPolicy {
		t.Fatalf("page policy after the change: %q", got.Page.CSP)
	}
	plain := testSale(2, 1, 1, now.Add(-time.Hour), now.Add(time.Hour), 20)
	src.mu.Lock()
	src.sales = append(src.sales, plain)
	src.mu.Unlock()
	_ = c.Refresh(context.Background(), now)
	if desc := string(c.Snapshot().Sale(2).Description()); strings.Contains(desc, "brand") || strings.Contains(desc, "image") {
		t.Fatalf("an unbranded sale's description: %s", desc)
	}
}
