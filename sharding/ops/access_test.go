package ops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"flashsale/sharding"
	"flashsale/sharding/draw"
	"flashsale/sharding/draw/beacon"
	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/ops/saleops"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

// TestFairAccessOnTheStack: `sale create` of a drawn sale draws its seed (in
// Redis, with its expiry, committed in the description and the report) and
// sets its presale cap; a file naming its draw is refused; `sale show` shows
// it all; `sale presale load` fills the list; a create stopped between
// Redis and PostgreSQL finishes with the draw it drew; `sale brand` of a
// drawn sale is not refused for the draw the file does not name.
func TestFairAccessOnTheStack(t *testing.T) {
	e := opstest.NewEnv(t)
	ctx := context.Background()
	id := opstest.RandomSaleID()
	sid := strconv.FormatInt(id, 10)
	t.Cleanup(func() { dropAccess(e, id) })
	file := writeQueuePresale(t, id)
	code, out, errOut := runMain("--json", "sale", "create", "--file", file, "--shards", "2")
	var created saleops.SaleCreated
	if err := json.Unmarshal([]byte(out), &created); code != ExitOK || err != nil || created.Access != sale.AccessQueue {
		t.Fatalf("create: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	checkSeed(e, t, id, created.Commitment)
	if left, found, err := e.T.Store.PresaleCapLeft(ctx, id); err != nil || !found || left != 3 {
		t.Fatalf("presale cap: %d %v %v, want 3", left, found, err)
	}
	drawn, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	named := writeTemp(t, "named.yaml", string(drawn)+"draw: {commitment: "+created.Commitment+"}\n")
	if code, _, errOut := runMain("sale", "create", "--file", named); code != ExitFail || !strings.Contains(errOut, "draw is not part of a sale file") {
		t.Fatalf("a file naming its draw: exit %d, %q", code, errOut)
	}
	users := writeTemp(t, "users.txt", "# gold members\n12\n\n0013 # leading zeros\n12\n")
	code, out, errOut = runMain("sale", "presale", "load", "--sale", sid, "--users", users)
	if code != ExitOK || !strings.Contains(out, "3 user ids read, 2 added (the others were listed already), 2 in the list now") {
		t.Fatalf("presale load: exit %d\n%s%s", code, out, errOut)
	}
	if ok, err := e.C.Do(ctx, e.C.B().Sismember().Key(sharding.PresaleListKey(id)).Member("13").Build()).AsBool(); err != nil || !ok {
		t.Fatalf("user 13 is not listed as \"13\": %v %v", ok, err)
	}
	s := shown(t, sid)
	if s.Access != sale.AccessQueue || s.Commitment != created.Commitment || s.Raffle != nil || s.Presale == nil ||
		s.Presale.CapLeft == nil || *s.Presale.CapLeft != 3 || s.Presale.Listed != 2 || !s.Presale.List || s.Presale.Claim != "tier" {
		t.Fatalf("sale show --json: %+v %+v", s, s.Presale)
	}
	if code, out, _ := runMain("sale", "show", "--sale", sid); code != ExitOK || !strings.Contains(out, "draw commitment "+created.Commitment) ||
		!strings.Contains(out, "list yes (2 users loaded); cap 3, left 3") {
		t.Fatalf("sale show:\n%s", out)
	}
	if code, _, errOut := runMain("sale", "brand", "--file", file); code != ExitOK {
		t.Fatalf("sale brand of a drawn sale: exit %d, %q", code, errOut)
	}
	lostAndPreloaded(e, t, id, created.Commitment)
	unfinishedDrawnCreate(e, t)
}

// unfinishedDrawnCreate: a drawn sale whose create stopped between Redis and
// PostgreSQL is finished by the same file with the draw it drew.
func unfinishedDrawnCreate(e *opstest.Env, t *testing.T) {
	ctx := context.Background()
	id := opstest.RandomSaleID()
	t.Cleanup(func() { dropAccess(e, id) })
	s, err := saleops.ReadSaleFile(writeQueuePresale(t, id))
	if err != nil {
		t.Fatal(err)
	}
	top, err := stock.Topology(ctx, e.C)
	if err != nil {
		t.Fatal(err)
	}
	stopped := *s
	stopped.Version = 1
	if stopped.Shards, err = sharding.PlaceTags(id, 2, top); err != nil {
		t.Fatal(err)
	}
	seed := saleops.NewDraw(&stopped, beacon.Dev)
	if _, err := saleops.PutAccessKeys(ctx, e.T.Store, &stopped, seed); err != nil {
		t.Fatal(err)
	}
	if err := e.T.Store.Preload(ctx, &stopped, false); err != nil {
		t.Fatal(err)
	}
	// A draw the gateways froze meanwhile refuses the finish: its seed may
	// be revealed already, and nobody saw the commitment.
	state := sharding.RoomStateKey(id)
	t.Cleanup(func() { _ = e.C.Do(context.Background(), e.C.B().Del().Key(state).Build()).Error() })
	if err := e.C.Do(ctx, e.C.B().Hset().Key(state).FieldValue().FieldValue("root", strings.Repeat("0", 64)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := saleops.CreateParsedSale(ctx, e.T, s, 0, beacon.Dev); err == nil || !strings.Contains(err.Error(), "frozen by the gateways") {
		t.Fatalf("finishing a create whose draw was frozen: %v", err)
	}
	if err := e.C.Do(ctx, e.C.B().Del().Key(state).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	rep, err := saleops.CreateParsedSale(ctx, e.T, s, 0, beacon.Dev)
	if err != nil || rep.Commitment != stopped.Draw.Commitment {
		t.Fatalf("finishing the stopped create: %+v %v, want commitment %s", rep, err, stopped.Draw.Commitment)
	}
	checkSeed(e, t, id, rep.Commitment)
}

// checkSeed checks that Redis holds the seed whose SHA-256 is commitment,
// expiring a day after the sale's last payment window, and that the sale's
// description commits to it.
func checkSeed(e *opstest.Env, t *testing.T, id int64, commitment string) {
	t.Helper()
	ctx := context.Background()
	seed, found, err := e.T.Store.DrawSeed(ctx, id)
	b, _ := hex.DecodeString(seed)
	if sum := sha256.Sum256(b); err != nil || !found || len(b) != 32 || hex.EncodeToString(sum[:]) != commitment {
		t.Fatalf("seed %q (%v %v) is not the one committed to, %s", seed, found, err, commitment)
	}
	s, err := e.T.Store.LoadSale(ctx, id)
	if err != nil || s.Draw == nil || s.Draw.Commitment != commitment {
		t.Fatalf("the description: %+v %v", s, err)
	}
	at, err := e.C.Do(ctx, e.C.B().Expiretime().Key(sharding.RoomSeedKey(id)).Build()).AsInt64()
	if want := tool.AccessExpiry(s).Unix(); err != nil || at != want {
		t.Fatalf("the seed expires at %d (%v), want %d", at, err, want)
	}
}

// writeQueuePresale writes opstest.QueuePresaleYAML as sale id, with a fresh
// item id, ten years later (its keys must not expire while the test runs).
func writeQueuePresale(t *testing.T, id int64) string {
	t.Helper()
	doc := strings.Replace(strings.Replace(opstest.QueuePresaleYAML, "id: 42", fmt.Sprintf("id: %d", id), 1), "id: 4201", fmt.Sprintf("id: %d", id*100+1), 1)
	return writeTemp(t, "queue.yaml", strings.ReplaceAll(doc, "2026-", "2036-"))
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// dropAccess removes sale id and its access keys.
func dropAccess(e *opstest.Env, id int64) {
	e.DropSale(id)
	ctx := context.Background()
	for _, k := range []string{sharding.RoomSeedKey(id), sharding.PresaleCapKey(id), sharding.PresaleListKey(id), sharding.RoomHeadKeyKey(id), sharding.RoomLogKey(id), sharding.RoomStateKey(id)} {
		e.C.Do(ctx, e.C.B().Del().Key(k).Build())
	}
}

// lostAndPreloaded: Redis loses the drawn sale id entirely (description,
// stock, seed, cap); a preload from PostgreSQL alone restores its access
// mode, presale and draw commitment, the very seed committed to, and the
// cap of a presale that has not started.
func lostAndPreloaded(e *opstest.Env, t *testing.T, id int64, commitment string) {
	t.Helper()
	ctx := context.Background()
	e.DropRedis(ctx, id)
	heldKey, err := e.T.Store.DrawHeadKey(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{sharding.RoomSeedKey(id), sharding.PresaleCapKey(id), sharding.RoomHeadKeyKey(id), sharding.RoomLogKey(id)} {
		if err := e.C.Do(ctx, e.C.B().Del().Key(k).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	sid := strconv.FormatInt(id, 10)
	if code, out, errOut := runMain("preload", "--sale", sid); code != ExitOK || strings.Contains(out, "warning") {
		t.Fatalf("preload of the lost sale: exit %d\n%s%s", code, out, errOut)
	}
	s, err := e.T.Store.LoadSale(ctx, id)
	if err != nil || s.Mode() != sale.AccessQueue || s.WaitingRoom == nil || !s.TicketRequired || s.Presale == nil ||
		s.Draw == nil || s.Draw.Commitment != commitment {
		t.Fatalf("the preloaded description: %+v %v", s, err)
	}
	checkSeed(e, t, id, commitment)
	if left, found, err := e.T.Store.PresaleCapLeft(ctx, id); err != nil || !found || left != 3 {
		t.Fatalf("presale cap after the preload: %d %v %v, want 3", left, found, err)
	}
	// The sealed draw's head key and log come back too: the log from the
	// commitment, as the writer had copied none.
	if k, err := e.T.Store.DrawHeadKey(ctx, id); err != nil || !k.Equal(heldKey) {
		t.Fatalf("the tree-head key after the preload: %v", err)
	}
	log, err := e.T.Store.DrawLog(ctx, id)
	if st, cerr := draw.CheckLog(id, log); err != nil || cerr != nil || len(log) != 1 || st.Commit.Commitment != commitment || st.Commit.HeadKey != s.Draw.HeadKey {
		t.Fatalf("the draw's log after the preload: %d entries, %v %v", len(log), err, cerr)
	}
	// A seed in PostgreSQL that is not the committed one is refused; none
	// at all (a sale created before PostgreSQL kept it) drops the
	// commitment, and the preload says so.
	for _, tc := range []struct{ seed any }{{strings.Repeat("ab", 32)}, {nil}} {
		e.DropRedis(ctx, id)
		_ = e.C.Do(ctx, e.C.B().Del().Key(sharding.RoomSeedKey(id)).Build()).Error()
		if _, err := e.Pool.Exec(ctx, `UPDATE sales SET draw_seed = $2 WHERE id = $1`, id, tc.seed); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runMain("preload", "--sale", sid)
		if tc.seed != nil && (code != ExitFail || !strings.Contains(errOut, "is not the one its commitment")) {
			t.Fatalf("preload with another seed in PostgreSQL: exit %d\n%s%s", code, out, errOut)
		}
		if tc.seed == nil {
			s, err := e.T.Store.LoadSale(ctx, id)
			if code != ExitOK || !strings.Contains(out, "warning: PostgreSQL holds no seed") || err != nil || s.Draw != nil || s.Mode() != sale.AccessQueue {
				t.Fatalf("preload with no seed in PostgreSQL: exit %d, %+v %v\n%s%s", code, s, err, out, errOut)
			}
		}
	}
}
