package journal

import (
	"context"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/backoff"
	"flashsale/sharding/repeatlog"
)

// shardWorker is the state of one shard's loop.
type shardWorker struct {
	r     *Relay
	sh    Shard
	keys  []string // relay.lua's keys
	acked ack      // what Kafka acknowledged, for the next round to delete
	owner bool     // this relay holds the shard's lease
	q     quiet
	fail  *repeatlog.Failure // outlives the worker: a non-owner's ends with its first failed round
}

// shard runs rounds on sh while this relay holds its lease.
func (r *Relay) shard(ctx context.Context, sh Shard) {
	defer r.wg.Done()
	defer r.drop(sh)
	w := &shardWorker{r: r, sh: sh, q: quiet{span: r.cfg.Hold + r.cfg.Settle}, keys: []string{
		string(sharding.AppendEventsKey(nil, sh.Tag)),
		string(sharding.AppendRelayLeaseKey(nil, sh.Tag)),
		string(sharding.AppendTakenKey(nil, sh.Tag)),
		string(sharding.AppendRelayMarkKey(nil, sh.Tag)),
		string(sharding.AppendFenceMarksKey(nil, sh.Tag)),
		string(sharding.AppendFenceKey(nil, sh.Tag)),
		string(sharding.AppendChainKey(nil, sh.Tag)),
	}, fail: r.failure(sh)}
	for w.step(ctx) {
	}
}

// failure returns the log of sh's failing rounds.
func (r *Relay) failure(sh Shard) *repeatlog.Failure {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.fails[sh]
	if f == nil {
		f = &repeatlog.Failure{}
		r.fails[sh] = f
	}
	return f
}

// drop forgets sh once its loop ended.
func (r *Relay) drop(sh Shard) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.owned[sh]; c != nil {
		c()
	}
	delete(r.owned, sh)
	delete(r.held, sh)
}

// step runs one round, produces what it took and pauses as the round
// allows; it reports whether the loop goes on. At ctx's end the owner
// releases the lease (and drops what Kafka acknowledged).
func (w *shardWorker) step(ctx context.Context) bool {
	r := w.r
	if ctx.Err() != nil {
		if w.owner {
			r.release(w.keys, w.acked)
			r.obs.Released(w.sh)
		}
		return false
	}
	cold := r.cfg.Cold != nil && r.cfg.Cold(w.sh)
	rd, err := w.round(ctx, cold)
	if err != nil {
		return w.failed(ctx, err)
	}
	w.q.broken = false
	w.fail.Recovered(r.cfg.Log, time.Now(), "journal relay rounds recovered", "shard", w.sh.Tag)
	if rd.Lost {
		// Taken over from a lease that was lost, not released (see
		// relay.lua): the round closed nothing, and the quiet starts.
		w.q.start(time.Now())
	}
	w.acked = ack{}
	if !rd.Owner {
		if w.owner {
			r.obs.Released(w.sh)
		}
		return false
	}
	w.own()
	w.observe(rd, cold)
	if len(rd.Entries) > 0 {
		w.acked = w.produceWatched(ctx, rd)
	}
	if len(rd.Entries) < r.cfg.Batch {
		backoff.Sleep(ctx, w.pause(rd, cold))
	}
	return true
}

// round runs one relay round: a cold shard's lease lasts its longer pause,
// and a quiet shard's round takes nothing.
func (w *shardWorker) round(ctx context.Context, cold bool) (Round, error) {
	lease := w.r.cfg.Lease
	if cold {
		lease = max(lease, 3*w.r.cfg.ColdPause)
	}
	hold := w.r.cfg.Hold
	if w.q.holds(time.Now()) {
		hold = quietHold
	}
	return w.r.round(ctx, w.keys, w.acked, lease, hold)
}

// failed handles a round that failed: the quiet starts, and a relay that
// did not own the shard lets it go; an owner tries again after a pause.
func (w *shardWorker) failed(ctx context.Context, err error) bool {
	w.q.broken = true
	if ctx.Err() == nil {
		w.r.obs.Failed("redis")
		w.fail.Failed(w.r.cfg.Log, time.Now(), "journal relay round failed", "shard", w.sh.Tag, "err", err)
	}
	if !w.owner {
		return false
	}
	// The acked ids are kept for the next round: deleting them is
	// idempotent, and a new owner would only produce them again.
	backoff.Sleep(ctx, w.r.cfg.Idle*4)
	return true
}

// own records that this relay holds the shard's lease.
func (w *shardWorker) own() {
	if w.owner {
		return
	}
	w.owner = true
	w.r.mu.Lock()
	w.r.held[w.sh] = true
	w.r.mu.Unlock()
}

// observe reports the shard's backlog and oldest entry's age.
func (w *shardWorker) observe(rd Round, cold bool) {
	if cold && rd.Backlog == 0 {
		// Nothing to watch on a cold shard: no series for it (a gateway
		// that has seen hundreds of sales exposes the live ones).
		w.r.obs.Released(w.sh)
		return
	}
	age := time.Duration(0)
	if t, ok := IDTime(rd.Oldest); ok {
		age = max(time.Since(t), 0)
	}
	w.r.obs.Journal(w.sh, rd.Backlog, age)
}

// pause is the wait after a round that took less than a batch (see
// Relay.pause); during a quiet with a backlog and nothing to acknowledge,
// nothing can be taken before the quiet ends.
func (w *shardWorker) pause(rd Round, cold bool) time.Duration {
	p := w.r.pause(rd, w.acked.upto != "", cold)
	if d := time.Until(w.q.until); d > 0 && rd.Backlog > 0 && w.acked.upto == "" {
		p = min(max(d, w.r.cfg.Idle), idleMax)
	}
	return p
}

// quietHold is the hold a quiet shard's rounds pass: no entry is that old.
const quietHold = 24 * time.Hour

// quiet tracks whether a shard's relay may take entries (see Config.Settle).
type quiet struct {
	span   time.Duration // Hold + Settle
	broken bool          // the last round failed
	until  time.Time     // nothing is taken before then
}

// start begins a quiet at now: nothing is taken for span.
func (q *quiet) start(now time.Time) { q.until = now.Add(q.span) }

// holds reports whether the round about to run at now must take nothing.
// The relay could not see the shard when the last round failed: a quiet
// starts then, and ends span after the first round that answers (each
// failing round moves it on). A round that took over a lost lease starts
// one too (see shard).
func (q *quiet) holds(now time.Time) bool {
	if q.broken {
		q.start(now)
	}
	return now.Before(q.until)
}

// idleMax is the longest pause of a warm shard's loop: an idle shard costs
// one round per idleMax (and its lease, 3s by default, is renewed in time).
const idleMax = time.Second

// pause is how long a shard's loop waits after a round that took less than a
// batch: Idle when it took entries (more may follow) or has acknowledgements
// to send; until the oldest entry is old enough to take when there is a
// backlog; when the journal is empty, the Hold (at most idleMax), or
// ColdPause for a cold shard. An entry cannot be taken before it is Hold old,
// so reading an empty journal more often than every Hold would take nothing
// sooner; and a machine with many sales (hundreds of shards) pays for the
// busy ones only.
func (r *Relay) pause(rd Round, acked, cold bool) time.Duration {
	if len(rd.Entries) > 0 || acked {
		return r.cfg.Idle
	}
	if rd.Backlog == 0 {
		if cold {
			return r.cfg.ColdPause
		}
		return min(max(r.cfg.Hold, r.cfg.Idle), idleMax)
	}
	if t, ok := IDTime(rd.Oldest); ok {
		return min(max(time.Until(t.Add(r.cfg.Hold)), r.cfg.Idle/5), idleMax)
	}
	return r.cfg.Idle
}
