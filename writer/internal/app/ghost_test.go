package app_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/twmb/franz-go/pkg/kgo"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/journal"
	"flashsale/sharding/orderevent"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/internal/ghost"
	"flashsale/writer/internal/obs"
	"flashsale/writer/internal/store"
)

// TestGhostSweep plants the three kinds of reservation the sweep can meet and
// steps it past its grace:
//   - a ghost (buyer record, order record and a taken unit, no journal entry,
//     no order): released, its record FAILED, its unit back;
//   - a reservation whose entry is still in the journal (a relay will send
//     it): left alone;
//   - a reservation whose event is in Kafka while no writer persisted it yet
//     (the writer is stopped): left alone while the group has lag, and
//     persisted, not released, once a writer runs.
func TestGhostSweep(t *testing.T) {
	stack(t)
	st, rs := newStores(t)
	s := newSale(t, st, rs, 2, 100)
	item := s.Items[0].ID
	topic := testenv.NewTopic(t, "writer-ghost")
	cfg := testConfig(topic, groupName(t), s)
	ctx := context.Background()
	c := rs.Client()
	tagOf := func(user uint64) string { return s.Shards[sharding.HomeShard(user, s.ID, len(s.Shards))] }

	// The group starts with its offsets at the end: one persisted order.
	first := reserveInRedis(t, rs, s, item, 1, time.Hour)
	persistOrders(t, cfg, first)

	// A ghost, planted by hand as a lost journal entry would leave it.
	const ghostUser = 9001
	gtag, gid := plantGhost(t, rs, s, item, ghostUser, sharding.NewOrderID(s.ID, 77, 77))
	// A reservation still journaled: the reserve script wrote its entry and
	// no relay runs.
	journaled := reserveFrom(t, rs, s, item, 2, 1, time.Hour)[0]
	// A reservation whose event is in Kafka, not in PostgreSQL: its entry is
	// gone from the journal as a relay leaves it.
	inKafka := reserveFrom(t, rs, s, item, 3, 1, time.Hour)[0]
	ktag := tagOf(inKafka.UserID)
	krec, found, err := rs.Order(ctx, ktag, inKafka.UserID, inKafka.OrderID)
	if err != nil || !found {
		t.Fatalf("the order in Kafka: found %v, %v", found, err)
	}
	j := krec.Journal
	if err := c.Do(ctx, c.B().Xdel().Key(string(sharding.AppendEventsKey(nil, ktag))).Id(j).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	produce(t, newProducer(t, topic), []orderevent.Event{inKafka})
	left := redisLeft(t, rs, s, item)

	// The writer is stopped: a sweeper reads its group's lag from outside.
	adm, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	m := obs.NewMetrics()
	lag := func(ctx context.Context) (int64, error) { return journal.GroupLag(ctx, adm, cfg.Group, topic) }
	sw := ghost.New(ghost.Config{Grace: time.Minute, Sales: []int64{s.ID}}, st, rs, lag, m, testLog(t))
	now := time.Now()
	if n, err := sw.Once(ctx, now); err != nil || n != 0 {
		t.Fatalf("first sweep: %d released (%v), want 0: nothing is judged before its grace", n, err)
	}
	if n, err := sw.Once(ctx, now.Add(2*time.Minute)); err != nil || n != 0 {
		t.Fatalf("sweep with lag: %d released (%v), want 0", n, err)
	}
	if obs.Value(m.GhostSweepsSkipped) != 1 {
		t.Fatal("the sweep with lag was not counted as skipped")
	}
	if got := redisLeft(t, rs, s, item); got != left {
		t.Fatalf("stock %d after sweeps that must judge nothing, want %d", got, left)
	}

	// A writer runs and persists the Kafka event; the lag is gone.
	w2 := startApp(t, cfg)
	waitFor(t, 30*time.Second, "the Kafka-only order persisted", func() bool { return obs.Value(w2.Metrics.Persisted) >= 1 })
	w2.stop(t)
	if n, err := sw.Once(ctx, now.Add(4*time.Minute)); err != nil || n != 1 {
		t.Fatalf("sweep without lag: %d released (%v), want the one ghost", n, err)
	}
	if obs.Value(m.Ghosts) != 1 {
		t.Fatalf("ghosts counted %v, want 1", obs.Value(m.Ghosts))
	}
	if got := redisLeft(t, rs, s, item); got != left+1 {
		t.Fatalf("stock %d after the ghost's release, want %d", got, left+1)
	}
	rec, found, err := rs.Order(ctx, gtag, ghostUser, gid)
	if err != nil || !found || rec.Status != stock.StatusFailed {
		t.Fatalf("ghost's record: %+v found %v (%v), want FAILED", rec, found, err)
	}
	// PostgreSQL records it for the closing ledger: a FAILED order with the
	// ghost's reason, its history row, and its outbox row done.
	var status, why, cause string
	var done bool
	err = st.Pool().QueryRow(ctx, `SELECT o.status, o.failure, h.cause, r.done_at IS NOT NULL
		FROM orders o JOIN order_history h ON h.order_id = o.id JOIN releases r ON r.order_id = o.id
		WHERE o.id = $1`, [16]byte(gid)).Scan(&status, &why, &cause, &done)
	if err != nil || status != store.StatusFailed || why != store.FailGhost || cause != store.CauseGhost || !done {
		t.Fatalf("ghost in PostgreSQL: %s %q %s done %v (%v); want FAILED, %q, %s, done", status, why, cause, done, err, store.FailGhost, store.CauseGhost)
	}
	for _, e := range []orderevent.Event{journaled, inKafka} {
		if held, ok, err := rs.Holder(ctx, tagOf(e.UserID), e.UserID); err != nil || !ok || held != e.OrderID {
			t.Fatalf("user %d lost the buyer record of %s: %v %v %v", e.UserID, e.OrderID, held, ok, err)
		}
	}
}

// plantGhost writes by hand what a lost journal entry would leave behind for
// user: a unit taken, a buyer record and a PENDING order record, no journal
// entry, no order in PostgreSQL. It returns the shard tag and the order id.
func plantGhost(t *testing.T, rs *stock.Store, s *sale.Sale, item int64, user uint64, id sharding.OrderID) (string, sharding.OrderID) {
	t.Helper()
	ctx := context.Background()
	c := rs.Client()
	tag := s.Shards[sharding.HomeShard(user, s.ID, len(s.Shards))]
	u := strconv.FormatUint(user, 10)
	for _, cmd := range []rueidis.Completed{
		c.B().Decr().Key(string(sharding.AppendStockKey(nil, tag, item))).Build(),
		c.B().Hset().Key(string(sharding.AppendBuyersKey(nil, tag))).FieldValue().FieldValue(u, id.String()).Build(),
		c.B().Hset().Key(string(sharding.AppendOrderKey(nil, tag, id))).FieldValue().
			FieldValue("user", u).FieldValue("item", strconv.FormatInt(item, 10)).
			FieldValue("status", "PENDING").FieldValue("created", "1").FieldValue("expires", "2").Build(),
	} {
		if err := c.Do(ctx, cmd).Error(); err != nil {
			t.Fatal(err)
		}
	}
	return tag, id
}

// TestGhostSweepLeavesSalesLongOver: a sale whose last payment window closed
// more than twice the grace (and a margin) ago is not swept: its buyer
// records are not read at all, so a planted ghost stays. The same sweeper,
// stepped at times within the sale, finds and releases it.
func TestGhostSweepLeavesSalesLongOver(t *testing.T) {
	stack(t)
	st, rs := newStores(t)
	s := newSale(t, st, rs, 2, 10)
	item := s.Items[0].ID
	ctx := context.Background()
	tag, id := plantGhost(t, rs, s, item, 4242, sharding.NewOrderID(s.ID, 5, 5))
	left := redisLeft(t, rs, s, item)
	noLag := func(context.Context) (int64, error) { return 0, nil }
	m := obs.NewMetrics()
	const grace = time.Minute
	sw := ghost.New(ghost.Config{Grace: grace, Sales: []int64{s.ID}}, st, rs, noLag, m, testLog(t))

	over := s.EndsAt.Add(s.Window() + 2*grace + 11*time.Minute)
	for _, at := range []time.Time{over, over.Add(2 * grace)} {
		if n, err := sw.Once(ctx, at); err != nil || n != 0 {
			t.Fatalf("sweep of a sale long over: %d released (%v), want 0", n, err)
		}
	}
	if held, ok, err := rs.Holder(ctx, tag, 4242); err != nil || !ok || held != id {
		t.Fatalf("the ghost's buyer record after sweeps of a sale long over: %v %v %v", held, ok, err)
	}
	if got := redisLeft(t, rs, s, item); got != left {
		t.Fatalf("stock %d, want %d: a sale long over was settled", got, left)
	}

	now := time.Now()
	if n, err := sw.Once(ctx, now); err != nil || n != 0 {
		t.Fatalf("first sweep within the sale: %d (%v)", n, err)
	}
	if n, err := sw.Once(ctx, now.Add(2*grace)); err != nil || n != 1 {
		t.Fatalf("sweep within the sale past the grace: %d released (%v), want the ghost", n, err)
	}
	if got := redisLeft(t, rs, s, item); got != left+1 {
		t.Fatalf("stock %d after the release, want %d", got, left+1)
	}
}

// TestGhostReleasedByTheReplay: a sweep that recorded a ghost in PostgreSQL
// and died before Redis returned its unit leaves an outbox row; the next
// writer's replay returns the unit and marks the record FAILED, exactly
// once, as it does for an expiry.
func TestGhostReleasedByTheReplay(t *testing.T) {
	stack(t)
	st, rs := newStores(t)
	s := newSale(t, st, rs, 2, 10)
	item := s.Items[0].ID
	ctx := context.Background()
	const user = 4242
	tag, id := plantGhost(t, rs, s, item, user, sharding.NewOrderID(s.ID, 42, 42))
	left := redisLeft(t, rs, s, item)
	recorded, err := st.RecordGhosts(ctx, []store.Ghost{{OrderID: id, SaleID: s.ID, ItemID: item, UserID: user}})
	if err != nil || len(recorded) != 1 || !recorded[0].Releases() {
		t.Fatalf("recorded %+v (%v), want the ghost, as a release", recorded, err)
	}
	w := startApp(t, testConfig(testenv.NewTopic(t, "writer-ghost-replay"), groupName(t), s))
	waitFor(t, 30*time.Second, "the replay of the ghost's release", func() bool { return obs.Value(w.Metrics.Releases) >= 1 })
	w.stop(t)
	if got := redisLeft(t, rs, s, item); got != left+1 {
		t.Fatalf("stock %d after the replay, want %d", got, left+1)
	}
	if _, held, err := rs.Holder(ctx, tag, user); err != nil || held {
		t.Fatalf("the ghost's buyer record is still there (%v)", err)
	}
	if rec, found, err := rs.Order(ctx, tag, user, id); err != nil || !found || rec.Status != stock.StatusFailed {
		t.Fatalf("the ghost's record %+v found %v (%v), want FAILED", rec, found, err)
	}
}
