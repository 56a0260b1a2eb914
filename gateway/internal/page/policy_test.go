package page

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"flashsale/sharding"
)

// TestPolicyNamesTheSalesImageOrigins: the page's policy allows images from
// its own site and from the sale's https origins, nothing else, and the
// page's ETag names a policy that is not the default one.
func TestPolicyNamesTheSalesImageOrigins(t *testing.T) {
	def := string(DefaultPolicy.CSP)
	if !strings.Contains(def, "img-src 'self' data:;") || !strings.Contains(def, "default-src 'none'") || !strings.Contains(def, "script-src 'self';") {
		t.Fatalf("default policy %q", def)
	}
	if PolicyFor(nil) != DefaultPolicy {
		t.Fatal("no origins: not the default policy")
	}
	p := PolicyFor([]string{"https://cdn.example.org:8443", "https://img.shop.example"})
	if got := string(p.CSP); !strings.Contains(got, "img-src 'self' data: https://cdn.example.org:8443 https://img.shop.example;") ||
		strings.Replace(got, " https://cdn.example.org:8443 https://img.shop.example", "", 1) != def {
		t.Fatalf("policy %q: want the default one with the two origins in img-src and nothing else", got)
	}
	s := Default()
	plain := s.AppendPageETag(nil, DefaultPolicy)
	branded := s.AppendPageETag(nil, p)
	other := s.AppendPageETag(nil, PolicyFor([]string{"https://img.shop.example"}))
	if !bytes.Equal(plain, s.Page().ETag) || bytes.Equal(branded, plain) || bytes.Equal(branded, other) ||
		!regexp.MustCompile(`^"[0-9a-f]{24}-[0-9a-f]{8}"$`).Match(branded) {
		t.Fatalf("ETags: default %s, branded %s, other %s", plain, branded, other)
	}
	var buf [64]byte
	if n := testing.AllocsPerRun(100, func() { _ = s.AppendPageETag(buf[:0], p) }); n != 0 {
		t.Fatalf("AppendPageETag: %v allocs", n)
	}
}

// TestLightBackgroundsAreTheCSSs: the accent is checked at a sale's
// creation against the page's light backgrounds (sharding), which are the
// stylesheet's --bg and --panel.
func TestLightBackgroundsAreTheCSSs(t *testing.T) {
	css, _ := files.ReadFile("assets/sale.css")
	root := regexp.MustCompile(`(?s):root \{(.*?)\}`).FindSubmatch(css)
	if root == nil {
		t.Fatal("no :root block in sale.css")
	}
	var got []string
	for _, v := range []string{"--bg", "--panel"} {
		m := regexp.MustCompile(v + `: (#[0-9a-f]+);`).FindSubmatch(root[1])
		if m == nil {
			t.Fatalf("sale.css :root has no %s", v)
		}
		c, err := sharding.ParseHexColor(string(m[1]))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(m[1]))
		found := false
		for _, bg := range sharding.PageLightBackgrounds {
			b, _ := sharding.ParseHexColor(bg)
			found = found || b == c
		}
		if !found {
			t.Errorf("sale.css %s is %s, not one of sharding.PageLightBackgrounds %v", v, m[1], sharding.PageLightBackgrounds)
		}
	}
	if len(got) != len(sharding.PageLightBackgrounds) {
		t.Errorf("backgrounds %v, sharding checks %v", got, sharding.PageLightBackgrounds)
	}
}

func TestMedia(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("logo.svg", `<svg xmlns="http://www.w3.org/2000/svg"/>`)
	write("item_1.PNG", "\x89PNG")
	write(".DS_Store", "junk")
	s, err := New(Config{Media: dir, MaxAge: 30e9})
	if err != nil {
		t.Fatal(err)
	}
	a := s.Media([]byte("logo.svg"))
	if a == nil || string(a.ContentType) != "image/svg+xml" || string(a.CacheControl) != "public, max-age=30" ||
		!strings.Contains(string(a.CSP), "sandbox") || len(a.ETag) == 0 || a.Name != MediaPrefix+"logo.svg" {
		t.Fatalf("logo.svg: %+v", a)
	}
	if a := s.Media([]byte("item_1.PNG")); a == nil || string(a.ContentType) != "image/png" {
		t.Fatalf("item_1.PNG: %+v", a)
	}
	for _, name := range []string{".DS_Store", "nope.svg", "../page.go", ""} {
		if s.Media([]byte(name)) != nil {
			t.Errorf("%q served", name)
		}
	}
	name := []byte("logo.svg")
	if n := testing.AllocsPerRun(100, func() { _ = s.Media(name) }); n != 0 {
		t.Errorf("Media: %v allocs", n)
	}
	if s, _ := New(Config{}); s.Media(name) != nil {
		t.Error("media served without a directory")
	}
	for file, want := range map[string]string{"notes.txt": "want an image", "a b.svg": "want an image"} {
		bad := t.TempDir()
		if err := os.WriteFile(filepath.Join(bad, file), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := New(Config{Media: bad}); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), file) {
			t.Errorf("%s: %v", file, err)
		}
	}
	if _, err := New(Config{Media: filepath.Join(dir, "missing")}); err == nil {
		t.Error("a missing media directory is accepted")
	}
}
