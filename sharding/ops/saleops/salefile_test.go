package saleops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"flashsale/sharding/ops/internal/opstest"
)

const goodJSON = `{"id": 42, "name": "Winter drop", "startsAt": "2026-12-01T10:00:00Z",
 "endsAt": "2026-12-01T11:00:00Z", "paymentWindow": "5m",
 "items": [{"id": 4201, "name": "Sneaker", "price": 12900, "currency": "EUR", "quantity": 10000}]}`

const goodYAML = `
id: 42
name: Winter drop
startsAt: 2026-12-01T10:00:00Z
endsAt: "2026-12-01T11:00:00Z"
paymentWindow: 5m
items:
  - {id: 4201, name: Sneaker, price: 12900, currency: EUR, quantity: 10000}
`

func TestParseSaleGood(t *testing.T) {
	for name, tc := range map[string]struct{ data, format string }{
		"json": {goodJSON, "json"}, "yaml": {goodYAML, "yaml"}, "guess json": {goodJSON, ""}, "guess yaml": {goodYAML, ""},
	} {
		s, err := ParseSale([]byte(tc.data), tc.format)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s.ID != 42 || len(s.Items) != 1 || s.Items[0].Quantity != 10000 || s.Window() != 5*time.Minute ||
			!s.StartsAt.Equal(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)) {
			t.Fatalf("%s: parsed %+v", name, s)
		}
	}
}

func TestParseSaleBad(t *testing.T) {
	cases := []struct {
		name, data, format, want string
	}{
		{"empty", "  \n", "", "empty"},
		{"missing id", strings.Replace(goodJSON, `"id": 42, `, "", 1), "json", "sale id 0"},
		{"missing name", strings.Replace(goodJSON, `"name": "Winter drop", `, "", 1), "json", "sale name is missing"},
		{"missing start", strings.Replace(goodJSON, `"startsAt": "2026-12-01T10:00:00Z",`, "", 1), "json", "startsAt and endsAt"},
		{"end before start", strings.Replace(goodJSON, `"endsAt": "2026-12-01T11:00:00Z"`, `"endsAt": "2026-12-01T09:00:00Z"`, 1), "json", "before it starts"},
		{"zero quantity", strings.Replace(goodJSON, `"quantity": 10000`, `"quantity": 0`, 1), "json", "quantity 0"},
		{"no items", strings.Replace(goodYAML, "items:\n  - {id: 4201, name: Sneaker, price: 12900, currency: EUR, quantity: 10000}", "items: []", 1), "yaml", "no items"},
		{"missing currency", strings.Replace(goodJSON, `"currency": "EUR", `, "", 1), "json", "currency is missing"},
		{"unknown field json", strings.Replace(goodJSON, `"name":`, `"colour": "red", "name":`, 1), "json", `unknown field "colour"`},
		{"unknown field yaml", goodYAML + "stock: 5\n", "yaml", `unknown field "stock"`},
		{"malformed yaml", "id: 42\nname: [unclosed\n", "yaml", "reading yaml"},
		{"yaml list", "- 1\n- 2\n", "yaml", "want a mapping"},
		{"malformed json", `{"id": 42,`, "json", "reading sale"},
		{"bad window", strings.Replace(goodJSON, `"5m"`, `"five minutes"`, 1), "json", "duration"},
		{"bad time", strings.Replace(goodJSON, `"2026-12-01T10:00:00Z"`, `"tomorrow"`, 1), "json", "reading sale"},
		{"two values", goodJSON + goodJSON, "json", "more than one"},
		{"duplicate item", strings.Replace(goodJSON, `}]}`, `}, {"id": 4201, "name": "x", "price": 1, "currency": "EUR", "quantity": 1}]}`, 1), "json", "appears twice"},
		{"format", goodJSON, "toml", "unknown sale file format"},
		{"state in the file", goodYAML + "state: PAUSED\n", "yaml", "state is not part of a sale file"},
		{"draw in the file", opstest.QueuePresaleYAML + "draw: {commitment: " + strings.Repeat("ab", 32) + "}\n", "yaml", "draw is not part of a sale file"},
	}
	for _, tc := range cases {
		_, err := ParseSale([]byte(tc.data), tc.format)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

func TestReadSaleFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sale.yml")
	if err := os.WriteFile(p, []byte(goodYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSaleFile(p); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(goodYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSaleFile(bad); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Fatalf("yaml in a .json file: %v, want an error naming the file", err)
	}
	if _, err := ReadSaleFile(filepath.Join(dir, "missing.json")); err == nil {
		t.Fatal("missing file: no error")
	}
}
