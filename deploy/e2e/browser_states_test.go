package e2e_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/valyala/fasthttp"
)

// TestBrowserTabsAndBuyingAgain: one buyer with two tabs of one browser,
// and a second buyer, for a single unit. The tab opened before the purchase
// shows the order made in the other (not "sold out"); a cancel there is
// seen in both; the unit goes back on sale; "buy" turns on again by itself
// in the tabs of the buyer who cancelled (it was off while the item was
// sold out) and on the second buyer's sold-out page; and the buyer buys
// again from the other tab. In every language.
func TestBrowserTabsAndBuyingAgain(t *testing.T) {
	need(t)
	b := browser(t)
	inLanguages(t, func(t *testing.T, lang string) { tabsAndBuyingAgain(t, b, lang) })
}

func tabsAndBuyingAgain(t *testing.T, b context.Context, lang string) {
	s, g := startFrontDoor(t, 1, time.Second, branded(map[string]any{"name": "Two tabs"}))
	url := fmt.Sprintf("http://%s/sale/%d", g.addr, s.ID)
	a := newTab(t, b, lang, "tabs-desktop-a", 1280, 900, false)
	a.do(chromedp.Navigate(url))
	a.waitState(10*time.Second, nil, "signin")
	a.signIn("1201")
	a.waitState(10*time.Second, nil, "open")
	tabB := a.sibling("tabs-desktop-b", 1280, 900, false)
	tabB.do(chromedp.Navigate(url))
	tabB.waitState(10*time.Second, nil, "open")
	other := newTab(t, b, lang, "tabs-phone-other", 390, 844, true)
	other.do(chromedp.Navigate(url))
	other.waitState(10*time.Second, nil, "signin")
	other.signIn("1202")
	other.waitState(10*time.Second, nil, "open")

	a.do(chromedp.Click(chromedp.ID("buy")))
	a.waitState(20*time.Second, nil, "reserved")
	tabB.waitState(10*time.Second, nil, "reserved")
	if id, want := tabB.text("order-id"), a.text("order-id"); id != want || id == "" {
		t.Fatalf("the second tab shows order %q, the buyer's is %q", id, want)
	}
	if c := tabB.text("countdown"); c != "" {
		t.Errorf("the sale's line over the buyer's order: %q", c)
	}
	tabB.shot("reserved")
	other.do(chromedp.Click(chromedp.ID("buy")))
	other.waitState(10*time.Second, nil, "soldout")
	other.audit("soldout")
	other.shot("soldout")

	a.do(chromedp.Click(chromedp.ID("cancel")))
	a.waitState(20*time.Second, nil, "cancelled")
	tabB.waitState(20*time.Second, nil, "cancelled")
	a.audit("cancelled")
	a.shot("cancelled")
	// The unit is back: every page may buy again, by itself.
	for _, tb := range []*tab{a, tabB, other} {
		deadline := time.Now().Add(5 * time.Second)
		for buyOff(tb) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: buy still off 5 s after the cancel (state %s, countdown %q)", tb.name, tb.state(), tb.text("countdown"))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	other.waitState(5*time.Second, nil, "open")
	other.shot("open-again")
	tabB.do(chromedp.Click(chromedp.ID("buy")))
	tabB.waitState(20*time.Second, nil, "reserved")
	tabB.shot("reserved-again")
	a.waitState(10*time.Second, nil, "reserved") // the first tab follows
	logShots(t, a, tabB, other)
}

// TestBrowserRefusedSignIn: a token the gateway does not take (garbage, or
// expired) signs the buyer out, with the sign-in form back and a message:
// at the click when it turns bad under an open page, and as the page loads
// (an expired one by its exp, a garbage one when the page looks for the
// buyer's order). In every language.
func TestBrowserRefusedSignIn(t *testing.T) {
	need(t)
	b := browser(t)
	inLanguages(t, func(t *testing.T, lang string) {
		s, g := startFrontDoor(t, 5, 0, branded(map[string]any{"name": "Bad tokens"}))
		url := fmt.Sprintf("http://%s/sale/%d", g.addr, s.ID)
		seg := func(v string) string { return base64.RawURLEncoding.EncodeToString([]byte(v)) }
		expired := seg(`{"alg":"HS256","typ":"JWT"}`) + "." + seg(`{"sub":"1301","exp":1}`) + ".c2ln"
		for _, c := range []struct{ name, token, at string }{
			{"garbage-click", "not-a-token", "click"},
			{"garbage-load", "not-a-token", "load"},
			{"expired", expired, "load"},
		} {
			tb := newTab(t, b, lang, "token-phone-"+c.name, 390, 844, true)
			tb.do(chromedp.Navigate(url))
			tb.waitState(10*time.Second, nil, "signin")
			if c.at == "click" {
				// Signed in, then the shop's token turns bad under the open page.
				tb.signIn("1301")
				tb.waitState(10*time.Second, nil, "open")
				eval[bool](tb, `(localStorage.setItem('flashsale.token', '`+c.token+`'), true)`)
				tb.do(chromedp.Click(chromedp.ID("buy")))
			} else {
				eval[bool](tb, `(localStorage.setItem('flashsale.token', '`+c.token+`'), true)`)
				tb.do(chromedp.Reload())
			}
			tb.waitState(10*time.Second, nil, "signin")
			if alert, want := tb.text("alert"), say(t, lang, "alert.signedOut"); alert != want {
				t.Errorf("%s: alert %q, want %q", c.name, alert, want)
			}
			if !eval[bool](tb, `!document.getElementById('signin').hidden && document.getElementById('signout').hidden`) {
				t.Errorf("%s: the sign-in form is not back (who: %q)", c.name, tb.text("who"))
			}
			if tok := eval[string](tb, `localStorage.getItem('flashsale.token') || ''`); tok != "" {
				t.Errorf("%s: the refused token is kept: %q", c.name, tok)
			}
			tb.audit("signed-out")
			tb.shot("signed-out")
			logShots(t, tb)
		}
	})
}

// TestBrowserNoSuchSale: a malformed address under /sale/ gets the page
// with 404, and the page, like the one for an unknown sale id, says so with
// no buy button. In every language.
func TestBrowserNoSuchSale(t *testing.T) {
	need(t)
	b := browser(t)
	s, g := startFrontDoor(t, 1, 0, branded(map[string]any{"name": "Real one"}))
	inLanguages(t, func(t *testing.T, lang string) {
		for _, c := range []struct {
			name, path string
			status     int
			why        string
		}{
			{"malformed", "/sale/abc", 404, say(t, lang, "notFound.noSaleId")},
			// The page cannot know without the API.
			{"unknown", fmt.Sprintf("/sale/%d", s.ID+1_000_000), 200, say(t, lang, "notFound.unknown", "sale", fmt.Sprint(s.ID+1_000_000))},
		} {
			code, body, err := fasthttp.GetTimeout(nil, "http://"+g.addr+c.path, 5*time.Second)
			if err != nil || code != c.status || !strings.Contains(string(body), "<!doctype html>") {
				t.Fatalf("GET %s: %d %v, html %v; want %d and the page", c.path, code, err, strings.Contains(string(body), "<!doctype html>"), c.status)
			}
			tb := newTab(t, b, lang, "nosale-phone-"+c.name, 390, 844, true)
			tb.do(chromedp.Navigate("http://" + g.addr + c.path))
			tb.waitState(10*time.Second, nil, "notfound")
			if title, st := tb.text("title"), tb.text("status"); title != say(t, lang, "notFound.title") || st != c.why {
				t.Errorf("%s: title %q, status %q; want %q", c.name, title, st, c.why)
			}
			if !eval[bool](tb, `document.getElementById('buy').hidden && document.getElementById('account').hidden`) {
				t.Errorf("%s: the buy button or the account panel shows", c.name)
			}
			tb.audit("notfound")
			tb.shot("notfound")
			logShots(t, tb)
		}
	})
}

// TestBrowserRateLimited: a buyer over the per-user bucket (a gateway run
// with -user-rate 0.5 -user-burst 1: one request each 2 s) is told once, in
// the alert, that nothing was bought and that the page tries again by
// itself; the status line counts the Retry-After seconds down, one a
// second; then the purchase goes through without another click. In every
// language.
func TestBrowserRateLimited(t *testing.T) {
	need(t)
	b := browser(t)
	inLanguages(t, func(t *testing.T, lang string) { rateLimited(t, b, lang) })
}

func rateLimited(t *testing.T, b context.Context, lang string) {
	s, g := startFrontDoor(t, 1, 0, branded(map[string]any{"name": "Quick hands"}), "-user-rate", "0.5", "-user-burst", "1")
	url := fmt.Sprintf("http://%s/sale/%d", g.addr, s.ID)
	tb := newTab(t, b, lang, "limited-phone", 390, 844, true)
	tb.do(chromedp.Navigate(url))
	tb.waitState(10*time.Second, nil, "signin")
	tb.signIn("1401")
	tb.waitState(10*time.Second, nil, "open")
	// Spend the buyer's one token (the page may have already), so the click
	// meets the limit.
	spend := fmt.Sprintf(`fetch('/api/flash-sales/sales/%d/order', {headers: {Authorization: 'Bearer ' + localStorage.getItem('flashsale.token')}}).then((r) => r.status)`, s.ID)
	if code := eval[int](tb, spend); code != 404 && code != 429 {
		t.Fatalf("spending the bucket: %d", code)
	}
	tb.do(chromedp.Click(chromedp.ID("buy")))
	tb.waitState(5*time.Second, nil, "limited")
	if alert, want := tb.text("alert"), say(t, lang, "alert.limited"); alert != want {
		t.Errorf("alert %q, want %q", alert, want)
	}
	tb.audit("limited")
	tb.shot("limited")
	var counts []int // the seconds the status line showed, in order
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		// State and status in one read: the page may move on between two
		// (a fresh-clone run read "limited", then the purchase's status).
		seen := eval[[]string](tb, `[document.getElementById('main').dataset.state, document.getElementById('status').textContent]`)
		if seen[0] != "limited" {
			break
		}
		n, ok := seconds(t, lang, "status.tryingAgain", seen[1])
		if !ok {
			t.Fatalf("status %q, want %q", seen[1], say(t, lang, "status.tryingAgain"))
		}
		if len(counts) == 0 || counts[len(counts)-1] != n {
			counts = append(counts, n)
		}
	}
	// The ticket and then the purchase may each meet the limit: a second
	// wait starts again from at most 2 (a token every 2 s).
	if len(counts) < 2 || counts[0] > 2 {
		t.Fatalf("the countdown showed %v seconds, want it counting down from at most 2", counts)
	}
	for i := 1; i < len(counts); i++ {
		if counts[i] != counts[i-1]-1 && (counts[i-1] != 1 || counts[i] > 2) {
			t.Fatalf("the countdown went %v, want one second less each step", counts)
		}
	}
	tb.waitState(30*time.Second, nil, "reserved")
	tb.audit("reserved")
	tb.shot("reserved")
	// A pay that meets the limit says it waits, then pays by itself.
	if code := eval[int](tb, spend); code != 404 && code != 429 {
		t.Fatalf("spending the bucket: %d", code)
	}
	tb.do(chromedp.Click(chromedp.ID("pay")))
	var lines []string // the status lines seen until paid
	for deadline := time.Now().Add(30 * time.Second); tb.state() != "paid"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not paid 30 s after the click: state %s, status lines %q", tb.state(), lines)
		}
		if st := tb.text("status"); len(lines) == 0 || lines[len(lines)-1] != st {
			lines = append(lines, st)
		}
	}
	if !slices.ContainsFunc(lines, func(l string) bool { _, ok := seconds(t, lang, "status.payingBusy", l); return ok }) {
		t.Errorf("the pay's 429 was not said; status lines seen: %q", lines)
	}
	tb.shot("paid")
	t.Logf("countdown %v", counts)
	logShots(t, tb)
}
