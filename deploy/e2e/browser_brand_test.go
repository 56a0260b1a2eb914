package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
	"github.com/valyala/fasthttp"

	"flashsale/deploy/testenv"
)

// brandDir is the sample branding's images, served by the test gateways
// with -page-media.
func brandDir() string { return filepath.Join(root, "deploy", "brand") }

// branded adds to a sale file's fields the sample branding of deploy/brand:
// what a shop would put on its page.
func branded(fields map[string]any) map[string]any {
	fields["brand"] = map[string]any{"shop": "Kumo Shoes", "logo": "/sale/media/logo.svg", "accent": "#0b5d4b",
		"banner": "Free shipping on every order"}
	fields["item"] = map[string]any{"name": "Kumo runner", "price": 19900, "image": "/sale/media/sneaker.svg",
		"description": "Canvas upper, natural rubber sole. Sizes 22 to 30."}
	return fields
}

// TestBrowserBrandingReachesBuyers: the sale page is the same bytes, ETag
// and Cache-Control for two buyers with different cookies and languages;
// the page shows the sale's branding (logo, item image, banner, accent) in
// either language; the page's policy names the sale's image origins. A
// change of the branding (flashctl sale brand) reaches the description
// within its cache lifetime after the gateway's refresh, an open page with
// its next reload of the sale, and the page's policy and ETag at once (a
// cache revalidating the old page gets the new one). An image that does not
// load is hidden and the page goes on.
func TestBrowserBrandingReachesBuyers(t *testing.T) {
	need(t)
	b := browser(t)
	s := createSaleWith(t, 1, 1, 30*time.Minute, branded(map[string]any{"name": "Spring drop"}))
	g := startGateway(t, testenv.NewTopic(t, "browser-brand"), s, "-dev", "-relay=false", "-page-media", brandDir())
	g.waitReady(t, 20*time.Second)
	pageURL := fmt.Sprintf("http://%s/sale/%d", g.addr, s.ID)
	ja := get(t, pageURL, "Accept-Language", "ja-JP,ja;q=0.9", "Cookie", "session=a1; flashsale.lang=ja")
	en := get(t, pageURL, "Accept-Language", "en-GB,en;q=0.8", "Cookie", "session=b2", "Authorization", "Bearer "+mint(42, time.Now().Add(time.Hour)))
	if ja.status != 200 || ja.body != en.body || ja.etag != en.etag || ja.cacheControl != en.cacheControl || ja.csp != en.csp {
		t.Fatalf("two buyers, two languages: %d/%d, same bytes %v, ETag %s/%s, Cache-Control %q/%q", ja.status, en.status, ja.body == en.body, ja.etag, en.etag, ja.cacheControl, en.cacheControl)
	}
	if ja.cacheControl != "public, max-age=60" {
		t.Fatalf("the page's Cache-Control %q, want public, max-age=60 (unchanged)", ja.cacheControl)
	}
	tabs := map[string]*tab{}
	for _, lang := range pageLanguages {
		tb := newTab(t, b, lang, "brand-desktop", 1280, 900, false)
		tb.do(chromedp.Navigate(pageURL))
		tb.waitState(10*time.Second, nil, "signin")
		checkBranding(t, tb, "Kumo Shoes", "rgb(11, 93, 75)", true)
		tb.shot("branded")
		tabs[lang] = tb
	}

	// The shop changes its branding: a new name, colour and banner, the item's
	// picture now on the shop's CDN (unreachable here: it will not load).
	next := *s.Sale
	brand := *s.Brand
	next.Brand = &brand
	next.Brand.Shop, next.Brand.Accent, next.Brand.Banner = "Kumo Shoes Tokyo", "#8a1c1c", "Last pairs of the season"
	next.Items = append(next.Items[:0:0], s.Items...)
	next.Items[0].Image = "https://images.invalid/runner.webp"
	file := filepath.Join(t.TempDir(), "sale.json")
	raw, _ := json.Marshal(&next)
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	flashctl(t, "sale", "brand", "--file", file)
	descURL := fmt.Sprintf("http://%s/api/flash-sales/sales/%d", g.addr, s.ID)
	for d := get(t, descURL); !strings.Contains(d.body, "Kumo Shoes Tokyo"); d = get(t, descURL) {
		if d.cacheControl != "public, max-age=1" {
			t.Fatalf("the description's Cache-Control %q", d.cacheControl)
		}
		if time.Since(changed) > 3*time.Second { // a 1 s refresh, then a 1 s max-age
			t.Fatalf("the gateway serves the old branding %v after the change: %s", time.Since(changed), d.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("description rebranded %v after the change", time.Since(changed).Round(time.Millisecond))
	after := get(t, pageURL)
	if after.body != ja.body || after.etag == ja.etag || !strings.Contains(after.csp, "img-src 'self' data: https://images.invalid;") {
		t.Fatalf("the page after the change: same bytes %v, ETag %s (was %s), policy %q", after.body == ja.body, after.etag, ja.etag, after.csp)
	}
	if r := get(t, pageURL, "If-None-Match", ja.etag); r.status != 200 {
		t.Fatalf("revalidating the page cached before the change: %d, want 200 and the new policy", r.status)
	}
	for _, lang := range pageLanguages {
		tb := tabs[lang]
		// The page reloads the sale every 5 s in the countdown.
		waitFor(t, 8*time.Second, func() bool { return tb.text("shop-name") == "Kumo Shoes Tokyo" })
		checkBranding(t, tb, "Kumo Shoes Tokyo", "rgb(138, 28, 28)", false)
		tb.shot("rebranded")
		logShots(t, tb)
	}
}

// checkBranding checks what the tab shows of the sale's branding: the
// shop's name beside its logo, the banner, the accent on the buy button
// (light scheme: as given), the item's picture loaded or hidden.
func checkBranding(t *testing.T, tb *tab, shop, accent string, imageLoads bool) {
	t.Helper()
	var got struct {
		Shop, Banner, Accent, Lang string
		Logo, Image                bool
		ImageHidden                bool
	}
	js := `new Promise((ok) => setTimeout(() => { const img = document.querySelector('.item-image');
	  ok({shop: document.getElementById('shop-name').textContent, banner: document.getElementById('banner').textContent,
	    accent: getComputedStyle(document.getElementById('buy')).backgroundColor, lang: document.documentElement.lang,
	    logo: document.getElementById('logo').naturalWidth > 0, image: !!img && img.naturalWidth > 0, imageHidden: !img || img.hidden}); }, 1500))`
	got = eval[struct {
		Shop, Banner, Accent, Lang string
		Logo, Image                bool
		ImageHidden                bool
	}](tb, js)
	if got.Shop != shop || got.Banner == "" || got.Accent != accent || !got.Logo || got.Lang != tb.lang {
		t.Errorf("%s (%s): shop %q, banner %q, accent %s, logo loaded %v, lang %q; want %q, a banner, %s, the logo, %s",
			tb.name, tb.lang, got.Shop, got.Banner, got.Accent, got.Logo, got.Lang, shop, accent, tb.lang)
	}
	if imageLoads && !got.Image || !imageLoads && !got.ImageHidden {
		t.Errorf("%s (%s): item image loaded %v, hidden %v; want it %s", tb.name, tb.lang, got.Image, got.ImageHidden,
			map[bool]string{true: "loaded", false: "hidden (it cannot load)"}[imageLoads])
	}
}

// TestBrowserImagesNeverBlock: with every image of the page held (a CDN
// that never answers), the page counts down, turns "buy" on at the start
// and buys as it does without them.
func TestBrowserImagesNeverBlock(t *testing.T) {
	need(t)
	b := browser(t)
	tb := newTab(t, b, "en", "images-held-phone", 390, 844, true)
	held := tb.holdImages()
	s, g := startFrontDoor(t, 1, 4*time.Second, branded(map[string]any{"name": "Slow images"}))
	tb.do(chromedp.Navigate(fmt.Sprintf("http://%s/sale/%d", g.addr, s.ID)))
	tb.waitState(10*time.Second, nil, "signin")
	tb.signIn("1501")
	tb.waitState(5*time.Second, nil, "countdown")
	waitFor(t, 5*time.Second, func() bool { return !buyOff(tb) })
	if late := time.Since(s.StartsAt); late > time.Second {
		t.Errorf("buy turned on %v after the start", late)
	}
	tb.do(chromedp.Click(chromedp.ID("buy")))
	tb.waitState(20*time.Second, nil, "reserved")
	pending := eval[bool](tb, `[...document.images].some((i) => !i.complete) && !document.getElementById('logo').complete`)
	if n := held.Load(); n < 2 || !pending {
		t.Fatalf("%d image requests held, images pending %v: the test held nothing", n, pending)
	}
	tb.shot("reserved")
	logShots(t, tb)
}

// holdImages pauses every image request of the tab and never answers it.
func (tb *tab) holdImages() *atomic.Int32 {
	tb.t.Helper()
	var n atomic.Int32
	if err := chromedp.Listen(tb.ctx, func(ev any) {
		if _, ok := ev.(*fetch.EventRequestPaused); ok {
			n.Add(1)
		}
	}); err != nil {
		tb.t.Fatal(err)
	}
	if _, err := chromedp.Call(tb.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/sale/media/*"}}}); err != nil {
		tb.t.Fatal(err)
	}
	return &n
}

// page is one answer of the gateway to a GET.
type page struct {
	status                        int
	body, etag, cacheControl, csp string
}

// get fetches url with headers (name, value pairs).
func get(t *testing.T, url string, hdr ...string) page {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if err := fasthttp.DoTimeout(req, resp, 5*time.Second); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return page{status: resp.StatusCode(), body: string(resp.Body()), etag: string(resp.Header.Peek("ETag")),
		cacheControl: string(resp.Header.Peek("Cache-Control")), csp: string(resp.Header.Peek("Content-Security-Policy"))}
}

// waitFor polls cond every 50 ms and fails the test after within.
func waitFor(t *testing.T, within time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not so after %v", within)
		}
	}
}
