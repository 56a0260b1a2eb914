package page

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestPageNamesItsHashedAssets(t *testing.T) {
	s, err := New(Config{Token: "cookie:shop_token", Dev: true, MaxAge: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	html := string(s.Page().Body)
	for _, want := range []string{`data-token="cookie:shop_token"`, `data-dev="true"`, `<meta name="viewport"`, `lang="en"`, `role="status"`, `aria-live="polite"`, `<label for="user-id">`} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(html, "{{") || strings.Contains(html, "http://") || strings.Contains(html, "https://") {
		t.Error("page has a placeholder or loads something from elsewhere")
	}
	if cc := string(s.Page().CacheControl); cc != "public, max-age=30" {
		t.Errorf("page Cache-Control %q", cc)
	}
	refs := regexp.MustCompile(`(?:href|src|data-worker)="(/sale/assets/[^"]+)"`).FindAllStringSubmatch(html, -1)
	if len(refs) != 3 {
		t.Fatalf("page names %d assets, want 3 (css, js, worker): %v", len(refs), refs)
	}
	for _, r := range refs {
		name := strings.TrimPrefix(r[1], AssetPrefix)
		a := s.Asset([]byte(name))
		if a == nil {
			t.Fatalf("asset %s not served", name)
		}
		sum := sha256.Sum256(a.Body)
		if !strings.Contains(name, "."+hex.EncodeToString(sum[:6])+".") {
			t.Errorf("asset %s is not named by its content hash", name)
		}
		if string(a.CacheControl) != "public, max-age=31536000, immutable" || len(a.ContentType) == 0 {
			t.Errorf("asset %s: Cache-Control %q, type %q", name, a.CacheControl, a.ContentType)
		}
	}
	if s.Asset([]byte("sale.js")) != nil || s.Asset([]byte("../page.go")) != nil {
		t.Error("an unhashed or outside name is served")
	}
}

// TestSameFlagsSameBytes: the page depends on the flags only, so gateways
// with the same flags serve identical bytes (and ETags), and different flags
// change the ETag.
func TestSameFlagsSameBytes(t *testing.T) {
	a, _ := New(Config{Token: "localStorage:t"})
	b, _ := New(Config{Token: "localStorage:t"})
	c, _ := New(Config{Token: "localStorage:t", Dev: true})
	if !bytes.Equal(a.Page().Body, b.Page().Body) || !bytes.Equal(a.Page().ETag, b.Page().ETag) {
		t.Fatal("same flags, different pages")
	}
	if bytes.Equal(a.Page().ETag, c.Page().ETag) {
		t.Fatal("-dev does not change the ETag")
	}
	if got := string(Default().Page().CacheControl); got != "public, max-age=60" {
		t.Fatalf("default max-age: %q", got)
	}
}

func TestNotModified(t *testing.T) {
	etag := []byte(`"abc"`)
	for in, want := range map[string]bool{
		`"abc"`: true, `W/"abc"`: true, `"x", "abc"`: true, `*`: true, ` "abc" `: true,
		``: false, `"abcd"`: false, `abc`: false, `"x"`: false, `"ab"c"`: false,
	} {
		if got := NotModified([]byte(in), etag); got != want {
			t.Errorf("If-None-Match %q: %v, want %v", in, got, want)
		}
	}
}
