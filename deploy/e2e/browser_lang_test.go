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
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

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
		// One after the other: side by side (t.Parallel) halved their time
		// but two pages' countdowns and budgets on two busy cores failed a
		// fresh clone's make test (a purchase answered "busy", a countdown
		// read mid-purchase).
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
