package journal_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"flashsale/sharding"
	"flashsale/sharding/orderevent"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

// itemsOnPartitions returns two item ids of sale whose records (key = item
// id) the relay's producer sends to different partitions of a topic of
// two.
func itemsOnPartitions(t *testing.T, saleID int64) (a, b int64, pa, pb int32) {
	t.Helper()
	p := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	part := func(item int64) int32 {
		return int32(p.Partition(&kgo.Record{Key: []byte(strconv.FormatInt(item, 10))}, 2))
	}
	a = saleID*10 + 1
	for b = a + 1; part(b) == part(a); b++ {
	}
	return a, b, part(a), part(b)
}

// A round that holds records for two partitions, one of whose leaders
// answers NOT_LEADER past the produce's deadline (a partition leader failing
// over) while the other takes its record, acknowledges nothing past the
// failed record. franz-go returns a ProduceSync's results in the order the
// records completed, not the order they were given: the relay once counted
// successes up to the first failure and acknowledged the entry at that
// count, which was the failed one, and the next round's XTRIM MINID deleted
// it (issue 55, defect 1: the first item's order reached Kafka 0 times and
// left the journal; a 202 lost). Here the failed entry stays in the journal
// and reaches Kafka once the partition answers again.
func TestRelayAcksOnlyAPrefixKafkaTook(t *testing.T) {
	e := setup(t, 1)
	itemA, itemB, pa, _ := itemsOnPartitions(t, e.sale.ID)
	e.sale.Items = []sale.Item{{ID: itemA, Name: "a", Price: 1, Currency: "JPY", Quantity: 10},
		{ID: itemB, Name: "b", Price: 1, Currency: "JPY", Quantity: 10}}
	e.stockUp(t)
	kf, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(2, e.topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kf.Close)
	if kf.LeaderFor(e.topic, 0) == kf.LeaderFor(e.topic, 1) {
		if err := kf.MoveTopicPartition(e.topic, 1, 1-kf.LeaderFor(e.topic, 0)); err != nil {
			t.Fatal(err)
		}
	}
	// Item A's partition answers NOT_LEADER until the fault is removed.
	fault := kf.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: e.topic, Partitions: []int32{pa},
		Err: kerr.NotLeaderForPartition, Count: -1})
	e.brokers = kf.ListenAddrs()

	first := e.reserveItem(t, 1, itemA)  // the older entry: its partition fails
	second := e.reserveItem(t, 2, itemB) // the newer one: its partition takes it
	_, _, stop := e.run(t, 50*time.Millisecond)
	// The first round's produce ends once franz-go gives item A's record up
	// (seconds: its deadline passed, and the broker keeps refusing it);
	// the next round produces item B's entry again, whatever it
	// acknowledged.
	deadline := time.Now().Add(30 * time.Second)
	for {
		seen := consumeFrom(t, e.brokers, e.topic, 1, 2*time.Second)
		if seen[second.OrderID] >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("item B's order reached Kafka %d times in 30s, want a second round", seen[second.OrderID])
		}
	}
	if ids := e.journalOrders(t); !ids[first.OrderID] {
		t.Fatalf("item A's entry left the journal though Kafka never took it (journal: %v)", ids)
	}
	fault.Remove()
	seen := consumeFrom(t, e.brokers, e.topic, 2, 20*time.Second)
	if seen[first.OrderID] == 0 {
		t.Fatalf("item A's order never reached Kafka once its partition answered: %v", seen)
	}
	stop()
}

// stockUp puts every item's stock on the sale's shards.
func (e *env) stockUp(t *testing.T) {
	t.Helper()
	c := e.st.Client()
	for _, it := range e.sale.Items {
		for i, q := range sharding.Split(it.Quantity, len(e.sale.Shards)) {
			key := string(sharding.AppendStockKey(nil, e.sale.Shards[i], it.ID))
			if err := c.Do(context.Background(), c.B().Set().Key(key).Value(strconv.FormatInt(q, 10)).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// reserveItem reserves a unit of item for user.
func (e *env) reserveItem(t *testing.T, user uint64, item int64) stock.Reservation {
	t.Helper()
	r := e.reservation(user)
	r.ItemID = item
	res, err := e.st.Reserve(context.Background(), r)
	if err != nil || res.Outcome != stock.Reserved {
		t.Fatalf("reserve: %+v %v", res, err)
	}
	return r
}

// journalOrders returns the order ids the sale's journals hold.
func (e *env) journalOrders(t *testing.T) map[sharding.OrderID]bool {
	t.Helper()
	c := e.st.Client()
	out := map[sharding.OrderID]bool{}
	for _, tag := range e.sale.Shards {
		es, err := c.Do(context.Background(), c.B().Xrange().Key(string(sharding.AppendEventsKey(nil, tag))).Start("-").End("+").Build()).AsXRange()
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range es {
			if id, ok := sharding.ParseOrderID([]byte(en.FieldValues["o"])); ok {
				out[id] = true
			}
		}
	}
	return out
}

// Every record names the entry of its shard and item produced before it
// (its item's chain), from the first (NoPrev) across rounds and across a
// relay that takes the shard over; an entry that does not decode is
// dead-lettered and still counts in its item's chain, so the record after
// it names it and the writer, which never gets it, marks that order by
// itself instead of raising a watermark over the gap (issue 55, defect 4).
func TestRelayChainsEachItemsRecords(t *testing.T) {
	e := setup(t, 1)
	itemA, itemB, _, _ := itemsOnPartitions(t, e.sale.ID)
	e.sale.Items = []sale.Item{{ID: itemA, Name: "a", Price: 1, Currency: "JPY", Quantity: 100},
		{ID: itemB, Name: "b", Price: 1, Currency: "JPY", Quantity: 100}}
	e.stockUp(t)
	tag := e.sale.Shards[0]
	c := e.st.Client()
	var journal []string // entry ids in journal order
	var itemOf = map[string]int64{}
	add := func(user uint64, item int64) {
		r := e.reserveItem(t, user, item)
		rec, _, err := e.st.Order(context.Background(), tag, user, r.OrderID)
		if err != nil {
			t.Fatal(err)
		}
		journal = append(journal, rec.Journal)
		itemOf[rec.Journal] = item
	}
	for u := uint64(1); u <= 6; u++ {
		add(u, []int64{itemA, itemB}[u%2])
	}
	// A malformed entry of item A (its type unknown): dead-lettered.
	bad, err := c.Do(context.Background(), c.B().Xadd().Key(string(sharding.AppendEventsKey(nil, tag))).Id("*").FieldValue().
		FieldValue("t", "refund").FieldValue("i", strconv.FormatInt(itemA, 10)).Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	journal = append(journal, bad)
	itemOf[bad] = itemA
	_, _, stop := e.run(t, 10*time.Millisecond)
	got := consumePositions(t, e.brokers, e.topic, 6, 20*time.Second)
	stop()
	for u := uint64(7); u <= 10; u++ {
		add(u, []int64{itemA, itemB}[u%2])
	}
	e.run(t, 10*time.Millisecond) // another relay takes the shard over
	for k, v := range consumePositions(t, e.brokers, e.topic, 10, 20*time.Second) {
		got[k] = v
	}
	last := map[int64]string{}
	for _, id := range journal {
		item := itemOf[id]
		want := last[item]
		if want == "" {
			want = orderevent.NoPrev
		}
		last[item] = id
		if id == bad {
			continue
		}
		p, ok := got[id]
		if !ok {
			t.Fatalf("entry %s never reached Kafka", id)
		}
		if p.Shard != tag || p.Prev != want {
			t.Errorf("entry %s of item %d: position %+v, want prev %s", id, item, p, want)
		}
	}
}

// consumePositions reads the topic's records until want were seen and
// returns their journal positions by entry id.
func consumePositions(t *testing.T, brokers []string, topic string, want int, within time.Duration) map[string]orderevent.Position {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[string]orderevent.Position{}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for len(out) < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == orderevent.JournalHeader {
					p, ok := orderevent.ParsePosition(h.Value)
					if !ok {
						t.Errorf("record header %q", h.Value)
					}
					out[p.Entry] = p
				}
			}
		})
	}
	return out
}
