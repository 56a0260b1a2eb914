package ops

import (
	"bytes"
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
	"time"

	"flashsale/sharding"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

// raffleYAML is a queue (a drawn sale, as a raffle is) with a presale
// phase open to a claim and to a list, capped at 3 of its 10 units (a
// raffle cannot have a presale: its draw promises every unit).
const raffleYAML = `
id: 42
name: Winter raffle
startsAt: 2026-12-01T10:00:00Z
endsAt: 2026-12-01T11:00:00Z
ticketRequired: true
access: queue
waitingRoom: {preQueue: 10m}
presale: {startsAt: 2026-12-01T09:30:00Z, claim: tier, values: [gold, silver], list: true, cap: 3}
items:
  - {id: 4201, name: Sneaker, price: 12900, currency: EUR, quantity: 10}
`

// TestNewDrawCommits: a queue or raffle sale gets a fresh seed whose SHA-256
// is its commitment; an open sale, or one whose create keeps its stored
// draw, gets none.
func TestNewDrawCommits(t *testing.T) {
	s, err := ParseSale([]byte(raffleYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	seed := newDraw(s)
	b, err := hex.DecodeString(seed)
	if sum := sha256.Sum256(b); err != nil || len(b) != 32 || s.Draw == nil || s.Draw.Commitment != hex.EncodeToString(sum[:]) {
		t.Fatalf("seed %q, draw %+v: want a 32-byte seed and its SHA-256", seed, s.Draw)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("the sale with its commitment: %v", err)
	}
	kept := s.Draw
	if again := newDraw(s); again != "" || s.Draw != kept {
		t.Fatal("a sale with its draw got another seed")
	}
	if other := newDraw(s); other == seed {
		t.Fatal("two seeds alike")
	}
	open, err := ParseSale([]byte(goodYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	if seed := newDraw(open); seed != "" || open.Draw != nil {
		t.Fatalf("an open sale got seed %q", seed)
	}
	if at := accessExpiry(s); !at.Equal(s.EndsAt.Add(sale.DefaultPaymentWindow + 24*time.Hour)) {
		t.Fatalf("the access keys expire at %v", at)
	}
}

// TestShowAccessText: sale show names the access mode, the raffle window,
// the commitment and the presale with what is left of its cap.
func TestShowAccessText(t *testing.T) {
	left := int64(2)
	r := &SaleShown{Access: sale.AccessRaffle, Commitment: strings.Repeat("c", 64),
		Raffle: &sale.Raffle{EntriesOpen: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), EntriesClose: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)},
		Presale: &PresaleShown{StartsAt: time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC), Claim: "tier", Values: []string{"gold", "silver"},
			List: true, Listed: 40, Cap: 3, CapLeft: &left}}
	var b bytes.Buffer
	r.accessText(&b)
	for _, want := range []string{
		"access raffle, entries 2026-11-30T10:00:00Z .. 2026-12-01T09:00:00Z, draw commitment " + strings.Repeat("c", 64),
		"presale from 2026-12-01T09:30:00Z: claim tier in [gold, silver]; list yes (40 users loaded); cap 3, left 2",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
	b.Reset()
	(&SaleShown{Access: sale.AccessQueue}).accessText(&b)
	if !strings.Contains(b.String(), "no draw commitment") {
		t.Errorf("a queue without commitment:\n%s", b.String())
	}
}

// TestFairAccessOnTheStack: `sale create` of a drawn sale draws its seed (in
// Redis, with its expiry, committed in the description and the report) and
// sets its presale cap; a file naming its draw is refused; `sale show` shows
// it all; `sale presale load` fills the list; a create stopped between
// Redis and PostgreSQL finishes with the draw it drew; `sale brand` of a
// drawn sale is not refused for the draw the file does not name.
func TestFairAccessOnTheStack(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	id := randomSaleID()
	sid := strconv.FormatInt(id, 10)
	t.Cleanup(func() { e.dropAccess(id) })
	file := writeRaffle(t, id)
	code, out, errOut := runMain("--json", "sale", "create", "--file", file, "--shards", "2")
	var created SaleCreated
	if err := json.Unmarshal([]byte(out), &created); code != ExitOK || err != nil || created.Access != sale.AccessQueue {
		t.Fatalf("create: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	e.checkSeed(t, id, created.Commitment)
	if left, found, err := e.t.Store.PresaleCapLeft(ctx, id); err != nil || !found || left != 3 {
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
	if ok, err := e.c.Do(ctx, e.c.B().Sismember().Key(sharding.PresaleListKey(id)).Member("13").Build()).AsBool(); err != nil || !ok {
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
	e.lostAndPreloaded(t, id, created.Commitment)
	e.unfinishedRaffle(t)
}

// unfinishedRaffle: a raffle whose create stopped between Redis and
// PostgreSQL is finished by the same file with the draw it drew.
func (e *env) unfinishedRaffle(t *testing.T) {
	ctx := context.Background()
	id := randomSaleID()
	t.Cleanup(func() { e.dropAccess(id) })
	s, err := ReadSaleFile(writeRaffle(t, id))
	if err != nil {
		t.Fatal(err)
	}
	top, err := stock.Topology(ctx, e.c)
	if err != nil {
		t.Fatal(err)
	}
	stopped := *s
	stopped.Version = 1
	if stopped.Shards, err = sharding.PlaceTags(id, 2, top); err != nil {
		t.Fatal(err)
	}
	seed := newDraw(&stopped)
	if _, err := putAccessKeys(ctx, e.t.Store, &stopped, seed); err != nil {
		t.Fatal(err)
	}
	if err := e.t.Store.Preload(ctx, &stopped, false); err != nil {
		t.Fatal(err)
	}
	// A draw the gateways froze meanwhile refuses the finish: its seed may
	// be revealed already, and nobody saw the commitment.
	state := sharding.RoomStateKey(id)
	t.Cleanup(func() { _ = e.c.Do(context.Background(), e.c.B().Del().Key(state).Build()).Error() })
	if err := e.c.Do(ctx, e.c.B().Hset().Key(state).FieldValue().FieldValue("root", strings.Repeat("0", 64)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.t.CreateParsedSale(ctx, s, 0); err == nil || !strings.Contains(err.Error(), "frozen by the gateways") {
		t.Fatalf("finishing a create whose draw was frozen: %v", err)
	}
	if err := e.c.Do(ctx, e.c.B().Del().Key(state).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	rep, err := e.t.CreateParsedSale(ctx, s, 0)
	if err != nil || rep.Commitment != stopped.Draw.Commitment {
		t.Fatalf("finishing the stopped create: %+v %v, want commitment %s", rep, err, stopped.Draw.Commitment)
	}
	e.checkSeed(t, id, rep.Commitment)
}

// checkSeed checks that Redis holds the seed whose SHA-256 is commitment,
// expiring a day after the sale's last payment window, and that the sale's
// description commits to it.
func (e *env) checkSeed(t *testing.T, id int64, commitment string) {
	t.Helper()
	ctx := context.Background()
	seed, found, err := e.t.Store.DrawSeed(ctx, id)
	b, _ := hex.DecodeString(seed)
	if sum := sha256.Sum256(b); err != nil || !found || len(b) != 32 || hex.EncodeToString(sum[:]) != commitment {
		t.Fatalf("seed %q (%v %v) is not the one committed to, %s", seed, found, err, commitment)
	}
	s, err := e.t.Store.LoadSale(ctx, id)
	if err != nil || s.Draw == nil || s.Draw.Commitment != commitment {
		t.Fatalf("the description: %+v %v", s, err)
	}
	at, err := e.c.Do(ctx, e.c.B().Expiretime().Key(sharding.RoomSeedKey(id)).Build()).AsInt64()
	if want := accessExpiry(s).Unix(); err != nil || at != want {
		t.Fatalf("the seed expires at %d (%v), want %d", at, err, want)
	}
}

// writeRaffle writes raffleYAML as sale id, with a fresh item id, ten
// years later (its keys must not expire while the test runs).
func writeRaffle(t *testing.T, id int64) string {
	t.Helper()
	doc := strings.Replace(strings.Replace(raffleYAML, "id: 42", fmt.Sprintf("id: %d", id), 1), "id: 4201", fmt.Sprintf("id: %d", id*100+1), 1)
	return writeTemp(t, "raffle.yaml", strings.ReplaceAll(doc, "2026-", "2036-"))
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
func (e *env) dropAccess(id int64) {
	e.dropSale(id)
	ctx := context.Background()
	for _, k := range []string{sharding.RoomSeedKey(id), sharding.PresaleCapKey(id), sharding.PresaleListKey(id)} {
		e.c.Do(ctx, e.c.B().Del().Key(k).Build())
	}
}

// TestForcedPreloadKeepsTheFrontDoor: a forced preload rebuilds the sale
// from PostgreSQL; the live description's access and draw stay.
func TestForcedPreloadKeepsTheFrontDoor(t *testing.T) {
	cur, err := ParseSale([]byte(raffleYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	newDraw(cur)
	cur.Shards, cur.Version = []string{"s42:a", "s42:b"}, 3
	fromPG := &sale.Sale{ID: 42, Name: cur.Name, StartsAt: cur.StartsAt, EndsAt: cur.EndsAt, Items: cur.Items}
	if err := placePreload(fromPG, cur, 2, nil); err != nil {
		t.Fatal(err)
	}
	if err := fromPG.Validate(); err != nil {
		t.Fatal(err)
	}
	if fromPG.Mode() != sale.AccessQueue || fromPG.WaitingRoom != cur.WaitingRoom || fromPG.Draw != cur.Draw || fromPG.Presale != cur.Presale || !fromPG.TicketRequired {
		t.Fatalf("preloaded %+v, want the live sale's access and draw", fromPG)
	}
}

// lostAndPreloaded: Redis loses the drawn sale id entirely (description,
// stock, seed, cap); a preload from PostgreSQL alone restores its access
// mode, presale and draw commitment, the very seed committed to, and the
// cap of a presale that has not started.
func (e *env) lostAndPreloaded(t *testing.T, id int64, commitment string) {
	t.Helper()
	ctx := context.Background()
	e.dropRedis(ctx, id)
	for _, k := range []string{sharding.RoomSeedKey(id), sharding.PresaleCapKey(id)} {
		if err := e.c.Do(ctx, e.c.B().Del().Key(k).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	sid := strconv.FormatInt(id, 10)
	if code, out, errOut := runMain("preload", "--sale", sid); code != ExitOK || strings.Contains(out, "warning") {
		t.Fatalf("preload of the lost sale: exit %d\n%s%s", code, out, errOut)
	}
	s, err := e.t.Store.LoadSale(ctx, id)
	if err != nil || s.Mode() != sale.AccessQueue || s.WaitingRoom == nil || !s.TicketRequired || s.Presale == nil ||
		s.Draw == nil || s.Draw.Commitment != commitment {
		t.Fatalf("the preloaded description: %+v %v", s, err)
	}
	e.checkSeed(t, id, commitment)
	if left, found, err := e.t.Store.PresaleCapLeft(ctx, id); err != nil || !found || left != 3 {
		t.Fatalf("presale cap after the preload: %d %v %v, want 3", left, found, err)
	}
	// A seed in PostgreSQL that is not the committed one is refused; none
	// at all (a sale created before PostgreSQL kept it) drops the
	// commitment, and the preload says so.
	for _, tc := range []struct{ seed any }{{strings.Repeat("ab", 32)}, {nil}} {
		e.dropRedis(ctx, id)
		_ = e.c.Do(ctx, e.c.B().Del().Key(sharding.RoomSeedKey(id)).Build()).Error()
		if _, err := e.pool.Exec(ctx, `UPDATE sales SET draw_seed = $2 WHERE id = $1`, id, tc.seed); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runMain("preload", "--sale", sid)
		if tc.seed != nil && (code != ExitFail || !strings.Contains(errOut, "is not the one its commitment")) {
			t.Fatalf("preload with another seed in PostgreSQL: exit %d\n%s%s", code, out, errOut)
		}
		if tc.seed == nil {
			s, err := e.t.Store.LoadSale(ctx, id)
			if code != ExitOK || !strings.Contains(out, "warning: PostgreSQL holds no seed") || err != nil || s.Draw != nil || s.Mode() != sale.AccessQueue {
				t.Fatalf("preload with no seed in PostgreSQL: exit %d, %+v %v\n%s%s", code, s, err, out, errOut)
			}
		}
	}
}
