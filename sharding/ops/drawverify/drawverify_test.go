package drawverify_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flashsale/sharding/draw/beacon"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"flashsale/sharding/api"
	"flashsale/sharding/draw"
	"flashsale/sharding/ops"
	"flashsale/sharding/ops/drawverify"
	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

// headKey signs the tree heads of the draws these tests publish.
var headKey = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))

// closed is when the entries of the published draws closed.
var closed = time.Date(2026, 12, 1, 9, 59, 59, 0, time.UTC)

// publishedDraw runs a whole draw of n entrants of sale 7 with package draw,
// sealed by a round of the dev chain, and returns what a gateway serves of
// it once revealed, whole.
func publishedDraw(t *testing.T, n int) *drawverify.DrawPage {
	t.Helper()
	seed := draw.NewSeed()
	leaves := make([]draw.Hash, n)
	for i := range leaves {
		leaves[i] = draw.Leaf(7, uint64(i+1), draw.NewNonce())
	}
	if draw.Sort(leaves) {
		t.Fatal("duplicate leaves")
	}
	root := draw.Root(leaves)
	c, yes := draw.Commitment(seed).String(), true
	r := beacon.Dev.RoundFor(closed)
	sig, _ := beacon.Dev.Sign(r)
	frozen := closed.Add(200 * time.Millisecond)
	p := &drawverify.DrawPage{SaleID: 7, Access: sale.AccessRaffle, State: drawverify.DrawRevealed, Commitment: &c, Root: root.String(),
		FrozenAt: frozen.Format(time.RFC3339Nano), Seed: seed.String(), Committed: &yes,
		Beacon:  &drawverify.BeaconJSON{Chain: beacon.Dev.Hash, Round: r, Signature: hex.EncodeToString(sig)},
		HeadKey: hex.EncodeToString(headKey.Public().(ed25519.PublicKey))}
	setEntries(p, seed, root, leaves)
	signHead(t, p, frozen)
	p.ID = draw.ID(7, frozen, &draw.Published{Count: n, Root: root, Seed: seed, Beacon: &draw.Beacon{Chain: beacon.Dev.Hash, Round: r, Signature: sig}}).String()
	return p
}

// signHead signs p's tree head, frozen at frozen.
func signHead(t *testing.T, p *drawverify.DrawPage, frozen time.Time) {
	t.Helper()
	root, _ := draw.ParseHash(p.Root)
	h := draw.Head{Sale: p.SaleID, Count: p.Count, Root: root, FrozenAt: frozen, Chain: p.Beacon.Chain, Round: p.Beacon.Round}
	sig, err := draw.SignHead(headKey, &h)
	if err != nil {
		t.Fatal(err)
	}
	p.Head = &drawverify.HeadJSON{Sale: h.Sale, Count: h.Count, Root: p.Root, FrozenAtMs: frozen.UnixMilli(), Chain: h.Chain, Round: h.Round,
		Signature: hex.EncodeToString(sig)}
}

// logOf is the log a gateway serves of p: commitment, freeze, beacon and
// reveal, then extra.
func logOf(t *testing.T, p *drawverify.DrawPage, extra ...*draw.Event) *drawverify.LogPage {
	t.Helper()
	n := p.Count
	evs := []*draw.Event{{Event: draw.EventCommit, Commitment: hexOr(p.Commitment), Chain: p.Beacon.Chain, Round: p.Beacon.Round, HeadKey: p.HeadKey},
		{Event: draw.EventFreeze, Root: p.Root, Count: &n, FrozenAt: p.Head.FrozenAtMs, HeadSig: p.Head.Signature},
		{Event: draw.EventBeacon, Round: p.Beacon.Round, Signature: p.Beacon.Signature},
		{Event: draw.EventReveal, Seed: p.Seed}}
	return chainLog(t, p.SaleID, append(evs, extra...))
}

func chainLog(t *testing.T, sale int64, evs []*draw.Event) *drawverify.LogPage {
	t.Helper()
	l := &drawverify.LogPage{SaleID: sale}
	var prev draw.Hash
	for i, e := range evs {
		e.Seq, e.Sale = i, sale
		en, err := draw.NewEntry(prev, e)
		if err != nil {
			t.Fatal(err)
		}
		l.Entries, prev = append(l.Entries, drawverify.LogEntry{Hash: en.Hash.String(), Body: string(en.Body)}), en.Hash
	}
	return l
}

func hexOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// setEntries publishes leaves with their draws and places under seed and
// root, as a gateway does (count included), keyed by the seed and p's
// beacon round.
func setEntries(p *drawverify.DrawPage, seed, root draw.Hash, leaves []draw.Hash) {
	key := seed
	if b := p.Beacon; b != nil {
		sig, _ := hex.DecodeString(b.Signature)
		key = draw.Key(seed, beacon.Randomness(sig))
	}
	draws, places := draw.Places(key, root, leaves)
	p.Count, p.Entries = len(leaves), make([]drawverify.DrawEntry, len(leaves))
	for i := range leaves {
		p.Entries[i] = drawverify.DrawEntry{Leaf: leaves[i].String(), Draw: draws[i].String(), Place: places[i]}
	}
}

// serveDraw serves whole as the gateway's GET .../draw does, in pages of
// size entries, and its log (logOf, or the one given) at .../draw/log.
func serveDraw(t *testing.T, whole *drawverify.DrawPage, size int, log ...*drawverify.LogPage) *httptest.Server {
	t.Helper()
	base := "/api/flash-sales/sales/" + strconv.FormatInt(whole.SaleID, 10) + "/draw"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == base+"/log" {
			if len(log) == 0 {
				log = append(log, logOf(t, whole))
			}
			json.NewEncoder(w).Encode(log[0])
			return
		}
		from, _ := strconv.Atoi(r.URL.Query().Get("from"))
		if k, ok := strings.CutPrefix(r.URL.Path, base+"/"+whole.ID+"/pages/"); ok && whole.ID != "" {
			n, _ := strconv.Atoi(k)
			from = n * size
		} else if r.URL.Path != base || (whole.ID != "" && r.URL.Query().Has("from")) { // pages by address once revealed
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"` + api.SaleNotFound + `"}`))
			return
		}
		page := *whole
		page.From, page.Entries = from, nil
		if whole.State == drawverify.DrawRevealed {
			end := min(from+size, len(whole.Entries))
			page.Entries = whole.Entries[from:end]
			if end < len(whole.Entries) {
				page.Next = &end
			}
		}
		json.NewEncoder(w).Encode(&page)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// verifyOn runs `sale draw verify` of sale 7 against the gateway at base,
// with a Redis that does not answer (the description is not compared).
func verifyOn(base string, extra ...string) (int, string, string) {
	args := append([]string{"sale", "draw", "verify", "--sale", "7", "--gateway", base}, extra...)
	return opstest.Run(ops.Main, map[string]string{"FLASHSALE_REDIS": "127.0.0.1:1"}, args...)
}

// TestDrawVerifyFromGateway: a draw of 50 entrants served in pages of 20
// verifies; three ways to cheat it each fail with the reason: an entrant
// added after the freeze (its leaf, one more in the count, the root as
// frozen), a seed changed after the commitment, two places swapped.
func TestDrawVerifyFromGateway(t *testing.T) {
	good := publishedDraw(t, 50)
	code, out, errOut := verifyOn(serveDraw(t, good, 20).URL)
	if code != ops.ExitOK || !strings.Contains(out, "draw of sale 7 verifies: 50 entrants, root "+good.Root+", seed "+good.Seed+" (commitment "+*good.Commitment+")") {
		t.Fatalf("the honest draw: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "commitment: not compared") {
		t.Errorf("no Redis, yet the report does not say the description was not compared:\n%s", out)
	}
	cases := []struct {
		name   string
		tamper func(p *drawverify.DrawPage)
		want   string
	}{
		{"entrant added after the freeze", func(p *drawverify.DrawPage) {
			seed, root, leaves := mustPublished(t, p)
			leaves = append(leaves, draw.Leaf(7, 5000, draw.NewNonce()))
			draw.Sort(leaves)
			setEntries(p, seed, root, leaves)
		}, "do not hash to the published root"},
		{"seed changed", func(p *drawverify.DrawPage) {
			_, root, leaves := mustPublished(t, p)
			seed := draw.NewSeed()
			p.Seed = seed.String()
			setEntries(p, seed, root, leaves)
		}, "not the commitment published"},
		{"two places swapped", func(p *drawverify.DrawPage) {
			p.Entries[3].Place, p.Entries[41].Place = p.Entries[41].Place, p.Entries[3].Place
		}, "is published at place"},
	}
	for _, tc := range cases {
		p := publishedDraw(t, 50)
		tc.tamper(p)
		code, out, errOut := verifyOn(serveDraw(t, p, 20).URL)
		if code != ops.ExitFail || !strings.Contains(out, "draw of sale 7 does NOT verify") || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, want 1 and %q\n%s%s", tc.name, code, tc.want, out, errOut)
		}
	}
}

func mustPublished(t *testing.T, p *drawverify.DrawPage) (seed, root draw.Hash, leaves []draw.Hash) {
	t.Helper()
	pub, err := drawverify.PublishedOf(p)
	if err != nil {
		t.Fatal(err)
	}
	return pub.Seed, pub.Root, pub.Leaves
}

// TestDrawVerifyRefusals: a draw not revealed yet, a sale without a draw,
// an unknown sale, pages that do not follow on, and a sale created without
// a commitment each say so, with exit 1.
func TestDrawVerifyRefusals(t *testing.T) {
	frozen := publishedDraw(t, 5)
	frozen.State, frozen.Seed, frozen.Committed = drawverify.DrawFrozen, "", nil
	cases := []struct {
		name string
		srv  *httptest.Server
		want string
	}{
		{"frozen", serveDraw(t, frozen, 20), "sale 7: draw not revealed yet: its 5 entrants are frozen under root " + frozen.Root},
		{"no draw", errorServer(t, api.NoDraw), "sale 7 has no draw (its access mode is open"},
		{"unknown sale", errorServer(t, api.SaleNotFound), "the gateway does not know sale 7"},
		{"pages that skip", skipServer(t, publishedDraw(t, 50)), "not a continuation"},
	}
	for _, tc := range cases {
		code, out, errOut := verifyOn(tc.srv.URL)
		if code != ops.ExitFail || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, want 1 and %q\n%s%s", tc.name, code, tc.want, out, errOut)
		}
	}
	none := publishedDraw(t, 5)
	none.Commitment = nil
	if code, out, _ := verifyOn(serveDraw(t, none, 20).URL); code != ops.ExitFail || !strings.Contains(out, "published no commitment") {
		t.Errorf("a draw without commitment: exit %d\n%s", code, out)
	}
	if code, _, errOut := verifyOn("ftp://gw"); code != ops.ExitUsage || !strings.Contains(errOut, "want a gateway's http or https URL") {
		t.Errorf("--gateway ftp://gw: exit %d, %q", code, errOut)
	}
}

func errorServer(t *testing.T, code string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"` + code + `"}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// skipServer serves the first page of whole with a next that skips 5
// entries.
func skipServer(t *testing.T, whole *drawverify.DrawPage) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		from, _ := strconv.Atoi(r.URL.Query().Get("from"))
		page := *whole
		page.From, page.Entries = from, whole.Entries[from:min(from+20, len(whole.Entries))]
		next := from + 25
		page.Next = &next
		json.NewEncoder(w).Encode(&page)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestDrawVerifyFromFile: a draw saved whole verifies without a gateway; a
// saved page, or a draw of another sale, is refused.
func TestDrawVerifyFromFile(t *testing.T) {
	dir := t.TempDir()
	save := func(name string, p *drawverify.DrawPage) string {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := publishedDraw(t, 30)
	if code, out, errOut := verifyOn("http://unused.invalid", "--file", save("good.json", good)); code != ops.ExitOK || !strings.Contains(out, "verifies: 30 entrants") {
		t.Fatalf("a saved draw: exit %d\n%s%s", code, out, errOut)
	}
	lb, _ := json.Marshal(logOf(t, good))
	logPath := filepath.Join(dir, "log.json")
	if err := os.WriteFile(logPath, lb, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := verifyOn("", "--file", save("good.json", good), "--log", logPath, "--offline")
	if code != ops.ExitOK || !strings.Contains(out, "log: 4 entries, chained") || !strings.Contains(out, "commitment: not compared: --offline") {
		t.Fatalf("a saved draw and log, offline: exit %d\n%s%s", code, out, errOut)
	}
	bad := logOf(t, good)
	bad.Entries[2].Body = strings.Replace(bad.Entries[2].Body, `"round":`, `"round":1`, 1)
	lb, _ = json.Marshal(bad)
	if err := os.WriteFile(logPath, lb, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := verifyOn("", "--file", save("good.json", good), "--log", logPath, "--offline"); code != ops.ExitFail || !strings.Contains(out, "entry 2's hash") {
		t.Errorf("a saved log changed after the fact: exit %d\n%s", code, out)
	}
	page := publishedDraw(t, 30)
	next := 20
	page.Entries, page.Next = page.Entries[:20], &next
	if code, _, errOut := verifyOn("", "--file", save("page.json", page)); code != ops.ExitFail || !strings.Contains(errOut, "holds one page of the draw") {
		t.Errorf("a saved page: exit %d, %q", code, errOut)
	}
	other := publishedDraw(t, 3)
	other.SaleID = 8
	if code, _, errOut := verifyOn("", "--file", save("other.json", other)); code != ops.ExitFail || !strings.Contains(errOut, "is of sale 8, not of sale 7") {
		t.Errorf("another sale's draw: exit %d, %q", code, errOut)
	}
}

// TestDrawCommitmentAgainstRedis: the commitment served must be the one in
// the sale's description; a sale Redis does not hold is not compared.
func TestDrawCommitmentAgainstRedis(t *testing.T) {
	check := func(s *sale.Sale, err error) *drawverify.DrawVerified {
		rep, cerr := drawverify.CheckDraw(publishedDraw(t, 4), nil, 7)
		if cerr != nil || !rep.Verified {
			t.Fatalf("the honest draw: %+v %v", rep, cerr)
		}
		rep.CompareDescription(s, err)
		return rep
	}
	if rep := check(nil, errors.Join(stock.ErrNoSale)); !rep.Verified || !strings.Contains(rep.Described, "not in this Redis") {
		t.Errorf("no sale in Redis: %+v", rep)
	}
	other := &sale.Sale{Draw: &sale.DrawCommitment{Commitment: draw.Commitment(draw.NewSeed()).String()}}
	if rep := check(other, nil); rep.Verified || rep.Described != "differs" || !strings.Contains(rep.Reason, "the sale's description in Redis "+other.Draw.Commitment) {
		t.Errorf("another commitment in Redis: %+v", rep)
	}
	if rep := check(&sale.Sale{}, nil); rep.Verified || !strings.Contains(rep.Reason, "names none") {
		t.Errorf("no commitment in Redis: %+v", rep)
	}
}

// TestDrawVerifySealedMutants: what seals a draw is checked, each mutant
// refused with its reason: a forged beacon signature, a tree head dated at
// the round's time, a tree head signed by another key, a log with a second
// freeze, a redraw without an abort entry, a log telling another seed. A
// redraw after an abort verifies, the abort's reason in the report.
func TestDrawVerifySealedMutants(t *testing.T) {
	good := publishedDraw(t, 40)
	code, out, errOut := verifyOn(serveDraw(t, good, 20).URL)
	if code != ops.ExitOK || !strings.Contains(out, "sealed by a beacon: yes: dev round") || !strings.Contains(out, "test chain anyone can sign") ||
		!strings.Contains(out, "log: 4 entries, chained") || !strings.Contains(out, "address: "+good.ID+", the hash of what it serves") {
		t.Fatalf("the sealed draw: exit %d\n%s%s", code, out, errOut)
	}
	n := good.Count
	cases := []struct {
		name string
		srv  *httptest.Server
		want string
	}{
		{"forged beacon", func() *httptest.Server {
			p := publishedDraw(t, 40)
			other, _ := beacon.Dev.Sign(p.Beacon.Round + 1)
			p.Beacon.Signature = hex.EncodeToString(other)
			return serveDraw(t, p, 20)
		}(), "a forged round"},
		{"head dated at the round", func() *httptest.Server {
			p := publishedDraw(t, 40)
			signHead(t, p, beacon.Dev.TimeOf(p.Beacon.Round))
			return serveDraw(t, p, 20)
		}(), "issued after the beacon could be known"},
		{"head of another key", func() *httptest.Server {
			p := publishedDraw(t, 40)
			p.HeadKey = strings.Repeat("ab", 32)
			return serveDraw(t, p, 20)
		}(), "not the sale's head key"},
		{"second freeze", serveDraw(t, good, 20, logOf(t, good, &draw.Event{Event: draw.EventFreeze, Root: good.Root, Count: &n,
			FrozenAt: good.Head.FrozenAtMs, HeadSig: good.Head.Signature})), "a second freeze"},
		{"redraw without an abort", serveDraw(t, good, 20, logOf(t, good, &draw.Event{Event: draw.EventReveal, Seed: good.Seed})),
			"a second reveal without an abort"},
		{"address of another draw", func() *httptest.Server {
			p := *good
			p.ID = draw.NewSeed().String()
			return serveDraw(t, &p, 20)
		}(), "hashes to"},
		{"log of another seed", serveDraw(t, good, 20, func() *drawverify.LogPage {
			q := *good
			q.Seed = draw.NewSeed().String()
			return logOf(t, &q)
		}()), "the log's seed is"},
	}
	for _, tc := range cases {
		code, out, errOut := verifyOn(tc.srv.URL)
		if code != ops.ExitFail || !strings.Contains(out, "does NOT verify") || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, want 1 and %q\n%s%s", tc.name, code, tc.want, out, errOut)
		}
	}
	redrawn := logOf(t, good, &draw.Event{Event: draw.EventAbort, Reason: "the seed leaked"},
		&draw.Event{Event: draw.EventBeacon, Round: good.Beacon.Round, Signature: good.Beacon.Signature},
		&draw.Event{Event: draw.EventReveal, Seed: good.Seed})
	if code, out, errOut := verifyOn(serveDraw(t, good, 20, redrawn).URL); code != ops.ExitOK || !strings.Contains(out, "aborted and redrawn 1 time(s): the seed leaked") {
		t.Errorf("a redraw after an abort: exit %d\n%s%s", code, out, errOut)
	}
}

// TestSaveAMillion writes a sealed draw of FLASHSALE_DRAW_SAVE entrants and
// its log to the directory FLASHSALE_DRAW_DIR, as a gateway serves them, for
// the offline check's measurement (bench/MEASUREMENTS.md):
//
//	FLASHSALE_DRAW_SAVE=1000000 FLASHSALE_DRAW_DIR=/tmp/draw go test -run TestSaveAMillion ./sharding/ops/drawverify/
//	taskset -c 0 env GOMAXPROCS=1 flashctl sale draw verify --sale 7 --file /tmp/draw/draw.json --log /tmp/draw/log.json --offline
func TestSaveAMillion(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("FLASHSALE_DRAW_SAVE"))
	dir := os.Getenv("FLASHSALE_DRAW_DIR")
	if n <= 0 || dir == "" {
		t.Skip("set FLASHSALE_DRAW_SAVE (entrants) and FLASHSALE_DRAW_DIR to write a draw")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := publishedDraw(t, n)
	for name, v := range map[string]any{"draw.json": p, "log.json": logOf(t, p)} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
