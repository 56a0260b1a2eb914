package e2e_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
	"github.com/valyala/fasthttp"

	"flashsale/deploy/testenv"
	"flashsale/sharding/sale"
)

// The browser tests drive the sale page in a real headless Chromium
// (Debian's chromium, installed by the stack script) against the real
// binaries: a gateway with -dev (for the development sign-in) and a writer,
// so an order reaches PostgreSQL before the page calls it reserved. The
// sales are branded as a shop would brand them (deploy/brand). Each test
// runs in every language of the page, its tabs asking for that language as
// a browser set to it does; each state is saved as a PNG under artifactsDir
// (FLASHSALE_ARTIFACTS, default .run/artifacts/browser in the checkout),
// named <tab>-<state>-<language>.png, at desktop and phone width, and
// audited with axe (browser_axe_test.go) as it is saved.

// artifactsDir returns (and creates) the screenshot directory.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("FLASHSALE_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(root, ".run", "artifacts", "browser")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// chromiumPath finds the browser; without it the test fails where the stack
// is required (make test) and skips elsewhere.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Missing(t, "no chromium on PATH: the stack script installs it (bash deploy/stack/stack.sh up)")
	return ""
}

// browser starts one headless Chromium for the test and returns a context
// that makes tabs in it.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath(t)), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return bctx
}

// tab is one page in its own browser context (its own local storage, so its
// own signed-in user), with a viewport and a language.
type tab struct {
	t       *testing.T
	ctx     context.Context
	name    string // screenshot prefix: desktop or phone
	lang    string // the language its browser asks for: en or ja
	dir     string
	shots   []string
	audited int // states axe found nothing wrong in
}

func newTab(t *testing.T, b context.Context, lang, name string, width, height int64, mobile bool) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	needFont(t, lang)
	tb := &tab{t: t, ctx: ctx, name: name, lang: lang, dir: artifactsDir(t)}
	tb.setup(width, height, mobile)
	return tb
}

// setup gives the tab its viewport and its language.
func (tb *tab) setup(width, height int64, mobile bool) {
	tb.t.Helper()
	vp := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
	if mobile {
		vp = append(vp, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait)
	}
	if err := chromedp.Do(tb.ctx, chromedp.EmulateViewport(width, height, vp...)); err != nil {
		tb.t.Fatal(err)
	}
	tb.speak()
}

func (tb *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.t.Fatalf("%s: %v (state %s)", tb.name, err, tb.state())
	}
}

func eval[T any](tb *tab, js string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("%s: evaluating %s: %v", tb.name, js, err)
	}
	return v
}

func (tb *tab) state() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('main').dataset.state`))
	if err != nil {
		return "?" + err.Error()
	}
	return s
}

func (tb *tab) text(id string) string {
	return eval[string](tb, `document.getElementById('`+id+`').textContent`)
}

// waitState polls until the page is in one of want, calling seen for every
// other state met on the way; it fails after within.
func (tb *tab) waitState(within time.Duration, seen func(string), want ...string) string {
	tb.t.Helper()
	deadline := time.Now().Add(within)
	last := ""
	for time.Now().Before(deadline) {
		s := tb.state()
		for _, w := range want {
			if s == w {
				return s
			}
		}
		if s != last && seen != nil {
			seen(s)
		}
		last = s
		time.Sleep(40 * time.Millisecond)
	}
	tb.t.Fatalf("%s: state %q after %v, want one of %v; status %q, alert %q", tb.name, last, within, want, tb.text("status"), tb.text("alert"))
	return ""
}

// shot saves a full-page screenshot as <dir>/<name>-<state>-<lang>.png,
// then audits the page with axe (the screenshot first: a passing state
// such as processing is caught as it shows).
func (tb *tab) shot(state string) {
	tb.t.Helper()
	tb.picture(state)
	tb.axeAudit(state)
}

func (tb *tab) picture(state string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", state, err)
	}
	file := filepath.Join(tb.dir, tb.name+"-"+state+"-"+tb.lang+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.shots = append(tb.shots, file)
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

// answerBusy answers the tab's first n ticket requests itself with the
// gateway's 503 {"error":"UNAVAILABLE"} (Redis stalled: nothing happened)
// and lets every other request through to the gateway. It returns how many
// it answered so far.
func (tb *tab) answerBusy(n int32) *atomic.Int32 {
	tb.t.Helper()
	paused := make(chan *fetch.EventRequestPaused, 256)
	if err := chromedp.Listen(tb.ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			paused <- e
		}
	}); err != nil {
		tb.t.Fatal(err)
	}
	if _, err := chromedp.Call(tb.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/ticket"}}}); err != nil {
		tb.t.Fatal(err)
	}
	var answered atomic.Int32
	go func() {
		for {
			var e *fetch.EventRequestPaused
			select {
			case e = <-paused:
			case <-tb.ctx.Done():
				return
			}
			var err error
			if e.Request.Method == "POST" && answered.Load() < n {
				answered.Add(1)
				_, err = chromedp.Call(tb.ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: e.RequestID, ResponseCode: 503,
					ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "application/json"}}, Body: []byte(`{"error":"UNAVAILABLE"}`)})
			} else {
				_, err = chromedp.Call(tb.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: e.RequestID})
			}
			if err != nil && tb.ctx.Err() == nil {
				tb.t.Errorf("%s: answering a paused request: %v", tb.name, err)
			}
		}
	}()
	return &answered
}

// buyOff reports whether the tab's buy button is off (aria-disabled: it
// stays in the tab order).
func buyOff(tb *tab) bool {
	return eval[bool](tb, `document.getElementById('buy').getAttribute('aria-disabled') === 'true'`)
}

// sibling opens another tab in tb's browser context (the same local
// storage, so the same signed-in user), with the same viewport.
func (tb *tab) sibling(name string, width, height int64, mobile bool) *tab {
	tb.t.Helper()
	ctx, cancel := chromedp.NewContext(tb.ctx)
	tb.t.Cleanup(cancel)
	sib := &tab{t: tb.t, ctx: ctx, name: name, lang: tb.lang, dir: tb.dir}
	sib.setup(width, height, mobile)
	return sib
}

// signIn uses the page's development sign-in for user.
func (tb *tab) signIn(user string) {
	tb.t.Helper()
	tb.do(chromedp.WaitVisible(chromedp.ID("signin")), chromedp.SendKeys(chromedp.ID("user-id"), user),
		chromedp.Click(chromedp.CSS("#signin button")))
	deadline := time.Now().Add(5 * time.Second)
	for tb.text("who") != say(tb.t, tb.lang, "who.signedInAs", "user", user) {
		if time.Now().After(deadline) {
			tb.t.Fatalf("%s: sign-in as %s did not take: %q, alert %q", tb.name, user, tb.text("who"), tb.text("alert"))
		}
		time.Sleep(40 * time.Millisecond)
	}
}

// startFrontDoor starts a writer and a -dev gateway for a sale that does not
// exist yet, then creates it (units on one shard, starting lead from now,
// with fields) and waits until the gateway serves it: the slow part (the
// binaries starting) comes before the sale's clock runs, so the countdown
// is seen even on a loaded machine.
func startFrontDoor(t *testing.T, units int64, lead time.Duration, fields map[string]any, flags ...string) (*createdSale, *gateway) {
	t.Helper()
	id := newSaleID()
	topic := testenv.NewTopic(t, "browser")
	startWriter(t, topic, id)
	g := startGateway(t, topic, &createdSale{Sale: &sale.Sale{ID: id}}, append([]string{"-dev", "-page-media", brandDir()}, flags...)...)
	g.waitReady(t, 30*time.Second)
	fields["id"] = id
	s := createSaleWith(t, units, 1, lead, fields)
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _, err := fasthttp.GetTimeout(nil, fmt.Sprintf("http://%s/api/flash-sales/sales/%d", g.addr, id), time.Second)
		if err == nil && code == 200 {
			return s, g
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway does not serve sale %d: %d %v", id, code, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBrowserBuyToPaid walks a buyer through a ticket-required sale that
// starts a few seconds after the page loads: the countdown, "buy" disabled
// before the start and enabled at it, a purchase through the ticket
// endpoint, "processing" until the writer persisted the order, "reserved"
// with the time left to pay, pay to "paid"; a second buyer on a phone-sized
// screen is told the item is sold out; the first buyer, signed in on another
// device after the sell-out, is shown the order. In every language.
func TestBrowserBuyToPaid(t *testing.T) {
	need(t)
	b := browser(t)
	inLanguages(t, func(t *testing.T, lang string) { buyToPaid(t, b, lang) })
}

func buyToPaid(t *testing.T, b context.Context, lang string) {
	desk := newTab(t, b, lang, "desktop", 1280, 900, false)
	phone := newTab(t, b, lang, "phone", 390, 844, true)
	s, g := startFrontDoor(t, 1, 6*time.Second, branded(map[string]any{"ticketRequired": true, "name": "Winter drop"}))
	url := fmt.Sprintf("http://%s/sale/%d", g.addr, s.ID)
	desk.do(chromedp.Navigate(url))
	phone.do(chromedp.Navigate(url))
	desk.waitState(10*time.Second, nil, "signin")
	desk.shot("signin")
	desk.signIn("1001")
	phone.waitState(10*time.Second, nil, "signin")
	phone.shot("signin")
	phone.signIn("1002")

	desk.waitState(5*time.Second, nil, "countdown")
	if time.Until(s.StartsAt) < time.Second {
		t.Fatalf("the machine is too slow: the sale starts in %v, before the countdown could be seen", time.Until(s.StartsAt))
	}
	if !buyOff(desk) {
		t.Fatal("buy is enabled before the start")
	}
	if c, want := desk.text("countdown"), lead(t, lang, "countdown.starts")+"00:0"; !strings.HasPrefix(c, want) {
		t.Fatalf("countdown %q, want %q...", c, want)
	}
	desk.shot("countdown")
	phone.waitState(5*time.Second, nil, "countdown")
	phone.audit("countdown")
	phone.shot("countdown")

	// Buy turns on at the start, not before (the page's clock follows the
	// server's; 250 ms is the page's tick).
	for buyOff(desk) {
		if time.Now().After(s.StartsAt.Add(3 * time.Second)) {
			t.Fatalf("buy still disabled 3 s after the start (state %s)", desk.state())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if early := time.Until(s.StartsAt); early > 100*time.Millisecond {
		t.Fatalf("buy enabled %v before the start", early)
	}
	desk.waitState(time.Second, nil, "open")
	desk.shot("open")

	desk.do(chromedp.Click(chromedp.ID("buy")))
	sawProcessing := false
	desk.waitState(20*time.Second, func(st string) {
		if st == "processing" && !sawProcessing {
			sawProcessing = true
			desk.picture("processing")
			desk.audit("processing")
			desk.axeAudit("processing")
		}
	}, "reserved")
	if !sawProcessing {
		t.Error("the page never showed processing before reserved")
	}
	if st, want := desk.text("status"), lead(t, lang, "status.reserved"); !strings.HasPrefix(st, want) {
		t.Fatalf("reserved status %q, want %q...", st, want)
	}
	if left, want := desk.text("pay-left"), lead(t, lang, "order.payWithin"); !strings.HasPrefix(left, want+"09:") && !strings.HasPrefix(left, want+"10:") {
		t.Fatalf("time left to pay %q", left)
	}
	if f := eval[string](desk, `document.activeElement.id`); f != "order-h" {
		t.Errorf("focus on %q after the reservation, want the order heading", f)
	}
	desk.shot("reserved")

	// The only unit is taken: the second buyer is told so.
	phone.waitState(5*time.Second, nil, "open", "soldout")
	if phone.state() == "open" {
		phone.do(chromedp.Click(chromedp.ID("buy")))
	}
	phone.waitState(10*time.Second, nil, "soldout")
	phone.shot("soldout")

	// The buyer on another device (a new tab knows no order id), after the
	// sell-out: signed in, the page finds the order and offers to pay.
	other := newTab(t, b, lang, "other-device", 390, 844, true)
	other.do(chromedp.Navigate(url))
	other.waitState(10*time.Second, nil, "signin")
	other.signIn("1001")
	other.waitState(10*time.Second, nil, "reserved")
	if id, want := other.text("order-id"), desk.text("order-id"); id != want || id == "" {
		t.Fatalf("the other device shows order %q, the buyer's is %q", id, want)
	}
	other.shot("reserved")

	desk.do(chromedp.Click(chromedp.ID("pay")))
	desk.waitState(20*time.Second, nil, "paid")
	if st, want := desk.text("status"), say(t, lang, "status.paid"); st != want {
		t.Fatalf("paid status %q, want %q", st, want)
	}
	desk.shot("paid")
	logShots(t, desk, phone, other)
}

// TestBrowserProofWorker: the page's Web Worker finds the same nonce as the
// Go reference (the smallest n with at least D leading zero bits in
// SHA-256("<challenge>:<n>")).
func TestBrowserProofWorker(t *testing.T) {
	need(t)
	b := browser(t)
	s := createSale(t, 1, 1, 10*time.Minute)
	g := startGateway(t, testenv.NewTopic(t, "browser-pow"), s, "-relay=false")
	g.waitReady(t, 20*time.Second)
	tb := newTab(t, b, "en", "worker", 800, 600, false)
	tb.do(chromedp.Navigate(fmt.Sprintf("http://%s/sale/%d", g.addr, s.ID)))
	for _, c := range []struct {
		challenge string
		d         int
	}{{"abc.def-1", 0}, {"abc.def-1", 8}, {"k3y:with:colons", 12}, {strings.Repeat("long", 30), 14}} {
		want := solve(c.challenge, c.d)
		js := fmt.Sprintf(`new Promise((ok, bad) => { const w = new Worker(document.documentElement.dataset.worker);
			w.onmessage = (e) => { if (e.data.progress) return; w.terminate(); ok(e.data.nonce || ('error ' + e.data.error)); };
			w.onerror = (e) => bad(e.message); w.postMessage({challenge: %q, difficulty: %d}); })`, c.challenge, c.d)
		if got := eval[string](tb, js); got != fmt.Sprint(want) {
			t.Errorf("challenge %q difficulty %d: worker %s, Go %d", c.challenge, c.d, got, want)
		}
	}
	bad := eval[string](tb, `new Promise((ok) => { const w = new Worker(document.documentElement.dataset.worker);
		w.onmessage = (e) => { w.terminate(); ok(e.data.error || 'solved'); }; w.postMessage({challenge: 'x y', difficulty: 99}); })`)
	if bad != "bad challenge" {
		t.Errorf("malformed challenge: %q", bad)
	}
}

// solve is the Go reference of the proof of work.
func solve(challenge string, d int) uint64 {
	for n := uint64(0); ; n++ {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s:%d", challenge, n)))
		if leadingZeros(sum[:]) >= d {
			return n
		}
	}
}

func leadingZeros(b []byte) int {
	z := 0
	for i := 0; i+8 <= len(b); i += 8 {
		w := binary.BigEndian.Uint64(b[i:])
		z += bits.LeadingZeros64(w)
		if w != 0 {
			break
		}
	}
	return z
}

// flashctl runs the ops tool against the test's stack.
func flashctl(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(binDir, "flashctl"), append([]string{"--database-url", testenv.DatabaseURL(),
		"--redis", strings.Join(testenv.RedisAddrs(), ",")}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("flashctl %v: %v\n%s", args, err, out)
	}
}

// TestBrowserQueuedAdmitted: a sale with a pre-queue and a proof of work.
// Two signed-in buyers' pages join the queue by themselves before the start
// (solving the proof in the Web Worker), show "in the queue", are admitted
// after the start (places drawn at random, admission at the pace of the
// stock) and buy: one on a desktop screen to "reserved", one on a phone.
// The phone's first two joins are answered 503 (as a gateway whose Redis
// stalls answers): its page shows "very busy" and asks again by itself. In
// every language.
func TestBrowserQueuedAdmitted(t *testing.T) {
	need(t)
	b := browser(t)
	inLanguages(t, func(t *testing.T, lang string) { queuedAdmitted(t, b, lang) })
}

func queuedAdmitted(t *testing.T, b context.Context, lang string) {
	desk := newTab(t, b, lang, "desktop", 1280, 900, false)
	phone := newTab(t, b, lang, "phone", 390, 844, true)
	busy := phone.answerBusy(2)
	s, g := startFrontDoor(t, 2, 10*time.Second, branded(map[string]any{"ticketRequired": true, "name": "Queued drop",
		"waitingRoom": map[string]any{"preQueue": "1m"}, "powDifficulty": 12}))
	url := fmt.Sprintf("http://%s/sale/%d", g.addr, s.ID)
	for i, tb := range []*tab{desk, phone} {
		tb.do(chromedp.Navigate(url))
		tb.waitState(10*time.Second, nil, "signin")
		tb.signIn(fmt.Sprint(2001 + i))
	}
	sawBusy := false
	phone.waitState(15*time.Second, func(st string) {
		if st == "busy" && !sawBusy {
			sawBusy = true
			if txt := phone.text("status"); !strings.HasPrefix(txt, lead(t, lang, "status.busy")) {
				t.Errorf("busy status %q", txt)
			}
			phone.picture("busy")
			phone.audit("busy")
			phone.axeAudit("busy")
		}
	}, "queued")
	if !sawBusy || busy.Load() != 2 {
		t.Errorf("the phone's page went to the queue having shown busy: %v, after %d answers of 503, want 2", sawBusy, busy.Load())
	}
	for _, tb := range []*tab{desk, phone} {
		tb.waitState(10*time.Second, nil, "queued")
		if time.Until(s.StartsAt) < 300*time.Millisecond {
			t.Fatalf("%s: queued only %v before the start", tb.name, time.Until(s.StartsAt))
		}
		if st := tb.text("status"); !strings.HasPrefix(st, lead(t, lang, "queue.position")) || !strings.Contains(st, say(t, lang, "queue.drawn")) {
			t.Fatalf("%s: queued status %q", tb.name, st)
		}
		tb.audit("queued")
		tb.shot("queued")
	}
	for _, tb := range []*tab{desk, phone} {
		tb.waitState(time.Until(s.StartsAt)+15*time.Second, nil, "open")
		if time.Now().Before(s.StartsAt) {
			t.Fatalf("%s: admitted %v before the start", tb.name, time.Until(s.StartsAt))
		}
		if st := tb.text("status"); !strings.HasPrefix(st, lead(t, lang, "status.turn")) {
			t.Fatalf("%s: admitted status %q", tb.name, st)
		}
		if f := eval[string](tb, `document.activeElement.id`); f != "buy" {
			t.Errorf("%s: focus on %q once admitted, want the buy button", tb.name, f)
		}
		tb.shot("admitted")
	}
	for _, tb := range []*tab{desk, phone} {
		tb.do(chromedp.Click(chromedp.ID("buy")))
	}
	for _, tb := range []*tab{desk, phone} {
		tb.waitState(20*time.Second, nil, "reserved")
	}
	phone.shot("reserved")
	logShots(t, desk, phone)
}

// TestBrowserPaused: an operator pauses the sale (flashctl sale pause); a
// click on "buy" shows the paused state, and the page reopens by itself
// when the sale is resumed. In every language.
func TestBrowserPaused(t *testing.T) {
	need(t)
	b := browser(t)
	inLanguages(t, func(t *testing.T, lang string) {
		s := createSaleWith(t, 1, 1, 0, branded(map[string]any{"name": "Paused drop"}))
		g := startGateway(t, testenv.NewTopic(t, "browser-pause"), s, "-dev", "-relay=false", "-page-media", brandDir())
		g.waitReady(t, 20*time.Second)
		phone := newTab(t, b, lang, "phone", 390, 844, true)
		phone.do(chromedp.Navigate(fmt.Sprintf("http://%s/sale/%d", g.addr, s.ID)))
		phone.waitState(10*time.Second, nil, "signin")
		phone.signIn("3001")
		phone.waitState(5*time.Second, nil, "open")
		flashctl(t, "sale", "pause", "--sale", fmt.Sprint(s.ID))
		time.Sleep(1500 * time.Millisecond) // every gateway knows within a second
		phone.do(chromedp.Click(chromedp.ID("buy")))
		phone.waitState(5*time.Second, nil, "paused")
		if st, want := phone.text("status"), say(t, lang, "status.pausedNothingBought"); st != want {
			t.Fatalf("paused status %q, want %q", st, want)
		}
		phone.audit("paused")
		phone.shot("paused")
		flashctl(t, "sale", "resume", "--sale", fmt.Sprint(s.ID))
		phone.waitState(10*time.Second, nil, "open")
		logShots(t, phone)
	})
}
