package drawverify_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"flashsale/sharding/api"
	"flashsale/sharding/draw"
	"flashsale/sharding/ops"
	"flashsale/sharding/ops/drawverify"
	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

// publishedDraw runs a whole draw of n entrants of sale 7 with package draw
// and returns what a gateway serves of it once revealed, whole.
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
	p := &drawverify.DrawPage{SaleID: 7, Access: sale.AccessRaffle, State: drawverify.DrawRevealed, Commitment: &c, Root: root.String(),
		FrozenAt: "2026-12-01T09:59:59.200Z", Seed: seed.String(), Committed: &yes}
	setEntries(p, seed, root, leaves)
	return p
}

// setEntries publishes leaves with their draws and places under seed and
// root, as a gateway does (count included).
func setEntries(p *drawverify.DrawPage, seed, root draw.Hash, leaves []draw.Hash) {
	draws, places := draw.Places(seed, root, leaves)
	p.Count, p.Entries = len(leaves), make([]drawverify.DrawEntry, len(leaves))
	for i := range leaves {
		p.Entries[i] = drawverify.DrawEntry{Leaf: leaves[i].String(), Draw: draws[i].String(), Place: places[i]}
	}
}

// serveDraw serves whole (or, with status, only that error code) as the
// gateway's GET .../draw does, in pages of size entries.
func serveDraw(t *testing.T, whole *drawverify.DrawPage, size int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/flash-sales/sales/"+strconv.FormatInt(whole.SaleID, 10)+"/draw" {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"` + api.SaleNotFound + `"}`))
			return
		}
		from, _ := strconv.Atoi(r.URL.Query().Get("from"))
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
		rep, cerr := drawverify.CheckDraw(publishedDraw(t, 4), 7)
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
