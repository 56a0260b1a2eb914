package page

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"
	"time"
)

// embedded counts the files served as hashed assets (all but the HTML and
// a vendored script's README and licence).
func embedded(t *testing.T) int {
	n := 0
	_ = fs.WalkDir(files, "assets", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && p != "assets/sale.html" && !notServed[path.Base(p)] {
			n++
		}
		return err
	})
	if n < 7 {
		t.Fatalf("%d assets embedded", n)
	}
	return n
}

func TestPageNamesItsHashedAssets(t *testing.T) {
	s, err := New(Config{Token: "cookie:shop_token", Dev: true, MaxAge: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	html := string(s.Page().Body)
	for _, want := range []string{`data-token="cookie:shop_token"`, `data-dev="true"`, `<meta name="viewport"`, `lang="en"`, `role="status"`,
		`aria-live="polite"`, `<label for="user-id"`, `lang="ja" data-lang="ja"`, `>日本語</button>`, `>English</button>`} {
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
	refs := regexp.MustCompile(`(?:href|src|data-worker|data-messages)="(/sale/assets/[^"]+)"`).FindAllStringSubmatch(html, -1)
	if len(refs) != embedded(t) {
		t.Fatalf("page names %d assets, want every one of the %d embedded: %v", len(refs), embedded(t), refs)
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
	if s.Asset([]byte("sale.js")) != nil || s.Asset([]byte("../page.go")) != nil || s.Asset([]byte("i18n/en.json")) != nil {
		t.Error("an unhashed or outside name is served")
	}
}

// TestAnotherReleasesHash: in a rolling deploy, a page of one release asks
// a gateway of another for its assets. Their names (another content hash)
// get this release's asset, to be revalidated every time; any other name
// stays unknown.
func TestAnotherReleasesHash(t *testing.T) {
	s := Default()
	for _, c := range []struct{ name, src string }{
		{"sale.0123456789ab.js", "sale.js"},
		{"sale.ffffffffffff.css", "sale.css"},
		{"pow-worker.000000000000.js", "pow-worker.js"},
		{"i18n-ja.0123456789ab.json", "i18n/ja.json"},
	} {
		a := s.Asset([]byte(c.name))
		body, _ := files.ReadFile("assets/" + c.src)
		if a == nil || !bytes.Equal(a.Body, body) {
			t.Fatalf("%s: not served as %s", c.name, c.src)
		}
		if string(a.CacheControl) != "public, no-cache" || len(a.ETag) == 0 {
			t.Errorf("%s: Cache-Control %q, ETag %q; want no-cache and this content's ETag", c.name, a.CacheControl, a.ETag)
		}
	}
	for _, name := range []string{
		"sale.0123456789a.js", "sale.0123456789abc.js", "sale.0123456789AB.js", "sale.0123456789ab.css.js",
		"nope.0123456789ab.js", "sale.0123456789ab.html", "sale.0123456789ab", ".0123456789ab.js", "sale.js.0123456789ab",
		"i18n-xx.0123456789ab.json",
	} {
		if a := s.Asset([]byte(name)); a != nil {
			t.Errorf("%s: served (%s)", name, a.Name)
		}
	}
	name := []byte("sale.0123456789ab.js")
	if n := testing.AllocsPerRun(100, func() { _ = s.Asset(name) }); n != 0 {
		t.Errorf("another release's asset: %v allocs", n)
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
