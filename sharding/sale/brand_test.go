package sale

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func brandedSale() Sale {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	return Sale{ID: 1, Name: "Winter drop", StartsAt: start, EndsAt: start.Add(time.Hour),
		Brand: &Brand{Shop: "Hokusai Shoes", Logo: "/sale/media/logo.svg", Accent: "#0a58ca", Banner: "Free shipping"},
		Items: []Item{
			{ID: 1, Quantity: 10, Price: 100, Image: "https://img.shop.example/a.webp?w=320", Description: "Canvas.\nSizes 22–30."},
			{ID: 2, Quantity: 10, Price: 100, Image: "https://cdn.example.org:8443/b.png"},
			{ID: 3, Quantity: 10, Price: 100, Image: "https://img.shop.example/c.webp"},
		}}
}

// TestBrandValidate: every bad branding value is refused with an error
// naming the field as the sale file spells it, and nothing else.
func TestBrandValidate(t *testing.T) {
	s := brandedSale()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		field string // in the error
		mut   func(*Sale)
	}{
		{"brand.logo", func(s *Sale) { s.Brand.Logo = "javascript:alert(1)" }},
		{"brand.logo", func(s *Sale) { s.Brand.Logo = "JavaScript:alert(1)" }},
		{"brand.logo", func(s *Sale) { s.Brand.Logo = "data:image/svg+xml,<svg/>" }},
		{"brand.logo", func(s *Sale) { s.Brand.Logo = "http://shop.example/logo.png" }},
		{"brand.logo", func(s *Sale) { s.Brand.Logo = "//evil.example/logo.png" }},
		{"brand.logo", func(s *Sale) { s.Brand.Logo = "logo.png" }},
		{"brand.logo", func(s *Sale) { s.Brand.Logo = "https://user:pw@shop.example/logo.png" }},
		{"brand.logo", func(s *Sale) { s.Brand.Logo = "https://shop.example;script-src *" }},
		{"brand.logo", func(s *Sale) { s.Brand.Logo = "https://Shop.Example/logo.png" }},
		{"brand.logo", func(s *Sale) { s.Brand.Logo = "https://shop.example:99999/logo.png" }},
		{"brand.logo", func(s *Sale) { s.Brand.Logo = "https://[::1]/logo.png" }},
		{"brand.logo", func(s *Sale) { s.Brand.Logo = "/media/a b.png" }},
		{"brand.logo", func(s *Sale) { s.Brand.Logo = `/media/"onerror=x.png` }},
		{"brand.logo", func(s *Sale) { s.Brand.Logo = `/media\evil.png` }},
		{"brand.logo", func(s *Sale) { s.Brand.Logo = "/media/%zz.png" }},
		{"brand.logo", func(s *Sale) { s.Brand.Logo = "/" + strings.Repeat("a", MaxImageURLLen) }},
		{"brand.shop", func(s *Sale) { s.Brand.Shop = "" }},
		{"brand.shop", func(s *Sale) { s.Brand.Shop = strings.Repeat("店", MaxShopLen+1) }},
		{"brand.shop", func(s *Sale) { s.Brand.Shop = "Shop\nName" }},
		{"brand.banner", func(s *Sale) { s.Brand.Banner = strings.Repeat("x", MaxBannerLen+1) }},
		{"brand.banner", func(s *Sale) { s.Brand.Banner = "bad \xff byte" }},
		{"brand.accent", func(s *Sale) { s.Brand.Accent = "red;}" }},
		{"brand.accent", func(s *Sale) { s.Brand.Accent = "red" }},
		{"brand.accent", func(s *Sale) { s.Brand.Accent = "#12345" }},
		{"brand.accent", func(s *Sale) { s.Brand.Accent = "#ggg" }},
		{"brand.accent", func(s *Sale) { s.Brand.Accent = "#ffcc00" }}, // contrast 1.6:1 on white
		{"brand.accent", func(s *Sale) { s.Brand.Accent = "#767676" }}, // 4.54 on white, 4.15 on the panels
		{"items[0] (item 1).description", func(s *Sale) { s.Items[0].Description = strings.Repeat("x", 5<<20) }},
		{"items[0] (item 1).description", func(s *Sale) { s.Items[0].Description = "tab\there" }},
		{"items[1] (item 2).image", func(s *Sale) { s.Items[1].Image = "javascript:alert(1)" }},
		{"items[2] (item 3).image", func(s *Sale) { s.Items[2].Image = "ftp://shop.example/c.png" }},
		{"https origins", func(s *Sale) {
			for i := range MaxImageOrigins + 1 {
				s.Items = append(s.Items, Item{ID: int64(10 + i), Quantity: 1, Image: "https://h" + string(rune('a'+i)) + ".example/x.png"})
			}
		}},
	} {
		s := brandedSale()
		c.mut(&s)
		err := s.Validate()
		if err == nil {
			t.Errorf("%s: accepted %+v", c.field, s.Brand)
			continue
		}
		if !strings.Contains(err.Error(), c.field) || len(err.Error()) > 400 {
			t.Errorf("%s: error %.300q does not name the field (or quotes too much of it)", c.field, err)
		}
	}
	for _, ok := range []string{"#000", "#0A58CA", "#595959", "#b3261e"} {
		s := brandedSale()
		s.Brand.Accent = ok
		if err := s.Validate(); err != nil {
			t.Errorf("accent %s: %v", ok, err)
		}
	}
	s = brandedSale()
	s.Brand = &Brand{Banner: "Only a banner"}
	s.Items[0].Image, s.Items[0].Description = "", ""
	if err := s.Validate(); err != nil {
		t.Errorf("partial branding: %v", err)
	}
}

func TestImageOrigins(t *testing.T) {
	s := brandedSale()
	want := []string{"https://cdn.example.org:8443", "https://img.shop.example"}
	if got := s.ImageOrigins(); !slices.Equal(got, want) {
		t.Fatalf("origins %q, want %q", got, want)
	}
	s.Brand, s.Items = nil, s.Items[:1]
	s.Items[0].Image = "/sale/media/a.png"
	if got := s.ImageOrigins(); len(got) != 0 {
		t.Fatalf("same-site images: origins %q", got)
	}
}

func TestContrast(t *testing.T) {
	c := func(v string) [3]uint8 {
		x, err := ParseHexColor(v)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	for _, k := range []struct {
		a, b string
		want float64
	}{{"#000", "#fff", 21}, {"#fff", "#fff", 1}, {"#767676", "#ffffff", 4.54}, {"#0a58ca", "#fff", 6.43}} {
		if got := Contrast(c(k.a), c(k.b)); got < k.want-0.01 || got > k.want+0.05 {
			t.Errorf("contrast %s on %s: %.3f, want %.2f", k.a, k.b, got, k.want)
		}
	}
}
