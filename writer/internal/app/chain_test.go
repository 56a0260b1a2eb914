package app_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/orderevent"
)

// An entry that left the journal without reaching PostgreSQL (a relay's
// dead letter, a record a partition failover lost, records split over
// partitions by a change of the partition count) must not read persisted:
// the writer raised an item's watermark to the highest entry PostgreSQL
// held, and the entries below it that never arrived read persisted: true,
// so the page said bought (issue 55, defect 4). Here a shard's journal
// holds three reservations of one item; the records of the first and the
// third reach the writer, each naming its predecessor as the relay does,
// and the second never does. The first and the third read persisted (the
// third marked by itself, its run not linking), the second does not; once
// its record arrives it does, and the watermark covers all three.
func TestAGapInTheChainIsNeverPersisted(t *testing.T) {
	stack(t)
	st, rs := newStores(t)
	s := newSale(t, st, rs, 1, 10)
	item, tag := s.Items[0].ID, s.Shards[0]
	topic := testenv.NewTopic(t, "writer-chain")
	events := reserveInRedis(t, rs, s, item, 3, 10*time.Minute)
	entries := make([]string, len(events))
	for i, e := range events {
		rec, found, err := rs.Order(context.Background(), tag, e.UserID, e.OrderID)
		if err != nil || !found {
			t.Fatalf("order %d: %v %v", i, found, err)
		}
		entries[i] = rec.Journal
	}
	sortByEntry(events, entries)
	pr := newProducer(t, topic)
	send := func(i int) {
		t.Helper()
		prev := orderevent.NoPrev
		if i > 0 {
			prev = entries[i-1]
		}
		rec := &kgo.Record{Key: orderevent.AppendKey(nil, &events[i]), Value: orderevent.AppendJSON(nil, &events[i]),
			Headers: []kgo.RecordHeader{{Key: orderevent.JournalHeader,
				Value: orderevent.AppendPosition(nil, orderevent.Position{Shard: tag, Entry: entries[i], Prev: prev})}}}
		if err := pr.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	persisted := func() [3]bool {
		var out [3]bool
		for i, e := range events {
			rec, _, err := rs.Order(context.Background(), tag, e.UserID, e.OrderID)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = rec.Persisted
		}
		return out
	}
	a := startApp(t, testConfig(topic, groupName(t), s))
	send(0)
	send(2)
	waitFor(t, 30*time.Second, "the first and third orders persisted", func() bool { p := persisted(); return p[0] && p[2] })
	time.Sleep(500 * time.Millisecond) // the marks of one batch land together
	if p := persisted(); p[1] {
		t.Fatalf("the order PostgreSQL never got reads persisted: %v", p)
	}
	send(1)
	waitFor(t, 30*time.Second, "the second order persisted", func() bool { return persisted()[1] })
	a.stop(t)
	c := rs.Client()
	wm, err := c.Do(context.Background(), c.B().Hget().Key(string(sharding.AppendPersistedKey(nil, tag))).Field(itemField(item)).Build()).ToString()
	if err != nil || wm != entries[2] {
		t.Fatalf("the item's watermark is %q (%v), want the third entry %s once the gap was filled", wm, err, entries[2])
	}
}

// sortByEntry sorts events and entries together by entry id.
func sortByEntry(events []orderevent.Event, entries []string) {
	for i := range entries {
		for j := i + 1; j < len(entries); j++ {
			if sharding.EntryBefore(entries[j], entries[i]) {
				entries[i], entries[j] = entries[j], entries[i]
				events[i], events[j] = events[j], events[i]
			}
		}
	}
}

func itemField(item int64) string { return strconv.FormatInt(item, 10) }
