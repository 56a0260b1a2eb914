package app_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/stock"
	"flashsale/writer/internal/consume"
	"flashsale/writer/internal/ghost"
	"flashsale/writer/internal/obs"
	"flashsale/writer/orderevent"
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
	gid := sharding.NewOrderID(s.ID, 77, 77)
	gtag := tagOf(ghostUser)
	for _, cmd := range []func() error{
		func() error {
			return c.Do(ctx, c.B().Decr().Key(string(sharding.AppendStockKey(nil, gtag, item))).Build()).Error()
		},
		func() error {
			return c.Do(ctx, c.B().Hset().Key(string(sharding.AppendBuyersKey(nil, gtag))).FieldValue().
				FieldValue(strconv.Itoa(ghostUser), gid.String()).Build()).Error()
		},
		func() error {
			return c.Do(ctx, c.B().Hset().Key(string(sharding.AppendOrderKey(nil, gtag, gid))).FieldValue().
				FieldValue("user", strconv.Itoa(ghostUser)).FieldValue("item", strconv.FormatInt(item, 10)).
				FieldValue("status", "PENDING").FieldValue("created", "1").FieldValue("expires", "2").Build()).Error()
		},
	} {
		if err := cmd(); err != nil {
			t.Fatal(err)
		}
	}
	// A reservation still journaled: the reserve script wrote its entry and
	// no relay runs.
	journaled := reserveFrom(t, rs, s, item, 2, 1, time.Hour)[0]
	// A reservation whose event is in Kafka, not in PostgreSQL: its entry is
	// gone from the journal as a relay leaves it.
	inKafka := reserveFrom(t, rs, s, item, 3, 1, time.Hour)[0]
	ktag := tagOf(inKafka.UserID)
	j, err := c.Do(ctx, c.B().Hget().Key(string(sharding.AppendOrderKey(nil, ktag, inKafka.OrderID))).Field("j").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
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
	lag := func(ctx context.Context) (int64, error) { return consume.GroupLag(ctx, adm, cfg.Group, topic) }
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
	rec, found, err := rs.Order(ctx, gtag, gid)
	if err != nil || !found || rec.Status != stock.StatusFailed {
		t.Fatalf("ghost's record: %+v found %v (%v), want FAILED", rec, found, err)
	}
	for _, e := range []orderevent.Event{journaled, inKafka} {
		if held, ok, err := rs.Holder(ctx, tagOf(e.UserID), e.UserID); err != nil || !ok || held != e.OrderID {
			t.Fatalf("user %d lost the buyer record of %s: %v %v %v", e.UserID, e.OrderID, held, ok, err)
		}
	}
}
