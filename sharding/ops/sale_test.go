package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"flashsale/sharding"
	"flashsale/writer/schema"
)

// TestSaleCommands creates a sale from a YAML file through flashctl, refuses it
// a second time, refuses a bad file without writing anything, lists and shows
// it, then pauses, resumes and ends it: each state shows in `sale show`, in
// the description in Redis and in every shard's halt key.
func TestSaleCommands(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	id := randomSaleID()
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
	if ok, err := schema.SaleExists(ctx, e.pool, id); err != nil || ok {
		t.Fatalf("the bad file wrote the sale (%v, %v)", ok, err)
	}
	t.Cleanup(func() { e.dropSale(id) })
	code, out, errOut := runMain("sale", "create", "--file", good, "--shards", "4")
	if code != ExitOK || !strings.Contains(out, "created") {
		t.Fatalf("create: exit %d, %s%s", code, out, errOut)
	}
	if code, _, errOut := runMain("sale", "create", "--file", good); code != ExitFail || !strings.Contains(errOut, "already exists") {
		t.Fatalf("second create: exit %d, %q", code, errOut)
	}
	code, out, _ = runMain("--json", "sale", "list")
	var list SaleList
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
	code, out, _ = runMain("sale", "show", "--sale", sid)
	if code != ExitOK || !strings.Contains(out, "CLI sale") || !strings.Contains(out, "ACTIVE") || !strings.Contains(out, "2,2,2,1") {
		t.Fatalf("show: exit %d, %q", code, out)
	}
	t.Logf("sale show:\n%s", out)
	for _, step := range []struct{ cmd, state, status string }{
		{"pause", sharding.StatePaused, "PAUSED"}, {"pause", sharding.StatePaused, "PAUSED"}, // again: no error
		{"resume", "", "ACTIVE"}, {"end", sharding.StateEnded, "ENDED"},
	} {
		code, out, errOut := runMain("sale", step.cmd, "--sale", sid)
		if code != ExitOK || !strings.Contains(out, "status "+step.status) {
			t.Fatalf("sale %s: exit %d, %s%s", step.cmd, code, out, errOut)
		}
		code, out, _ = runMain("--json", "sale", "show", "--sale", sid)
		var shown SaleShown
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
