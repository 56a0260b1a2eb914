package journal_test

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
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
)

type counts struct {
	mu       sync.Mutex
	relayed  int
	failed   map[string]int
	backlogs map[string]int64
	ages     map[string]time.Duration
	rounds   map[string]int
}

func (c *counts) Journal(sh journal.Shard, b int64, age time.Duration) {
	c.mu.Lock()
	c.backlogs[sh.Tag] = b
	if c.ages != nil {
		c.ages[sh.Tag] = age
	}
	if c.rounds != nil {
		c.rounds[sh.Tag]++
	}
	c.mu.Unlock()
}
func (c *counts) Released(sh journal.Shard) {
	c.mu.Lock()
	delete(c.backlogs, sh.Tag)
	if c.rounds != nil {
		c.rounds[sh.Tag]++
	}
	c.mu.Unlock()
}
func (c *counts) Relayed(n int)   { c.mu.Lock(); c.relayed += n; c.mu.Unlock() }
func (c *counts) Failed(k string) { c.mu.Lock(); c.failed[k]++; c.mu.Unlock() }

type env struct {
	st      *stock.Store
	sale    *sale.Sale
	topic   string
	brokers []string // the relay's Kafka
}

func setup(t testing.TB, shards int) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	testenv.Require(t, "redis", "kafka")
	c := testenv.NewRedis(t)
	st := stock.New(c)
	ctx := context.Background()
	top, err := stock.Topology(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	id := 1 + rand.Int64N(sharding.MaxSaleID-1)
	tags, err := sharding.PlaceTags(id, shards, top)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s := &sale.Sale{ID: id, Name: "relay test", StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour),
		Items: []sale.Item{{ID: id*10 + 1, Name: "x", Price: 1, Currency: "JPY", Quantity: 1000}}, Shards: tags, Version: 1}
	// The stock only, not Preload: the sale stays out of the sales index.
	// Gateways of the tests running beside this package load the index and
	// beat every live sale's shards, and one that stops uncleanly leaves a
	// fence mark that holds a shard's relay for the fence time (10 s),
	// longer than these tests wait for an entry to reach Kafka (seen under
	// make test's go test -p 4).
	for i, q := range sharding.Split(s.Items[0].Quantity, len(tags)) {
		key := string(sharding.AppendStockKey(nil, tags[i], s.Items[0].ID))
		if err := c.Do(ctx, c.B().Set().Key(key).Value(strconv.FormatInt(q, 10)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	return &env{st: st, sale: s, topic: testenv.NewTopic(t, "relay-test"), brokers: testenv.KafkaBrokers()}
}

func (e *env) shards() []journal.Shard {
	out := make([]journal.Shard, len(e.sale.Shards))
	for i, tag := range e.sale.Shards {
		out[i] = journal.Shard{SaleID: e.sale.ID, Tag: tag}
	}
	return out
}

// run starts a relay with hold until the test ends (or stop is called).
func (e *env) run(t testing.TB, hold time.Duration) (*journal.Relay, *counts, func()) {
	t.Helper()
	return e.runOn(t, e.st.Client(), hold, 0)
}

// runOn is run over the Redis client c, its rounds waiting for acks
// replicas.
func (e *env) runOn(t testing.TB, c rueidis.Client, hold time.Duration, acks int) (*journal.Relay, *counts, func()) {
	t.Helper()
	kc, err := kgo.NewClient(journal.ProducerOpts(e.brokers)...)
	if err != nil {
		t.Fatal(err)
	}
	obs := &counts{failed: map[string]int{}, backlogs: map[string]int64{}}
	r := journal.New(journal.Config{Topic: e.topic, Hold: hold, Lease: time.Second, Scan: 200 * time.Millisecond, Acks: acks,
		Log: slog.New(slog.NewTextHandler(logOut, nil))}, c, kc, e.shards, obs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done; kc.Close() }) }
	t.Cleanup(stop)
	return r, obs, stop
}

func (e *env) reserve(t testing.TB, user uint64) stock.Reservation {
	t.Helper()
	r := e.reservation(user)
	res, err := e.st.Reserve(context.Background(), r)
	if err != nil || res.Outcome != stock.Reserved {
		t.Fatalf("reserve: %+v %v", res, err)
	}
	return r
}

// reservation returns a new reservation of the sale's first item for user.
func (e *env) reservation(user uint64) stock.Reservation {
	sale := e.sale
	now := time.Now()
	return stock.Reservation{Tag: sale.Shards[sharding.HomeShard(user, sale.ID, len(sale.Shards))], SaleID: sale.ID,
		ItemID: sale.Items[0].ID, UserID: user, OrderID: sharding.NewOrderID(sale.ID, rand.Uint64(), rand.Uint32()),
		Attempt: rand.Uint64(), Created: now, Expires: now.Add(10 * time.Minute), TTL: time.Hour}
}

func (e *env) backlog(t testing.TB) int64 {
	t.Helper()
	c := e.st.Client()
	var n int64
	for _, tag := range e.sale.Shards {
		k, err := c.Do(context.Background(), c.B().Xlen().Key(string(sharding.AppendEventsKey(nil, tag))).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		n += k
	}
	return n
}

func consume(t *testing.T, topic string, want int, within time.Duration) map[sharding.OrderID]int {
	t.Helper()
	return consumeFrom(t, testenv.KafkaBrokers(), topic, want, within)
}

func consumeFrom(t *testing.T, brokers []string, topic string, want int, within time.Duration) map[sharding.OrderID]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[sharding.OrderID]int{}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for len(seen) < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			ev, err := orderevent.Decode(r.Value)
			if err != nil {
				t.Errorf("record %q: %v", r.Value, err)
				return
			}
			if string(r.Key) != strconv.FormatInt(ev.ItemID, 10) {
				t.Errorf("key %q for item %d", r.Key, ev.ItemID)
			}
			// The writer raises the shard's persisted watermark from it.
			if len(r.Headers) != 1 || r.Headers[0].Key != orderevent.JournalHeader {
				t.Errorf("record of %s: headers %v, want the journal position", ev.OrderID, r.Headers)
			} else if _, ok := orderevent.ParsePosition(r.Headers[0].Value); !ok {
				t.Errorf("record of %s: journal position %q", ev.OrderID, r.Headers[0].Value)
			}
			seen[ev.OrderID]++
		})
	}
	return seen
}

// Journaled reservations reach Kafka, keyed by item, and leave the journal
// only once Kafka acknowledged them.
func TestRelayMovesTheJournal(t *testing.T) {
	e := setup(t, 4)
	var rs []stock.Reservation
	for u := uint64(1); u <= 50; u++ {
		rs = append(rs, e.reserve(t, u))
	}
	if n := e.backlog(t); n != 50 {
		t.Fatalf("journal holds %d entries, want 50", n)
	}
	_, obs, _ := e.run(t, 100*time.Millisecond)
	seen := consume(t, e.topic, 50, 20*time.Second)
	for _, r := range rs {
		if seen[r.OrderID] == 0 {
			t.Fatalf("order %s not relayed", r.OrderID)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.backlog(t) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := e.backlog(t); n != 0 {
		t.Fatalf("%d entries left after they were relayed", n)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.relayed < 50 || len(obs.failed) != 0 {
		t.Fatalf("relayed %d, failures %v", obs.relayed, obs.failed)
	}
}

// A round closes the entries it takes to voids (the shard's taken
// watermark), so they go to Kafka only once a replica acknowledged the
// round: were the watermark lost in a failover, a void could undo an entry
// already in Kafka, and its buyer, told 503, would hold an order. Here the
// relay signs in as a user that may not run WAIT, which is how a failing WAIT
// looks to it: nothing is produced and the entries stay in the journal, no
// longer voidable (a void finds the order standing), until WAIT is granted.
func TestRelayProducesOnlyConfirmedRounds(t *testing.T) {
	e := setup(t, 2)
	user := testenv.NewRedisUser(t, "~*", "+@all", "-wait")
	var rs []stock.Reservation
	for u := uint64(1); u <= 5; u++ {
		rs = append(rs, e.reserve(t, u))
	}
	_, obs, _ := e.runOn(t, user.Client(), 100*time.Millisecond, 1)
	if seen := consume(t, e.topic, 1, 1500*time.Millisecond); len(seen) != 0 {
		t.Fatalf("relayed %v from rounds no replica confirmed", seen)
	}
	obs.mu.Lock()
	failed := obs.failed["redis"]
	obs.mu.Unlock()
	if n := e.backlog(t); n != 5 || failed == 0 {
		t.Fatalf("journal holds %d entries (want 5), %d failed rounds (want some)", n, failed)
	}
	if out, err := e.st.Void(context.Background(), rs[0]); err != nil || out != stock.VoidStands {
		t.Fatalf("void of an entry an unconfirmed round took: %v %v, want stands", out, err)
	}
	user.Set("+wait")
	seen := consume(t, e.topic, 5, 20*time.Second)
	for _, r := range rs {
		if seen[r.OrderID] == 0 {
			t.Fatalf("order %s not relayed once WAIT was granted", r.OrderID)
		}
	}
}

// An empty journal is read about once per hold (an entry cannot be taken
// sooner), and a cold shard's (its sale far from its window) once per
// ColdPause under a lease three times as long; an entry on a cold shard
// still reaches Kafka, at the next reading.
func TestRelayPacesIdleAndColdShards(t *testing.T) {
	e := setup(t, 4)
	cold := map[string]bool{e.sale.Shards[0]: true, e.sale.Shards[1]: true}
	kc, err := kgo.NewClient(journal.ProducerOpts(e.brokers)...)
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	obs := &counts{failed: map[string]int{}, backlogs: map[string]int64{}, rounds: map[string]int{}}
	const hold, coldPause = 300 * time.Millisecond, 2 * time.Second
	r := journal.New(journal.Config{Topic: e.topic, Hold: hold, Lease: time.Second, Scan: 200 * time.Millisecond,
		Cold: func(sh journal.Shard) bool { return cold[sh.Tag] }, ColdPause: coldPause,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, e.st.Client(), kc, e.shards, obs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	time.Sleep(3 * time.Second)
	obs.mu.Lock()
	for i, tag := range e.sale.Shards {
		n := obs.rounds[tag]
		lo, hi := 6, 12 // 3s of rounds every 300ms, less the start
		if cold[tag] {
			lo, hi = 1, 2
		}
		if n < lo || n > hi {
			t.Errorf("shard %d (cold %v): %d rounds in 3s, want %d..%d", i, cold[tag], n, lo, hi)
		}
		if _, shown := obs.backlogs[tag]; shown == cold[tag] {
			t.Errorf("shard %d (cold %v): backlog gauge shown %v, want it for the warm shards only", i, cold[tag], shown)
		}
	}
	obs.mu.Unlock()
	c := e.st.Client()
	ttl, err := c.Do(ctx, c.B().Pttl().Key(string(sharding.AppendRelayLeaseKey(nil, e.sale.Shards[0]))).Build()).AsInt64()
	if err != nil || ttl < int64(coldPause/time.Millisecond) {
		t.Errorf("cold shard's lease lives %dms (%v), want more than its pause %v", ttl, err, coldPause)
	}
	var user uint64 = 1
	for sharding.HomeShard(user, e.sale.ID, 4) != 0 {
		user++
	}
	res := e.reserve(t, user)
	seen := consume(t, e.topic, 1, coldPause+hold+5*time.Second)
	if seen[res.OrderID] != 1 {
		t.Fatalf("the entry on a cold shard was not relayed: %v", seen)
	}
}

// An entry younger than the hold is not taken: a void within the hold removes
// it and it never reaches Kafka; a void after a relay took an entry answers
// that the order stands.
func TestRelayHoldLeavesTimeToVoid(t *testing.T) {
	e := setup(t, 1)
	e.run(t, 2*time.Second)
	voided := e.reserve(t, 1)
	out, err := e.st.Void(context.Background(), voided)
	if err != nil || out != stock.Voided {
		t.Fatalf("void within the hold: %v %v, want voided", out, err)
	}
	kept := e.reserve(t, 2)
	seen := consume(t, e.topic, 1, 20*time.Second)
	if seen[kept.OrderID] == 0 || seen[voided.OrderID] != 0 {
		t.Fatalf("relayed %v: want the kept order and not the voided one", seen)
	}
	out, err = e.st.Void(context.Background(), kept)
	if err != nil || out != stock.VoidStands {
		t.Fatalf("void after the relay took the entry: %v %v, want stands", out, err)
	}
	if held, ok, _ := e.st.Holder(context.Background(), kept.Tag, 2); !ok || held != kept.OrderID {
		t.Fatal("the standing order lost its buyer record")
	}
}

// A relay that takes over a lease that was lost, not released (its owner
// died: the ownership mark is there), takes nothing for the hold plus the
// settle time (2s by default), however old the entries: the last owner may
// have lost the lease in an outage that also kept a gateway from voiding an
// attempt, and that gateway's void comes once Redis answers again. Past the
// quiet, the entries go. A shard never held (or released cleanly) is relayed
// at once.
func TestRelayQuietAfterALostLease(t *testing.T) {
	e := setup(t, 2)
	c := e.st.Client()
	lostTag := e.sale.Shards[0]
	if err := c.Do(context.Background(), c.B().Set().Key(string(sharding.AppendRelayMarkKey(nil, lostTag))).Value("dead-relay").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	var old, lost, fresh stock.Reservation // two on the lost lease's shard, one on the other
	for u := uint64(1); old.Tag == "" || lost.Tag == "" || fresh.Tag == ""; u++ {
		home := e.sale.Shards[sharding.HomeShard(u, e.sale.ID, 2)]
		switch {
		case home == lostTag && old.Tag == "":
			old = e.reserve(t, u)
		case home == lostTag && lost.Tag == "":
			lost = e.reserve(t, u) // a reply lost in the outage: its void is late
		case home != lostTag && fresh.Tag == "":
			fresh = e.reserve(t, u)
		}
	}
	time.Sleep(300 * time.Millisecond)
	relay, _, _ := e.run(t, 100*time.Millisecond)
	began := time.Now()
	for relay.Owned() < 2 && time.Since(began) < 5*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	seen := consume(t, e.topic, 1, 10*time.Second)
	if took := time.Since(began); seen[fresh.OrderID] != 1 || took > 1500*time.Millisecond {
		t.Fatalf("the never-held shard's entry: relayed %v after %v, want once within the hold (and a round)", seen, took)
	}
	time.Sleep(time.Until(began.Add(time.Second))) // the lease is held, the entries are past the hold
	out, err := e.st.Void(context.Background(), lost)
	if err != nil || out != stock.Voided {
		t.Fatalf("void 1 s after the relay took over the lost lease: %v %v, want voided", out, err)
	}
	seen = consume(t, e.topic, 2, 20*time.Second)
	took := time.Since(began)
	if seen[old.OrderID] != 1 || seen[lost.OrderID] != 0 {
		t.Fatalf("relayed %v: want the old order once and not the voided one", seen)
	}
	if took < 2*time.Second {
		t.Fatalf("the lost lease's entry reached Kafka %v after the takeover, want after the hold and settle (2.1 s)", took)
	}
	t.Logf("the lost lease's entry relayed %v after the takeover", took.Round(10*time.Millisecond))
}

// A shard whose lease another (dead) relay holds is taken over once the
// lease expires, and its entries are relayed.
func TestRelayTakesOverAnExpiredLease(t *testing.T) {
	e := setup(t, 1)
	tag := e.sale.Shards[0]
	c := e.st.Client()
	lease := string(sharding.AppendRelayLeaseKey(nil, tag))
	if err := c.Do(context.Background(), c.B().Set().Key(lease).Value("dead-relay").Px(1500*time.Millisecond).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	r := e.reserve(t, 1)
	began := time.Now()
	relay, _, _ := e.run(t, 100*time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	if relay.Owned() != 0 {
		t.Fatal("took a shard whose lease another relay holds")
	}
	seen := consume(t, e.topic, 1, 20*time.Second)
	if seen[r.OrderID] == 0 {
		t.Fatal("the dead relay's entry never reached Kafka")
	}
	took := time.Since(began)
	t.Logf("entry relayed %v after start, behind a lease with 1.5s left", took.Round(10*time.Millisecond))
	if took < time.Second {
		t.Fatalf("relayed after %v, before the foreign lease expired", took)
	}
	if v, _ := c.Do(context.Background(), c.B().Get().Key(lease).Build()).ToString(); v != relay.Token() {
		t.Fatalf("lease holds %q, want this relay's token", v)
	}
}

// On a clean stop a relay releases its leases, so another one takes the
// shards at once.
func TestRelayReleasesItsLeasesOnStop(t *testing.T) {
	e := setup(t, 2)
	a, _, stopA := e.run(t, 100*time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for a.Owned() < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if a.Owned() != 2 {
		t.Fatalf("relay owns %d shards, want 2", a.Owned())
	}
	stopA()
	c := e.st.Client()
	for _, tag := range e.sale.Shards {
		n, err := c.Do(context.Background(), c.B().Exists().Key(string(sharding.AppendRelayLeaseKey(nil, tag))).Build()).AsInt64()
		if err != nil || n != 0 {
			t.Fatalf("lease of %s still held after a clean stop (%v)", tag, err)
		}
	}
	b, _, _ := e.run(t, 100*time.Millisecond)
	deadline = time.Now().Add(2 * time.Second)
	for b.Owned() < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if b.Owned() != 2 {
		t.Fatalf("the next relay owns %d shards, want 2", b.Owned())
	}
}

// Two relays share a sale's shards: the first takes them all, and gives up
// its surplus once the second says it is alive.
func TestRelaysShareTheShards(t *testing.T) {
	e := setup(t, 6)
	a, _, _ := e.run(t, 100*time.Millisecond)
	deadline := time.Now().Add(10 * time.Second) // a lease round each 100 ms; slow beside other packages
	for a.Owned() < 6 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if a.Owned() != 6 {
		t.Fatalf("the first relay holds %d of 6 shards", a.Owned())
	}
	b, _, _ := e.run(t, 100*time.Millisecond)
	deadline = time.Now().Add(8 * time.Second)
	for (a.Owned() != 3 || b.Owned() != 3) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if a.Owned() != 3 || b.Owned() != 3 {
		t.Fatalf("relays hold %d and %d of 6 shards, want 3 and 3", a.Owned(), b.Owned())
	}
	// Every entry still reaches Kafka.
	var rs []stock.Reservation
	for u := uint64(1); u <= 30; u++ {
		rs = append(rs, e.reserve(t, u))
	}
	seen := consume(t, e.topic, 30, 20*time.Second)
	for _, r := range rs {
		if seen[r.OrderID] == 0 {
			t.Fatalf("order %s not relayed after the shards were shared", r.OrderID)
		}
	}
}

var logOut io.Writer = io.Discard
