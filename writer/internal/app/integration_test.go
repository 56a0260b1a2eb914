package app_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/twmb/franz-go/pkg/kgo"

	"flashsale/deploy/testenv"
	"flashsale/lua"
	"flashsale/sharding"
	"flashsale/sharding/orderevent"
	"flashsale/sharding/stock"
	"flashsale/writer/internal/obs"
	"flashsale/writer/internal/store"
)

func groupName(t *testing.T) string {
	return fmt.Sprintf("writer-test-%s-%x", t.Name(), rand.Uint64())
}

// TestPersistAndReplay persists 10,000 reservations, then replays the whole
// topic with a new consumer group: nothing changes and every replayed event
// counts as a duplicate. It logs the persistence throughput.
func TestPersistAndReplay(t *testing.T) {
	stack(t)
	st, rs := newStores(t)
	const n = 10000
	s := newSale(t, st, rs, 3, n)
	item := s.Items[0].ID
	topic := testenv.NewTopic(t, "writer-persist")
	events := reservations(s, item, n, 10*time.Minute)
	produce(t, newProducer(t, topic), events)

	a := startApp(t, testConfig(topic, groupName(t), s))
	m := a.Metrics
	waitFor(t, 60*time.Second, "first batch", func() bool { return obs.Value(m.Consumed.WithLabelValues("reserved")) > 0 })
	t0 := time.Now()
	waitFor(t, 60*time.Second, "10,000 orders persisted", func() bool { return obs.Value(m.Persisted) >= n })
	wall := time.Since(t0)
	busy := time.Duration(obs.Sum(m.BatchSeconds) * float64(time.Second))
	t.Logf("persisted %d orders: %.0f orders/s from first poll to last commit (%s), %.0f orders/s of transaction time (%s in %d batches)",
		n, n/wall.Seconds(), wall.Round(time.Millisecond), n/busy.Seconds(), busy.Round(time.Millisecond), int(obs.Value(m.BatchSeconds)))
	a.stop(t)

	byStatus, sold := counts(t, st.Pool(), s.ID)
	if byStatus[store.StatusPending] != n || total(byStatus) != n || sold != n {
		t.Fatalf("after the first pass: orders %v, sold %d; want %d PENDING and sold %d", byStatus, sold, n, n)
	}
	if d := obs.Value(m.Duplicates); d != 0 {
		t.Errorf("first pass counted %v duplicates, want 0", d)
	}

	b := startApp(t, testConfig(topic, groupName(t), s))
	waitFor(t, 60*time.Second, "the replay", func() bool { return obs.Value(b.Metrics.Duplicates) >= n })
	b.stop(t)
	byStatus, sold = counts(t, st.Pool(), s.ID)
	if byStatus[store.StatusPending] != n || total(byStatus) != n || sold != n {
		t.Fatalf("after the replay: orders %v, sold %d; want %d PENDING and sold %d", byStatus, sold, n, n)
	}
	if p, d := obs.Value(b.Metrics.Persisted), obs.Value(b.Metrics.Duplicates); p != 0 || d != n {
		t.Fatalf("replay persisted %v and counted %v duplicates; want 0 and %d", p, d, n)
	}
}

// TestPayExpiryRace makes 1,000 orders due while their owners pay them, the
// way a gateway does (act.lua on the order record, the pay event through the
// journal and a relay to Kafka): each order ends PAID or EXPIRED, every pay
// accepted before the deadline ends PAID (never expired), every pay refused
// as expired ends EXPIRED, and Redis gets back exactly the expired units.
func TestPayExpiryRace(t *testing.T) {
	stack(t)
	st, rs := newStores(t)
	const n = 1000
	s := newSale(t, st, rs, 3, 2*n)
	item := s.Items[0].ID
	topic := testenv.NewTopic(t, "writer-race")
	// Reserved in Redis as a gateway would; the due time is set below, once
	// the orders are in PostgreSQL, so that a slow machine cannot let them
	// all expire before the payments start.
	events := reserveInRedis(t, rs, s, item, n, 10*time.Minute)
	before := redisLeft(t, rs, s, item)
	startRelay(t, rs, topic, s)

	cfg := testConfig(topic, groupName(t), s)
	cfg.ExpiryInterval = 5 * time.Millisecond
	a := startApp(t, cfg)
	waitFor(t, 60*time.Second, "orders persisted", func() bool { return obs.Value(a.Metrics.Persisted) >= n })
	// The writer marks each committed order's record, which the gateway's GET
	// answers as "persisted": true.
	waitFor(t, 5*time.Second, "records marked persisted", func() bool {
		for _, e := range events {
			tag := s.Shards[sharding.HomeShard(e.UserID, s.ID, len(s.Shards))]
			if rec, found, err := rs.Order(context.Background(), tag, e.UserID, e.OrderID); err != nil || !found || !rec.Persisted {
				return false
			}
		}
		return true
	})
	// The relay named each event's journal position, so the writer raised
	// each shard's watermark and marked no order by itself: no buyer record
	// carries a mark of its own.
	for _, tag := range s.Shards {
		marks, err := rs.Client().Do(context.Background(), rs.Client().B().Hgetall().Key(string(sharding.AppendPersistedKey(nil, tag))).Build()).AsStrMap()
		if err != nil || marks[strconv.FormatInt(item, 10)] == "" {
			t.Fatalf("shard %s: watermarks %v (%v), want one for item %d", tag, marks, err, item)
		}
		buyers, err := rs.Client().Do(context.Background(), rs.Client().B().Hgetall().Key(string(sharding.AppendBuyersKey(nil, tag))).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		for u, v := range buyers {
			if b, err := stock.ParseBuyer(v); err != nil || b.Persisted {
				t.Fatalf("buyer %s on %s: %+v (%v), want no mark of its own", u, tag, b, err)
			}
		}
	}

	// Spread the due times over 400 ms and pay the orders in random order
	// over the same 400 ms: about half the payments come before their order
	// is due, the rest after, many within milliseconds of an expiry pass
	// (every 5 ms). The due time is set in both places, PostgreSQL's row and
	// Redis's record, as the gateway's reservation sets both.
	const spread = 400 * time.Millisecond
	rc := rs.Client()
	// The orders' records, opened from their buyer records (lua/order.lua)
	// before the clock starts.
	opens := make([]rueidis.LuaExec, n)
	for k, e := range events {
		tag := s.Shards[sharding.HomeShard(e.UserID, s.ID, len(s.Shards))]
		opens[k] = rueidis.LuaExec{Keys: []string{string(sharding.AppendOrderKey(nil, tag, e.OrderID)), string(sharding.AppendBuyersKey(nil, tag))},
			Args: []string{strconv.FormatUint(e.UserID, 10), e.OrderID.String()}}
	}
	for _, r := range rueidis.NewLuaScript(lua.OpenOrder).ExecMulti(context.Background(), rc, opens...) {
		if n, err := r.AsInt64(); err != nil || n != 1 {
			t.Fatalf("opening an order record: %d %v", n, err)
		}
	}
	start := time.Now().Add(300 * time.Millisecond)
	ids := make([][16]byte, n)
	dues := make([]time.Time, n)
	var cmds rueidis.Commands
	for k, e := range events {
		ids[k], dues[k] = e.OrderID, start.Add(time.Duration(k)*spread/n)
		tag := s.Shards[sharding.HomeShard(e.UserID, s.ID, len(s.Shards))]
		cmds = append(cmds, rc.B().Hset().Key(string(sharding.AppendOrderKey(nil, tag, e.OrderID))).FieldValue().
			FieldValue("expires", strconv.FormatInt(dues[k].UnixMilli(), 10)).Build())
	}
	for _, r := range rc.DoMulti(context.Background(), cmds...) {
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Pool().Exec(context.Background(), `
		UPDATE orders SET expires_at = u.due FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, due)
		WHERE orders.id = u.id`, ids, dues); err != nil {
		t.Fatal(err)
	}
	order := rand.Perm(n)
	accepted, refused := map[sharding.OrderID]bool{}, map[sharding.OrderID]bool{}
	time.Sleep(time.Until(start))
	const chunk = 25
	for i := 0; i < n; i += chunk {
		for _, k := range order[i:min(i+chunk, n)] {
			e := events[k]
			v, err := rs.Act(context.Background(), stock.ActRequest{Tag: s.Shards[sharding.HomeShard(e.UserID, s.ID, len(s.Shards))],
				Action: stock.ActPay, SaleID: s.ID, UserID: e.UserID, OrderID: e.OrderID, At: time.Now()})
			switch {
			case err != nil:
				t.Fatal(err)
			case v == stock.ActOK:
				accepted[e.OrderID] = true
			case v == stock.StatusExpired:
				refused[e.OrderID] = true
			default:
				t.Fatalf("pay of %s: %s", e.OrderID, v)
			}
		}
		time.Sleep(time.Until(start.Add(time.Duration(i+chunk) * spread / n)))
	}
	t.Logf("pays accepted %d, refused as expired %d", len(accepted), len(refused))
	if len(accepted) == 0 || len(refused) == 0 {
		t.Fatalf("the race did not happen: %d accepted, %d refused", len(accepted), len(refused))
	}
	var byStatus map[string]int64
	waitFor(t, 30*time.Second, "every order settled", func() bool {
		byStatus, _ = counts(t, st.Pool(), s.ID)
		return byStatus[store.StatusPaid]+byStatus[store.StatusExpired] == n
	})
	expired := byStatus[store.StatusExpired]
	waitFor(t, 10*time.Second, "releases applied", func() bool { return obs.Value(a.Metrics.Releases) >= float64(expired) })
	time.Sleep(300 * time.Millisecond) // let any stray (wrong) release show
	a.stop(t)

	byStatus, sold := counts(t, st.Pool(), s.ID)
	t.Logf("orders %v (PAID+EXPIRED must be %d), sold %d", byStatus, n, sold)
	if byStatus[store.StatusPaid]+byStatus[store.StatusExpired] != n || total(byStatus) != n {
		t.Fatalf("orders %v: want every one PAID or EXPIRED", byStatus)
	}
	if sold != byStatus[store.StatusPaid] {
		t.Errorf("sold %d, want the %d paid", sold, byStatus[store.StatusPaid])
	}
	if got := obs.Value(a.Metrics.Releases); got != float64(expired) {
		t.Errorf("releases %v, want %d (the expired)", got, expired)
	}
	if got := redisLeft(t, rs, s, item) - before; got != expired {
		t.Errorf("redis got %d units back, want %d", got, expired)
	}
	if q, left := s.Items[0].Quantity, redisLeft(t, rs, s, item); left+sold != q {
		t.Errorf("Q = S + P broken: quantity %d, redis %d, sold %d", q, left, sold)
	}
	// The gateway's GET reads the status from Redis: every order shows its
	// final status within a second of the commit.
	want := map[sharding.OrderID]string{}
	rows, err := st.Pool().Query(context.Background(), `SELECT id, status FROM orders WHERE sale_id = $1`, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id [16]byte
		var status string
		if err := rows.Scan(&id, &status); err != nil {
			t.Fatal(err)
		}
		want[id] = status
	}
	waitFor(t, time.Second, "final statuses in redis", func() bool {
		for _, e := range events {
			tag := s.Shards[sharding.HomeShard(e.UserID, s.ID, len(s.Shards))]
			rec, found, err := rs.Order(context.Background(), tag, e.UserID, e.OrderID)
			if err != nil || !found || rec.Status != want[e.OrderID] {
				return false
			}
		}
		return true
	})
	var paidAndExpired int64
	if err := st.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM orders WHERE sale_id = $1 AND status = 'EXPIRED' AND paid_at IS NOT NULL`, s.ID).Scan(&paidAndExpired); err != nil {
		t.Fatal(err)
	}
	if paidAndExpired != 0 {
		t.Errorf("%d orders both paid and expired", paidAndExpired)
	}
	for id, st := range want {
		if accepted[id] && st != store.StatusPaid {
			t.Errorf("order %s: pay accepted before the deadline, order %s", id, st)
		}
		if refused[id] && st != store.StatusExpired {
			t.Errorf("order %s: pay refused as expired, order %s", id, st)
		}
	}
}

// TestThreeWritersExpire runs three writers over 5,000 stale orders: each
// order is expired once and its unit returned once.
func TestThreeWritersExpire(t *testing.T) {
	// Persist the orders with expiry off, then start three writers whose
	// expiry jobs all find the 5,000 due at once.
	const n = 5000
	d := newDueOrders(t, n, "writer-three")
	st, rs, s, item, cfg, before := d.st, d.rs, d.s, d.item, d.cfg, d.before

	var apps []*running
	for range 3 {
		c := cfg
		c.ExpiryInterval = 10 * time.Millisecond
		c.ExpiryBatch = 200
		apps = append(apps, startApp(t, c))
	}
	sum := func(f func(*running) float64) (v float64) {
		for _, a := range apps {
			v += f(a)
		}
		return v
	}
	waitFor(t, 60*time.Second, "5,000 expirations", func() bool {
		return sum(func(a *running) float64 { return obs.Value(a.Metrics.Expired) }) >= n
	})
	waitFor(t, 30*time.Second, "5,000 releases", func() bool {
		return sum(func(a *running) float64 { return obs.Value(a.Metrics.Releases) }) >= n
	})
	time.Sleep(500 * time.Millisecond) // outbox replays run meanwhile; none may release again
	for _, a := range apps {
		a.stop(t)
	}
	expired := sum(func(a *running) float64 { return obs.Value(a.Metrics.Expired) })
	released := sum(func(a *running) float64 { return obs.Value(a.Metrics.Releases) })
	for i, a := range apps {
		t.Logf("writer %d: expired %v, released %v, guarded no-ops %v", i, obs.Value(a.Metrics.Expired), obs.Value(a.Metrics.Releases), obs.Value(a.Metrics.ReleaseNoops))
	}
	if expired != n || released != n {
		t.Fatalf("expired %v, released %v; want %d each", expired, released, n)
	}
	byStatus, sold := counts(t, st.Pool(), s.ID)
	if byStatus[store.StatusExpired] != n || sold != 0 {
		t.Fatalf("orders %v, sold %d; want %d EXPIRED and sold 0", byStatus, sold, n)
	}
	if got := redisLeft(t, rs, s, item) - before; got != n {
		t.Fatalf("redis got %d units back, want %d", got, n)
	}
	var undone int64
	if err := st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM releases WHERE sale_id = $1 AND done_at IS NULL`, s.ID).Scan(&undone); err != nil {
		t.Fatal(err)
	}
	if undone != 0 {
		t.Errorf("%d outbox rows never applied", undone)
	}
}

// TestFaultDeadLetterAndPostgresRestart sends an undecodable record, which lands in
// the dead-letter topic with its reason while the events after it persist,
// then restarts PostgreSQL while events flow: nothing is lost and nothing else
// is dead-lettered.
func TestFaultDeadLetterAndPostgresRestart(t *testing.T) {
	stack(t)
	st, rs := newStores(t)
	const n = 4000
	s := newSale(t, st, rs, 3, n)
	item := s.Items[0].ID
	topic := testenv.NewTopic(t, "writer-dlq")
	dlq := testenv.NewTopic(t, "writer-dlq-dead")
	cl := newProducer(t, topic)
	cfg := testConfig(topic, groupName(t), s)
	cfg.DeadLetter = dlq
	a := startApp(t, cfg)

	events := reservations(s, item, n, 10*time.Minute)
	ctx := context.Background()
	bad := &kgo.Record{Key: []byte(fmt.Sprint(item)), Value: []byte(`{"v":1,"type":"reserved","orderId":"nope"}`)}
	if err := cl.ProduceSync(ctx, bad).FirstErr(); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, events[:1000])
	waitFor(t, 60*time.Second, "events after the bad one", func() bool { return obs.Value(a.Metrics.Persisted) >= 1000 })
	if got := obs.Value(a.Metrics.DeadLetters); got != 1 {
		t.Fatalf("dead letters %v, want 1", got)
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers()...), kgo.ConsumeTopics(dlq),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	f := rd.PollFetches(pctx)
	cancel()
	recs := f.Records()
	if len(recs) != 1 || string(recs[0].Value) != string(bad.Value) {
		t.Fatalf("dead-letter topic holds %d records (%v), want the bad one", len(recs), f.Errors())
	}
	headers := map[string]string{}
	for _, h := range recs[0].Headers {
		headers[h.Key] = string(h.Value)
	}
	t.Logf("dead letter headers: %v", headers)
	if headers["reason"] == "" || headers["source-topic"] != topic || headers["source-offset"] == "" {
		t.Fatalf("dead letter headers %v: want reason, source-topic, source-offset", headers)
	}

	// Restart PostgreSQL while the rest flows in.
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1000; i < n; i += 200 {
			produce(t, cl, events[i:i+200])
			time.Sleep(20 * time.Millisecond)
		}
	})
	time.Sleep(100 * time.Millisecond)
	restartPostgres(t)
	wg.Wait()
	waitFor(t, 90*time.Second, "every event persisted after the restart", func() bool { return obs.Value(a.Metrics.Persisted) >= n })
	a.stop(t)
	byStatus, sold := counts(t, st.Pool(), s.ID)
	t.Logf("after the restart: orders %v, sold %d, retries transient=%v other=%v", byStatus, sold,
		obs.Value(a.Metrics.Retries.WithLabelValues("transient")), obs.Value(a.Metrics.Retries.WithLabelValues("other")))
	if byStatus[store.StatusPending] != n || total(byStatus) != n || sold != n {
		t.Fatalf("orders %v, sold %d; want %d PENDING", byStatus, sold, n)
	}
	if got := obs.Value(a.Metrics.DeadLetters); got != 1 {
		t.Fatalf("dead letters %v after the restart, want still 1", got)
	}
}

// restartPostgres restarts the stack's PostgreSQL once, quickly.
func restartPostgres(t *testing.T) {
	t.Helper()
	root := repoRoot(t)
	script := filepath.Join(root, "deploy", "stack", "stack.sh")
	// The script restarts its private PostgreSQL (a DATABASE_URL naming it
	// counts as private) and refuses, saying why, for an external one.
	cmd := exec.Command("bash", script, "pg-restart")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("restarting postgresql: %v\n%s", err, out)
	}
	t.Logf("postgresql restarted in %s", time.Since(start).Round(time.Millisecond))
}

func repoRoot(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// TestOutboxReplayAfterCrash commits expirations without applying them to
// Redis, as a writer that died right after its commit would leave them; a
// writer started afterwards returns every unit exactly once.
func TestOutboxReplayAfterCrash(t *testing.T) {
	const n = 300
	d := newDueOrders(t, n, "writer-outbox")
	st, rs, s, item, cfg, before := d.st, d.rs, d.s, d.item, d.cfg, d.before

	effects, err := st.ExpireDue(context.Background(), 1000, []int64{s.ID}, store.ClaimAll)
	if err != nil || len(effects) != n {
		t.Fatalf("expired %d (%v), want %d", len(effects), err, n)
	}
	if got := redisLeft(t, rs, s, item); got != before {
		t.Fatalf("redis changed before the replay: %d, was %d", got, before)
	}
	a := startApp(t, cfg)
	b := startApp(t, cfg)
	waitFor(t, 30*time.Second, "the replay", func() bool {
		return obs.Value(a.Metrics.Releases)+obs.Value(b.Metrics.Releases) >= n
	})
	time.Sleep(500 * time.Millisecond)
	a.stop(t)
	b.stop(t)
	if got := obs.Value(a.Metrics.Releases) + obs.Value(b.Metrics.Releases); got != n {
		t.Fatalf("released %v, want %d", got, n)
	}
	if got := redisLeft(t, rs, s, item) - before; got != n {
		t.Fatalf("redis got %d back, want %d", got, n)
	}
}

// TestDuplicateAfterLostBuyerRecord plants what a Redis failover can leave: a
// user's buyer record lost after their order reached PostgreSQL, so Redis sells
// the user a second unit. The writer stores the second order FAILED, returns
// its unit and restores the buyer record of the real order: afterwards
// quantity = Redis stock + sold, and the user cannot buy again.
func TestDuplicateAfterLostBuyerRecord(t *testing.T) {
	stack(t)
	st, rs := newStores(t)
	const q = 10
	s := newSale(t, st, rs, 2, q)
	item := s.Items[0].ID
	topic := testenv.NewTopic(t, "writer-dup")
	cl := newProducer(t, topic)
	first := reserveInRedis(t, rs, s, item, 1, 10*time.Minute)[0]
	produce(t, cl, []orderevent.Event{first})
	a := startApp(t, testConfig(topic, groupName(t), s))
	waitFor(t, 30*time.Second, "the first order persisted", func() bool { return obs.Value(a.Metrics.Persisted) >= 1 })

	ctx := context.Background()
	tag := s.Shards[sharding.HomeShard(first.UserID, s.ID, len(s.Shards))]
	c := rs.Client()
	if err := c.Do(ctx, c.B().Hdel().Key(string(sharding.AppendBuyersKey(nil, tag))).Field(fmt.Sprint(first.UserID)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	second := reserved(s, item, first.UserID, 10*time.Minute)
	res, err := rs.Reserve(ctx, stock.Reservation{Tag: tag, SaleID: s.ID, ItemID: item, UserID: second.UserID, OrderID: second.OrderID,
		Created: second.Created, Expires: second.Expires, TTL: time.Hour})
	if err != nil || res.Outcome != stock.Reserved {
		t.Fatalf("second reservation after the lost record: %+v %v", res, err)
	}
	if left := redisLeft(t, rs, s, item); left != q-2 {
		t.Fatalf("redis stock %d, want %d", left, q-2)
	}
	produce(t, cl, []orderevent.Event{second})
	// The unit comes back first, then the real order's buyer record (two
	// acknowledged writes): wait for both before the writer stops.
	waitFor(t, 30*time.Second, "the duplicate's unit returned and the real buyer record restored", func() bool {
		held, err := rs.Buyers(ctx, tag)
		return redisLeft(t, rs, s, item) == q-1 && err == nil && held[first.UserID] == first.OrderID
	})
	a.stop(t)

	byStatus, sold := counts(t, st.Pool(), s.ID)
	if byStatus[store.StatusPending] != 1 || byStatus[store.StatusFailed] != 1 || sold != 1 {
		t.Fatalf("orders %v, sold %d: want one PENDING, one FAILED, sold 1", byStatus, sold)
	}
	if left := redisLeft(t, rs, s, item); left+sold != q {
		t.Fatalf("quantity %d != redis %d + sold %d", q, left, sold)
	}
	held, err := rs.Buyers(ctx, tag)
	if err != nil || held[first.UserID] != first.OrderID {
		t.Fatalf("buyer record %v (%v), want the real order %s restored", held[first.UserID], err, first.OrderID)
	}
	rec, found, err := rs.Order(ctx, tag, second.UserID, second.OrderID)
	if err != nil || !found || rec.Status != stock.StatusFailed {
		t.Fatalf("duplicate's record %+v found=%v err=%v: want FAILED", rec, found, err)
	}
	again, err := rs.Reserve(ctx, stock.Reservation{Tag: tag, SaleID: s.ID, ItemID: item, UserID: first.UserID, OrderID: sharding.NewOrderID(s.ID, 9, 9),
		Created: time.Now(), Expires: time.Now().Add(time.Minute), TTL: time.Hour})
	if err != nil || again.Outcome != stock.AlreadyPurchased || again.OrderID != first.OrderID {
		t.Fatalf("a third purchase: %+v %v, want already purchased with %s", again, err, first.OrderID)
	}
}

// TestExpiryRunsAtTheDeadline: 50 orders due 5 s after they were reserved,
// on a writer whose passes are 4 s apart: the pass after the first one runs at
// their deadline, so every order is EXPIRED and every unit back in Redis
// within 1.5 s of it. Passes on the interval alone would expire them 3 s late
// (the first pass 4 s after the start finds nothing due, the next comes 8 s
// in).
func TestExpiryRunsAtTheDeadline(t *testing.T) {
	stack(t)
	st, rs := newStores(t)
	const n = 50
	s := newSale(t, st, rs, 3, 4*n)
	item := s.Items[0].ID
	cfg := testConfig(testenv.NewTopic(t, "writer-deadline"), groupName(t), s)
	cfg.ExpiryInterval = 4 * time.Second
	a := startApp(t, cfg)
	p := newProducer(t, cfg.Topic)
	// Reserved once the writer runs: its start (and the topic's) took over
	// 2 s of the orders' 5 s under the whole suite's load, which left too
	// little of the window to tell a deadline from the interval's tick.
	events := reserveInRedis(t, rs, s, item, n, 5*time.Second)
	before := redisLeft(t, rs, s, item)
	produce(t, p, events)
	var deadline time.Time
	for _, e := range events {
		if e.Expires.After(deadline) {
			deadline = e.Expires
		}
	}
	if time.Until(deadline) < 3*time.Second {
		t.Fatalf("the orders are due in %s: too soon for the test to show the scheduling", time.Until(deadline))
	}
	waitFor(t, time.Until(deadline)+1500*time.Millisecond, "every order expired and its unit returned within 1.5 s of the deadline", func() bool {
		return obs.Value(a.Metrics.Expired) == n && obs.Value(a.Metrics.Releases) == n
	})
	t.Logf("all %d expired and released %s after their deadline", n, time.Since(deadline).Round(time.Millisecond))
	if time.Now().Before(deadline) {
		t.Fatalf("expired before the deadline")
	}
	byStatus, sold := counts(t, st.Pool(), s.ID)
	if byStatus[store.StatusExpired] != n || sold != 0 {
		t.Fatalf("orders %v, sold %d; want %d EXPIRED and sold 0", byStatus, sold, n)
	}
	if got := redisLeft(t, rs, s, item) - before; got != n {
		t.Fatalf("redis got %d units back, want %d", got, n)
	}
}
