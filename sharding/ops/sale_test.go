package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/ops/saleops"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

// TestSaleCommands creates a sale from a YAML file through flashctl, refuses it
// a second time, refuses a bad file without writing anything, lists and shows
// it, then pauses, resumes and ends it: each state shows in `sale show`, in
// the description in Redis and in every shard's halt key.
func TestSaleCommands(t *testing.T) {
	e := opstest.NewEnv(t)
	ctx := context.Background()
	id := opstest.RandomSaleID()
	sid := strconv.FormatInt(id, 10)
	dir := t.TempDir()
	doc := fmt.Sprintf("id: %d\nname: CLI sale\nstartsAt: 2026-01-01T10:00:00Z\nendsAt: 2036-01-01T10:00:00Z\npaymentWindow: 2m\n"+
		"items:\n  - {id: %d, name: Hat, price: 500, currency: EUR, quantity: 7}\n", id, id*100+1)
	good, bad := filepath.Join(dir, "sale.yaml"), filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(strings.Replace(doc, "quantity: 7", "quantity: 0", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runMain("sale", "create", "--file", bad); code != ExitFail || !strings.Contains(errOut, "quantity 0") {
		t.Fatalf("bad file: exit %d, %q", code, errOut)
	}
	if ok, err := schema.SaleExists(ctx, e.Pool, id); err != nil || ok {
		t.Fatalf("the bad file wrote the sale (%v, %v)", ok, err)
	}
	t.Cleanup(func() { e.DropSale(id) })
	code, out, errOut := runMain("sale", "create", "--file", good, "--shards", "4")
	if code != ExitOK || !strings.Contains(out, "created") {
		t.Fatalf("create: exit %d, %s%s", code, out, errOut)
	}
	if code, _, errOut := runMain("sale", "create", "--file", good); code != ExitFail || !strings.Contains(errOut, "already exists") {
		t.Fatalf("second create: exit %d, %q", code, errOut)
	}
	code, out, _ = runMain("--json", "sale", "list")
	var list saleops.SaleList
	if err := json.Unmarshal([]byte(out), &list); code != ExitOK || err != nil {
		t.Fatalf("sale list --json: exit %d, %v\n%s", code, err, out)
	}
	found := false
	for _, l := range list.Sales {
		found = found || (l.Sale == id && l.Status == "ACTIVE" && l.Quantity == 7 && l.Shards == 4)
	}
	if !found {
		t.Fatalf("sale list does not show sale %d ACTIVE with 7 units on 4 shards:\n%s", id, out)
	}
	// With every unit taken, list says SOLD_OUT, as show and the public
	// description do; the units back, ACTIVE again.
	setStock := func(units ...int64) {
		for i, tag := range shardsOf(t, sid) {
			k := string(sharding.AppendStockKey(nil, tag, id*100+1))
			if err := e.C.Do(ctx, e.C.B().Set().Key(k).Value(strconv.FormatInt(units[i], 10)).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	listed := func() string {
		code, out, _ := runMain("--json", "sale", "list")
		var list saleops.SaleList
		if err := json.Unmarshal([]byte(out), &list); code != ExitOK || err != nil {
			t.Fatalf("sale list --json: exit %d, %v\n%s", code, err, out)
		}
		for _, l := range list.Sales {
			if l.Sale == id {
				return l.Status
			}
		}
		return "missing"
	}
	setStock(0, 0, 0, 0)
	if st := listed(); st != "SOLD_OUT" {
		t.Fatalf("sale list with no unit left: %s, want SOLD_OUT", st)
	}
	// --status keeps the sales in those states (any case), --last the newest.
	filtered := func(args ...string) []saleops.SaleLine {
		code, out, errOut := runMain(append([]string{"--json", "sale", "list"}, args...)...)
		var list saleops.SaleList
		if err := json.Unmarshal([]byte(out), &list); code != ExitOK || err != nil {
			t.Fatalf("sale list %v: exit %d, %v\n%s%s", args, code, err, out, errOut)
		}
		return list.Sales
	}
	has := func(ls []saleops.SaleLine) bool {
		return slices.ContainsFunc(ls, func(l saleops.SaleLine) bool { return l.Sale == id })
	}
	if ls := filtered("--status", "sold_out,paused"); !has(ls) || slices.ContainsFunc(ls, func(l saleops.SaleLine) bool { return l.Status != "SOLD_OUT" && l.Status != "PAUSED" }) {
		t.Fatalf("--status sold_out,paused: %+v", ls)
	}
	if ls := filtered("--status", "ENDED"); has(ls) {
		t.Fatalf("--status ENDED lists the sold-out sale %d", id)
	}
	if ls := filtered("--last", "1"); len(ls) != 1 {
		t.Fatalf("--last 1: %d sales", len(ls))
	}
	setStock(2, 2, 2, 1)
	if st := listed(); st != "ACTIVE" {
		t.Fatalf("sale list with the units back: %s, want ACTIVE", st)
	}
	code, out, _ = runMain("sale", "show", "--sale", sid)
	if code != ExitOK || !strings.Contains(out, "CLI sale") || !strings.Contains(out, "ACTIVE") || !strings.Contains(out, "2,2,2,1") {
		t.Fatalf("show: exit %d, %q", code, out)
	}
	t.Logf("sale show:\n%s", out)
	if !strings.Contains(out, "hand-off journals: 0 entries not yet in Kafka (per shard 0,0,0,0), oldest 0.0s") ||
		!strings.Contains(out, "drift: no writer reading") {
		t.Fatalf("show: no journals line or drift line for a sale no writer reads:\n%s", out)
	}
	// The writer's drift reading shows per item, with its age.
	if err := e.T.Store.PublishDrift(ctx, id, stock.DriftReading{At: time.Now().Add(-2 * time.Second), Items: map[int64]int64{id*100 + 1: -3}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c := e.T.Store.Client()
		c.Do(context.Background(), c.B().Del().Key(sharding.DriftKey(id)).Build())
	})
	code, out, _ = runMain("--json", "sale", "show", "--sale", sid)
	var withDrift saleops.SaleShown
	if err := json.Unmarshal([]byte(out), &withDrift); code != ExitOK || err != nil || len(withDrift.Items) != 1 || len(withDrift.Journals) != 4 {
		t.Fatalf("sale show --json: exit %d, %v\n%s", code, err, out)
	}
	if d := withDrift.Items[0].Drift; d == nil || *d != -3 || time.Since(withDrift.DriftAt) < 2*time.Second {
		t.Fatalf("sale show --json: drift %v at %v, want -3 about 2s ago", d, withDrift.DriftAt)
	}
	if code, out, _ = runMain("sale", "show", "--sale", sid); code != ExitOK || !strings.Contains(out, "drift: the writer's reading of 2.") {
		t.Fatalf("show with a drift reading: exit %d\n%s", code, out)
	}
	// A mangled drift reading is a warning; the report is still shown.
	if err := e.T.Store.Client().Do(ctx, e.T.Store.Client().B().Hset().Key(sharding.DriftKey(id)).FieldValue().FieldValue("at", "soon").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if code, out, _ = runMain("sale", "show", "--sale", sid); code != ExitOK || !strings.Contains(out, `warning: reading the drift of sale `+sid+`: field "at" is "soon"`) ||
		!strings.Contains(out, "2,2,2,1") || !strings.Contains(out, "hand-off journals: 0 entries") {
		t.Fatalf("show with a mangled drift reading: exit %d\n%s", code, out)
	}
	for _, step := range []struct{ cmd, state, status string }{
		{"pause", sale.StatePaused, "PAUSED"}, {"pause", sale.StatePaused, "PAUSED"}, // again: no error
		{"resume", "", "ACTIVE"}, {"end", sale.StateEnded, "ENDED"},
	} {
		if step.cmd == "pause" && countSet(halts(t, sid)) == 4 {
			// A pause that failed half way (a master away until the
			// retries gave up) leaves a shard without its halt key: show
			// warns, and the pause run again completes it.
			k := string(sharding.AppendHaltKey(nil, shardsOf(t, sid)[2]))
			if err := e.C.Do(context.Background(), e.C.B().Del().Key(k).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			if code, out, _ := runMain("sale", "show", "--sale", sid); code != ExitOK ||
				!strings.Contains(out, "WARNING: 1 of 4 shards disagree with the operator state") {
				t.Fatalf("show of a half-paused sale: exit %d\n%s", code, out)
			}
		}
		code, out, errOut := runMain("sale", step.cmd, "--sale", sid)
		if code != ExitOK || !strings.Contains(out, "status "+step.status) {
			t.Fatalf("sale %s: exit %d, %s%s", step.cmd, code, out, errOut)
		}
		code, out, _ = runMain("--json", "sale", "show", "--sale", sid)
		var shown saleops.SaleShown
		if err := json.Unmarshal([]byte(out), &shown); code != ExitOK || err != nil {
			t.Fatalf("sale show --json: exit %d, %v", code, err)
		}
		if shown.Status != step.status || shown.State != step.state || len(shown.Halts) != 4 {
			t.Fatalf("after sale %s: status %s state %q, want %s %q", step.cmd, shown.Status, shown.State, step.status, step.state)
		}
		for i, h := range shown.Halts {
			if h != step.state {
				t.Fatalf("after sale %s: shard %d's halt key is %q, want %q", step.cmd, i, h, step.state)
			}
		}
	}
	if code, _, errOut := runMain("sale", "resume", "--sale", sid); code != ExitFail || !strings.Contains(errOut, "cannot be paused or resumed") {
		t.Fatalf("resume of an ended sale: exit %d, %q", code, errOut)
	}
}

// halts returns sale sid's halt keys, as sale show --json reports them.
func halts(t *testing.T, sid string) []string {
	t.Helper()
	return shown(t, sid).Halts
}

// shardsOf returns sale sid's shard tags, as sale show --json reports them.
func shardsOf(t *testing.T, sid string) []string {
	t.Helper()
	return shown(t, sid).Shards
}

func shown(t *testing.T, sid string) saleops.SaleShown {
	t.Helper()
	code, out, _ := runMain("--json", "sale", "show", "--sale", sid)
	var s saleops.SaleShown
	if err := json.Unmarshal([]byte(out), &s); code != ExitOK || err != nil {
		t.Fatalf("sale show --json: exit %d, %v", code, err)
	}
	return s
}

// TestCreateFinishesAnUnfinishedCreate: a create that stopped after Redis and
// before PostgreSQL's commit left the sale in Redis alone; the same file again
// finishes it, while another file, or a sale with a unit sold, is refused.
func TestCreateFinishesAnUnfinishedCreate(t *testing.T) {
	e := opstest.NewEnv(t)
	ctx := context.Background()
	top, err := stock.Topology(ctx, e.C)
	if err != nil {
		t.Fatal(err)
	}
	unfinished := func(qty int64) *sale.Sale { // in Redis only, as a stopped create leaves it
		id := opstest.RandomSaleID()
		t.Cleanup(func() { e.DropSale(id) })
		now := time.Now().UTC().Truncate(time.Second)
		s := &sale.Sale{ID: id, Name: "stopped", StartsAt: now, EndsAt: now.Add(time.Hour), Version: 1,
			Items: []sale.Item{{ID: id*10 + 1, Name: "x", Price: 1, Currency: "JPY", Quantity: qty}}}
		if s.Shards, err = sharding.PlaceTags(id, 2, top); err != nil {
			t.Fatal(err)
		}
		if err := e.T.Store.Preload(ctx, s, false); err != nil {
			t.Fatal(err)
		}
		f := *s
		f.Shards, f.Version = nil, 0
		return &f
	}

	s := unfinished(5)
	if err := saleops.CreateSale(ctx, e.Pool, e.T.Store, s, 0); err != nil {
		t.Fatalf("the same sale again: %v", err)
	}
	if ok, err := schema.SaleExists(ctx, e.Pool, s.ID); err != nil || !ok {
		t.Fatalf("PostgreSQL holds the sale: %v %v", ok, err)
	}
	stored, err := e.T.Store.LoadSale(ctx, s.ID)
	if err != nil || len(stored.Shards) != 2 {
		t.Fatalf("redis: %+v %v", stored, err)
	}
	if left := e.Left(t, stored, s.Items[0].ID); left != 5 {
		t.Fatalf("units %d, want 5", left)
	}

	other := unfinished(5)
	other.Items[0].Quantity = 6
	if err := saleops.CreateSale(ctx, e.Pool, e.T.Store, other, 0); !errors.Is(err, schema.ErrSaleExists) || !strings.Contains(err.Error(), "differs") {
		t.Fatalf("another file: %v, want ErrSaleExists (differs)", err)
	}

	sold := unfinished(5)
	placed, err := e.T.Store.LoadSale(ctx, sold.ID)
	if err != nil {
		t.Fatal(err)
	}
	tag := placed.Shards[sharding.HomeShard(7, sold.ID, 2)]
	now := time.Now()
	if r, err := e.T.Store.Reserve(ctx, stock.Reservation{Tag: tag, SaleID: sold.ID, ItemID: sold.Items[0].ID, UserID: 7,
		OrderID: sharding.NewOrderID(sold.ID, 7, 7), Attempt: 1, Created: now, Expires: now.Add(time.Minute), TTL: time.Hour}); err != nil || r.Outcome != stock.Reserved {
		t.Fatalf("reserve: %+v %v", r, err)
	}
	if err := saleops.CreateSale(ctx, e.Pool, e.T.Store, sold, 0); !errors.Is(err, schema.ErrSaleExists) || !strings.Contains(err.Error(), "4 of its 5 units") {
		t.Fatalf("a sale with a unit sold: %v, want ErrSaleExists (4 of its 5 units)", err)
	}
	for _, id := range []int64{other.ID, sold.ID} {
		if ok, _ := schema.SaleExists(ctx, e.Pool, id); ok {
			t.Fatalf("sale %d was written to PostgreSQL", id)
		}
	}
}

// countSet counts the halt keys set (the non-empty strings of v).
func countSet(v []string) int {
	n := 0
	for _, s := range v {
		if s != "" {
			n++
		}
	}
	return n
}
