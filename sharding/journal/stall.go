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
	counted atomic.Int64 // Kafka failures counted for this produce
}

// count counts the failure that makes n counted (the first when n is 1):
// the watcher and the produce both count through it, so a failure at a
// deadline is counted once. It reports whether it counted.
func (st *stall) count(n int64) bool {
	for {
		c := st.counted.Load()
		if c >= n {
			return false
		}
		if st.counted.CompareAndSwap(c, c+1) {
			return true
		}
	}
}

// produceWatched produces the round's entries with a watcher beside it,
// and logs the end of a stall. When the relay stops (Run's ctx ends) while
// Kafka has not answered, it waits stopGrace for the answer and then gives
// the produce up, acknowledging nothing: the entries stay in the journal
// for the next owner (the writer deduplicates what both produce), and a
// gateway's shutdown does not wait for a broker that hangs. A shard given
// up while the relay runs on (a fair-share rebalance, a reshard) waits for
// its produce: giving it up would leave its records buffered in the shared
// producer, and the next owner would buffer them again.
func (w *shardWorker) produceWatched(ctx context.Context, rd Round) ack {
	st := &stall{}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	watched := make(chan struct{})
	start := time.Now()
	go func() { defer close(watched); w.watch(wctx, rd.Oldest, start, st) }()
	res := make(chan ack, 1)
	go func() { res <- w.r.produce(ctx, w.sh, rd, st) }()
	var acked ack
	select {
	case acked = <-res:
	case <-w.r.stopping:
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
			"stalled", time.Since(start).Round(time.Millisecond), "acknowledged", acked.upto != "")
	}
	return acked
}

// watch re-reads the shard's backlog every watchEvery (at most), reports it
// with the age of the round's oldest entry (which nothing trims while the
// round is out), and once the produce is past its deadline (Lease/2) counts
// a Kafka failure for each deadline passed and warns once. When another
// relay has taken the lease (this one could not renew it while it waited),
// the new owner reports the shard: this relay drops its series and stops
// reporting, so that the shard is not counted twice.
func (w *shardWorker) watch(ctx context.Context, oldest string, start time.Time, st *stall) {
	r := w.r
	deadline := r.cfg.Lease / 2
	t := time.NewTicker(min(watchEvery, deadline))
	defer t.Stop()
	reporting := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if reporting {
			reporting = w.report(ctx, deadline, oldest)
		}
		for passed := int64(time.Since(start) / deadline); st.count(passed); {
			if st.counted.Load() == 1 {
				r.cfg.Log.Warn("producing journal entries: Kafka has not answered past the deadline; entries stay in the journal, purchases go on",
					"shard", w.sh.Tag, "deadline", deadline)
			}
			r.obs.Failed("kafka")
		}
	}
}

// watchEvery is how often a stalled produce's watcher reads the backlog.
const watchEvery = time.Second

// stopGrace is how long a stopping relay waits for Kafka's answer to a
// produce in flight.
const stopGrace = 500 * time.Millisecond

// report reads the shard's journal length and lease and reports the backlog
// and the age of oldest; it reports false once another relay holds the
// lease (and drops the shard's series then).
func (w *shardWorker) report(ctx context.Context, timeout time.Duration, oldest string) bool {
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rc := w.r.redis
	res := rc.DoMulti(c, rc.B().Xlen().Key(w.keys[0]).Build(), rc.B().Get().Key(w.keys[1]).Build())
	n, err := res[0].AsInt64()
	if err != nil {
		return true
	}
	if holder, err := res[1].ToString(); err == nil && holder != w.r.token {
		w.r.obs.Released(w.sh)
		return false
	}
	age := time.Duration(0)
	if at, ok := IDTime(oldest); ok {
		age = max(time.Since(at), 0)
	}
	w.r.obs.Journal(w.sh, n, age)
	return true
}
