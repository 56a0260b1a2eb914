package journal

import (
	"context"
	"sync/atomic"
	"time"
)

// A produce outlives its deadline when Kafka does not answer: franz-go's
// idempotent producer cannot fail a record it may have written until a
// broker answers for it, so ProduceSync waits for the broker to come back.
// Meanwhile the round does not end and nothing would be observed: the
// shard's gauges would freeze at their last values (a backlog that does not
// grow, an oldest entry that does not age) and no Kafka error would be
// counted, so no alert could fire during the outage it exists for. A
// watcher runs beside each produce and keeps them true.

// stall is what a produce's watcher found, read by the produce once done.
type stall struct {
	counted atomic.Int64 // deadlines passed, each counted as a Kafka failure
}

// produceWatched produces the round's entries with a watcher beside it,
// and logs the end of a stall. When ctx ends (the relay stops) while Kafka
// has not answered, it waits stopGrace for the answer and then gives the
// produce up, acknowledging nothing: the entries stay in the journal for
// the next owner (the writer deduplicates what both produce), and a
// gateway's shutdown does not wait for a broker that hangs.
func (w *shardWorker) produceWatched(ctx context.Context, rd Round) string {
	st := &stall{}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	watched := make(chan struct{})
	start := time.Now()
	go func() { defer close(watched); w.watch(wctx, rd.Oldest, start, st) }()
	res := make(chan string, 1)
	go func() { res <- w.r.produce(ctx, w.sh, rd.Entries, st) }()
	var acked string
	select {
	case acked = <-res:
	case <-ctx.Done():
		select {
		case acked = <-res:
		case <-time.After(stopGrace):
			w.r.cfg.Log.Warn("stopping with journal entries Kafka has not acknowledged; they stay in the journal for the next relay",
				"shard", w.sh.Tag, "entries", len(rd.Entries))
		}
	}
	stop()
	<-watched
	if st.counted.Load() > 0 && ctx.Err() == nil {
		w.r.cfg.Log.Info("Kafka answered the journal relay again", "shard", w.sh.Tag,
			"stalled", time.Since(start).Round(time.Millisecond), "acknowledged", acked != "")
	}
	return acked
}

// watch re-reads the shard's backlog every watchEvery (at most), reports it
// with the age of the round's oldest entry (which nothing trims while the
// round is out), and once the produce is past its deadline (Lease/2) counts
// a Kafka failure for each deadline passed and warns once.
func (w *shardWorker) watch(ctx context.Context, oldest string, start time.Time, st *stall) {
	r := w.r
	deadline := r.cfg.Lease / 2
	t := time.NewTicker(min(watchEvery, deadline))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := w.backlog(ctx, deadline); err == nil {
			age := time.Duration(0)
			if at, ok := IDTime(oldest); ok {
				age = max(time.Since(at), 0)
			}
			r.obs.Journal(w.sh, n, age)
		}
		passed := int64(time.Since(start) / deadline)
		for st.counted.Load() < passed {
			if st.counted.Add(1) == 1 {
				r.cfg.Log.Warn("producing journal entries: Kafka has not answered past the deadline; entries stay in the journal, purchases go on",
					"shard", w.sh.Tag, "deadline", deadline)
			}
			r.obs.Failed("kafka")
		}
	}
}

// stopGrace is how long a stopping relay waits for Kafka's answer to a
// produce in flight.
const stopGrace = 500 * time.Millisecond

// watchEvery is how often a stalled produce's watcher reads the backlog.
const watchEvery = time.Second

// backlog reads the shard's journal length.
func (w *shardWorker) backlog(ctx context.Context, timeout time.Duration) (int64, error) {
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return w.r.redis.Do(c, w.r.redis.B().Xlen().Key(w.keys[0]).Build()).AsInt64()
}
