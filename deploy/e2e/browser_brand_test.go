package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
	"github.com/valyala/fasthttp"

	"flashsale/deploy/testenv"
)

// pageLanguages are the languages of the sale page
// (gateway/internal/page/assets/i18n); every browser test runs in each.
var pageLanguages = []string{"en", "ja"}

// browserLanguage is what a browser set to each language asks for: its
// Accept-Language and navigator.languages, and the ICU locale Intl uses.
var browserLanguage = map[string]struct{ accept, locale string }{
	"en": {"en-US,en;q=0.9", "en_US"},
	"ja": {"ja-JP,ja;q=0.9,en;q=0.5", "ja_JP"},
}

// inLanguages runs f as one subtest per page language.
func inLanguages(t *testing.T, f func(t *testing.T, lang string)) {
	for _, lang := range pageLanguages {
		t.Run(lang, func(t *testing.T) { f(t, lang) })
	}
}

// needFont fails (where the stack is required) or warns when the machine
// has no font for lang: its screenshots would show empty boxes. The stack
// script installs one per language (deploy/stack/install.sh, STACK_FONTS).
func needFont(t *testing.T, lang string) {
	t.Helper()
	if lang == "en" {
		return
	}
	if out, err := exec.Command("fc-list", ":lang="+lang).Output(); err == nil && len(bytes.TrimSpace(out)) > 0 {
		return
	}
	msg := "no font for " + lang + " (fc-list :lang=" + lang + "): its screenshots show empty boxes; bash deploy/stack/stack.sh up installs one"
	if os.Getenv("FLASHSALE_REQUIRE_STACK") == "1" {
		t.Fatal(msg)
	}
	t.Log(msg)
}

// speak makes the tab's browser ask for the tab's language, as a browser
// set to it does: the page picks its language from navigator.languages.
func (tb *tab) speak() {
	tb.t.Helper()
	bl, ok := browserLanguage[tb.lang]
	if !ok {
		tb.t.Fatalf("no browser language for %q", tb.lang)
	}
	ua := eval[string](tb, `navigator.userAgent`)
	if _, err := chromedp.Call(tb.ctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua, AcceptLanguage: bl.accept}); err != nil {
		tb.t.Fatal(err)
	}
	if _, err := chromedp.Call(tb.ctx, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: bl.locale}); err != nil {
		tb.t.Fatal(err)
	}
}

var messageFiles sync.Map // lang -> map[string]string

// say is the page's message key in lang with its placeholders filled from
// kv (name, value pairs): what the page shows.
func say(t *testing.T, lang, key string, kv ...string) string {
	t.Helper()
	m, ok := messageFiles.Load(lang)
	if !ok {
		b, err := os.ReadFile(filepath.Join(root, "gateway", "internal", "page", "assets", "i18n", lang+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var msgs map[string]string
		if err := json.Unmarshal(b, &msgs); err != nil {
			t.Fatal(err)
		}
		m, _ = messageFiles.LoadOrStore(lang, msgs)
	}
	text, ok := m.(map[string]string)[key]
	if !ok {
		t.Fatalf("no message %s in %s.json", key, lang)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		text = strings.ReplaceAll(text, "{"+kv[i]+"}", kv[i+1])
	}
	return text
}

// lead is message key in lang up to its first placeholder.
func lead(t *testing.T, lang, key string) string {
	t.Helper()
	s := say(t, lang, key)
	if i := strings.Index(s, "{"); i >= 0 {
		return s[:i]
	}
	return s
}

// seconds reads the {seconds} of message key from text, the page's line.
func seconds(t *testing.T, lang, key, text string) (int, bool) {
	t.Helper()
	re := regexp.MustCompile("^" + strings.Replace(regexp.QuoteMeta(say(t, lang, key)), `\{seconds\}`, `([0-9]+)`, 1) + "$")
	m := re.FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	n, _ := strconv.Atoi(m[1])
	return n, true
}

// logShots lists the tabs' screenshots and how many states axe audited.
func logShots(t *testing.T, tabs ...*tab) {
	var shots []string
	audited := 0
	for _, tb := range tabs {
		shots = append(shots, tb.shots...)
		audited += tb.audited
	}
	t.Logf("axe: 0 violations in %d states; screenshots: %s", audited, strings.Join(shots, " "))
}

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

// TestBrowserLanguageFromTheBrowser: the page speaks the browser's language
// (navigator.languages), formats prices and dates in its locale, and keeps
// the buyer's choice on the switch over a reload; the bytes it was served
// are the same in both.
func TestBrowserLanguageFromTheBrowser(t *testing.T) {
	need(t)
	b := browser(t)
	s := createSaleWith(t, 1, 1, 30*time.Minute, branded(map[string]any{"name": "Languages"}))
	g := startGateway(t, testenv.NewTopic(t, "browser-lang"), s, "-dev", "-relay=false", "-page-media", brandDir())
	g.waitReady(t, 20*time.Second)
	url := fmt.Sprintf("http://%s/sale/%d", g.addr, s.ID)
	want := map[string]struct{ price, date string }{"en": {"¥19,900", "From "}, "ja": {"￥19,900", "年"}}
	for _, lang := range pageLanguages {
		tb := newTab(t, b, lang, "language-phone", 390, 844, true)
		tb.do(chromedp.Navigate(url))
		tb.waitState(10*time.Second, nil, "signin")
		page := eval[struct{ Lang, Buy, Price, When, Pressed string }](tb, `({lang: document.documentElement.lang,
		  buy: document.getElementById('buy').textContent, price: document.querySelector('.price').textContent,
		  when: document.getElementById('when').textContent,
		  pressed: document.querySelector('#languages [aria-pressed=true]').dataset.lang})`)
		if page.Lang != lang || page.Buy != say(t, lang, "button.buy") || page.Price != want[lang].price ||
			!strings.Contains(page.When, want[lang].date) || page.Pressed != lang {
			t.Errorf("%s browser: %+v", lang, page)
		}
	}
	// The buyer's choice outranks the browser's language, also after a reload.
	tb := newTab(t, b, "ja", "language-switch-phone", 390, 844, true)
	tb.do(chromedp.Navigate(url))
	tb.waitState(10*time.Second, nil, "signin")
	tb.do(chromedp.Click(chromedp.CSS(`#languages [data-lang="en"]`)))
	waitFor(t, 5*time.Second, func() bool { return tb.text("buy") == say(t, "en", "button.buy") })
	tb.do(chromedp.Reload())
	tb.waitState(10*time.Second, nil, "signin")
	waitFor(t, 5*time.Second, func() bool { return eval[string](tb, `document.documentElement.lang`) == "en" })
	if st := tb.text("status"); st != say(t, "en", "status.signin") {
		t.Errorf("after switching to English and a reload: status %q", st)
	}
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
