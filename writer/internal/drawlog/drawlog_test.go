package drawlog

import (
	"bytes"
	"context"
	"encoding/hex"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/draw"
	"flashsale/sharding/draw/beacon"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/internal/obs"
	"flashsale/writer/schema"
)

// sealed returns the events of a draw sealed on the dev chain for entries
// closed at close, as the operator's tool and the gateways log them; seed
// makes two logs of one sale differ from the first entry.
func sealed(t *testing.T, close time.Time, seed byte) []*draw.Event {
	t.Helper()
	c := beacon.Dev
	r := c.RoundFor(close)
	sig, err := c.Sign(r)
	if err != nil {
		t.Fatal(err)
	}
	n := 3
	return []*draw.Event{
		{Event: draw.EventCommit, Commitment: draw.Commitment(draw.Hash{seed}).String(), Chain: c.Hash, Round: r, HeadKey: strings.Repeat("ab", 32)},
		{Event: draw.EventFreeze, Root: draw.Hash{2}.String(), Count: &n, FrozenAt: close.Add(200 * time.Millisecond).UnixMilli(), HeadSig: "00"},
		{Event: draw.EventBeacon, Round: r, Signature: hex.EncodeToString(sig)},
		{Event: draw.EventReveal, Seed: draw.Hash{seed}.String()},
	}
}

// fixture is a queue sale in PostgreSQL, its log in Redis, and a Copier
// limited to it.
type fixture struct {
	t    *testing.T
	ctx  context.Context
	pool *pgxpool.Pool
	rs   *stock.Store
	sale *sale.Sale
	m    *obs.Metrics
	logs *bytes.Buffer
	c    *Copier
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the local stack's PostgreSQL and Redis (run without -short)")
	}
	pool := testenv.NewPool(t)
	rs := stock.New(testenv.NewRedis(t))
	ctx := context.Background()
	if err := schema.Migrate(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	id := 1_000_000 + rand.Int64N(sharding.MaxSaleID-1_000_000)
	now := time.Now().UTC().Truncate(time.Second)
	s := &sale.Sale{ID: id, Name: t.Name(), StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour),
		Access: sale.AccessQueue, TicketRequired: true, Shards: []string{"t"},
		Items: []sale.Item{{ID: id*100 + 1, Name: "i", Price: 1, Currency: "EUR", Quantity: 1}}}
	if err := schema.CreateSale(ctx, pool, s, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cl := rs.Client()
		_ = cl.Do(ctx, cl.B().Del().Key(sharding.RoomLogKey(id)).Build()).Error()
		for _, q := range []string{`DELETE FROM draw_log WHERE sale_id = $1`, `DELETE FROM items WHERE sale_id = $1`, `DELETE FROM sales WHERE id = $1`} {
			if _, err := pool.Exec(ctx, q, id); err != nil {
				t.Logf("dropping sale %d: %v", id, err)
			}
		}
	})
	f := &fixture{t: t, ctx: ctx, pool: pool, rs: rs, sale: s, m: obs.NewMetrics(), logs: &bytes.Buffer{}}
	f.c = New(Config{Sales: []int64{id}}, pool, rs, f.m, slog.New(slog.NewTextHandler(f.logs, nil)))
	return f
}

// append logs events in Redis as the gateways do.
func (f *fixture) append(events ...*draw.Event) {
	f.t.Helper()
	for _, e := range events {
		if _, _, err := f.rs.LogDrawEvent(f.ctx, f.sale.ID, e, time.Now().Add(time.Hour)); err != nil {
			f.t.Fatalf("logging %s: %v", e.Event, err)
		}
	}
}

func (f *fixture) redisLog() []draw.Entry {
	f.t.Helper()
	l, err := f.rs.DrawLog(f.ctx, f.sale.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	return l
}

func (f *fixture) pgLog() []draw.Entry {
	f.t.Helper()
	l, err := schema.ReadDrawLog(f.ctx, f.pool, f.sale.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	return l
}

// copy runs one Copy at now and wants outcome, with added entries.
func (f *fixture) copy(now time.Time, want Outcome, added int) {
	f.t.Helper()
	n, got, err := f.c.Copy(f.ctx, f.sale, now)
	if err != nil || got != want || n != added {
		f.t.Fatalf("copy: outcome %d, %d added, %v; want outcome %d, %d added\nlog:\n%s", got, n, err, want, added, f.logs)
	}
}

func same(a, b []draw.Entry) bool {
	return slices.EqualFunc(a, b, func(x, y draw.Entry) bool { return x.Hash == y.Hash && string(x.Body) == string(y.Body) })
}

// TestCopyKeepsTheDrawLog: the log the draw writes to Redis reaches
// PostgreSQL entry by entry as it grows, the same bytes and hashes, and is
// no longer read once the sale has ended with its reveal.
func TestCopyKeepsTheDrawLog(t *testing.T) {
	f := newFixture(t)
	evs := sealed(t, time.Now().Add(-30*time.Minute), 1)
	now := time.Now()
	f.copy(now, Unchanged, 0) // no log yet
	f.append(evs[0])
	f.copy(now, Copied, 1)
	f.append(evs[1:]...)
	if n, err := f.c.Once(f.ctx, now); err != nil || n != 3 {
		t.Fatalf("once: %d copied, %v; want 3", n, err)
	}
	if r, p := f.redisLog(), f.pgLog(); len(p) != 4 || !same(r, p) {
		t.Fatalf("postgresql holds %d entries, not redis's %d", len(p), len(r))
	}
	if _, err := draw.CheckLog(f.sale.ID, f.pgLog()); err != nil {
		t.Fatalf("the log in postgresql: %v", err)
	}
	f.copy(now, Unchanged, 0) // the sale goes on: still read
	if v := obs.Value(f.m.DrawLogEntries); v != 4 {
		t.Fatalf("draw_log_entries_total %v, want 4", v)
	}

	// Ended with its reveal: final, and Redis is no longer read (a log
	// tampered with now is not even seen).
	after := f.sale.EndsAt.Add(time.Second)
	f.copy(after, Final, 0)
	cl := f.rs.Client()
	if err := cl.Do(f.ctx, cl.B().Lset().Key(sharding.RoomLogKey(f.sale.ID)).Index(1).Element("garbage").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if n, err := f.c.Once(f.ctx, after); err != nil || n != 0 || obs.Value(f.m.DrawLogRefused) != 0 {
		t.Fatalf("a final log read again: %d, %v, refused %v", n, err, obs.Value(f.m.DrawLogRefused))
	}
	// A writer started afterwards finds it final in PostgreSQL alone.
	fresh := New(Config{Sales: []int64{f.sale.ID}}, f.pool, f.rs, f.m, slog.New(slog.NewTextHandler(f.logs, nil)))
	if _, out, err := fresh.Copy(f.ctx, f.sale, after); err != nil || out != Final {
		t.Fatalf("a fresh copier: %d, %v; want final", out, err)
	}
}

// TestTamperedLogIsNotCopied: an entry of the Redis log changed in place
// (its hash kept), an entry that does not parse, and a body with text after
// its JSON are each refused: counted, logged as an error, and nothing of
// the log is copied; PostgreSQL keeps what it held. Once Redis holds the
// true log again, it is copied.
func TestTamperedLogIsNotCopied(t *testing.T) {
	f := newFixture(t)
	evs := sealed(t, time.Now().Add(-30*time.Minute), 1)
	now := time.Now()
	f.append(evs[0], evs[1])
	f.copy(now, Copied, 2)
	f.append(evs[2])
	good := f.redisLog()
	key := sharding.RoomLogKey(f.sale.ID)
	cl := f.rs.Client()
	set := func(i int, v string) {
		t.Helper()
		if err := cl.Do(f.ctx, cl.B().Lset().Key(key).Index(int64(i)).Element(v).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	entry := func(en draw.Entry) string { return en.Hash.String() + " " + string(en.Body) }
	changed := good[2]
	changed.Body = []byte(strings.Replace(string(changed.Body), `"round":`, `"round":1`, 1))
	trailing := good[2]
	trailing.Body = append(slices.Clone(trailing.Body), []byte(` {"x":1}`)...)
	trailing.Hash = draw.ChainHash(good[1].Hash, trailing.Body) // a chain that holds, a body that is not one value
	for i, tamper := range []string{entry(changed), "not an entry", entry(trailing)} {
		set(2, tamper)
		f.logs.Reset()
		f.copy(now, Refused, 0)
		if v := obs.Value(f.m.DrawLogRefused); v != float64(i+1) {
			t.Fatalf("tamper %d: draw_log_refused_total %v, want %d", i, v, i+1)
		}
		if !strings.Contains(f.logs.String(), "level=ERROR") || !strings.Contains(f.logs.String(), strconv.FormatInt(f.sale.ID, 10)) {
			t.Fatalf("tamper %d: no error line naming the sale:\n%s", i, f.logs)
		}
		if p := f.pgLog(); len(p) != 2 || !same(p, good[:2]) {
			t.Fatalf("tamper %d: postgresql holds %d entries, want the 2 copied before", i, len(p))
		}
	}
	set(2, entry(good[2]))
	f.copy(now, Copied, 1)
	if p := f.pgLog(); !same(p, good) {
		t.Fatal("the true log was not copied once Redis held it again")
	}
}

// TestConflictingLogRaisesTheAlert: Redis lost the log and holds another
// one written since (another commitment): its entries at the seqs
// PostgreSQL holds differ, which is counted and logged as an error, and
// nothing is written over. Rows another writer inserted since this writer
// last read PostgreSQL are compared the same way.
func TestConflictingLogRaisesTheAlert(t *testing.T) {
	f := newFixture(t)
	close := time.Now().Add(-30 * time.Minute)
	now := time.Now()
	f.append(sealed(t, close, 1)...)
	f.copy(now, Copied, 4)
	held := f.pgLog()

	cl := f.rs.Client()
	if err := cl.Do(f.ctx, cl.B().Del().Key(sharding.RoomLogKey(f.sale.ID)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	f.append(sealed(t, close, 2)[:2]...)
	f.logs.Reset()
	f.copy(now, Conflict, 0)
	if v := obs.Value(f.m.DrawLogConflicts); v != 1 {
		t.Fatalf("draw_log_conflicts_total %v, want 1", v)
	}
	if l := f.logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, held[0].Hash.String()) {
		t.Fatalf("no error line naming the entry held:\n%s", l)
	}
	if p := f.pgLog(); !same(p, held) {
		t.Fatal("postgresql's log changed on a conflict")
	}
	f.copy(now, Conflict, 0) // counted at every read while it lasts
	if v := obs.Value(f.m.DrawLogConflicts); v != 2 {
		t.Fatalf("draw_log_conflicts_total %v, want 2", v)
	}

	// Another writer's entry 2 lands in PostgreSQL after this writer's last
	// read; Redis holds another entry 2.
	g := newFixture(t)
	g.append(sealed(t, close, 1)[:2]...)
	g.copy(now, Copied, 2)
	g.append(sealed(t, close, 1)[2])
	other := sealed(t, close, 1)
	other[2].Signature = strings.Repeat("00", 48) // not checked by the insert
	other[2].Seq, other[2].Sale = 2, g.sale.ID
	en, err := draw.NewEntry(g.pgLog()[1].Hash, other[2])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := schema.InsertDrawLog(g.ctx, g.pool, g.sale.ID, append(g.pgLog(), en)); err != nil {
		t.Fatal(err)
	}
	g.copy(now, Conflict, 0)
	if p := g.pgLog(); len(p) != 3 || p[2].Hash != en.Hash {
		t.Fatal("another writer's row was written over")
	}
}

// TestCheckBoundsTheLog: more than MaxEntries entries, a body too large, or
// one that is not UTF-8 is refused before draw.CheckLog reads it.
func TestCheckBoundsTheLog(t *testing.T) {
	chain := func(bodies ...string) []draw.Entry {
		var out []draw.Entry
		var prev draw.Hash
		for _, b := range bodies {
			en := draw.Entry{Body: []byte(b), Hash: draw.ChainHash(prev, []byte(b))}
			out, prev = append(out, en), en.Hash
		}
		return out
	}
	many := make([]string, MaxEntries+1)
	for i := range many {
		many[i] = "{}"
	}
	for name, tc := range map[string]struct {
		log  []draw.Entry
		want string
	}{
		"too many":  {chain(many...), "more than"},
		"too large": {chain(`{"seq":0,"reason":"` + strings.Repeat("x", MaxBody) + `"}`), "bytes"},
		"not utf-8": {chain("{\"seq\":0,\"reason\":\"\xff\"}"), "UTF-8"},
		"trailing":  {chain(`{"seq":0} {}`), "one JSON value"},
	} {
		if err := check(1, tc.log); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
}
