package journal_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"flashsale/sharding"
)

// While Kafka takes produce requests and does not answer them (a broker
// gone without closing its connections, a partition), the relay's round
// cannot end: its watcher keeps the shard's gauges true (the backlog grows
// with new purchases, the oldest entry ages) and counts Kafka failures, so
// the backlog, age and relay-error alerts can fire during the outage. Once
// Kafka answers, every entry is relayed and the journal empties. The Kafka
// here is in-process (kfake), which can hold requests unanswered.
func TestRelayShowsAStalledKafka(t *testing.T) {
	e := setup(t, 1)
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, e.topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kf.Close) // last: after the relay stopped
	var stalled atomic.Bool
	release := make(chan struct{})
	var unstall sync.Once
	resume := func() { unstall.Do(func() { stalled.Store(false); close(release) }) }
	stalled.Store(true)
	kf.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		if stalled.Load() {
			kf.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	e.brokers = kf.ListenAddrs()

	first := e.reserve(t, 1)
	_, obs, _ := e.run(t, 100*time.Millisecond)
	t.Cleanup(resume) // before the relay's stop, which waits for its round
	tag := e.sale.Shards[0]
	read := func() (int64, time.Duration, int) {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		return obs.backlogs[tag], obs.ages[tag], obs.failed["kafka"]
	}
	obs.mu.Lock()
	obs.ages = map[string]time.Duration{}
	obs.mu.Unlock()

	// The relay took the entry and is stuck producing it (deadline: Lease/2
	// = 500ms here). More purchases arrive meanwhile.
	time.Sleep(800 * time.Millisecond)
	var more []sharding.OrderID
	for u := uint64(2); u <= 6; u++ {
		more = append(more, e.reserve(t, u).OrderID)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, age, failed := read()
		if b == 6 && age >= 2*time.Second && failed >= 3 {
			t.Logf("stalled: backlog %d, oldest %v, kafka failures %d", b, age, failed)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("during the stall: backlog %d (want 6), oldest age %v (want >= 2s), kafka failures %d (want >= 3)", b, age, failed)
		}
		time.Sleep(50 * time.Millisecond)
	}

	resume()
	seen := consumeFrom(t, e.brokers, e.topic, 6, 20*time.Second)
	for _, id := range append(more, first.OrderID) {
		if seen[id] == 0 {
			t.Fatalf("order %s not relayed after the stall (seen %d)", id, len(seen))
		}
	}
	for e.backlog(t) > 0 && time.Now().Before(deadline.Add(10*time.Second)) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := e.backlog(t); n != 0 {
		t.Fatalf("%d entries left in the journal after the stall", n)
	}
}

// A relay whose lease another relay took while its produce hung stops
// reporting the shard; stopped while Kafka does not answer, it stops at once
// (a gateway's SIGTERM during a broker hang must not wait for the broker),
// and the entries it could not produce stay in the journal.
func TestRelayStopsDuringAStalledKafka(t *testing.T) {
	e := setup(t, 1)
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, e.topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kf.Close)
	release := make(chan struct{})
	var unstall sync.Once
	t.Cleanup(func() { unstall.Do(func() { close(release) }) })
	kf.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		kf.SleepControl(func() { <-release })
		return nil, nil, false
	})
	e.brokers = kf.ListenAddrs()
	e.reserve(t, 1)
	r, obs, stop := e.run(t, 100*time.Millisecond)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		obs.mu.Lock()
		f := obs.failed["kafka"]
		obs.mu.Unlock()
		if f > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the produce never stalled")
		}
	}
	// Another relay takes the lease this one could not renew while it
	// waited: the stalled relay stops reporting the shard (the new owner
	// does), so that it is not counted twice.
	c := e.st.Client()
	lease := string(sharding.AppendRelayLeaseKey(nil, e.sale.Shards[0]))
	if err := c.Do(context.Background(), c.B().Set().Key(lease).Value("another-relay").Px(time.Minute).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		obs.mu.Lock()
		_, shown := obs.backlogs[e.sale.Shards[0]]
		obs.mu.Unlock()
		if !shown {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stalled relay still reports a shard another relay leased")
		}
	}
	stopped := make(chan time.Duration, 1)
	go func() { t0 := time.Now(); stop(); stopped <- time.Since(t0) }()
	select {
	case d := <-stopped:
		t.Logf("stopped in %v", d)
	case <-time.After(5 * time.Second):
		t.Fatal("the relay did not stop within 5s of its stop while Kafka hung")
	}
	if r.Owned() != 0 {
		t.Fatalf("the stopped relay still holds %d leases", r.Owned())
	}
	if n := e.backlog(t); n != 1 {
		t.Fatalf("journal holds %d entries after the stop, want the 1 not produced", n)
	}
}
