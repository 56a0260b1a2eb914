package e2e_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/valyala/fasthttp"

	"flashsale/sharding/draw"
	"flashsale/sharding/draw/beacon"
)

// The sale page's fair access (SPEC "Fair access") in the browser: a
// raffle from its countdown to the winner's purchase, with honest odds and
// the buyer's own check of the draw; a presale refusing a buyer without
// the sale's claim until the sale opens to everyone; a waiting room's
// place with its chance of a unit; and the page's draw checker against the
// Go reference of the draw. Each new state is saved at desktop and at
// phone size (shotSizes) and audited at both.

// fromNow is a time in a sale file given as its distance from when the file
// is written (createSaleWith marshals it just after reading the clock for
// startsAt): a raffle's window or a presale's start keeps its distance to
// the sale's start however long the binaries took to start.
type fromNow time.Duration

func (d fromNow) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Now().Add(time.Duration(d)).UTC().Format(time.RFC3339Nano))
}

// mintClaims signs an HS256 token for user with extra claims (a shop's
// identity provider naming the buyer's tier, say), which the development
// sign-in does not give.
func mintClaims(user uint64, exp time.Time, claims map[string]any) string {
	c := map[string]any{"sub": strconv.FormatUint(user, 10), "exp": exp.Unix()}
	maps.Copy(c, claims)
	payload, _ := json.Marshal(c)
	enc := base64.RawURLEncoding.EncodeToString
	head := enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc(payload)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(head))
	return head + "." + enc(mac.Sum(nil))
}

// signInWith opens url signed in with token (for user), put where the page
// looks for it (local storage, the page's default), as the shop's own
// sign-in would.
func (tb *tab) signInWith(url, token, user string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(url))
	tb.waitState(10*time.Second, nil, "signin")
	eval[bool](tb, `(localStorage.setItem('flashsale.token', '`+token+`'), true)`)
	tb.do(chromedp.Reload())
	deadline := time.Now().Add(10 * time.Second)
	for tb.text("who") != say(tb.t, tb.lang, "who.signedInAs", "user", user) {
		if time.Now().After(deadline) {
			tb.t.Fatalf("%s: the page does not take the token of %s: %q", tb.name, user, tb.text("who"))
		}
		time.Sleep(40 * time.Millisecond)
	}
}

// shotSizes saves and audits the page at desktop (1280x900) and at phone
// (390x844, touch) size, named <tab>-desktop-<shot> and <tab>-phone-<shot>;
// state, when not "", is the page's state the pictures must show (a page
// that moved on meanwhile fails the test rather than mislabel a picture).
// The tab stays at phone size.
func (tb *tab) shotSizes(shot, state string) {
	tb.t.Helper()
	name := tb.name
	defer func() { tb.name = name }()
	for _, v := range []struct {
		size          string
		width, height int64
		mobile        bool
	}{{"desktop", 1280, 900, false}, {"phone", 390, 844, true}} {
		tb.setup(v.width, v.height, v.mobile)
		tb.name = name + "-" + v.size
		if st := tb.state(); state != "" && st != state {
			tb.t.Fatalf("%s: the page moved on to %s before the picture of %s (a slow machine?)", tb.name, st, state)
		}
		tb.audit(shot)
		tb.shot(shot)
	}
}

// fits reports whether text is message key in lang with something in each
// placeholder; with prefix, text may go on (more sentences).
func fits(t *testing.T, lang, key, text string, prefix bool) bool {
	t.Helper()
	re := regexp.MustCompile(`\\\{\w+\\\}`).ReplaceAllString(regexp.QuoteMeta(say(t, lang, key)), "(.+?)")
	if !prefix {
		re += "$"
	}
	return regexp.MustCompile("^" + re).MatchString(text)
}

// checkState is the state of the page's check of the draw (the section's
// data-state: idle, checking, verified, test, unsealed, frozen, failed,
// pending, not-entered, error, unsupported).
func (tb *tab) checkState() string {
	return eval[string](tb, `document.getElementById('check').dataset.state`)
}

// checkResults is each check the page shows, by name, with its word
// (draw.js's, and sale.js's kept).
func (tb *tab) checkResults() map[string]string {
	return eval[map[string]string](tb, `Object.fromEntries([...document.querySelectorAll('#checks li')].map((li) => [li.dataset.check, li.dataset.result]))`)
}

// waitCheck waits until the page's check of the draw is in one of want.
func (tb *tab) waitCheck(within time.Duration, want ...string) string {
	tb.t.Helper()
	deadline := time.Now().Add(within)
	for {
		st := tb.checkState()
		if slices.Contains(want, st) {
			return st
		}
		if time.Now().After(deadline) {
			tb.t.Fatalf("%s: the check of the draw is %s (%q) after %v, want one of %v: %v", tb.name, st, tb.text("check-status"), within, want, tb.checkResults())
		}
		time.Sleep(40 * time.Millisecond)
	}
}

// verifyPlace clicks "Verify my place" and waits for the check to end; it
// fails unless every check passed: verified, or, for a draw sealed by the
// dev chain's round (the local stack's) or by none, test or unsealed.
func (tb *tab) verifyPlace() {
	tb.t.Helper()
	tb.do(chromedp.Click(chromedp.ID("verify")))
	deadline := time.Now().Add(10 * time.Second)
	for st := tb.checkState(); st == "checking" || st == "idle"; st = tb.checkState() {
		if time.Now().After(deadline) {
			tb.t.Fatalf("%s: the check of the draw is still %s after 10 s", tb.name, st)
		}
		time.Sleep(40 * time.Millisecond)
	}
	results := tb.checkResults()
	st := tb.checkState()
	if st != "verified" && st != "test" && st != "unsealed" {
		tb.t.Fatalf("%s: the check of the draw ended %s (%q): %v", tb.name, st, tb.text("check-status"), results)
	}
	for _, k := range []string{"leaf", "proof", "seed", "draw", "published", "log"} {
		if results[k] != "ok" {
			tb.t.Errorf("%s: check %s: %q, want ok (%v)", tb.name, k, results[k], results)
		}
	}
	if k := results["kept"]; k != "" && k != "ok" && k != "none" {
		tb.t.Errorf("%s: check kept: %q, want ok, or none on a device that kept no head (%v)", tb.name, k, results)
	}
	if st != "unsealed" && results["head"] != "ok" {
		tb.t.Errorf("%s: check head: %q, want ok (%v)", tb.name, results["head"], results)
	}
	if f := tb.focused(); f != "check-h" {
		tb.t.Errorf("%s: the focus is on %q after the click on verify, want the check's heading", tb.name, f)
	}
	if said := tb.text("check-status"); !fits(tb.t, tb.lang, "check."+st, said, false) {
		tb.t.Errorf("%s: the check says %q, want %q", tb.name, said, say(tb.t, tb.lang, "check."+st))
	}
}

// TestBrowserRaffle: a raffle of one unit for two buyers, its draw sealed
// by the dev chain's beacon round (2 to 3 s after the close). Before the
// entries open the page counts down to them with "Enter the raffle" off;
// then each buyer enters with a click and is told the draw's time (a
// reload still knows the entry, from GET .../draw/me); once the entries
// closed the page shows the tree head received, then, from the round, one
// buyer selected (place 1, a 100% chance) and one not selected (place 2,
// no chance shown: none is told as 0%), each with the check of the draw
// already made ("test": the dev chain proves nothing), and both check
// their place again in the browser (every check passes); a third buyer who comes after
// the close is told the entries closed. At the start the winner is
// admitted by itself and buys; the other stays not selected, and signed in
// on another device after the sell-out (no queue pass there) is still told
// not selected with the place, not sold out. In every language.
//
// The gateway must: describe the sale with "access":"raffle",
// "raffle":{"entriesOpenAt","entriesCloseAt"} and "draw":{"commitment"};
// answer the ticket endpoint 403 SALE_NOT_STARTED before the entries, 202
// QUEUED while they are open (entering the buyer; the entering answer
// carries a 32-hex "nonce"), 202 QUEUED with "place" and "chance" (1 for
// place 1) once the draw is revealed (at the beacon round's time),
// 410 NOT_SELECTED with "place" for place 2 (with or without the queue
// pass, after the sell-out too), 403 ENTRIES_CLOSED to a buyer who did not
// enter, and 200 ADMITTED to place 1 from the start; and serve
// GET .../draw/me: 200 with entered, nonce and leaf from the entry, the
// proof and the signed tree head from the freeze (a moment after the
// close), the round's signature, seed and draw from the reveal, 404
// NOT_ENTERED otherwise; and sign the dev chain's rounds (-beacon dev, the
// local stack's setting).
func TestBrowserRaffle(t *testing.T) {
	need(t)
	t.Setenv("FLASHSALE_BEACON", "dev") // flashctl seals the draw on the dev chain, the gateway signs its rounds
	b := browser(t)
	// One language per fair-access test (raffle English, presale and queue
	// Japanese): every new message is still drawn in both, and the suite
	// saves a minute of sale windows.
	t.Run("en", func(t *testing.T) { raffle(t, b, "en") })
}

func raffle(t *testing.T, b context.Context, lang string) {
	// (The start leaves the round, 2 to 3 s after the close, and the pages'
	// look at it 1 to 2 s later, time before "4 s before the start".)
	const opens, closes, starts = 10 * time.Second, 18 * time.Second, 30 * time.Second
	s, g := startFrontDoor(t, 1, starts, branded(map[string]any{"name": "Raffle drop", "ticketRequired": true, "access": "raffle",
		"raffle": map[string]any{"entriesOpen": fromNow(opens), "entriesClose": fromNow(closes)}}))
	created := s.StartsAt.Add(-starts) // when the sale file was written
	entriesOpen, entriesClose := created.Add(opens), created.Add(closes)
	url := fmt.Sprintf("http://%s/sale/%d", g.addr, s.ID)
	users := []string{"2101", "2102"}
	tabs := []*tab{newTab(t, b, lang, "raffle-a", 1280, 900, false), newTab(t, b, lang, "raffle-b", 390, 844, true)}
	for i, tb := range tabs {
		tb.do(chromedp.Navigate(url))
		tb.waitState(10*time.Second, nil, "signin")
		tb.signIn(users[i])
	}
	a := tabs[0]

	// Before the entries: a countdown to them, and the button off.
	a.waitState(5*time.Second, nil, "raffle-soon")
	if c, want := a.text("countdown"), lead(t, lang, "countdown.entriesOpen"); !strings.HasPrefix(c, want) {
		t.Errorf("countdown %q, want %q...", c, want)
	}
	if !eval[bool](a, `!document.getElementById('enter').hidden && document.getElementById('enter').getAttribute('aria-disabled') === 'true' && document.getElementById('buy').hidden`) {
		t.Error("before the entries: want the enter button shown and off, and no buy button")
	}
	if m := a.text("access-mode"); !fits(t, lang, "access.raffle", m, false) {
		t.Errorf("the access line %q, want %q", m, say(t, lang, "access.raffle"))
	}
	if c := a.text("commitment"); !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(c) {
		t.Errorf("the draw's commitment shown: %q, want 64 hex digits", c)
	}
	if time.Until(entriesOpen) < 5*time.Second {
		t.Fatalf("the machine is too slow: the entries open in %v, before the countdown could be pictured", time.Until(entriesOpen))
	}
	a.shotSizes("raffle-soon", "raffle-soon")

	// The entries: each buyer enters with a click.
	for i, tb := range tabs {
		tb.waitState(time.Until(entriesOpen)+5*time.Second, nil, "raffle-open")
		if st := tb.text("status"); !fits(t, lang, "status.raffleOpen", st, false) {
			t.Errorf("%s: status %q, want %q", tb.name, st, say(t, lang, "status.raffleOpen"))
		}
		if i == 0 {
			tb.shotSizes("raffle-open", "raffle-open")
		}
		tb.do(chromedp.Click(chromedp.ID("enter")))
		tb.waitState(10*time.Second, nil, "raffle-entered")
		if st := tb.text("status"); !fits(t, lang, "status.raffleEntered", st, true) {
			t.Errorf("%s: status %q, want %q...", tb.name, st, say(t, lang, "status.raffleEntered"))
		}
		key := fmt.Sprintf("flashsale.nonce.%d", s.ID)
		if n := eval[string](tb, `localStorage.getItem('`+key+`') || ''`); !regexp.MustCompile(`^` + users[i] + `:[0-9a-f]{32}$`).MatchString(n) {
			t.Errorf("%s: the nonce kept from the entry: %q, want %s:<32 hex> (the entering answer carries it)", tb.name, n, users[i])
		}
		if f := tb.focused(); f != "title" {
			t.Errorf("%s: the focus is on %q once entered, want the title (the enter button is gone)", tb.name, f)
		}
		if i == 0 {
			tb.shotSizes("raffle-entered", "raffle-entered")
		}
	}
	// A reload knows the entry (from the draw, not the ticket endpoint).
	a.do(chromedp.Reload())
	a.waitState(10*time.Second, nil, "raffle-entered")
	if time.Now().After(entriesClose) {
		t.Fatalf("the machine is too slow: the entries closed before both buyers were seen entered")
	}

	// The draw: the tree head received, then, from the round, place 1 is
	// selected and place 2 is not.
	var won, lost *tab
	var lostUser string
	var seen []string
	for i, tb := range tabs {
		saw := func(st string) {
			if i == 0 {
				seen = append(seen, st)
			}
		}
		switch tb.waitState(time.Until(entriesClose)+15*time.Second, saw, "selected", "not-selected") {
		case "selected":
			won = tb
		default:
			lost, lostUser = tb, users[i]
		}
	}
	if won == nil || lost == nil {
		t.Fatalf("one unit, two entrants: want one selected and one not, got %s and %s", tabs[0].state(), tabs[1].state())
	}
	if !slices.Contains(seen, "raffle-frozen") {
		t.Errorf("%s: between the close and the round the page went through %v, want the tree head received (raffle-frozen)", a.name, seen)
	}
	for _, tb := range []*tab{won, lost} {
		if st := tb.waitCheck(10*time.Second, "test", "verified", "unsealed", "failed", "error", "unsupported"); st != "test" {
			t.Errorf("%s: the check made at the reveal ended %s (%q), want test (the dev chain's round): %v", tb.name, st, tb.text("check-status"), tb.checkResults())
		}
	}
	if time.Now().After(s.StartsAt.Add(-4 * time.Second)) {
		t.Fatalf("the machine is too slow: the draw was told %v before the start", time.Until(s.StartsAt))
	}
	if p, c := won.text("place"), won.text("chance"); p != say(t, lang, "odds.place", "place", "1") || c != say(t, lang, "odds.chance", "chance", "100%") {
		t.Errorf("selected: place %q, chance %q; want place 1 at 100%%", p, c)
	}
	if st := won.text("status"); !fits(t, lang, "status.selected", st, false) {
		t.Errorf("selected: status %q, want %q", st, say(t, lang, "status.selected"))
	}
	if !buyOff(won) || eval[bool](won, `document.getElementById('buy').hidden`) {
		t.Error("selected before the start: want the buy button shown and off")
	}
	if p, c := lost.text("place"), lost.text("chance"); p != say(t, lang, "odds.place", "place", "2") || c != "" {
		t.Errorf("not selected: place %q, chance %q; want place 2 and no chance (never 0%%)", p, c)
	}
	if st, want := lost.text("status"), say(t, lang, "status.notSelected", "place", "2"); st != want {
		t.Errorf("not selected: status %q, want %q", st, want)
	}
	won.shotSizes("selected", "selected")
	lost.shotSizes("not-selected", "not-selected")

	// Each checks their place in the browser.
	won.verifyPlace()
	won.shotSizes("verified", "")
	lost.verifyPlace()
	lost.shotSizes("not-selected-verified", "not-selected")

	// A buyer who comes after the close.
	late := newTab(t, b, lang, "raffle-late", 390, 844, true)
	late.do(chromedp.Navigate(url))
	late.waitState(10*time.Second, nil, "signin")
	late.signIn("2103")
	late.waitState(10*time.Second, nil, "raffle-closed")
	if st, want := late.text("status"), say(t, lang, "status.entriesClosed"); st != want {
		t.Errorf("late: status %q, want %q", st, want)
	}
	late.shotSizes("raffle-closed", "raffle-closed")
	if al := late.text("alert"); al != "" {
		t.Errorf("late: alert %q, want none (no entry kept)", al)
	}
	// The same buyer, had this browser kept an entry of theirs (the shop
	// accepted it, then dropped it from the draw): the alarm, loudly.
	eval[bool](late, fmt.Sprintf(`localStorage.setItem('flashsale.nonce.%d', '2103:' + '5a'.repeat(16)) || true`, s.ID))
	late.do(chromedp.Reload())
	late.waitState(10*time.Second, nil, "raffle-closed")
	for deadline := time.Now().Add(5 * time.Second); late.text("alert") == "" && time.Now().Before(deadline); {
		time.Sleep(40 * time.Millisecond)
	}
	if st, want := late.text("status"), say(t, lang, "status.notInDraw"); st != want {
		t.Errorf("late, an entry kept but not in the draw: status %q, want %q", st, want)
	}
	if al := late.text("alert"); !fits(t, lang, "alert.entryDropped", al, false) || !strings.Contains(al, "5a5a5a5a5a5a") {
		t.Errorf("late, an entry kept but not in the draw: alert %q, want %q naming the nonce 5a5a5a5a5a5a…", al, say(t, lang, "alert.entryDropped"))
	}
	late.shotSizes("raffle-dropped", "raffle-closed")

	// The start: the winner is admitted by itself and buys.
	won.waitState(time.Until(s.StartsAt)+15*time.Second, nil, "open")
	if time.Now().Before(s.StartsAt) {
		t.Fatalf("admitted %v before the start", time.Until(s.StartsAt))
	}
	if st := won.text("status"); !strings.HasPrefix(st, lead(t, lang, "status.turn")) {
		t.Errorf("admitted: status %q", st)
	}
	if f := won.focused(); f != "buy" {
		t.Errorf("admitted: the focus is on %q, want the buy button", f)
	}
	won.do(chromedp.Click(chromedp.ID("buy")))
	won.waitState(20*time.Second, nil, "reserved")
	won.shot("reserved")
	if st := lost.state(); st != "not-selected" {
		t.Errorf("after the start the buyer not selected shows %s", st)
	}

	// The buyer not selected, on another device once the unit is sold (no
	// queue pass there): the draw still knows them, and a raffle's word is
	// final, so not selected with the place, never sold out.
	waitSoldOut(t, g, s.ID)
	other := newTab(t, b, lang, "raffle-other-device", 390, 844, true)
	other.do(chromedp.Navigate(url))
	other.waitState(10*time.Second, nil, "signin")
	other.signIn(lostUser)
	if st := other.waitState(15*time.Second, nil, "not-selected", "soldout", "raffle-closed"); st != "not-selected" {
		t.Errorf("the buyer not selected, on another device after the sell-out, shows %s (status %q)", st, other.text("status"))
	}
	if st, want := other.text("status"), say(t, lang, "status.notSelected", "place", "2"); st != want {
		t.Errorf("not selected on another device: status %q, want %q", st, want)
	}
	logShots(t, a, tabs[1], late)
}

// TestBrowserRaffleSealed: a raffle of two units for two buyers, its draw
// sealed by a round of the dev chain that the gateway does not sign by
// itself (-beacon quicknet: as when drand's relays are slow), so that the
// wait for the round lasts until the test hands it over. Once the entries
// close the page shows, within a second or two, "tree head received" (the
// buyer's entry is one of the 2 frozen, the root and the time of the
// freeze, checked in the browser: leaf, proof and head pass) and keeps the
// head in localStorage; a few seconds later "waiting for the beacon" (round
// R of dev, its time, and that dev is a test chain that proves nothing),
// asking GET .../draw/me every one to two seconds and no faster. The kept
// head survives a reload (the page goes straight back to the wait, with the
// same head); a head that differs from the kept one (here the kept copy is
// changed, which the page cannot tell from the shop serving another) is
// said loudly, in the alert, and fails the check. Once the round is
// recorded (flashctl sale draw beacon, as an operator hands it to gateways
// that reach no relay) each page shows, within a poll, the buyer selected
// with the whole draw checked: "test" on the dev chain, the kept head
// unchanged, or failed where it changed. Each new state is saved and
// audited at desktop and phone size.
//
// The gateway must: describe the sale with "draw":{"commitment","chain",
// "round","headKey"}; from the freeze (a moment after the close) serve
// GET .../draw/me with the buyer's leaf, index, count, root, proof, the
// signed "head" ({sale,count,root,frozenAtMs,chain,round,signature}) and
// "beacon" ({chain,name,round,at}), and GET .../draw as FROZEN with the
// same root, count and head; wait for the round while it is not recorded
// (-beacon quicknet signs no dev round); take the round recorded in Redis
// by flashctl, verify it and reveal: GET .../draw/me adds the round's
// signature, draw, place, seed and commitment, with the same head.
func TestBrowserRaffleSealed(t *testing.T) {
	need(t)
	t.Setenv("FLASHSALE_BEACON", "dev") // flashctl seals the draw on the dev chain
	b := browser(t)
	// Both languages in one sale: the phone asks for Japanese, the desktop
	// for English. Each tab's states are checked in its own language (the
	// tree head is English in TestBrowserRaffle: the window between the
	// freeze and the round's time is too short for two tabs).
	raffleSealed(t, b, "ja", "en")
}

func raffleSealed(t *testing.T, b context.Context, lang, other string) {
	// The entries close 12 s after the sale is written (two buyers sign in
	// and enter); the round is held as long as the test needs, well before
	// the start.
	const closes, starts = 12 * time.Second, time.Minute
	s, g := startFrontDoor(t, 2, starts, branded(map[string]any{"name": "Sealed drop", "ticketRequired": true, "access": "raffle",
		"raffle": map[string]any{"entriesOpen": fromNow(0), "entriesClose": fromNow(closes)}}), "-beacon", "quicknet")
	d := s.Draw
	if d == nil || d.Round == 0 {
		t.Fatalf("the sale's draw is not sealed by a beacon round: %+v", d)
	}
	if c, err := beacon.ByHash(d.Chain); err != nil || c != beacon.Dev {
		t.Fatalf("the sale's draw is sealed by chain %s (%v), want the dev chain (FLASHSALE_BEACON=dev)", d.Chain, err)
	}
	roundAt := beacon.Dev.TimeOf(d.Round)
	entriesClose := s.StartsAt.Add(-starts).Add(closes)
	url := fmt.Sprintf("http://%s/sale/%d", g.addr, s.ID)
	headKey := fmt.Sprintf("flashsale.head.%d", s.ID)
	round := strconv.FormatUint(d.Round, 10)
	users := []string{"2401", "2402"}
	a := newTab(t, b, lang, "sealed-a", 390, 844, true)
	o := newTab(t, b, other, "sealed-b", 1280, 900, false)
	for i, tb := range []*tab{a, o} {
		tb.do(chromedp.Navigate(url))
		tb.waitState(10*time.Second, nil, "signin")
		tb.signIn(users[i])
		tb.waitState(10*time.Second, nil, "raffle-open")
		tb.do(chromedp.Click(chromedp.ID("enter")))
		tb.waitState(10*time.Second, nil, "raffle-entered")
	}
	if time.Now().After(entriesClose) {
		t.Fatalf("the machine is too slow: the entries closed before both buyers were seen entered")
	}
	if m := a.text("access-test"); !fits(t, lang, "access.testChain", m, false) || !strings.Contains(m, "dev") {
		t.Errorf("the access panel says %q, want %q naming dev", m, say(t, lang, "access.testChain"))
	}

	// Tree head received: the entry among the frozen, checked, kept.
	a.waitState(time.Until(entriesClose)+5*time.Second, nil, "raffle-frozen")
	pub := getJSON(t, fmt.Sprintf("http://%s/api/flash-sales/sales/%d/draw", g.addr, s.ID))
	root, _ := pub["root"].(string)
	if pub["state"] != "FROZEN" || pub["count"] != 2.0 || len(root) != 64 || pub["head"] == nil {
		t.Fatalf("the published draw after the close: %v, want FROZEN, 2 entries, a root and a head", pub)
	}
	st := a.text("status")
	if !fits(t, lang, "status.sealHead", st, true) || !strings.Contains(st, root[:12]) || !strings.Contains(st, "2") ||
		!strings.HasSuffix(st, say(t, lang, "seal.checked")) {
		t.Errorf("tree head received: status %q, want %q with 2 entries and root %s…, then %q", st, say(t, lang, "status.sealHead"), root[:12], say(t, lang, "seal.checked"))
	}
	if c, want := a.text("countdown"), lead(t, lang, "countdown.beacon"); !strings.HasPrefix(c, want) && !strings.HasPrefix(c, lead(t, lang, "countdown.beaconDue")) {
		t.Errorf("tree head received: countdown %q, want %q...", c, want)
	}
	if st := a.waitCheck(5*time.Second, "frozen", "failed", "error", "unsupported"); st != "frozen" {
		t.Errorf("tree head received: the check ended %s (%q): %v", st, a.text("check-status"), a.checkResults())
	}
	want := map[string]string{"leaf": "ok", "proof": "ok", "head": "ok", "kept": "ok", "seed": "pending", "beacon": "pending", "draw": "pending", "published": "pending",
		"log": "pending"}
	if r := a.checkResults(); !maps.Equal(r, want) {
		t.Errorf("tree head received: the checks say %v, want %v", r, want)
	}
	var kept struct {
		User string         `json:"user"`
		At   int64          `json:"at"`
		Head map[string]any `json:"head"`
	}
	keptRaw := eval[string](a, `localStorage.getItem('`+headKey+`') || ''`)
	if err := json.Unmarshal([]byte(keptRaw), &kept); err != nil || kept.User != users[0] || !reflect.DeepEqual(kept.Head, pub["head"]) {
		t.Errorf("the head kept in %s: %s (%v), want user %s's with the published head %v", headKey, keptRaw, err, users[0], pub["head"])
	}
	if kept.At >= roundAt.UnixMilli() {
		t.Errorf("the head was kept at %d, at or after the round's time %d", kept.At, roundAt.UnixMilli())
	}
	a.shotSizes("sealed-head", "raffle-frozen")

	// Waiting for the beacon: its round, chain and time; the test chain
	// said; no hammering.
	for _, tb := range []*tab{a, o} {
		sealedWaits(t, tb, round)
	}
	countAsks(t, a, roundAt)

	sealedKeptAndChanged(t, a, o, headKey, keptRaw, root)

	// The round, recorded as an operator hands it to gateways that reach
	// no relay: each page shows its place within a poll, checked.
	raffleSealedRevealed(t, a, o, lang, s.ID, d.Round)
}

// sealedWaits checks tb waiting for the beacon, in its language: the
// round, its chain (the test chain said) and the head kept; no alert.
func sealedWaits(t *testing.T, tb *tab, round string) {
	t.Helper()
	lang := tb.lang
	tb.waitState(10*time.Second, nil, "raffle-beacon")
	st := tb.text("status")
	if !fits(t, lang, "status.sealWait", st, true) || !strings.Contains(st, round) || !strings.Contains(st, say(t, lang, "seal.testChain", "chain", "dev")) ||
		!strings.HasSuffix(st, say(t, lang, "seal.kept")) {
		t.Errorf("%s: waiting for the beacon: status %q, want %q with round %s of dev, %q and %q", tb.name, st, say(t, lang, "status.sealWait"), round,
			say(t, lang, "seal.testChain", "chain", "dev"), say(t, lang, "seal.kept"))
	}
	if c := tb.text("countdown"); c != say(t, lang, "countdown.beaconDue", "round", round) && !fits(t, lang, "countdown.beacon", c, false) {
		t.Errorf("%s: waiting for the beacon: countdown %q, want %q or %q", tb.name, c, say(t, lang, "countdown.beacon"), say(t, lang, "countdown.beaconDue", "round", round))
	}
	if al := tb.text("alert"); al != "" {
		t.Errorf("%s: waiting for the beacon: alert %q, want none", tb.name, al)
	}
	tb.shotSizes("sealed-wait", "raffle-beacon")
}

// queueWitnessed: between the queue's freeze and its round the page keeps
// the signed tree head, as a raffle entrant's does, and checks the entry
// against it ("frozen"); the test then hands the round, as an operator
// would to gateways that reach no relay.
func queueWitnessed(t *testing.T, tb *tab, s *createdSale) {
	t.Helper()
	headKey := fmt.Sprintf("flashsale.head.%d", s.ID)
	for deadline := s.StartsAt.Add(15 * time.Second); eval[string](tb, `localStorage.getItem('`+headKey+`') || ''`) == ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("queued: no tree head kept 15 s after the start (state %s, status %q)", tb.state(), tb.text("status"))
		}
	}
	if st := tb.waitCheck(10*time.Second, "frozen", "failed", "error", "unsupported"); st != "frozen" {
		t.Errorf("queued, the head kept: the check ended %s (%q): %v", st, tb.text("check-status"), tb.checkResults())
	}
	if r := tb.checkResults(); r["head"] != "ok" || r["proof"] != "ok" || r["log"] != "pending" {
		t.Errorf("queued, the head kept: the checks say %v, want head and proof ok, the log pending", r)
	}
	// The status goes on with the wait for the round, as a raffle's.
	round := strconv.FormatUint(s.Draw.Round, 10)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(tb.text("status"), say(t, tb.lang, "seal.kept")); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			break
		}
	}
	if st := tb.text("status"); !strings.Contains(st, round) || !strings.Contains(st, say(t, tb.lang, "seal.testChain", "chain", "dev")) ||
		!strings.HasSuffix(st, say(t, tb.lang, "seal.kept")) {
		t.Errorf("queued, the head kept: status %q, want the wait for round %s of dev, %q and %q", st, round,
			say(t, tb.lang, "seal.testChain", "chain", "dev"), say(t, tb.lang, "seal.kept"))
	}
	tb.shotSizes("queue-head", "queued")
	sig, err := beacon.Dev.Sign(s.Draw.Round)
	if err != nil {
		t.Fatal(err)
	}
	flashctl(t, "sale", "draw", "beacon", "--sale", strconv.FormatInt(s.ID, 10), "--signature", hex.EncodeToString(sig))
}

// countAsks counts a's asks of .../draw/me while the round is due: one every
// 1 to 2 s, no hammering.
func countAsks(t *testing.T, a *tab, roundAt time.Time) {
	t.Helper()
	asks := func(tb *tab) int {
		return eval[int](tb, `performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/draw/me')).length`)
	}
	time.Sleep(time.Until(roundAt.Add(time.Second)))
	n0 := asks(a)
	const watch = 8 * time.Second
	time.Sleep(watch)
	switch n := asks(a) - n0; {
	case time.Since(roundAt) > 30*time.Second: // (then every 4 to 6 s)
		t.Logf("the machine is slow: the round was due %v before the asks were counted (%d in %v)", time.Since(roundAt), n, watch)
	case n < 3 || n > 9:
		t.Errorf("waiting for a round that is due: %d asks of .../draw/me in %v, want one every 1 to 2 s", n, watch)
	default:
		t.Logf("waiting for a round that is due: %d asks of .../draw/me in %v", n, watch)
	}
}

// sealedKeptAndChanged: the kept head survives a reload, and another head
// than the one kept raises the alarm.
func sealedKeptAndChanged(t *testing.T, a, o *tab, headKey, keptRaw, root string) {
	t.Helper()
	// The kept head survives a reload: straight back to the wait, the same
	// head kept, and the shop's still the one kept.
	var seen []string
	a.do(chromedp.Reload())
	a.waitState(10*time.Second, func(st string) { seen = append(seen, st) }, "raffle-beacon")
	if slices.Contains(seen, "raffle-frozen") || slices.Contains(seen, "raffle-entered") {
		t.Errorf("reloaded: the page went through %v to the wait, want straight to it with the head kept", seen)
	}
	if after := eval[string](a, `localStorage.getItem('`+headKey+`') || ''`); after != keptRaw {
		t.Errorf("reloaded: the head kept is now %s, was %s", after, keptRaw)
	}
	if st := a.waitCheck(10*time.Second, "frozen", "failed", "error", "unsupported"); st != "frozen" || a.checkResults()["kept"] != "ok" {
		t.Errorf("reloaded: the check ended %s: %v, want frozen with the head kept ok", st, a.checkResults())
	}

	// Another head than the one kept: the shop changed its root after the
	// fact. Said loudly, whatever else the page says.
	const flipRoot = `(() => { const k = '%s'; const v = JSON.parse(localStorage.getItem(k));
		v.head.root = (v.head.root[0] === '0' ? '1' : '0') + v.head.root.slice(1); localStorage.setItem(k, JSON.stringify(v)); return true; })()`
	eval[bool](o, fmt.Sprintf(flipRoot, headKey))
	o.do(chromedp.Reload())
	o.waitState(10*time.Second, nil, "raffle-beacon")
	for deadline := time.Now().Add(10 * time.Second); o.text("alert") == ""; time.Sleep(40 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: a head other than the one kept: no alert after 10 s (status %q)", o.name, o.text("status"))
		}
	}
	if al := o.text("alert"); !fits(t, o.lang, "alert.headChanged", al, false) || !strings.Contains(al, root[:12]) {
		t.Errorf("%s: a head other than the one kept: alert %q, want %q naming the root %s…", o.name, al, say(t, o.lang, "alert.headChanged"), root[:12])
	}
	if st := o.waitCheck(10*time.Second, "failed", "frozen", "error", "unsupported"); st != "failed" || o.checkResults()["kept"] != "changed" {
		t.Errorf("%s: a head other than the one kept: the check ended %s: %v, want failed on kept (changed)", o.name, st, o.checkResults())
	}
	o.shotSizes("sealed-changed", "raffle-beacon")
}

// raffleSealedRevealed hands the round and checks each page's result; o's
// check fails on its changed kept head.
func raffleSealedRevealed(t *testing.T, a, o *tab, lang string, sale int64, round uint64) {
	t.Helper()
	sig, err := beacon.Dev.Sign(round)
	if err != nil {
		t.Fatal(err)
	}
	handed := time.Now()
	flashctl(t, "sale", "draw", "beacon", "--sale", strconv.FormatInt(sale, 10), "--signature", hex.EncodeToString(sig))
	a.waitState(10*time.Second, nil, "selected")
	if late := time.Since(handed); late > 5*time.Second {
		t.Errorf("the page showed the result %v after the round was recorded, want within its next ask (1 to 2 s)", late)
	}
	if st := a.waitCheck(10*time.Second, "test", "verified", "unsealed", "failed", "error", "unsupported"); st != "test" {
		t.Errorf("revealed: the check ended %s (%q), want test (the dev chain's round): %v", st, a.text("check-status"), a.checkResults())
	}
	want := map[string]string{"leaf": "ok", "proof": "ok", "head": "ok", "kept": "ok", "seed": "ok", "beacon": "test", "draw": "ok", "published": "ok", "log": "ok"}
	if r := a.checkResults(); !maps.Equal(r, want) {
		t.Errorf("revealed: the checks say %v, want %v", r, want)
	}
	if said := a.text("check-status"); !fits(t, lang, "check.test", said, false) {
		t.Errorf("revealed: the check says %q, want %q", said, say(t, lang, "check.test"))
	}
	if st := a.text("status"); !fits(t, lang, "status.selected", st, false) {
		t.Errorf("revealed: status %q, want %q", st, say(t, lang, "status.selected"))
	}
	if al := a.text("alert"); al != "" {
		t.Errorf("revealed: alert %q, want none", al)
	}
	a.shotSizes("sealed-verified", "selected")
	o.waitState(10*time.Second, nil, "selected")
	if st := o.waitCheck(10*time.Second, "failed", "test", "verified", "error", "unsupported"); st != "failed" || o.checkResults()["kept"] != "changed" {
		t.Errorf("%s: revealed, the head kept not the shop's: the check ended %s: %v, want failed on kept (changed)", o.name, st, o.checkResults())
	}
	if al := o.text("alert"); !fits(t, o.lang, "alert.headChanged", al, false) {
		t.Errorf("%s: revealed, the head kept not the shop's: alert %q, want %q", o.name, al, say(t, o.lang, "alert.headChanged"))
	}
	logShots(t, a, o)
}

// getJSON reads url's JSON object.
func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	code, body, err := fasthttp.GetTimeout(nil, url, 5*time.Second)
	if err != nil || code != 200 {
		t.Fatalf("GET %s: %d %s %v", url, code, body, err)
	}
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, body)
	}
	return v
}

// waitSoldOut waits until gateway g describes sale id as sold out.
func waitSoldOut(t *testing.T, g *gateway, id int64) {
	t.Helper()
	url := fmt.Sprintf("http://%s/api/flash-sales/sales/%d", g.addr, id)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, body, err := fasthttp.GetTimeout(nil, url, time.Second)
		if err == nil && code == 200 && strings.Contains(string(body), `"status":"SOLD_OUT"`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sale %d not described as sold out 10 s after its last unit was bought: %d %s %v", id, code, body, err)
		}
	}
}

// TestBrowserPresale: a sale whose presale is for tokens with the claim
// tier=gold, capped at one unit. A buyer without the claim may try (the page
// cannot know the claims the gateway checks) and is told the phase is for
// gold buyers, with a countdown to the sale for everyone; a gold buyer buys;
// a second gold buyer finds the presale's unit sold; at the start both
// refused buyers' pages open by themselves and the first buys. In every
// language.
//
// The gateway must: describe the sale with "presale":{"startsAt","claim":
// "tier","values":["gold"],"cap":1} (and "phase"); answer the ticket
// endpoint, or the purchase, 403 PRESALE_ONLY with the general start as
// "startsAt" to a token without tier=gold during the presale, 403
// PRESALE_SOLD_OUT once the presale sold its cap, and sell as usual from
// the start.
func TestBrowserPresale(t *testing.T) {
	need(t)
	b := browser(t)
	t.Run("ja", func(t *testing.T) { presale(t, b, "ja") })
}

func presale(t *testing.T, b context.Context, lang string) {
	const starts = 20 * time.Second
	s, g := startFrontDoor(t, 3, starts, branded(map[string]any{"name": "Gold drop", "ticketRequired": true,
		"presale": map[string]any{"startsAt": fromNow(3 * time.Second), "claim": "tier", "values": []string{"gold"}, "cap": 1}}))
	url := fmt.Sprintf("http://%s/sale/%d", g.addr, s.ID)
	exp := time.Now().Add(time.Hour)

	// Without the claim: the presale is on, the click is refused.
	plain := newTab(t, b, lang, "presale-plain", 1280, 900, false)
	plain.do(chromedp.Navigate(url))
	plain.waitState(10*time.Second, nil, "signin")
	plain.signIn("2201")
	plain.waitState(10*time.Second, nil, "open")
	if c, want := plain.text("countdown"), lead(t, lang, "countdown.presaleOpen"); !strings.HasPrefix(c, want) {
		t.Errorf("countdown in the presale %q, want %q...", c, want)
	}
	if ph := plain.text("access-phase"); !fits(t, lang, "access.presaleNow", ph, false) || !strings.Contains(ph, "gold") {
		t.Errorf("the presale's line %q, want %q naming gold", ph, say(t, lang, "access.presaleNow"))
	}
	plain.shotSizes("presale-open", "open")
	plain.do(chromedp.Click(chromedp.ID("buy")))
	plain.waitState(10*time.Second, nil, "presale-only")
	if st := plain.text("status"); !fits(t, lang, "status.presaleOnly", st, false) || !strings.Contains(st, "gold") {
		t.Errorf("presale-only: status %q, want %q naming gold", st, say(t, lang, "status.presaleOnly"))
	}
	if c, want := plain.text("countdown"), lead(t, lang, "countdown.general"); !strings.HasPrefix(c, want) {
		t.Errorf("presale-only: countdown %q, want %q...", c, want)
	}
	if !buyOff(plain) {
		t.Error("presale-only: buy is on")
	}
	plain.shotSizes("presale-only", "presale-only")

	// A gold buyer buys the presale's one unit; the next one finds it sold.
	gold := newTab(t, b, lang, "presale-gold", 1280, 900, false)
	gold.signInWith(url, mintClaims(2202, exp, map[string]any{"tier": "gold"}), "2202")
	gold.waitState(10*time.Second, nil, "open")
	gold.do(chromedp.Click(chromedp.ID("buy")))
	gold.waitState(20*time.Second, nil, "reserved")
	gold.shot("presale-reserved")
	late := newTab(t, b, lang, "presale-gold-late", 390, 844, true)
	late.signInWith(url, mintClaims(2203, exp, map[string]any{"tier": "gold"}), "2203")
	late.waitState(10*time.Second, nil, "open")
	late.do(chromedp.Click(chromedp.ID("buy")))
	late.waitState(20*time.Second, nil, "presale-soldout")
	if st := late.text("status"); !fits(t, lang, "status.presaleSoldOut", st, false) {
		t.Errorf("presale-soldout: status %q, want %q", st, say(t, lang, "status.presaleSoldOut"))
	}
	if time.Until(s.StartsAt) < 4*time.Second {
		t.Fatalf("the machine is too slow: the sale opens to everyone in %v, before the presale's states could be pictured", time.Until(s.StartsAt))
	}
	late.shotSizes("presale-soldout", "presale-soldout")

	// The sale for everyone: both refused pages open by themselves.
	for _, tb := range []*tab{plain, late} {
		tb.waitState(time.Until(s.StartsAt)+5*time.Second, nil, "open")
		if time.Now().Before(s.StartsAt.Add(-100 * time.Millisecond)) {
			t.Fatalf("%s: open %v before the start", tb.name, time.Until(s.StartsAt))
		}
		if st, want := tb.text("status"), say(t, lang, "status.open"); st != want {
			t.Errorf("%s: status %q at the start, want %q", tb.name, st, want)
		}
	}
	plain.do(chromedp.Click(chromedp.ID("buy")))
	plain.waitState(20*time.Second, nil, "reserved")
	plain.shot("reserved")
	logShots(t, plain, gold, late)
}

// TestBrowserQueueOdds: a waiting room that admits slowly (admit factor
// 0.01: the first place in about half a minute) with a crowd of twelve in
// its pre-queue besides the buyer's page. Once the draw is revealed the page
// shows the buyer's place and chance of a unit (a whole percent, "under 1%",
// never 0%), and the buyer's check of the place passes. In every language.
//
// The gateway must: answer a pre-queue join 202 QUEUED with a "nonce",
// then, from the reveal (the start window's close), 202 QUEUED with "place"
// (1 to 13) and "chance"; and serve GET .../draw/me as for a raffle.
func TestBrowserQueueOdds(t *testing.T) {
	need(t)
	t.Setenv("FLASHSALE_BEACON", "dev") // flashctl seals the draw on the dev chain
	b := browser(t)
	t.Run("ja", func(t *testing.T) { queueOdds(t, b, "ja") })
}

func queueOdds(t *testing.T, b context.Context, lang string) {
	// The gateway asks quicknet's relays (none here) for the dev chain's
	// round: the draw waits for it until the test hands it.
	s, g := startFrontDoor(t, 3, 10*time.Second, branded(map[string]any{"name": "Slow queue", "ticketRequired": true,
		"waitingRoom": map[string]any{"preQueue": "1m", "admitFactor": 0.01}}), "-beacon", "quicknet")
	if s.Draw == nil || s.Draw.Round == 0 {
		t.Fatalf("the queue's draw is not sealed by a beacon round: %+v", s.Draw)
	}
	for _, c := range crowd(t, 12) {
		if code := joinRoom(g, s.ID, c); code != 202 {
			t.Fatalf("a crowd's join of the pre-queue: %d, want 202", code)
		}
	}
	tb := newTab(t, b, lang, "queue", 1280, 900, false)
	tb.do(chromedp.Navigate(fmt.Sprintf("http://%s/sale/%d", g.addr, s.ID)))
	tb.waitState(10*time.Second, nil, "signin")
	tb.signIn("2301")
	tb.waitState(10*time.Second, nil, "queued")
	if m := tb.text("access-mode"); m != say(t, lang, "access.queue") {
		t.Errorf("the access line %q, want %q", m, say(t, lang, "access.queue"))
	}
	queueWitnessed(t, tb, s)
	// The entries close 2 s after the start; the place follows.
	deadline := s.StartsAt.Add(15 * time.Second)
	for tb.text("chance") == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no chance shown 15 s after the start: state %s, status %q, place %q", tb.state(), tb.text("status"), tb.text("place"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st := tb.state(); st != "queued" {
		t.Fatalf("state %s with a chance shown, want queued", st)
	}
	place := regexp.MustCompile(`[0-9]+`).FindString(tb.text("place"))
	if n, _ := strconv.Atoi(place); n < 1 || n > 13 || tb.text("place") != say(t, lang, "odds.place", "place", place) {
		t.Errorf("place %q: want 1 to 13", tb.text("place"))
	}
	c := tb.text("chance")
	pct := regexp.MustCompile(`^(100|[1-9]?[0-9])%$`)
	m := regexp.MustCompile(`[0-9]+%`).FindString(c)
	if !pct.MatchString(m) || (c != say(t, lang, "odds.chance", "chance", m) && c != say(t, lang, "odds.chanceUnder", "chance", "1%")) || m == "0%" {
		t.Errorf("chance %q: want %q with a whole percent, or %q", c, say(t, lang, "odds.chance"), say(t, lang, "odds.chanceUnder", "chance", "1%"))
	}
	tb.shotSizes("queued-odds", "queued")
	tb.verifyPlace()
	if k := tb.checkResults()["kept"]; k != "ok" {
		t.Errorf("revealed: check kept %q, want ok (the head kept before the round is the shop's)", k)
	}
	tb.shotSizes("queue-verified", "queued")
	t.Logf("place %s, %s", place, c)
	logShots(t, tb)
}

// joinRoom asks for b's ticket of sale once (a join of its waiting room)
// and returns the status.
func joinRoom(g *gateway, saleID int64, b buyer) int {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod("POST")
	req.SetRequestURI(fmt.Sprintf("http://%s/api/flash-sales/sales/%d/ticket", g.addr, saleID))
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("X-Forwarded-For", b.ip)
	if err := client.DoTimeout(req, resp, 10*time.Second); err != nil {
		return 0
	}
	return resp.StatusCode()
}

// TestBrowserDrawChecker: the page's checker (draw.js, Web Crypto) agrees
// with the Go reference (sharding/draw) on every entrant of trees of 1 to 13
// leaves, and names the check that fails for each way a shop could cheat: a
// changed nonce, another user's entry, a sibling, the root or the count
// changed (an entrant added or dropped), a seed that is not the committed
// one, a commitment that is not the sale's (or none), an aimed draw; and
// the checks it cannot make yet before the reveal. It needs Chromium only:
// the checker is served from the source tree on 127.0.0.1 (a secure
// context, where browsers give Web Crypto).
func TestBrowserDrawChecker(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test (skipped with -short)")
	}
	b := browser(t)
	addr := serveChecker(t)
	tb := newTab(t, b, "en", "draw-checker", 800, 600, false)
	tb.do(chromedp.Navigate("http://" + addr + "/"))

	type drawCase struct {
		Name string            `json:"name"`
		Me   map[string]any    `json:"me"`
		Ctx  map[string]any    `json:"ctx"`
		Want map[string]string `json:"-"`
	}
	// flip changes the first hex digit of h.
	flip := func(h string) string {
		if h[0] == '0' {
			return "1" + h[1:]
		}
		return "0" + h[1:]
	}
	const saleID = 4_000_000_123
	seed := draw.NewSeed()
	var cases []drawCase
	for _, n := range []int{1, 2, 3, 5, 8, 13} {
		users := make([]uint64, n)
		nonces := make([]draw.Nonce, n)
		leaves := make([]draw.Hash, n)
		byLeaf := map[draw.Hash]int{}
		for i := range users {
			users[i] = uint64(5000 + i)
			if i == n-1 {
				users[i] = 1<<64 - 1 // the largest user id: all eight bytes
			}
			nonces[i] = draw.NewNonce()
			leaves[i] = draw.Leaf(saleID, users[i], nonces[i])
			byLeaf[leaves[i]] = i
		}
		draw.Sort(leaves)
		root := draw.Root(leaves)
		draws, places := draw.Places(seed, root, leaves)
		for i, l := range leaves {
			u := byLeaf[l]
			proof := []string{}
			for _, p := range draw.Proof(leaves, i) {
				proof = append(proof, p.String())
			}
			me := func() map[string]any {
				return map[string]any{"saleId": saleID, "entered": true, "nonce": hex.EncodeToString(nonces[u][:]), "leaf": l.String(),
					"index": i, "count": n, "root": root.String(), "proof": slices.Clone(proof), "draw": draws[i].String(),
					"place": places[i], "seed": seed.String(), "commitment": draw.Commitment(seed).String()}
			}
			ctx := func() map[string]any {
				return map[string]any{"saleId": strconv.Itoa(saleID), "userId": strconv.FormatUint(users[u], 10),
					"commitment": draw.Commitment(seed).String(), "nonce": hex.EncodeToString(nonces[u][:])}
			}
			// A draw sealed by no beacon round (those are gateway/internal/page's
			// TestBrowserDrawCheck).
			ok := map[string]string{"leaf": "ok", "proof": "ok", "head": "unsealed", "seed": "ok", "beacon": "unsealed", "draw": "ok"}
			with := func(kv ...string) map[string]string {
				w := maps.Clone(ok)
				for j := 0; j+1 < len(kv); j += 2 {
					w[kv[j]] = kv[j+1]
				}
				return w
			}
			add := func(name string, want map[string]string, change func(me, ctx map[string]any)) {
				c := drawCase{Name: fmt.Sprintf("%d leaves, index %d: %s", n, i, name), Me: me(), Ctx: ctx(), Want: want}
				change(c.Me, c.Ctx)
				cases = append(cases, c)
			}
			add("as published", ok, func(me, ctx map[string]any) {})
			add("another user's entry", with("leaf", "mismatch", "proof", "mismatch", "draw", "mismatch"), func(me, ctx map[string]any) { ctx["userId"] = "42" })
			add("a nonce other than the one kept", with("leaf", "nonce"), func(me, ctx map[string]any) { ctx["nonce"] = flip(ctx["nonce"].(string)) })
			add("another sale", with("leaf", "mismatch", "proof", "mismatch", "draw", "mismatch"), func(me, ctx map[string]any) { ctx["saleId"] = "8" })
			add("the root changed", with("proof", "mismatch", "draw", "mismatch"), func(me, ctx map[string]any) { me["root"] = flip(me["root"].(string)) })
			if len(proof) > 0 {
				add("a sibling changed", with("proof", "mismatch"), func(me, ctx map[string]any) {
					p := me["proof"].([]string)
					p[0] = flip(p[0])
				})
			}
			for _, d := range []int{-1, 1} {
				if n+d < 1 {
					continue
				}
				want := with("proof", "mismatch")
				if draw.VerifyInclusion(l, i, n+d, draw.Proof(leaves, i), root) {
					want = ok
				}
				add(fmt.Sprintf("the count %+d", d), want, func(me, ctx map[string]any) { me["count"] = n + d })
			}
			if n > 1 {
				add("another index", with("proof", "mismatch"), func(me, ctx map[string]any) { me["index"] = (i + 1) % n })
			}
			add("a seed not committed", with("seed", "mismatch", "draw", "mismatch"), func(me, ctx map[string]any) { me["seed"] = flip(me["seed"].(string)) })
			add("a commitment not the sale's", with("seed", "commitment"), func(me, ctx map[string]any) { ctx["commitment"] = flip(ctx["commitment"].(string)) })
			add("no commitment published", with("seed", "absent"), func(me, ctx map[string]any) { ctx["commitment"] = nil })
			add("an aimed draw", with("draw", "mismatch"), func(me, ctx map[string]any) { me["draw"] = flip(me["draw"].(string)) })
			add("before the reveal", with("proof", "pending", "seed", "pending", "draw", "pending"), func(me, ctx map[string]any) {
				for _, k := range []string{"index", "count", "root", "proof", "draw", "place", "seed", "commitment"} {
					delete(me, k)
				}
			})
			add("a malformed proof", with("proof", "malformed"), func(me, ctx map[string]any) { me["proof"] = []string{"zz"} })
		}
	}
	in, _ := json.Marshal(cases)
	got := eval[[]map[string]string](tb, `Promise.all(`+string(in)+`.map((c) => FlashSale.draw.verify(c.me, c.ctx)))`)
	if len(got) != len(cases) {
		t.Fatalf("%d answers for %d cases", len(got), len(cases))
	}
	for i, c := range cases {
		if !maps.Equal(got[i], c.Want) {
			t.Errorf("%s: the page says %v, want %v", c.Name, got[i], c.Want)
		}
	}
	t.Logf("%d cases", len(cases))
	publishedCases(t, tb, seed, flip)
}

// publishedCases checks draw.js's check of the public draw against a draw
// made in Go: the draw as published passes; a one-leaf tree served to the
// buyer alone (their own root), a moved place, a draw not from the seed, an
// entrant added, leaves out of order, and a draw of more than one page
// each answer as they must.
func publishedCases(t *testing.T, tb *tab, seed draw.Hash, flip func(string) string) {
	t.Helper()
	const saleID, n = 4_000_000_124, 9
	leaves := make([]draw.Hash, n)
	for i := range leaves {
		leaves[i] = draw.Leaf(saleID, uint64(7000+i), draw.NewNonce())
	}
	draw.Sort(leaves)
	root := draw.Root(leaves)
	draws, places := draw.Places(seed, root, leaves)
	doc := func() map[string]any {
		es := make([]map[string]any, n)
		for i := range es {
			es[i] = map[string]any{"leaf": leaves[i].String(), "draw": draws[i].String(), "place": places[i]}
		}
		return map[string]any{"state": "REVEALED", "root": root.String(), "count": n, "seed": seed.String(),
			"commitment": draw.Commitment(seed).String(), "from": 0, "entries": es}
	}
	me := func(i int) map[string]any {
		return map[string]any{"root": root.String(), "count": n, "seed": seed.String(), "commitment": draw.Commitment(seed).String(),
			"index": i, "leaf": leaves[i].String(), "draw": draws[i].String(), "place": places[i]}
	}
	type pcase struct {
		Name string         `json:"name"`
		Me   map[string]any `json:"me"`
		Doc  map[string]any `json:"doc"`
		Want string         `json:"-"`
	}
	entries := func(d map[string]any) []map[string]any { return d["entries"].([]map[string]any) }
	cases := []pcase{{Name: "as published", Me: me(3), Doc: doc(), Want: "ok"}}
	alone := me(3) // a tree of the buyer's leaf alone, as a cheating shop could serve .../draw/me
	alone["count"], alone["index"], alone["place"] = 1, 0, 1
	cases = append(cases, pcase{"the buyer's own one-leaf tree", alone, doc(), "mismatch"})
	moved := doc()
	entries(moved)[0]["place"], entries(moved)[1]["place"] = places[1], places[0]
	cases = append(cases, pcase{"two places swapped", me(3), moved, "mismatch"})
	aimed := doc()
	entries(aimed)[5]["draw"] = flip(draws[5].String())
	cases = append(cases, pcase{"another's draw not from the seed", me(3), aimed, "mismatch"})
	added := doc()
	added["entries"] = append(entries(added), map[string]any{"leaf": "ff" + leaves[0].String()[2:], "draw": draws[0].String(), "place": n + 1})
	added["count"] = n + 1
	cases = append(cases, pcase{"an entrant added", me(3), added, "mismatch"})
	unsorted := doc()
	entries(unsorted)[2], entries(unsorted)[3] = entries(unsorted)[3], entries(unsorted)[2]
	cases = append(cases, pcase{"leaves out of order", me(3), unsorted, "mismatch"})
	paged := doc()
	paged["entries"], paged["next"] = entries(paged)[:4], 4
	cases = append(cases, pcase{"more than one page", me(3), paged, "large"})
	open := doc()
	open["state"] = "FROZEN"
	cases = append(cases, pcase{"not revealed", me(3), open, "pending"})
	in, _ := json.Marshal(cases)
	got := eval[[]string](tb, `Promise.all(`+string(in)+`.map((c) => FlashSale.draw.published(c.me, c.doc)))`)
	for i, c := range cases {
		if i >= len(got) || got[i] != c.Want {
			t.Errorf("public draw, %s: the page says %v, want %s", c.Name, got, c.Want)
		}
	}
}

// serveChecker serves draw.js from the source tree, and a page that loads
// it, on a loopback port; it returns the address.
func serveChecker(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, "gateway", "internal", "page", "assets", "draw.js"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/draw.js" {
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			_, _ = w.Write(src)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><html lang="en"><title>draw checker</title><script src="/draw.js"></script>`))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}
