package page

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"flashsale/sharding/draw"
	"flashsale/sharding/draw/beacon"
)

// The buyer's check of a sealed draw (draw.js with the vendored
// @noble/curves), in a real headless Chromium, against vectors made here by
// the Go code the gateway and flashctl use (sharding/draw and its beacon):
// drand quicknet's real round 1000 (the package doc's worked example) and
// rounds of the dev chain. It needs Chromium only, no stack: the page is a
// blank one that loads the embedded scripts, under the sale page's own
// Content-Security-Policy. Run alone:
//
//	go test -run 'TestBrowserDraw' -v ./gateway/internal/page

// checkerPage loads the vendored curves and draw.js as the sale page does,
// with a mark either side of the curves' script (their parse and start).
const checkerPage = `<!doctype html><html lang="en"><title>draw check</title>
<script src="/mark.js?curves-start"></script>
<script src="/curves.js"></script>
<script src="/mark.js?curves-end"></script>
<script src="/draw.js"></script>`

// checkerBrowser starts a headless Chromium on the checker page, or skips
// (fails with FLASHSALE_REQUIRE_STACK=1, as make test runs) when there is
// none; it returns the browser's context and the page's URL.
func checkerBrowser(t *testing.T) (context.Context, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test: needs chromium (skipped with -short)")
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("FLASHSALE_REQUIRE_STACK") == "1" {
			t.Fatal("chromium is not installed (make up installs it: deploy/stack/install.sh)")
		}
		t.Skip("browser test: chromium is not installed (apt-get install chromium, or make up)")
	}
	serve := map[string]string{"/curves.js": noblePath, "/draw.js": "assets/draw.js"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", string(DefaultPolicy.CSP))
		if r.URL.Path == "/mark.js" {
			w.Header().Set("Content-Type", types[".js"])
			fmt.Fprintf(w, "performance.mark(%q);\n", r.URL.RawQuery)
			return
		}
		if f, ok := serve[r.URL.Path]; ok {
			b, err := files.ReadFile(f)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			w.Header().Set("Content-Type", types[".js"])
			_, _ = w.Write(b)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(checkerPage))
	}))
	t.Cleanup(srv.Close)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	// The first call starts the browser, which lives as long as its
	// context: no timeout on it (the test's own bounds it).
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return ctx, srv.URL + "/"
}

// evalIn evaluates js in the page, awaiting a promise.
func evalIn[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %.200s: %v", js, err)
	}
	return v
}

// The worked example of sharding/draw's package doc: quicknet round 1000.
const (
	exampleRound = 1000
	exampleSig   = "b44679b9a59af2ec876b1a6b1ad52ea9b1615fc3982b19576350f93447cb1125e342b73a8dd2bacbe47e4b6b63ed5e39"
	exampleDraw  = "4758cc4f08548f3a10ae8e72dffb44c18b299b5cc8cef2519cd35bc6b3535ae8" // user 42's, place 1
)

// sealedDraw is a draw made by the Go code, as a gateway would publish it.
type sealedDraw struct {
	sale    int64
	users   map[draw.Hash]uint64 // by leaf
	nonces  map[draw.Hash]draw.Nonce
	leaves  []draw.Hash // sorted
	seed    draw.Hash
	root    draw.Hash
	chain   *beacon.Chain // nil: a sale sealed by no round
	round   uint64
	sig     []byte
	headKey ed25519.PrivateKey
	head    map[string]any
	frozen  time.Time // when the entries were frozen
	draws   []draw.Hash
	places  []int
}

// headKeyOf is a head key drawn from name, so each test's is the same.
func headKeyOf(name string) ed25519.PrivateKey {
	s := sha256.Sum256([]byte("flashsale draw.js test head key: " + name))
	return ed25519.NewKeyFromSeed(s[:])
}

// newSealedDraw draws sale's entrants (users, each with nonces[i]) under
// seed, sealed by sig for round of chain (nil: a sale without a round), the
// head frozen frozenBefore the round's time.
func newSealedDraw(t *testing.T, sale int64, users []uint64, nonces []draw.Nonce, seed draw.Hash, chain *beacon.Chain, round uint64, sig []byte,
	frozenBefore time.Duration) *sealedDraw {
	t.Helper()
	d := &sealedDraw{sale: sale, users: map[draw.Hash]uint64{}, nonces: map[draw.Hash]draw.Nonce{}, seed: seed, chain: chain, round: round, sig: sig,
		headKey: headKeyOf("sale " + strconv.FormatInt(sale, 10))}
	for i, u := range users {
		l := draw.Leaf(sale, u, nonces[i])
		d.users[l], d.nonces[l] = u, nonces[i]
		d.leaves = append(d.leaves, l)
	}
	if draw.Sort(d.leaves) {
		t.Fatal("two entrants with one leaf")
	}
	d.root = draw.Root(d.leaves)
	key := seed
	d.frozen = time.UnixMilli(1_700_000_000_123)
	if chain != nil {
		var err error
		if key, err = draw.KeyOf(seed, &draw.Beacon{Chain: chain.Hash, Round: round, Signature: sig}); err != nil {
			t.Fatal(err)
		}
		d.frozen = chain.TimeOf(round).Add(-frozenBefore)
		d.head = d.signHead(t, d.headKey, d.frozen, chain.Hash, round)
	}
	d.draws, d.places = draw.Places(key, d.root, d.leaves)
	return d
}

// signHead signs this draw's tree head, frozen at at, for round of the
// chain whose hash is chain, under key; it returns the head as served.
func (d *sealedDraw) signHead(t *testing.T, key ed25519.PrivateKey, at time.Time, chain string, round uint64) map[string]any {
	t.Helper()
	h := &draw.Head{Sale: d.sale, Count: len(d.leaves), Root: d.root, FrozenAt: at, Chain: chain, Round: round}
	sig, err := draw.SignHead(key, h)
	if err != nil {
		t.Fatal(err)
	}
	if pub := d.headKey.Public().(ed25519.PublicKey); bytes.Equal(key, d.headKey) {
		if err := draw.VerifyHead(pub, h, sig); err != nil && at.Before(d.chain.TimeOf(round)) {
			t.Fatalf("the Go check refuses the head it signed: %v", err)
		}
	}
	return map[string]any{"sale": d.sale, "count": len(d.leaves), "root": d.root.String(), "frozenAtMs": at.UnixMilli(),
		"chain": chain, "round": round, "signature": hex.EncodeToString(sig)}
}

// me is .../draw/me's answer to the entrant at index i, revealed.
func (d *sealedDraw) me(i int) map[string]any {
	l := d.leaves[i]
	proof := []string{}
	for _, p := range draw.Proof(d.leaves, i) {
		proof = append(proof, p.String())
	}
	m := map[string]any{"saleId": d.sale, "entered": true, "nonce": d.nonces[l].String(), "leaf": l.String(), "index": i,
		"count": len(d.leaves), "root": d.root.String(), "proof": proof, "seed": d.seed.String(),
		"commitment": draw.Commitment(d.seed).String(), "draw": d.draws[i].String(), "place": d.places[i]}
	if d.chain != nil {
		m["head"] = maps.Clone(d.head)
		m["beacon"] = d.beacon()
		m["headKey"] = hex.EncodeToString(d.headKey.Public().(ed25519.PublicKey)) // the shop's word: draw.js reads the description's
	}
	return m
}

// beacon is the round as served, once recorded.
func (d *sealedDraw) beacon() map[string]any {
	return map[string]any{"chain": d.chain.Hash, "name": d.chain.Name, "round": d.round,
		"at": d.chain.TimeOf(d.round).UTC().Format("2006-01-02T15:04:05.000Z07:00"), "signature": hex.EncodeToString(d.sig)}
}

// ctx is what the page knows of entrant i: the sale's description (its
// commitment, head key, chain and round) and the nonce it kept.
func (d *sealedDraw) ctx(i int) map[string]any {
	l := d.leaves[i]
	c := map[string]any{"saleId": strconv.FormatInt(d.sale, 10), "userId": strconv.FormatUint(d.users[l], 10),
		"commitment": draw.Commitment(d.seed).String(), "nonce": d.nonces[l].String()}
	if d.chain != nil {
		c["headKey"] = hex.EncodeToString(d.headKey.Public().(ed25519.PublicKey))
		c["chain"], c["round"] = d.chain.Hash, d.round
	}
	return c
}

// doc is the public draw, GET .../draw, in one page.
func (d *sealedDraw) doc() map[string]any {
	es := make([]map[string]any, len(d.leaves))
	for i := range es {
		es[i] = map[string]any{"leaf": d.leaves[i].String(), "draw": d.draws[i].String(), "place": d.places[i]}
	}
	m := map[string]any{"saleId": d.sale, "state": "REVEALED", "root": d.root.String(), "count": len(d.leaves), "seed": d.seed.String(),
		"commitment": draw.Commitment(d.seed).String(), "from": 0, "entries": es}
	pub := &draw.Published{Count: len(d.leaves), Root: d.root, Seed: d.seed}
	if d.chain != nil {
		m["head"] = maps.Clone(d.head)
		m["beacon"] = d.beacon()
		pub.Beacon = &draw.Beacon{Chain: d.chain.Hash, Round: d.round, Signature: d.sig}
	}
	m["frozenAt"] = d.frozen.UTC().Format("2006-01-02T15:04:05.000Z07:00") // as the gateway writes it
	m["id"] = draw.ID(d.sale, d.frozen, pub).String()
	return m
}

// workedExample is the package doc's example: sale 7, users 42 and 43 with
// the nonce 00..0f, the seed 32 bytes of 0x11, quicknet round 1000.
func workedExample(t *testing.T) *sealedDraw {
	t.Helper()
	var nonce draw.Nonce
	for i := range nonce {
		nonce[i] = byte(i)
	}
	var seed draw.Hash
	for i := range seed {
		seed[i] = 0x11
	}
	sig, _ := hex.DecodeString(exampleSig)
	d := newSealedDraw(t, 7, []uint64{42, 43}, []draw.Nonce{nonce, nonce}, seed, beacon.Quicknet, exampleRound, sig, 31*time.Second)
	if got := d.draws[slices.IndexFunc(d.leaves, func(l draw.Hash) bool { return d.users[l] == 42 })]; got.String() != exampleDraw {
		t.Fatalf("user 42's draw %s, the worked example's %s", got, exampleDraw)
	}
	return d
}

// devDraw is a draw of n entrants sealed by a dev chain round.
func devDraw(t *testing.T, sale int64, n int) *sealedDraw {
	t.Helper()
	users := make([]uint64, n)
	nonces := make([]draw.Nonce, n)
	for i := range users {
		users[i] = uint64(9000 + i)
		if i == n-1 {
			users[i] = 1<<64 - 1 // all eight bytes
		}
		nonces[i] = draw.NewNonce()
	}
	const round = 5_000_000
	sig, err := beacon.Dev.Sign(round)
	if err != nil {
		t.Fatal(err)
	}
	return newSealedDraw(t, sale, users, nonces, draw.NewSeed(), beacon.Dev, round, sig, 2*time.Second)
}

// checkCase is one call of FlashSale.draw.verify and the words it must say.
type checkCase struct {
	Name string            `json:"name"`
	Me   map[string]any    `json:"me"`
	Ctx  map[string]any    `json:"ctx"`
	Want map[string]string `json:"-"`
}

// allOK is verify's answer when every check passes.
var allOK = map[string]string{"leaf": "ok", "proof": "ok", "head": "ok", "seed": "ok", "beacon": "ok", "draw": "ok"}

func with(base map[string]string, kv ...string) map[string]string {
	w := maps.Clone(base)
	for j := 0; j+1 < len(kv); j += 2 {
		w[kv[j]] = kv[j+1]
	}
	return w
}

// flip changes the first hex digit of h.
func flip(h string) string {
	if h[0] == '0' {
		return "1" + h[1:]
	}
	return "0" + h[1:]
}

// sealedCases are the cases of a sealed draw d (its round's word ok is
// okBeacon: "ok" on quicknet, "test" on the dev chain).
func sealedCases(t *testing.T, d *sealedDraw, okBeacon string) []checkCase {
	t.Helper()
	ok := with(allOK, "beacon", okBeacon)
	var cases []checkCase
	name := fmt.Sprintf("%s round %d, sale %d", d.chain.Name, d.round, d.sale)
	for i := range d.leaves {
		add := func(what string, want map[string]string, change func(me, ctx map[string]any)) {
			c := checkCase{Name: fmt.Sprintf("%s, index %d: %s", name, i, what), Me: d.me(i), Ctx: d.ctx(i), Want: want}
			change(c.Me, c.Ctx)
			cases = append(cases, c)
		}
		add("as published", ok, func(me, ctx map[string]any) {})
		if i > 0 {
			continue // the rest once a draw
		}
		at := d.chain.TimeOf(d.round)
		add("a head frozen 1 ms before the round", ok, func(me, ctx map[string]any) {
			me["head"] = d.signHead(t, d.headKey, at.Add(-time.Millisecond), d.chain.Hash, d.round)
		})
		add("a head frozen at the round's time", with(ok, "head", "late"), func(me, ctx map[string]any) {
			me["head"] = d.signHead(t, d.headKey, at, d.chain.Hash, d.round)
		})
		add("a head frozen after the round", with(ok, "head", "late"), func(me, ctx map[string]any) {
			me["head"] = d.signHead(t, d.headKey, at.Add(time.Minute), d.chain.Hash, d.round)
		})
		add("a head signed by another key", with(ok, "head", "mismatch"), func(me, ctx map[string]any) {
			me["head"] = d.signHead(t, headKeyOf("another"), at.Add(-time.Minute), d.chain.Hash, d.round)
		})
		add("a head signed by another key, which the answer names", with(ok, "head", "mismatch"), func(me, ctx map[string]any) {
			me["head"] = d.signHead(t, headKeyOf("another"), at.Add(-time.Minute), d.chain.Hash, d.round)
			me["headKey"] = hex.EncodeToString(headKeyOf("another").Public().(ed25519.PublicKey))
		})
		add("another head key in the sale's description", with(ok, "head", "mismatch"), func(me, ctx map[string]any) {
			ctx["headKey"] = hex.EncodeToString(headKeyOf("another").Public().(ed25519.PublicKey))
		})
		add("a head naming another root", with(ok, "head", "mismatch"), func(me, ctx map[string]any) {
			h := me["head"].(map[string]any)
			h["root"] = flip(h["root"].(string))
		})
		add("a head naming another count", with(ok, "head", "mismatch"), func(me, ctx map[string]any) {
			me["head"].(map[string]any)["count"] = len(d.leaves) + 1
		})
		add("a head for a later round", with(ok, "head", "round"), func(me, ctx map[string]any) {
			me["head"] = d.signHead(t, d.headKey, at.Add(-time.Minute), d.chain.Hash, d.round+1)
		})
		add("a round the sale did not commit to", with(ok, "head", "round", "beacon", "round"), func(me, ctx map[string]any) {
			ctx["round"] = d.round + 1
		})
		add("a chain this page does not pin", with(ok, "beacon", "chain", "draw", "ok"), func(me, ctx map[string]any) {
			me["beacon"].(map[string]any)["chain"] = flip(d.chain.Hash)
		})
		add("a signature that is no point of the curve", with(ok, "beacon", "mismatch", "draw", "mismatch"), func(me, ctx map[string]any) {
			b := me["beacon"].(map[string]any)
			b["signature"] = flip(b["signature"].(string))
		})
		add("the signature of another round, the draws keyed on it", with(ok, "beacon", "mismatch"), func(me, ctx map[string]any) {
			var other []byte
			if d.chain == beacon.Dev {
				other, _ = beacon.Dev.Sign(d.round + 1)
			} else {
				other, _ = beacon.Dev.Sign(d.round) // a point of G1, not quicknet's
			}
			me["beacon"].(map[string]any)["signature"] = hex.EncodeToString(other)
			me["draw"] = draw.Draw(draw.Key(d.seed, beacon.Randomness(other)), d.root, d.leaves[i]).String()
		})
		add("drawn on the seed alone, no round served", with(ok, "beacon", "absent"), func(me, ctx map[string]any) {
			delete(me, "beacon")
			me["draw"] = draw.Draw(d.seed, d.root, d.leaves[i]).String()
		})
		add("no head served after the freeze", with(ok, "head", "absent"), func(me, ctx map[string]any) { delete(me, "head") })
		add("no head key in the sale's description", with(ok, "head", "absent"), func(me, ctx map[string]any) { delete(ctx, "headKey") })
		add("a head that cannot be read", with(ok, "head", "malformed"), func(me, ctx map[string]any) {
			me["head"].(map[string]any)["signature"] = "zz"
		})
		add("revealed without the round's signature", with(ok, "beacon", "absent"), func(me, ctx map[string]any) {
			delete(me["beacon"].(map[string]any), "signature")
			me["draw"] = draw.Draw(d.seed, d.root, d.leaves[i]).String()
		})
		add("frozen, the round not out", with(ok, "seed", "pending", "beacon", "pending", "draw", "pending"), func(me, ctx map[string]any) {
			for _, k := range []string{"seed", "commitment", "draw", "place"} {
				delete(me, k)
			}
			delete(me["beacon"].(map[string]any), "signature")
		})
		add("frozen, no round served", with(ok, "seed", "pending", "beacon", "pending", "draw", "pending"), func(me, ctx map[string]any) {
			for _, k := range []string{"seed", "commitment", "draw", "place", "beacon"} {
				delete(me, k)
			}
		})
		add("the round out, not revealed", with(ok, "seed", "pending", "draw", "pending"), func(me, ctx map[string]any) {
			for _, k := range []string{"seed", "commitment", "draw", "place"} {
				delete(me, k)
			}
		})
		add("the round announced is not the committed one", with(ok, "seed", "pending", "beacon", "round", "draw", "pending"), func(me, ctx map[string]any) {
			for _, k := range []string{"seed", "commitment", "draw", "place"} {
				delete(me, k)
			}
			b := me["beacon"].(map[string]any)
			delete(b, "signature")
			b["round"] = d.round + 1
		})
		add("open, not frozen", with(ok, "proof", "pending", "head", "pending", "seed", "pending", "beacon", "pending", "draw", "pending"),
			func(me, ctx map[string]any) {
				for _, k := range []string{"index", "count", "root", "proof", "head", "seed", "commitment", "draw", "place"} {
					delete(me, k)
				}
				delete(me["beacon"].(map[string]any), "signature")
			})
	}
	return cases
}

// TestBrowserDrawCheck: draw.js, in Chromium, agrees with the Go code on
// sealed draws: quicknet's real round 1000 and the head signed before it
// pass (ok), the dev chain's rounds pass as "test", an older draw sealed by
// no round passes as "unsealed"; and it names the check that fails for a
// forged round, a head dated at or after the round's time, a head under
// another key, another round than the committed one, and a draw keyed
// without the round.
func TestBrowserDrawCheck(t *testing.T) {
	ctx, _ := checkerBrowser(t)
	ex := workedExample(t)
	dev := devDraw(t, 4_000_000_321, 9)
	cases := sealedCases(t, ex, "ok")
	cases = append(cases, sealedCases(t, dev, "test")...)

	var nonce draw.Nonce
	un := newSealedDraw(t, 11, []uint64{5, 6, 7}, []draw.Nonce{nonce, draw.NewNonce(), draw.NewNonce()}, draw.NewSeed(), nil, 0, nil, 0)
	unsealed := with(allOK, "head", "unsealed", "beacon", "unsealed")
	for i := range un.leaves {
		cases = append(cases, checkCase{Name: fmt.Sprintf("unsealed, index %d", i), Me: un.me(i), Ctx: un.ctx(i), Want: unsealed})
	}
	c := checkCase{Name: "unsealed, frozen", Me: un.me(0), Ctx: un.ctx(0), Want: with(unsealed, "seed", "pending", "draw", "pending")}
	for _, k := range []string{"seed", "commitment", "draw", "place"} {
		delete(c.Me, k)
	}
	cases = append(cases, c)
	c = checkCase{Name: "unsealed description, a sealed answer", Me: ex.me(0), Ctx: ex.ctx(0), Want: with(allOK, "head", "absent", "beacon", "round")}
	for _, k := range []string{"headKey", "chain", "round"} {
		delete(c.Ctx, k)
	}
	cases = append(cases, c)

	in, _ := json.Marshal(cases)
	got := evalIn[[]map[string]string](t, ctx, `Promise.all(`+string(in)+`.map((c) => FlashSale.draw.verify(c.me, c.ctx)))`)
	if len(got) != len(cases) {
		t.Fatalf("%d answers for %d cases", len(got), len(cases))
	}
	for i, c := range cases {
		if !maps.Equal(got[i], c.Want) {
			t.Errorf("%s: the page says %v, want %v", c.Name, got[i], c.Want)
		}
	}
	t.Logf("%d cases of verify", len(cases))

	type pubCase struct {
		Name string         `json:"name"`
		Me   map[string]any `json:"me"`
		Doc  map[string]any `json:"doc"`
		Want string         `json:"-"`
	}
	pcases := []pubCase{
		{"quicknet, as published", ex.me(1), ex.doc(), "ok"},
		{"dev, as published", dev.me(4), dev.doc(), "ok"},
		{"unsealed, as published", un.me(2), un.doc(), "ok"},
	}
	other := ex.doc()
	other["beacon"].(map[string]any)["signature"] = flip(exampleSig)
	pcases = append(pcases, pubCase{"another round served to all", ex.me(1), other, "mismatch"})
	other = dev.doc()
	other["head"].(map[string]any)["frozenAtMs"] = dev.head["frozenAtMs"].(int64) - 1
	pcases = append(pcases, pubCase{"another head served to all", dev.me(4), other, "mismatch"})
	other = dev.doc()
	delete(other, "beacon")
	pcases = append(pcases, pubCase{"no round served to all", dev.me(4), other, "mismatch"})
	other = dev.doc()
	for i, e := range other["entries"].([]map[string]any) {
		e["draw"] = draw.Draw(dev.seed, dev.root, dev.leaves[i]).String()
	}
	pcases = append(pcases, pubCase{"every draw keyed on the seed alone", dev.me(4), other, "mismatch"})
	for _, d := range []*sealedDraw{ex, un} {
		other = d.doc()
		other["id"] = draw.NewSeed().String()
		pcases = append(pcases, pubCase{fmt.Sprintf("sale %d served under another address", d.sale), d.me(0), other, "mismatch"})
	}
	checkLogCases(t, ctx, ex, dev, un)
	in, _ = json.Marshal(pcases)
	pgot := evalIn[[]string](t, ctx, `Promise.all(`+string(in)+`.map((c) => FlashSale.draw.published(c.me, c.doc)))`)
	for i, c := range pcases {
		if i >= len(pgot) || pgot[i] != c.Want {
			t.Errorf("public draw, %s: the page says %v, want %s", c.Name, pgot, c.Want)
		}
	}
}

// The buyer's check on a phone-sized CPU (Chromium's CPU throttled 4x):
// checkTarget is what it aims at, checkCeiling what fails the test (a
// regression several times slower; the figures vary twofold with the
// load of a shared two-core machine).
const (
	checkTarget  = 300 * time.Millisecond
	checkCeiling = 1500 * time.Millisecond
)

// TestBrowserDrawCheckTime measures the buyer's check of a sealed draw on
// quicknet's round 1000 (verify: the leaf, the proof, the head's Ed25519
// signature, the round's BLS pairing, the seed, the draw) with Chromium's
// CPU throttled 4x, by the page's own clock, over runs in a browser context
// each: "warmed" is the check on a fresh page after draw.js's warm(), which
// the page runs while the buyer waits for the beacon round (30 s or more on
// quicknet): the buyer's check at the reveal; "first" the check on a fresh
// page with nothing warmed (the curves' code compiled and their tables
// built then), "again" a second check on that page. It logs the medians
// and fails when the warmed check is over checkCeiling.
//
// It is a measurement, 14 browser contexts long: make test leaves it out
// unless FLASHSALE_MEASURE=1.
//
//	FLASHSALE_MEASURE=1 go test -count=1 -run 'TestBrowserDrawCheckTime' -v ./gateway/internal/page
func TestBrowserDrawCheckTime(t *testing.T) {
	if os.Getenv("FLASHSALE_MEASURE") != "1" {
		t.Skip("a measurement: set FLASHSALE_MEASURE=1 to run it")
	}
	ctx, url := checkerBrowser(t)
	ex := workedExample(t)
	in, _ := json.Marshal(map[string]any{"me": ex.me(0), "ctx": ex.ctx(0), "doc": ex.doc(), "log": ex.logOf(t)})
	type timing struct {
		Verify    float64           `json:"verify"`
		Again     float64           `json:"again"`
		Published float64           `json:"published"`
		Log       float64           `json:"log"`
		Curves    float64           `json:"curves"`
		Words     map[string]string `json:"words"`
		Warm      float64           `json:"warm"`
		Warmed    bool              `json:"warmed"`
	}
	run := `(async (c) => {
  const w0 = performance.now();
  const warmed = c.warm ? await FlashSale.draw.warm() : true;
  const w1 = performance.now();
  const t0 = performance.now();
  const words = await FlashSale.draw.verify(c.me, c.ctx);
  const t1 = performance.now();
  await FlashSale.draw.verify(c.me, c.ctx);
  const t2 = performance.now();
  words.published = await FlashSale.draw.published(c.me, c.doc);
  const t3 = performance.now();
  words.log = await FlashSale.draw.log(c.me, c.log, c.ctx);
  const t4 = performance.now();
  const curves = performance.measure('curves', 'curves-start', 'curves-end').duration;
  return {verify: t1 - t0, again: t2 - t1, published: t3 - t2, log: t4 - t3, curves, words, warm: w1 - w0, warmed};
})(` + string(in) + `)`
	const runs = 7
	var first, warmed []timing
	for range runs {
		for _, into := range []*[]timing{&first, &warmed} {
			tab, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
			if err := chromedp.Do(tab, chromedp.Navigate("about:blank")); err != nil {
				t.Fatal(err)
			}
			if _, err := chromedp.Call(tab, emulation.SetCPUThrottlingRate, emulation.SetCPUThrottlingRateParams{Rate: 4}); err != nil {
				t.Fatal(err)
			}
			if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
				t.Fatal(err)
			}
			script := strings.Replace(run, "c.warm ?", fmt.Sprintf("%v ?", into == &warmed), 1)
			tm := evalIn[timing](t, tab, script)
			if !maps.Equal(tm.Words, with(allOK, "published", "ok", "log", "ok")) || !tm.Warmed {
				t.Fatalf("the example does not verify: %v (warm-up passed: %v)", tm.Words, tm.Warmed)
			}
			*into = append(*into, tm)
			cancel()
		}
	}
	median := func(ts []timing, f func(timing) float64) (float64, string) {
		v := make([]float64, len(ts))
		for i, x := range ts {
			v[i] = f(x)
		}
		all := fmt.Sprint(slices.Collect(func(yield func(int) bool) {
			for _, x := range v {
				yield(int(x + 0.5))
			}
		}))
		sort.Float64s(v)
		return v[len(v)/2], all
	}
	verifyOf := func(x timing) float64 { return x.Verify }
	cold, coldRuns := median(first, verifyOf)
	again, _ := median(first, func(x timing) float64 { return x.Again })
	warm, warmRuns := median(warmed, verifyOf)
	warmUp, _ := median(warmed, func(x timing) float64 { return x.Warm })
	pub, _ := median(first, func(x timing) float64 { return x.Published })
	logMs, _ := median(first, func(x timing) float64 { return x.Log })
	load, _ := median(first, func(x timing) float64 { return x.Curves })
	t.Logf("CPU throttled 4x, median of %d runs (target %v): verify() on a fresh page after the page's warm-up %.0f ms %s ms (the warm-up itself, "+
		"while the buyer waits for the round: %.0f ms); without the warm-up %.0f ms %s ms; again on that page %.0f ms; published() (2 entrants) %.1f ms; "+
		"log() (4 entries) %.1f ms; loading the curves' script %.1f ms", runs, checkTarget, warm, warmRuns, warmUp, cold, coldRuns, again, pub, logMs, load)
	if warm > float64(checkCeiling.Milliseconds()) {
		t.Errorf("the check after the warm-up takes %.0f ms on a phone-sized CPU, over the ceiling of %v (target %v)", warm, checkCeiling, checkTarget)
	}
}

// logOf is the draw's log as .../draw/log serves it: commitment, freeze,
// beacon (sealed) and reveal, then extra; every entry chained by draw's
// own code.
func (d *sealedDraw) logOf(t *testing.T, extra ...*draw.Event) map[string]any {
	t.Helper()
	n := len(d.leaves)
	c := &draw.Event{Event: draw.EventCommit, Commitment: draw.Commitment(d.seed).String()}
	fr := &draw.Event{Event: draw.EventFreeze, Root: d.root.String(), Count: &n, FrozenAt: d.frozen.UnixMilli()}
	evs := []*draw.Event{c, fr}
	if d.chain != nil {
		c.Chain, c.Round, c.HeadKey = d.chain.Hash, d.round, hex.EncodeToString(d.headKey.Public().(ed25519.PublicKey))
		fr.HeadSig = d.head["signature"].(string)
		evs = append(evs, &draw.Event{Event: draw.EventBeacon, Round: d.round, Signature: hex.EncodeToString(d.sig)})
	}
	evs = append(append(evs, &draw.Event{Event: draw.EventReveal, Seed: d.seed.String()}), extra...)
	return logDoc(t, d.sale, evs)
}

// logDoc chains evs into the answer of .../draw/log.
func logDoc(t *testing.T, sale int64, evs []*draw.Event) map[string]any {
	t.Helper()
	var prev draw.Hash
	entries := []map[string]any{}
	for i, e := range evs {
		e.Seq, e.Sale, e.At = i, sale, 1_700_000_000_000+int64(i)
		en, err := draw.NewEntry(prev, e)
		if err != nil {
			t.Fatal(err)
		}
		prev = en.Hash
		entries = append(entries, map[string]any{"hash": en.Hash.String(), "body": string(en.Body)})
	}
	return map[string]any{"saleId": sale, "entries": entries}
}

// checkLogCases: the page's check of the draw's log (draw.js log, a port of
// draw.CheckLog and of flashctl's agreement rules) on logs chained by the
// Go code: each draw's own log passes, a redraw after an abort passes as
// "redrawn", and each mutant the Go checkers refuse is refused with its
// word.
func checkLogCases(t *testing.T, ctx context.Context, ex, dev, un *sealedDraw) {
	t.Helper()
	type logCase struct {
		Name string         `json:"name"`
		Me   map[string]any `json:"me"`
		Log  map[string]any `json:"log"`
		Ctx  map[string]any `json:"ctx"`
		Want string         `json:"-"`
	}
	n := len(dev.leaves)
	frozenOnly := dev.me(0)
	for _, k := range []string{"seed", "commitment", "draw", "place", "beacon"} {
		delete(frozenOnly, k)
	}
	cases := []logCase{
		{"quicknet, the whole log", ex.me(0), ex.logOf(t), ex.ctx(0), "ok"},
		{"dev, the whole log", dev.me(1), dev.logOf(t), dev.ctx(1), "ok"},
		{"unsealed, the whole log", un.me(2), un.logOf(t), un.ctx(2), "ok"},
		{"frozen, the log up to the freeze", frozenOnly, func() map[string]any {
			l := dev.logOf(t)
			l["entries"] = l["entries"].([]map[string]any)[:2]
			return l
		}(), dev.ctx(0), "pending"},
		{"revealed, the log without its reveal", dev.me(0), func() map[string]any {
			l := dev.logOf(t)
			l["entries"] = l["entries"].([]map[string]any)[:3]
			return l
		}(), dev.ctx(0), "pending"},
		{"a redraw after an abort", dev.me(0), dev.logOf(t, &draw.Event{Event: draw.EventAbort, Reason: "the seed leaked"},
			&draw.Event{Event: draw.EventBeacon, Round: dev.round, Signature: hex.EncodeToString(dev.sig)},
			&draw.Event{Event: draw.EventReveal, Seed: dev.seed.String()}), dev.ctx(0), "redrawn"},
		{"a second freeze", dev.me(0), dev.logOf(t, &draw.Event{Event: draw.EventFreeze, Root: dev.root.String(), Count: &n,
			FrozenAt: dev.frozen.UnixMilli(), HeadSig: dev.head["signature"].(string)}), dev.ctx(0), "mismatch"},
		{"a redraw without an abort", dev.me(0), dev.logOf(t, &draw.Event{Event: draw.EventReveal, Seed: dev.seed.String()}), dev.ctx(0), "mismatch"},
		{"an abort without its reason", dev.me(0), dev.logOf(t, &draw.Event{Event: draw.EventAbort}), dev.ctx(0), "mismatch"},
		{"an entry changed in place", dev.me(0), func() map[string]any {
			l := dev.logOf(t)
			e := l["entries"].([]map[string]any)[1]
			e["body"] = strings.Replace(e["body"].(string), `"count":`+strconv.Itoa(n), `"count":`+strconv.Itoa(n+1), 1)
			return l
		}(), dev.ctx(0), "mismatch"},
		{"an entry's time changed (only its hash tells)", dev.me(0), func() map[string]any {
			l := dev.logOf(t)
			e := l["entries"].([]map[string]any)[0]
			e["body"] = strings.Replace(e["body"].(string), `"at":1700000000000`, `"at":1700000000001`, 1)
			return l
		}(), dev.ctx(0), "mismatch"},
		{"the log of another seed", dev.me(0), func() map[string]any {
			o := *dev
			o.seed = draw.NewSeed()
			return o.logOf(t)
		}(), dev.ctx(0), "mismatch"},
		{"the log of another head", dev.me(0), func() map[string]any {
			o := *dev
			o.head = maps.Clone(dev.head)
			o.head["signature"] = strings.Repeat("ab", 64)
			return o.logOf(t)
		}(), dev.ctx(0), "mismatch"},
		{"frozen once the round could be known", dev.me(0), func() map[string]any {
			o := *dev
			o.frozen = dev.chain.TimeOf(dev.round)
			return o.logOf(t)
		}(), dev.ctx(0), "mismatch"},
		{"the log of another sale", dev.me(0), logDoc(t, dev.sale, func() []*draw.Event {
			var evs []*draw.Event
			for _, e := range dev.logOf(t)["entries"].([]map[string]any) {
				var ev draw.Event
				if err := json.Unmarshal([]byte(e["body"].(string)), &ev); err != nil {
					t.Fatal(err)
				}
				evs = append(evs, &ev)
			}
			return evs
		}()), func() map[string]any { c := dev.ctx(0); c["saleId"] = "5"; return c }(), "mismatch"},
		{"an unknown field", dev.me(0), func() map[string]any {
			l := dev.logOf(t)
			e := l["entries"].([]map[string]any)[0]
			body := strings.Replace(e["body"].(string), "{", `{"extra":1,`, 1)
			h := draw.ChainHash(draw.Hash{}, []byte(body))
			e["body"], e["hash"] = body, h.String()
			l["entries"] = l["entries"].([]map[string]any)[:1]
			return l
		}(), dev.ctx(0), "malformed"},
		{"a sealed sale without a log", dev.me(0), map[string]any{"saleId": dev.sale, "entries": []any{}}, dev.ctx(0), "absent"},
		{"a sale from before the log", un.me(0), map[string]any{"saleId": un.sale, "entries": []any{}}, un.ctx(0), "unsealed"},
	}
	in, _ := json.Marshal(cases)
	got := evalIn[[]string](t, ctx, `Promise.all(`+string(in)+`.map((c) => FlashSale.draw.log(c.me, c.log, c.ctx)))`)
	for i, c := range cases {
		if i >= len(got) || got[i] != c.Want {
			t.Errorf("log, %s: the page says %v, want %s", c.Name, got, c.Want)
		}
	}
	t.Logf("%d cases of log", len(cases))
}
