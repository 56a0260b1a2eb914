package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"flashsale/deploy/testenv"
	shared "flashsale/sharding/config"
	"flashsale/sharding/orderevent"
	"flashsale/writer/internal/obs"
	"flashsale/writer/internal/store"
)

// The writer's Redis writes are acknowledged by a replica (WAIT), and one the
// master answered whose WAIT then failed counts as not done: a failover could
// have lost it. The writer here signs in as a user that may run anything but
// WAIT, which is how such a write looks from the writer (the master answers,
// then the WAIT fails), until the test grants WAIT:
//   - the expiry claims of due orders are unconfirmed, so nothing expires
//     (a claim a failover lost would let a pay accepted after it stand
//     beside the expiry);
//   - the releases of cancelled orders run (their units are back) but their
//     outbox rows stay undone, and the replay does them again;
//   - once WAIT is granted, every order expires or stays cancelled, every
//     outbox row is done, and each unit came back exactly once.
//
// Before the writer's writes went through the batcher with WAIT, a release
// the master answered and a failover then lost was marked done, and its
// unit stayed reserved until flashctl reconcile --repair.
func TestUnconfirmedWritesAreRetried(t *testing.T) {
	stack(t)
	const n, cancelled = 40, 20
	st, rs := newStores(t)
	s := newSale(t, st, rs, 3, 2*n)
	item := s.Items[0].ID
	events := reserveInRedis(t, rs, s, item, n, time.Millisecond) // due at once
	before := redisLeft(t, rs, s, item)
	cfg := testConfig(testenv.NewTopic(t, "writer-unconfirmed"), groupName(t), s)
	persistOrders(t, cfg, events)

	user := testenv.NewRedisUser(t, "~*", "+@all", "-wait")
	cfg.Redis.User, cfg.Redis.Password = user.Name, shared.Secret(user.Password)
	cfg.ExpiryInterval = 50 * time.Millisecond
	a := startApp(t, cfg)
	cancels := make([]orderevent.Event, cancelled)
	for i := range cancels {
		cancels[i] = events[i]
		cancels[i].Type, cancels[i].At = orderevent.Cancel, time.Now()
	}
	produce(t, newProducer(t, cfg.Topic), cancels)
	waitFor(t, 30*time.Second, "cancellations committed", func() bool {
		byStatus, _ := counts(t, st.Pool(), s.ID)
		return byStatus[store.StatusCancelled] == cancelled
	})
	waitFor(t, 10*time.Second, "the cancellations' units back", func() bool { return redisLeft(t, rs, s, item)-before == cancelled })
	time.Sleep(time.Second) // expiry passes every 50 ms, outbox replays every 200 ms

	byStatus, _ := counts(t, st.Pool(), s.ID)
	undone := undoneRows(t, st, s.ID)
	unconfirmed := counterOf(t, a.Metrics.Registry, "flashsale_writer_replica_ack_unconfirmed_total")
	t.Logf("without WAIT: orders %v, %d outbox rows undone, %v writes unconfirmed, %v outbox rows failed in Redis",
		byStatus, undone, unconfirmed, obs.Value(a.Metrics.RedisErrors))
	if byStatus[store.StatusExpired] != 0 {
		t.Errorf("%d orders expired on unconfirmed claims", byStatus[store.StatusExpired])
	}
	if undone != cancelled {
		t.Errorf("%d outbox rows undone, want the %d unconfirmed releases", undone, cancelled)
	}
	if unconfirmed < n {
		t.Errorf("%v writes counted unconfirmed, want at least %d", unconfirmed, n)
	}
	if got := redisLeft(t, rs, s, item) - before; got != cancelled {
		t.Errorf("redis got %d units back, want %d", got, cancelled)
	}

	user.Set("+wait")
	waitFor(t, 30*time.Second, "every order expired or cancelled, every outbox row done", func() bool {
		byStatus, _ := counts(t, st.Pool(), s.ID)
		return byStatus[store.StatusExpired] == n-cancelled && undoneRows(t, st, s.ID) == 0
	})
	time.Sleep(300 * time.Millisecond) // a stray second release would show
	if got := redisLeft(t, rs, s, item) - before; got != n {
		t.Errorf("redis got %d units back, want %d: each exactly once", got, n)
	}
}

// undoneRows counts sale's outbox rows not applied to Redis yet.
func undoneRows(t *testing.T, st *store.Store, saleID int64) int64 {
	t.Helper()
	var n int64
	if err := st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM releases WHERE sale_id = $1 AND done_at IS NULL`, saleID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// counterOf reads the counter name from reg.
func counterOf(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no counter %s", name)
	return 0
}
