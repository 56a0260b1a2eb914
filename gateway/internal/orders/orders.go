// Package orders hands order events to Kafka with franz-go: acks from all
// in-sync replicas, the idempotent producer (franz-go's default, kept on), a
// short linger, key = item id (orderevent.AppendKey) so that every event of an
// item, and so of an order, stays in one partition, in order.
//
// Hand produces asynchronously and waits for the record's promise at most the
// caller's budget; it never blocks on a full buffer (TryProduce) and never
// calls ProduceSync.
//
// # Can a timed-out record still land?
//
// RecordDeliveryTimeout is set to the hand-off budget, but at least one second
// (the least franz-go accepts), so with the default 250ms budget a record can
// outlive its handler's wait even when it is never sent. With the idempotent
// producer franz-go enforces that timeout only while it is safe: before the
// record was ever written to a broker, or after a response for it was read. A
// record whose produce request is in flight is not failed by the timeout (nor
// by a context) because the client cannot know whether the broker appended it;
// franz-go waits for the response, retrying idempotently, and then reports the
// definite outcome. (AllowIdempotentProduceCancellation would change that and
// make failures ambiguous; it is deliberately not used.) Hence:
//
//   - a promise error means the record was not written and never will be
//     (the broker refused it, or it timed out before it was sent): the caller
//     releases the unit and answers 503 (ErrRefused);
//   - a promise that has not fired when the handler's budget ends means the
//     outcome is not known yet (ErrPending): the handler answers 503, and the
//     record may still land. The producer keeps watching it: when its promise
//     fires later, the Settle callback given to New gets the outcome, and for
//     a reservation the gateway releases the unit on failure, while on success
//     the order stands (it is in Kafka, so the writer persists it; the user
//     sees it as ALREADY_PURCHASED with its order id, or the same 202 when
//     retrying with the same Idempotency-Key). It is counted in
//     flashsale_gateway_late_handoffs_total.
//
// The writer deduplicates by order id, so producing a replayed reservation
// again is harmless.
package orders

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"flashsale/writer/orderevent"
)

// minRecordTimeout is the smallest RecordDeliveryTimeout franz-go accepts.
const minRecordTimeout = time.Second

// ErrRefused reports that the record was definitely not written.
var ErrRefused = errors.New("kafka refused the order event")

// ErrPending reports that the budget ended before Kafka answered; the record
// may still land and the Settle callback will be told.
var ErrPending = errors.New("kafka did not answer within the budget")

// Config tunes the producer.
type Config struct {
	Brokers []string
	Topic   string
	Linger  time.Duration // default 1ms
	// Budget is RecordDeliveryTimeout and the produce request timeout base;
	// callers wait at most their own budget. Default 250ms.
	Budget time.Duration
	// ExtraOpts are appended to the client options (tests use them).
	ExtraOpts []kgo.Opt
}

// Settle is told the outcome of a record whose caller stopped waiting (Hand
// returned ErrPending): err is nil when the record landed. It runs on
// franz-go's promise goroutine and must not block for long.
type Settle func(ev *orderevent.Event, err error)

// Producer hands order events to Kafka. It is safe for concurrent use.
type Producer struct {
	cl     *kgo.Client
	topic  string
	settle Settle
	pool   sync.Pool
}

// New connects a producer. settle may be nil.
func New(cfg Config, settle Settle) (*Producer, error) {
	if cfg.Linger <= 0 {
		cfg.Linger = time.Millisecond
	}
	if cfg.Budget <= 0 {
		cfg.Budget = 250 * time.Millisecond
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(cfg.Linger),
		kgo.RecordDeliveryTimeout(max(cfg.Budget+cfg.Linger, minRecordTimeout)),
		kgo.ProduceRequestTimeout(max(cfg.Budget, time.Second)),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.AllowAutoTopicCreation(),
	}
	cl, err := kgo.NewClient(append(opts, cfg.ExtraOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("creating kafka producer: %w", err)
	}
	p := &Producer{cl: cl, topic: cfg.Topic, settle: settle}
	p.pool.New = func() any { return newWaiter(p) }
	return p, nil
}

// Ping checks that a broker answers.
func (p *Producer) Ping(ctx context.Context) error { return p.cl.Ping(ctx) }

// Close flushes buffered records for at most ctx's lifetime and closes the
// client.
func (p *Producer) Close(ctx context.Context) error {
	err := p.cl.Flush(ctx)
	p.cl.Close()
	if err != nil {
		return fmt.Errorf("flushing order events: %w", err)
	}
	return nil
}

// Hand produces ev (copied; the caller may reuse it) and waits at most wait
// for the outcome: nil when the record is in Kafka, ErrRefused (wrapped) when
// it definitely is not, ErrPending when the budget ended first. With
// settleLate, the outcome of a record that was still pending goes to the
// Settle callback when it is known.
func (p *Producer) Hand(ev *orderevent.Event, wait time.Duration, settleLate bool) error {
	w := p.pool.Get().(*waiter)
	w.ev, w.settleLate = *ev, settleLate
	w.key = orderevent.AppendKey(w.key[:0], &w.ev)
	w.val = orderevent.AppendJSON(w.val[:0], &w.ev)
	w.rec = kgo.Record{Topic: p.topic, Key: w.key, Value: w.val}
	w.state.Store(stateWaiting)
	w.timer.Reset(wait)
	p.cl.TryProduce(context.Background(), &w.rec, w.promise)
	select {
	case err := <-w.done:
		w.timer.Stop()
		p.pool.Put(w)
		return err
	case <-w.timer.C:
	}
	if w.state.CompareAndSwap(stateWaiting, stateAbandoned) {
		return ErrPending // the promise now owns w
	}
	err := <-w.done // the promise won the race; its result is on its way
	p.pool.Put(w)
	return err
}

const (
	stateWaiting uint32 = iota
	stateDelivered
	stateAbandoned
)

// waiter carries one record from Hand to its promise. It is pooled: Hand owns
// it until it either reads the outcome (then puts it back) or abandons it, in
// which case onPromise settles the event and puts it back.
type waiter struct {
	p          *Producer
	ev         orderevent.Event
	settleLate bool
	key, val   []byte
	rec        kgo.Record
	state      atomic.Uint32
	done       chan error
	timer      *time.Timer
	promise    func(*kgo.Record, error)
}

func newWaiter(p *Producer) *waiter {
	w := &waiter{p: p, done: make(chan error, 1), key: make([]byte, 0, 24), val: make([]byte, 0, 256)}
	w.timer = time.NewTimer(time.Hour)
	w.timer.Stop()
	w.promise = w.onPromise
	return w
}

func (w *waiter) onPromise(_ *kgo.Record, err error) {
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrRefused, err)
	}
	if w.state.CompareAndSwap(stateWaiting, stateDelivered) {
		w.done <- err
		return
	}
	if w.settleLate && w.p.settle != nil {
		w.p.settle(&w.ev, err)
	}
	w.p.pool.Put(w)
}
