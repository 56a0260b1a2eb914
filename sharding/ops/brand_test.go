package ops

import (
	"context"
	"flashsale/sharding/draw/beacon"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/ops/saleops"
	"flashsale/writer/schema"
)

const brandedYAML = `
id: 42
name: Winter drop
startsAt: 2026-12-01T10:00:00Z
endsAt: 2026-12-01T11:00:00Z
brand:
  shop: Hokusai Shoes
  logo: /sale/media/logo.svg
  accent: "#0a58ca"
  banner: Free shipping on every order
items:
  - id: 4201
    name: Sneaker
    price: 12900
    currency: EUR
    quantity: 100
    image: https://img.shop.example/sneaker.webp
    description: |
      Canvas upper, rubber sole.
      Sizes 22 to 30.
`

func TestParseSaleBranded(t *testing.T) {
	s, err := saleops.ParseSale([]byte(brandedYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	b, it := s.Brand, s.Items[0]
	if b == nil || b.Shop != "Hokusai Shoes" || b.Logo != "/sale/media/logo.svg" || b.Accent != "#0a58ca" || b.Banner == "" ||
		it.Image != "https://img.shop.example/sneaker.webp" || !strings.Contains(it.Description, "\nSizes") {
		t.Fatalf("parsed %+v %+v", b, it)
	}
	if _, err := saleops.ParseSale([]byte(strings.Replace(brandedYAML, "  banner:", "  bannr:", 1)), ""); err == nil || !strings.Contains(err.Error(), `unknown field "bannr"`) {
		t.Fatalf("misspelt brand field: %v", err)
	}
}

// TestSaleCreateRefusesBadBranding: `flashctl sale create` refuses each bad
// branding value with an error naming the field, before it connects to
// anything (no stack needed; nothing is written).
func TestSaleCreateRefusesBadBranding(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, from, to, want string }{
		{"javascript logo", "logo: /sale/media/logo.svg", "logo: 'javascript:alert(1)'", `brand.logo: "javascript:alert(1)": want an https:// URL`},
		{"javascript image", "image: https://img.shop.example/sneaker.webp", "image: javascript:alert(document.cookie)", "items[0] (item 4201).image"},
		{"5 MB description", "description: |\n      Canvas upper, rubber sole.\n      Sizes 22 to 30.\n",
			"description: " + strings.Repeat("x", 5<<20) + "\n", "items[0] (item 4201).description: 5242880 characters, at most 600"},
		{"css in the colour", `accent: "#0a58ca"`, `accent: "red;}"`, `brand.accent "red;}": want a hex colour`},
		{"pale colour", `accent: "#0a58ca"`, `accent: "#ffcc00"`, `brand.accent "#ffcc00": contrast 1.51:1`},
		{"long shop name", "shop: Hokusai Shoes", "shop: " + strings.Repeat("x", 81), "brand.shop: 81 characters, at most 80"},
		{"long name", "name: Winter drop", "name: " + strings.Repeat("x", 201), "name: 201 characters, at most 200"},
	} {
		doc := strings.Replace(brandedYAML, c.from, c.to, 1)
		if doc == brandedYAML {
			t.Fatalf("%s: %q not in the sample", c.name, c.from)
		}
		file := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".yaml")
		if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		// Stores that do not answer: the file is refused before any is asked.
		code, out, errOut := runMainEnv(map[string]string{"FLASHSALE_REDIS": "127.0.0.1:1", "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"},
			"sale", "create", "--file", file)
		if code != ExitFail || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, file) || out != "" {
			t.Errorf("%s: exit %d, stderr %.300q; want exit %d and %q", c.name, code, errOut, ExitFail, c.want)
		}
	}
}

// TestSaleBrand: `sale brand` changes a live sale's branding in PostgreSQL
// and in Redis (Version+1, so every gateway reloads it), and refuses a file
// that changes anything else, naming the field.
func TestSaleBrand(t *testing.T) {
	e := opstest.NewEnv(t)
	ctx := context.Background()
	id := opstest.RandomSaleID()
	item := id*100 + 1
	doc := strings.NewReplacer("id: 42", fmt.Sprintf("id: %d", id), "id: 4201", fmt.Sprintf("id: %d", item),
		"2026-12-01T11:00:00Z", "2036-12-01T11:00:00Z").Replace(brandedYAML)
	s, err := saleops.ParseSale([]byte(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.DropSale(id) })
	if _, err := saleops.CreateParsedSale(ctx, e.T, s, 1, beacon.Dev); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(doc string) string {
		f := filepath.Join(dir, "sale.yaml")
		if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	rebranded := strings.NewReplacer("Hokusai Shoes", "Hiroshige Shoes", "#0a58ca", "#b3261e",
		"https://img.shop.example/", "https://cdn.other.example/").Replace(doc)
	code, out, errOut := runMain("sale", "brand", "--file", write(rebranded))
	if code != ExitOK || !strings.Contains(out, "https://cdn.other.example") {
		t.Fatalf("sale brand: exit %d\n%s%s", code, out, errOut)
	}
	live, err := e.T.Store.LoadSale(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if live.Version != 2 || live.Brand.Shop != "Hiroshige Shoes" || live.Brand.Accent != "#b3261e" ||
		live.Items[0].Image != "https://cdn.other.example/sneaker.webp" || live.Items[0].Quantity != 100 {
		t.Fatalf("live sale after sale brand: version %d, %+v, %+v", live.Version, live.Brand, live.Items[0])
	}
	pg, _, _, err := schema.ReadSale(ctx, e.T.DB, id)
	if err != nil || pg.Brand == nil || pg.Brand.Shop != "Hiroshige Shoes" || pg.Items[0].Image != live.Items[0].Image ||
		pg.Items[0].Description != s.Items[0].Description {
		t.Fatalf("PostgreSQL after sale brand: %+v %+v (%v)", pg.Brand, pg.Items, err)
	}
	for _, c := range []struct{ from, to, want string }{
		{"name: Winter drop", "name: Summer drop", "the file's name differ"},
		{"quantity: 100", "quantity: 99", "the file's items differ"},
		{"accent: \"#0a58ca\"", "accent: \"#fc0\"", "brand.accent"},
	} {
		code, _, errOut := runMain("sale", "brand", "--file", write(strings.Replace(doc, c.from, c.to, 1)))
		if code != ExitFail || !strings.Contains(errOut, c.want) {
			t.Errorf("%s -> %s: exit %d, %q; want %q", c.from, c.to, code, errOut, c.want)
		}
	}
	if after, _ := e.T.Store.LoadSale(ctx, id); after.Version != 2 {
		t.Errorf("a refused sale brand changed the sale: version %d", after.Version)
	}
}
