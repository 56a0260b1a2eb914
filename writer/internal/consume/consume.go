// Package consume is the writer's Kafka consumer: a franz-go consumer group
// that reads order events, persists each poll's batch in one PostgreSQL
// transaction and commits the batch's offsets only after that commit.
//
// Delivery is at least once and the effect exactly once: a batch whose commit
// or offset commit was lost (a crash, a rebalance, PostgreSQL restarting) is
// read again and changes nothing the second time, because reservations are
// inserted by order id with ON CONFLICT DO NOTHING and payments and
// cancellations only move PENDING orders.
//
// Per batch, in order:
//  1. records are decoded; undecodable ones are produced, synchronously, to
//     the dead-letter topic with their reason and origin in headers;
//  2. the decoded events are persisted (store.Persist), retried with
//     exponential backoff and jitter on any database error, so an event is
//     never dead-lettered because PostgreSQL is unwell;
//  3. the offsets are committed and the batch's Redis effects handed to the
//     outbox Applier.
//
// Rebalances are held off while a batch is in flight (BlockRebalanceOnPoll), so
// a partition's offsets are committed by the member that persisted them.
package consume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"flashsale/sharding/backoff"
	"flashsale/sharding/journal"
	"flashsale/sharding/orderevent"
	"flashsale/writer/internal/obs"
	"flashsale/writer/internal/outbox"
	"flashsale/writer/internal/store"
)

// Config tunes a Consumer.
type Config struct {
	// Kafka is how to reach the brokers: seeds, TLS, SASL (from
	// sharding/config's Kafka.Opts).
	Kafka           []kgo.Opt
	Topic           string
	DeadLetterTopic string
	Group           string
	// InstanceID, when set, makes the writer a static group member: a
	// restarted process with the same id gets its partitions back without
	// waiting for the session timeout.
	InstanceID string
	// BatchSize is the most records one poll (and one transaction) takes.
	BatchSize int
	// FetchMaxWait is how long the broker may hold a fetch for more data.
	FetchMaxWait time.Duration
	// SessionTimeout is how long the group waits for a silent member (a
	// killed writer) before giving its partitions to others.
	SessionTimeout time.Duration
	// RetryMin and RetryMax bound the backoff between attempts of a batch.
	RetryMin, RetryMax time.Duration
	// DrainTimeout is how long an in-flight batch may still take after Run's
	// context ends.
	DrainTimeout time.Duration
}

// Consumer consumes order events. Create it with New, drive it with Run, and
// Close it after Run returns.
type Consumer struct {
	cfg     Config
	cl      *kgo.Client
	st      *store.Store
	applier *outbox.Applier
	m       *obs.Metrics
	log     *slog.Logger

	lagMu sync.Mutex
	lag   map[int32]int64
}

// New connects a consumer group client. No record is fetched before Run.
func New(cfg Config, st *store.Store, applier *outbox.Applier, m *obs.Metrics, log *slog.Logger) (*Consumer, error) {
	c := &Consumer{cfg: cfg, st: st, applier: applier, m: m, log: log, lag: map[int32]int64{}}
	forget := func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
		c.lagMu.Lock()
		defer c.lagMu.Unlock()
		for _, ps := range lost {
			for _, p := range ps {
				delete(c.lag, p)
			}
		}
	}
	opts := append([]kgo.Opt{}, cfg.Kafka...)
	opts = append(opts,
		kgo.ClientID("flashsale-writer"),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Partitions an operator adds mid-sale are consumed within
		// seconds (from their start: no record is skipped).
		kgo.MetadataMaxAge(journal.MetadataMaxAge),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.FetchMaxWait(cfg.FetchMaxWait),
		kgo.OnPartitionsRevoked(forget),
		kgo.OnPartitionsLost(forget),
		kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(0),
	)
	if cfg.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(cfg.InstanceID))
	}
	if cfg.SessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(cfg.SessionTimeout))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating kafka client: %w", err)
	}
	c.cl = cl
	return c, nil
}

// Ping checks that a Kafka broker answers.
func (c *Consumer) Ping(ctx context.Context) error {
	if err := c.cl.Ping(ctx); err != nil {
		return fmt.Errorf("pinging kafka: %w", err)
	}
	return nil
}

// GroupLag returns the records the whole consumer group (every writer) has
// yet to commit on the orders topic (journal.GroupLag): 0 means every record
// produced before the call is persisted.
func (c *Consumer) GroupLag(ctx context.Context) (int64, error) {
	return journal.GroupLag(ctx, c.cl, c.cfg.Group, c.cfg.Topic)
}

// Close leaves the group and closes the client. Offsets not committed yet are
// consumed again by the next owner.
func (c *Consumer) Close() { c.cl.CloseAllowingRebalance() }

// Run polls and persists batches until ctx ends. The batch in flight when ctx
// ends is finished (persisted and committed) within DrainTimeout. Run returns
// nil on a clean stop.
func (c *Consumer) Run(ctx context.Context) error {
	for {
		if ctx.Err() != nil {
			return nil
		}
		fetches := c.cl.PollRecords(ctx, c.cfg.BatchSize)
		if fetches.IsClientClosed() {
			return nil
		}
		fetches.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				c.log.Warn("fetch error", "topic", topic, "partition", p, "err", err)
			}
		})
		recs := fetches.Records()
		if len(recs) == 0 {
			c.cl.AllowRebalance()
			continue
		}
		c.trackLag(fetches)
		if err := c.process(ctx, recs); err != nil {
			c.cl.AllowRebalance()
			// Only a drain that ran out of time gets here. Nothing was
			// committed: whoever owns the partitions next reads the batch again.
			c.log.Warn("stopped with a batch unfinished; it will be re-read", "records", len(recs), "err", err)
			return nil
		}
		c.cl.AllowRebalance()
	}
}

// process persists recs and commits their offsets, finishing within
// DrainTimeout after ctx ends.
func (c *Consumer) process(ctx context.Context, recs []*kgo.Record) error {
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(c.cfg.DrainTimeout, cancel)
		context.AfterFunc(pctx, func() { t.Stop() })
	})
	defer stop()

	start := time.Now()
	batch, at, dead := c.decode(recs)
	if err := c.sendDead(pctx, dead); err != nil {
		return err
	}
	var res store.Result
	if len(batch.Events) > 0 {
		err := c.retry(pctx, "persisting batch", func(ctx context.Context) error {
			var err error
			res, err = c.st.Persist(ctx, &batch)
			return err
		})
		if err != nil {
			return err
		}
	}
	c.count(start, &batch, &res)
	c.applier.Enqueue(res.Effects)
	c.applier.EnqueuePersisted(outbox.StoredOf(batch.Events, at))

	if err := c.cl.CommitRecords(pctx, recs...); err != nil {
		// The rows are committed; a lost offset commit only means the batch is
		// read again, and changes nothing then.
		c.log.Warn("committing offsets failed; the batch will be re-read", "records", len(recs), "err", err)
	}
	return nil
}

// decode decodes recs into a batch, with where the relay read each event
// (at[i], of batch.Events[i]; zero when its record names no valid position:
// see orderevent.JournalHeader); the records that do not decode become dead
// letters.
func (c *Consumer) decode(recs []*kgo.Record) (store.Batch, []orderevent.Position, []*kgo.Record) {
	batch := store.Batch{Events: make([]orderevent.Event, 0, len(recs))}
	at := make([]orderevent.Position, 0, len(recs))
	var dead []*kgo.Record
	for _, r := range recs {
		e, err := orderevent.Decode(r.Value)
		if err != nil {
			c.m.Consumed.WithLabelValues("malformed").Inc()
			dead = append(dead, c.deadLetter(r, err))
			continue
		}
		c.m.Consumed.WithLabelValues(e.Type.String()).Inc()
		batch.Events = append(batch.Events, e)
		at = append(at, position(r))
	}
	return batch, at, dead
}

// position reads where the relay read r's event; a malformed header counts
// as none (the order is then marked by itself, see outbox.Stored).
func position(r *kgo.Record) orderevent.Position {
	for _, h := range r.Headers {
		if h.Key == orderevent.JournalHeader {
			p, _ := orderevent.ParsePosition(h.Value)
			return p
		}
	}
	return orderevent.Position{}
}

// sendDead produces the dead letters (retried until ctx ends): nothing is
// lost, the batch's offsets are committed only after them.
func (c *Consumer) sendDead(ctx context.Context, dead []*kgo.Record) error {
	if len(dead) == 0 {
		return nil
	}
	err := c.retry(ctx, "producing dead letters", func(ctx context.Context) error {
		return c.cl.ProduceSync(ctx, dead...).FirstErr()
	})
	if err != nil {
		return err
	}
	c.m.DeadLetters.Add(float64(len(dead)))
	c.log.Warn("dead-lettered undecodable records", "count", len(dead), "topic", c.cfg.DeadLetterTopic)
	return nil
}

// count records a persisted batch's figures, begun at start.
func (c *Consumer) count(start time.Time, batch *store.Batch, res *store.Result) {
	committed := time.Now()
	c.m.BatchSeconds.Observe(committed.Sub(start).Seconds())
	for _, i := range res.Inserted {
		c.m.ReserveToCommit.Observe(committed.Sub(batch.Events[i].Created).Seconds())
	}
	c.m.Persisted.Add(float64(len(res.Inserted)))
	c.m.Duplicates.Add(float64(res.Duplicates))
	c.m.Failed.Add(float64(res.Failed))
	c.m.Paid.Add(float64(res.Paid))
	c.m.Cancelled.Add(float64(res.Cancelled))
	c.m.Parked.Add(float64(res.Parked))
}

// deadLetter builds the dead-letter record of r, refused for reason.
func (c *Consumer) deadLetter(r *kgo.Record, reason error) *kgo.Record {
	return &kgo.Record{
		Topic: c.cfg.DeadLetterTopic,
		Key:   r.Key,
		Value: r.Value,
		Headers: append([]kgo.RecordHeader{
			{Key: "reason", Value: []byte(reason.Error())},
			{Key: "source-topic", Value: []byte(r.Topic)},
			{Key: "source-partition", Value: strconv.AppendInt(nil, int64(r.Partition), 10)},
			{Key: "source-offset", Value: strconv.AppendInt(nil, r.Offset, 10)},
		}, r.Headers...),
	}
}

// retry runs op until it succeeds or ctx ends, sleeping an exponential backoff
// with jitter between attempts.
func (c *Consumer) retry(ctx context.Context, what string, op func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		err := op(ctx)
		if err == nil {
			if attempt > 0 {
				c.log.Info(what+" succeeded after retries", "attempts", attempt+1)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		kind := "other"
		if store.IsTransient(err) {
			kind = "transient"
		}
		c.m.Retries.WithLabelValues(kind).Inc()
		d := backoff.Policy{First: c.cfg.RetryMin, Max: c.cfg.RetryMax}.Wait(attempt)
		if kind == "transient" {
			c.log.Warn(what+" failed; retrying", "attempt", attempt+1, "in", d, "err", err)
		} else {
			c.log.Error(what+" failed with a non-transient error; retrying without committing", "attempt", attempt+1, "in", d, "err", err)
		}
		if !backoff.Sleep(ctx, d) {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
}

// trackLag records, per partition polled, how far the batch's last record is
// behind the high watermark, and publishes the sum.
func (c *Consumer) trackLag(f kgo.Fetches) {
	c.lagMu.Lock()
	defer c.lagMu.Unlock()
	f.EachPartition(func(p kgo.FetchTopicPartition) {
		if n := len(p.Records); n > 0 {
			c.lag[p.Partition] = max(p.HighWatermark-p.Records[n-1].Offset-1, 0)
		}
	})
	var sum int64
	for _, l := range c.lag {
		sum += l
	}
	c.m.Lag.Set(float64(sum))
}
