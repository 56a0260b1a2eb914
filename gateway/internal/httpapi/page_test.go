package httpapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"flashsale/gateway/internal/auth"
	"flashsale/gateway/internal/page"
	"flashsale/sharding/sale"
)

// TestSalePage: the same bytes for every user and sale id, cacheable, with
// content-hashed immutable assets and 304 on a matching ETag; no Redis.
func TestSalePage(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 1})
	c := e.serve("10.0.0.1")
	r := do(t, c, "GET", "/sale/77", "")
	wantStatus(t, r, 200, "")
	if r.header["Content-Type"] != "text/html; charset=utf-8" || r.header["Cache-Control"] != "public, max-age=60" ||
		r.header["ETag"] == "" || !strings.Contains(r.header["Content-Security-Policy"], "default-src 'none'") {
		t.Fatalf("page headers %q", r.header)
	}
	for _, other := range []reply{
		do(t, c, "GET", "/sale/77", e.token(42)),
		do(t, c, "GET", "/sale/78/", "", "Cookie", "session=abc"),
		do(t, e.serve("10.9.9.9"), "GET", "/sale/4294967295", e.token(43)),
		do(t, c, "GET", "/sale/77?utm_source=mail&x=%zz", ""), // the query is not the gateway's
	} {
		if other.status != 200 || other.body != r.body || other.header["ETag"] != r.header["ETag"] || other.header["Set-Cookie"] != "" {
			t.Fatalf("the page differs between users or sales: %d %v", other.status, other.header)
		}
	}
	etag := r.header["ETag"]
	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag} {
		nm := do(t, c, "GET", "/sale/77", "", "If-None-Match", inm)
		if nm.status != 304 || nm.body != "" || nm.header["ETag"] != etag || nm.header["Cache-Control"] != "public, max-age=60" {
			t.Fatalf("If-None-Match %s: %d %q %v", inm, nm.status, nm.body, nm.header)
		}
	}
	wantStatus(t, do(t, c, "GET", "/sale/77", "", "If-None-Match", `"stale"`), 200, r.body)

	assets := regexp.MustCompile(`"(/sale/assets/[^"]+)"`).FindAllStringSubmatch(r.body, -1)
	if len(assets) != len(page.Default().Assets()) {
		t.Fatalf("%d assets named, %d served", len(assets), len(page.Default().Assets()))
	}
	for _, a := range assets {
		ar := do(t, c, "GET", a[1], "")
		if ar.status != 200 || ar.header["Cache-Control"] != "public, max-age=31536000, immutable" || ar.header["ETag"] == "" || len(ar.body) < 100 {
			t.Fatalf("asset %s: %d %v", a[1], ar.status, ar.header)
		}
		wantStatus(t, do(t, c, "GET", a[1], "", "If-None-Match", ar.header["ETag"]), 304, "")
	}
	head := do(t, c, "HEAD", "/sale/77", "")
	if head.status != 200 || head.body != "" {
		t.Fatalf("HEAD: %d %q", head.status, head.body)
	}
	// A person's typo gets the page (it says the address names no sale)
	// with 404 and no ETag; a missing asset gets JSON.
	for _, p := range []string{"/sale", "/sale/", "/sale/abc", "/sale/0", "/sale/77/x", "/sale/99999999999999999999"} {
		nf := do(t, c, "GET", p, "")
		if nf.status != 404 || nf.body != r.body || nf.header["ETag"] != "" || !strings.HasPrefix(nf.header["Content-Type"], "text/html") {
			t.Fatalf("GET %s: %d %v, body is the page: %v; want 404, the page, no ETag", p, nf.status, nf.header, nf.body == r.body)
		}
	}
	// Another release's hash (a rolling deploy) gets this one's, revalidated.
	other := do(t, c, "GET", "/sale/assets/sale.0123456789ab.css", "")
	if other.status != 200 || other.header["Cache-Control"] != "public, no-cache" || other.header["ETag"] == "" ||
		!strings.HasPrefix(other.header["Content-Type"], "text/css") {
		t.Fatalf("another release's asset: %d %v", other.status, other.header)
	}
	for _, p := range []string{"/sale/assets/sale.js", "/sale/assets/nope.0123456789ab.js", "/sale/assets/"} {
		want(t, do(t, c, "GET", p, ""), 404, `{"error":"NOT_FOUND"}`)
	}
	want(t, do(t, c, "POST", "/sale/77", ""), 405, `{"error":"METHOD_NOT_ALLOWED"}`)
	if n := e.st.redisCalls(); n != 0 {
		t.Fatalf("serving the page made %d Redis calls", n)
	}
}

// TestDevSignIn: the development sign-in mints a token for the typed user id
// on a -dev gateway only; elsewhere the route does not exist.
func TestDevSignIn(t *testing.T) {
	const path = "/api/flash-sales/dev/token"
	prod := newEnv(t, envOpt{stockPerShard: 1})
	pc := prod.serve("10.0.0.1")
	want(t, rawPost(t, pc, path, `{"userId":"42"}`), 404, `{"error":"NOT_FOUND"}`)
	want(t, do(t, pc, "GET", path, ""), 404, `{"error":"NOT_FOUND"}`)

	dev := newEnv(t, envOpt{stockPerShard: 5, dev: true})
	c := dev.serve("10.0.0.1")
	for _, body := range []string{`{"userId":"42"}`, `{"userId":42}`} {
		r := rawPost(t, c, path, body)
		want(t, r, 200, "")
		var got struct{ Token, ExpiresAt string }
		if err := json.Unmarshal([]byte(r.body), &got); err != nil {
			t.Fatal(err)
		}
		v, err := auth.New(t.Context(), auth.Config{HS256Secret: testSecret})
		if err != nil {
			t.Fatal(err)
		}
		if user, err := v.Verify(time.Now(), []byte(got.Token)); err != nil || user != 42 {
			t.Fatalf("minted token: user %d, %v", user, err)
		}
		if r.header["Cache-Control"] != "no-store" {
			t.Fatalf("Cache-Control %q", r.header["Cache-Control"])
		}
		// The token buys.
		want(t, do(t, c, "POST", purchasePath, got.Token), 202, "")
		dev.st.dropBuyers()
	}
	for _, bad := range []string{``, `{}`, `{"userId":""}`, `{"userId":"0"}`, `{"userId":"-1"}`, `{"userId":"01"}`,
		`{"userId":"abc"}`, `{"userId":"99999999999999999999"}`, `{"userId":1.5}`, `not json`, `{"userId":"42"`} {
		want(t, rawPost(t, c, path, bad), 400, `{"error":"INVALID_USER_ID"}`)
	}
	want(t, do(t, c, "GET", path, ""), 405, `{"error":"METHOD_NOT_ALLOWED"}`)
}

// wantStatus is want for answers that are not JSON.
func wantStatus(t *testing.T, r reply, status int, body string) {
	t.Helper()
	if r.status != status || (body != "" && r.body != body) {
		t.Fatalf("got %d %.200s, want %d %.200s", r.status, r.body, status, body)
	}
}

// TestBrandedSalePage: a sale whose branding names image origins gets the
// same page bytes, with a policy that allows images from those origins
// (and its own ETag); another sale, or one the gateway does not know, gets
// the default policy. For two buyers with different cookies and languages
// the page is the same bytes, ETag and Cache-Control. The media directory
// is served with its own inert policy.
func TestBrandedSalePage(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "logo.svg"), []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), 0o644); err != nil {
		t.Fatal(err)
	}
	site, err := page.New(page.Config{Media: dir})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpt{stockPerShard: 1, page: site, itemImage: "https://img.shop.example/a.webp",
		brand: &sale.Brand{Shop: "Hokusai", Logo: "/sale/media/logo.svg", Accent: "#0a58ca"}})
	c := e.serve("10.0.0.1")
	ja := do(t, c, "GET", "/sale/77", e.token(42), "Accept-Language", "ja-JP,ja;q=0.9", "Cookie", "session=a; flashsale.lang=ja")
	en := do(t, e.serve("10.9.9.9"), "GET", "/sale/77", e.token(43), "Accept-Language", "en-GB,en;q=0.8", "Cookie", "session=b")
	wantStatus(t, ja, 200, "")
	if ja.body != en.body || ja.header["ETag"] != en.header["ETag"] || ja.header["Cache-Control"] != "public, max-age=60" ||
		en.header["Cache-Control"] != ja.header["Cache-Control"] || ja.header["Content-Security-Policy"] != en.header["Content-Security-Policy"] {
		t.Fatalf("two buyers, two languages: different pages or headers: %v / %v", ja.header, en.header)
	}
	csp := ja.header["Content-Security-Policy"]
	if !strings.Contains(csp, "img-src 'self' data: https://img.shop.example;") || !strings.Contains(csp, "script-src 'self';") {
		t.Fatalf("branded sale's policy %q", csp)
	}
	plain := do(t, c, "GET", "/sale/78", "")
	if plain.body != ja.body || plain.header["ETag"] == ja.header["ETag"] || plain.header["Content-Security-Policy"] != string(page.DefaultPolicy.CSP) {
		t.Fatalf("an unknown sale: ETag %s (branded %s), policy %q", plain.header["ETag"], ja.header["ETag"], plain.header["Content-Security-Policy"])
	}
	wantStatus(t, do(t, c, "GET", "/sale/77", "", "If-None-Match", ja.header["ETag"]), 304, "")
	// A cache holding the page under the default policy revalidates to the sale's.
	wantStatus(t, do(t, c, "GET", "/sale/77", "", "If-None-Match", plain.header["ETag"]), 200, ja.body)

	logo := do(t, c, "GET", "/sale/media/logo.svg", "")
	if logo.status != 200 || logo.header["Content-Type"] != "image/svg+xml" || !strings.Contains(logo.header["Content-Security-Policy"], "sandbox") ||
		logo.header["Cache-Control"] != "public, max-age=60" || logo.header["ETag"] == "" {
		t.Fatalf("media: %d %v", logo.status, logo.header)
	}
	wantStatus(t, do(t, c, "GET", "/sale/media/logo.svg", "", "If-None-Match", logo.header["ETag"]), 304, "")
	for _, p := range []string{"/sale/media/nope.svg", "/sale/media/", "/sale/media/../assets/x"} {
		want(t, do(t, c, "GET", p, ""), 404, `{"error":"NOT_FOUND"}`)
	}
}
