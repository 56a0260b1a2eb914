package orders

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"flashsale/sharding"
	"flashsale/writer/orderevent"
)

const topic = "orders"

// broker is an in-process kfake cluster whose Produce handling the test
// steers: mode 0 passes, 1 refuses every partition, 2 answers late.
type broker struct {
	c    *kfake.Cluster
	mode atomic.Int32
}

func newBroker(t testing.TB) *broker {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	b := &broker{c: c}
	c.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		switch b.mode.Load() {
		case 1:
			req := kr.(*kmsg.ProduceRequest)
			resp := req.ResponseKind().(*kmsg.ProduceResponse)
			for _, rt := range req.Topics {
				st := kmsg.NewProduceResponseTopic()
				st.Topic, st.TopicID = rt.Topic, rt.TopicID
				for _, rp := range rt.Partitions {
					sp := kmsg.NewProduceResponseTopicPartition()
					sp.Partition, sp.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp, nil, true
		case 2:
			time.Sleep(300 * time.Millisecond)
		}
		return nil, nil, false
	})
	return b
}

func event(n uint64) *orderevent.Event {
	now := time.Now()
	return &orderevent.Event{Type: orderevent.Reserved, OrderID: sharding.NewOrderID(5, n, 1), SaleID: 5, ItemID: 9,
		UserID: n, Created: now, Expires: now.Add(10 * time.Minute), At: now}
}

func newProducer(t *testing.T, b *broker, settle Settle) *Producer {
	t.Helper()
	p, err := New(Config{Brokers: b.c.ListenAddrs(), Topic: topic, Budget: 250 * time.Millisecond}, settle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

func TestHandOutcomes(t *testing.T) {
	b := newBroker(t)
	type late struct {
		ev  orderevent.Event
		err error
	}
	lates := make(chan late, 4)
	p := newProducer(t, b, func(ev *orderevent.Event, err error) { lates <- late{*ev, err} })

	if err := p.Hand(event(1), 5*time.Second, true); err != nil {
		t.Fatalf("accepted: %v", err)
	}
	b.mode.Store(1)
	if err := p.Hand(event(2), 5*time.Second, true); !errors.Is(err, ErrRefused) {
		t.Fatalf("refused: %v", err)
	}
	b.mode.Store(2)
	if err := p.Hand(event(3), 20*time.Millisecond, true); !errors.Is(err, ErrPending) {
		t.Fatalf("late: %v", err)
	}
	select {
	case l := <-lates:
		if l.err != nil || l.ev.UserID != 3 {
			t.Fatalf("settled %+v", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("late record never settled")
	}
	b.mode.Store(0)

	// Everything that was accepted is in the topic, keyed by item id.
	// Short fetch waits and a generous deadline: under the race detector on
	// a loaded machine a fetch round can take seconds.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.c.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	users := map[uint64]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(users) < 2 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			ev, err := orderevent.Decode(r.Value)
			if err != nil || string(r.Key) != "9" {
				t.Errorf("record %q %q: %v", r.Key, r.Value, err)
				return
			}
			users[ev.UserID] = true
		})
	}
	if !users[1] || !users[3] || users[2] {
		t.Fatalf("users in the topic: %v", users)
	}
}

func TestPingAndClose(t *testing.T) {
	b := newBroker(t)
	p := newProducer(t, b, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Hand(event(1), 5*time.Second, false); err != nil {
		t.Fatalf("hand: %v", err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := p.Ping(ctx); err == nil {
		t.Fatal("ping after close succeeded")
	}
}
