package app_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/writer/internal/app"
)

func runMain(args []string, env map[string]string) (int, string, string) {
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	code := app.Main(context.Background(), args, getenv, &out, &errb)
	return code, out.String(), errb.String()
}

func TestMainUsage(t *testing.T) {
	if code, _, errOut := runMain([]string{"frobnicate"}, nil); code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Errorf("unknown command: %d %q", code, errOut)
	}
	if code, _, errOut := runMain([]string{"run", "-batch-size=-1"}, nil); code != 2 || !strings.Contains(errOut, "-batch-size -1: want 1..100000") {
		t.Errorf("bad flag: %d %q", code, errOut)
	}
	if code, _, errOut := runMain([]string{"sale", "create"}, nil); code != 2 || !strings.Contains(errOut, "--file is required") {
		t.Errorf("sale create without file: %d %q", code, errOut)
	}
	if code, _, _ := runMain([]string{"sale", "show"}, nil); code != 2 {
		t.Errorf("sale show without id: %d", code)
	}
	if code, _, errOut := runMain([]string{"migrate", "extra"}, nil); code != 2 || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Errorf("migrate extra: %d %q", code, errOut)
	}
	for _, args := range [][]string{{"help"}, {"-h"}, {"run", "-help"}} {
		code, out, _ := runMain(args, nil)
		if code != 0 || !strings.Contains(out, "sale create --file F") || !strings.Contains(out, "-database-url string") ||
			!strings.Contains(out, "env FLASHSALE_DATABASE_URL, DATABASE_URL") {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
	if code, out, _ := runMain([]string{"-version"}, nil); code != 0 || !strings.HasPrefix(out, "writer ") {
		t.Errorf("-version: %d %q", code, out)
	}
}

// TestSaleCommands creates a sale from a YAML file, refuses it a second time,
// refuses a bad file without writing anything, then lists and shows it.
func TestSaleCommands(t *testing.T) {
	stack(t)
	st, rs := newStores(t)
	id := 1_000_000 + rand.Int64N(sharding.MaxSaleID-1_000_000)
	dir := t.TempDir()
	env := map[string]string{"DATABASE_URL": testenv.DatabaseURL(), "FLASHSALE_REDIS": strings.Join(testenv.RedisAddrs(), ",")}
	good := filepath.Join(dir, "sale.yaml")
	doc := fmt.Sprintf("id: %d\nname: CLI sale\nstartsAt: 2026-01-01T10:00:00Z\nendsAt: 2027-01-01T10:00:00Z\npaymentWindow: 2m\n"+
		"items:\n  - {id: %d, name: Hat, price: 500, currency: EUR, quantity: 7}\n", id, id*100+1)
	if err := os.WriteFile(good, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(doc, "quantity: 7", "quantity: 0", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runMain([]string{"sale", "create", "--file", bad}, env)
	if code != 1 || !strings.Contains(errOut, "quantity 0") {
		t.Fatalf("bad file: exit %d, %q", code, errOut)
	}
	if ok, err := st.SaleExists(context.Background(), id); err != nil || ok {
		t.Fatalf("bad file wrote the sale (%v, %v)", ok, err)
	}
	code, out, errOut := runMain([]string{"sale", "create", "--file", good, "--shards", "4"}, env)
	if code != 0 {
		t.Fatalf("create: exit %d, %s", code, errOut)
	}
	sale, err := rs.LoadSale(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropSale(t, st, rs, sale) })
	if len(sale.Shards) != 4 || !strings.Contains(out, "created") {
		t.Fatalf("created %q with shards %v", out, sale.Shards)
	}
	if code, _, errOut := runMain([]string{"sale", "create", "--file", good}, env); code != 1 || !strings.Contains(errOut, "already exists") {
		t.Fatalf("second create: exit %d, %q", code, errOut)
	}
	if code, out, _ := runMain([]string{"sale", "list"}, env); code != 0 || !strings.Contains(out, fmt.Sprint(id)) {
		t.Fatalf("list: exit %d, %q", code, out)
	}
	code, out, errOut = runMain([]string{"sale", "show", fmt.Sprint(id)}, env)
	if code != 0 || !strings.Contains(out, "CLI sale") || !strings.Contains(out, "2,2,2,1") {
		t.Fatalf("show: exit %d, %q %q", code, out, errOut)
	}
	t.Logf("sale show:\n%s", out)
}
