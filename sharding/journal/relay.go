package journal

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"
	"github.com/twmb/franz-go/pkg/kgo"

	"flashsale/lua"
	"flashsale/sharding"
	"flashsale/sharding/clock"
	"flashsale/sharding/orderevent"
	"flashsale/sharding/repeatlog"
)

// Shard names one journal: a shard of a sale.
type Shard struct {
	SaleID int64
	Tag    string
}

// Observer is told what the relay does (the gateway's metrics). Its methods
// must not block.
type Observer interface {
	// Journal reports a shard's backlog and the age of its oldest entry
	// after each round of its owner; Released reports that this relay let
	// the shard go, or that the shard is cold with an empty journal (its
	// gauges should be dropped either way).
	Journal(sh Shard, backlog int64, oldest time.Duration)
	Released(sh Shard)
	// Relayed counts entries Kafka acknowledged.
	Relayed(n int)
	// Failed counts a failure by kind: "redis", "kafka", "malformed".
	Failed(kind string)
}

// Config tunes a Relay.
type Config struct {
	// Topic and DeadLetterTopic: where events go, and where an entry that
	// does not decode goes with its reason (so nothing is lost).
	Topic, DeadLetterTopic string
	// Lease is the lifetime of a shard's lease (default 3s): a dead owner's
	// shards are taken over within about that.
	Lease time.Duration
	// Hold is how old an entry must be before it is taken (default 1s). It
	// must exceed the time a gateway needs to void a purchase whose reply it
	// lost: its budget plus its release budget.
	Hold time.Duration
	// Settle lengthens the hold after the relay could not see a shard: a
	// round that failed (the master died, stalled or was cut off), or a lease
	// taken over from one that was lost rather than released (its owner died
	// or could not renew it in an outage). Until the shard has answered for
	// Hold plus Settle (default 2s) from then, nothing is taken from it: a
	// gateway that lost a reply in the outage voids the attempt as soon as
	// Redis answers again (its queue tries every 250ms at most), and this is
	// the time it gets to do it before any relay may take the entry.
	Settle time.Duration
	// Fence is how long a gateway's fence mark on a shard holds the shard's
	// relays back after its last beat (default DefaultFence; see Fence and
	// relay.lua): a gateway that has not beaten a shard for that long is
	// taken for gone, and its entries are taken. Every gateway and relay of
	// a fleet must use the same value.
	Fence time.Duration
	// Batch is the most entries one round takes (default 512).
	Batch int
	// Idle is the pause of a shard's loop after a round that took less than
	// a full batch (default 50ms).
	Idle time.Duration
	// Scan is how often unowned shards are tried and stalled moves
	// recovered (default 1s).
	Scan time.Duration
	// Recover finishes the stock moves journaled on a shard that have stayed
	// unfinished for a whole Scan (a borrower that died mid-move); nil skips it.
	Recover func(ctx context.Context, tag string, ids map[string]bool) (map[string]bool, error)
	// Cold reports a shard whose journal can only get rare entries (its sale
	// starts later or its last payment window closed): while its journal is
	// empty it is read every ColdPause, under a lease of 3 ColdPause, instead
	// of every Hold. nil: no shard is cold.
	Cold func(Shard) bool
	// ColdPause is the pause of an empty cold shard (default 5s).
	ColdPause time.Duration
	// Acks is the replicas a round's writes wait for (WAIT after the
	// script, on its connection) before the round's entries are produced;
	// AckTimeout bounds the wait. A round closes its entries to voids (the
	// shard's taken watermark): were that lost in a failover, a void could
	// undo an entry already in Kafka, and its buyer, told 503, would hold an
	// order. A WAIT that fails fails the round; one that comes back short
	// (the replica missing or behind) lets it go on. 0: no WAIT.
	Acks       int
	AckTimeout time.Duration
	Log        *slog.Logger
}

func (c *Config) defaults() {
	if c.Lease <= 0 {
		c.Lease = 3 * time.Second
	}
	if c.Hold < 0 {
		c.Hold = 0
	} else if c.Hold == 0 {
		c.Hold = time.Second
	}
	if c.Fence <= 0 {
		c.Fence = DefaultFence
	}
	if c.Settle < 0 {
		c.Settle = 0
	} else if c.Settle == 0 {
		c.Settle = 2 * time.Second
	}
	if c.Batch <= 0 {
		c.Batch = 512
	}
	if c.Idle <= 0 {
		c.Idle = 50 * time.Millisecond
	}
	if c.Scan <= 0 {
		c.Scan = time.Second
	}
	if c.ColdPause <= 0 {
		c.ColdPause = 5 * time.Second
	}
	if c.Acks < 0 {
		c.Acks = 0
	}
	if c.AckTimeout <= 0 {
		c.AckTimeout = 50 * time.Millisecond
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.Topic == "" {
		c.Topic = orderevent.DefaultTopic
	}
	if c.DeadLetterTopic == "" {
		c.DeadLetterTopic = orderevent.DefaultDeadLetterTopic
	}
}

var (
	relayScript = rueidis.NewLuaScript(lua.Relay)
	relaySHA    = fmt.Sprintf("%x", sha1.Sum([]byte(lua.Relay)))
)

// Relay moves the journals of the shards it can lease to Kafka. Create it with
// New and drive it with Run.
type Relay struct {
	cfg    Config
	redis  rueidis.Client
	kafka  *kgo.Client
	shards func() []Shard
	obs    Observer
	token  string

	mu    sync.Mutex
	owned map[Shard]context.CancelFunc // shards with a worker: held or being tried
	held  map[Shard]bool               // shards whose lease this relay holds
	fails map[Shard]*repeatlog.Failure // the log of each listed shard's failing rounds
	sales []int64                      // the sales of the last scan (Run's goroutine only)
	// stopping is closed when Run's ctx ends (the relay stops), as opposed
	// to one shard's being given up.
	stopping <-chan struct{}
	wg       sync.WaitGroup
}

// New returns a relay over redis and kafka (a producer client: the relay sets
// the topic per record). shards lists the journals to relay, read at every
// Scan.
func New(cfg Config, redis rueidis.Client, kafka *kgo.Client, shards func() []Shard, obs Observer) *Relay {
	cfg.defaults()
	var b [12]byte
	_, _ = rand.Read(b[:])
	return &Relay{cfg: cfg, redis: redis, kafka: kafka, shards: shards, obs: obs,
		token: hex.EncodeToString(b[:]), owned: map[Shard]context.CancelFunc{}, held: map[Shard]bool{}, fails: map[Shard]*repeatlog.Failure{}}
}

// ProducerOpts are the franz-go options of the relay's producer: acks from
// all in-sync replicas, the idempotent producer (franz-go's default, kept),
// a short linger, no compression, and the topic's metadata read again
// every MetadataMaxAge, so that partitions an operator adds to the orders
// topic mid-sale are used within seconds, not five minutes (franz-go's
// default; the writer's chains keep the watermarks true across the move).
func ProducerOpts(brokers []string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.MetadataMaxAge(MetadataMaxAge),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.AllowAutoTopicCreation(),
	}
}

// MetadataMaxAge is how often the relay's producer and the writer's
// consumer read the orders topic's metadata again.
const MetadataMaxAge = 10 * time.Second

// Token returns this relay's lease token.
func (r *Relay) Token() string { return r.token }

// Owned returns how many shards this relay holds the lease of now.
func (r *Relay) Owned() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.held)
}

// Run tries every listed shard each Scan, relays the ones it leases, and on
// ctx's end finishes each shard's round in flight and releases its leases.
func (r *Relay) Run(ctx context.Context) {
	r.stopping = ctx.Done()
	t := time.NewTicker(r.cfg.Scan)
	defer t.Stop()
	moves := map[string]map[string]bool{} // tag -> move ids seen last scan
	for {
		r.scan(ctx, moves)
		select {
		case <-ctx.Done():
			r.wg.Wait()
			r.leave(r.sales)
			return
		case <-t.C:
		}
	}
}

// relayAlive is how long a relay counts as live after it last said so.
const relayAlive = 5 * time.Second

// live records this relay as alive for each of sales and returns, per sale,
// how many relays are (at least 1): a sale's shards are shared by that count.
// Relays that move other sales (a -relay-sales filter) do not count.
func (r *Relay) live(ctx context.Context, sales []int64) map[int64]int {
	out := make(map[int64]int, len(sales))
	if len(sales) == 0 {
		return out
	}
	c, cancel := context.WithTimeout(ctx, r.cfg.Lease/2)
	defer cancel()
	now := clock.Now() // compared with other gateways' beats (package clock)
	old := strconv.FormatInt(now.Add(-relayAlive).UnixMilli(), 10)
	cmds := make(rueidis.Commands, 0, 4*len(sales))
	for _, id := range sales {
		k := sharding.RelaysKey(id)
		cmds = append(cmds,
			r.redis.B().Zadd().Key(k).ScoreMember().ScoreMember(float64(now.UnixMilli()), r.token).Build(),
			r.redis.B().Zremrangebyscore().Key(k).Min("-inf").Max(old).Build(),
			r.redis.B().Zcard().Key(k).Build(),
			r.redis.B().Pexpire().Key(k).Milliseconds(int64(10*relayAlive/time.Millisecond)).Build())
	}
	res := r.redis.DoMulti(c, cmds...)
	for i, id := range sales {
		n, err := res[4*i+2].AsInt64()
		out[id] = max(int(n), 1)
		if err != nil {
			out[id] = 1
		}
	}
	return out
}

// leave removes this relay from the live sets of sales.
func (r *Relay) leave(sales []int64) {
	c, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	cmds := make(rueidis.Commands, 0, len(sales))
	for _, id := range sales {
		cmds = append(cmds, r.redis.B().Zrem().Key(sharding.RelaysKey(id)).Member(r.token).Build())
	}
	if len(cmds) > 0 {
		r.redis.DoMulti(c, cmds...)
	}
}

// scan starts a worker on each listed shard this relay has a fair share of
// and no worker for, stops the workers of shards no longer listed or beyond
// its share, and recovers the stalled moves of the shards it works on.
func (r *Relay) scan(ctx context.Context, moves map[string]map[string]bool) {
	list := r.shards()
	perSale := map[int64]int{}
	for _, sh := range list {
		perSale[sh.SaleID]++
	}
	sales := make([]int64, 0, len(perSale))
	for id := range perSale {
		sales = append(sales, id)
	}
	r.sales = sales
	live := r.live(ctx, sales)
	mrand.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	tags := r.assign(ctx, list, perSale, live)
	if r.cfg.Recover == nil {
		return
	}
	for _, tag := range tags {
		seen, err := r.cfg.Recover(ctx, tag, moves[tag])
		if err != nil {
			r.obs.Failed("redis")
			continue
		}
		moves[tag] = seen
	}
}

// assign gives this relay its fair share of each sale's shards (perSale
// shards shared by live relays): the first relay to start takes them all,
// and gives the surplus up as others come (a released lease is taken by
// another relay at its next scan). It returns the tags of the shards that
// already had a worker.
func (r *Relay) assign(ctx context.Context, list []Shard, perSale, live map[int64]int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	listed := make(map[Shard]bool, len(list))
	for _, sh := range list {
		listed[sh] = true
	}
	for sh, cancel := range r.owned {
		if !listed[sh] {
			cancel() // a reshard replaced it: its journal was copied
		}
	}
	for sh := range r.fails {
		if !listed[sh] {
			delete(r.fails, sh)
		}
	}
	fair := make(map[int64]int, len(perSale))
	held, tried := map[int64]int{}, map[int64]int{}
	for id, k := range perSale {
		fair[id] = (k + live[id] - 1) / live[id]
	}
	for sh := range r.owned {
		if r.held[sh] {
			held[sh.SaleID]++
		} else {
			tried[sh.SaleID]++
		}
	}
	for sh := range r.held {
		if held[sh.SaleID] > fair[sh.SaleID] {
			r.owned[sh]()
			held[sh.SaleID]--
		}
	}
	var tags []string
	for _, sh := range list {
		if _, ok := r.owned[sh]; ok {
			tags = append(tags, sh.Tag)
			continue
		}
		if held[sh.SaleID]+tried[sh.SaleID] >= fair[sh.SaleID] {
			continue
		}
		tried[sh.SaleID]++
		sctx, cancel := context.WithCancel(ctx)
		r.owned[sh] = cancel
		r.wg.Add(1)
		go r.shard(sctx, sh)
	}
	return tags
}

// round runs relay.lua once, then reads the entries it closed to voids with
// a plain XRANGE (see relay.lua: nothing but this relay's own trim removes
// them, and every later entry has a later id), and the shard's item chains,
// which only that trim changes.
func (r *Relay) round(ctx context.Context, keys []string, acked ack, lease, hold time.Duration) (Round, error) {
	args := acked.args([]string{r.token, strconv.FormatInt(lease.Milliseconds(), 10), strconv.FormatInt(hold.Milliseconds(), 10),
		strconv.FormatInt(r.cfg.Fence.Milliseconds(), 10)})
	rctx, cancel := context.WithTimeout(ctx, r.cfg.Lease/2)
	defer cancel()
	arr, err := r.confirmed(rctx, keys, args)
	if err != nil {
		return Round{}, err
	}
	rd, err := parseRound(arr)
	if err != nil || rd.Upto == "" {
		return rd, err
	}
	res := r.redis.DoMulti(rctx, r.redis.B().Xrange().Key(keys[0]).Start("-").End(rd.Upto).Count(int64(r.cfg.Batch)).Build(),
		r.redis.B().Hgetall().Key(keys[6]).Build())
	arr, err = res[0].ToArray()
	if err != nil {
		return Round{}, err
	}
	chain, err := res[1].AsStrMap()
	if err != nil {
		return Round{}, err
	}
	rd.Chain = parseChain(chain)
	rd.Entries, err = parseEntries(arr)
	return rd, err
}

// confirmed runs relay.lua (EVALSHA, EVAL on NOSCRIPT) followed, with
// Config.Acks, by WAIT in the same pipeline: rueidis sends a batch holding
// a blocking command such as WAIT on a connection of its own, so the WAIT
// covers exactly the script's writes. A WAIT that fails is an error, as in
// stock.Batcher; the round does not go through the gateway's Batcher, whose
// batches are bounded by the purchase budget (250ms), which a round, under
// its lease's time, is not.
func (r *Relay) confirmed(ctx context.Context, keys, args []string) ([]rueidis.RedisMessage, error) {
	c := r.redis
	for try := 0; ; try++ {
		script := c.B().Evalsha().Sha1(relaySHA).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
		if try > 0 {
			script = c.B().Eval().Script(lua.Relay).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
		}
		cmds := rueidis.Commands{script}
		if r.cfg.Acks > 0 {
			cmds = append(cmds, c.B().Wait().Numreplicas(int64(r.cfg.Acks)).Timeout(r.cfg.AckTimeout.Milliseconds()).Build())
		}
		res := c.DoMulti(ctx, cmds...)
		arr, err := res[0].ToArray()
		if rerr, ok := rueidis.IsRedisErr(err); ok && rerr.IsNoScript() && try == 0 {
			continue // NOSCRIPT ran nothing: EVAL runs and loads it
		}
		if err != nil {
			return nil, err
		}
		if len(res) > 1 {
			if err := res[1].Error(); err != nil {
				return nil, fmt.Errorf("relay round not confirmed by a replica (WAIT: %w)", err)
			}
		}
		return arr, nil
	}
}

// release deletes the acked entries and gives the lease up, on the way out.
func (r *Relay) release(keys []string, acked ack) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	args := acked.args([]string{r.token, "0", "0", "1"})
	if err := relayScript.Exec(ctx, r.redis, keys, args).Error(); err != nil {
		r.cfg.Log.Warn("releasing a journal lease", "err", err)
	}
}

// produce sends the round's entries to Kafka and returns what Kafka
// acknowledged: the longest prefix whose records Kafka all took (nothing
// when none), so that nothing is deleted past an entry still to be
// produced. franz-go returns a ProduceSync's results in the order the
// records completed, not the order they were given: a round with records
// for several partitions (several items, a dead letter) can see a later
// record succeed and an earlier one fail, so each result is mapped back to
// its entry by its record. A failure its watcher already counted (st) is
// not counted again.
func (r *Relay) produce(ctx context.Context, sh Shard, rd Round, st *stall) ack {
	es := rd.Entries
	recs := make([]*kgo.Record, len(es))
	items := make([]int64, len(es))
	l := links{stored: rd.Chain}
	for i := range es {
		items[i] = entryItem(&es[i])
		prev := ""
		if items[i] != 0 {
			prev = l.prev(items[i], es[i].ID)
		}
		recs[i] = r.record(sh, &es[i], prev)
	}
	pctx, cancel := context.WithTimeout(ctx, r.cfg.Lease/2)
	defer cancel()
	res := r.kafka.ProduceSync(pctx, recs...)
	n, err := ackedPrefix(recs, res)
	if err != nil && ctx.Err() == nil && st.count(1) {
		r.obs.Failed("kafka")
		r.cfg.Log.Warn("producing journal entries", "shard", sh.Tag, "err", err)
	}
	if n == 0 {
		return ack{}
	}
	r.obs.Relayed(n)
	a := ack{upto: es[n-1].ID, items: map[int64]string{}}
	for i := range n {
		if items[i] != 0 {
			a.items[items[i]] = es[i].ID
		}
	}
	return a
}

// record returns the Kafka record of entry e of shard sh, whose item's
// previous entry is prev ("" for none named): the order event, or, for an
// entry that does not decode, a dead letter.
func (r *Relay) record(sh Shard, e *Entry, prev string) *kgo.Record {
	ev, err := e.Decode()
	if err != nil {
		r.obs.Failed("malformed")
		r.cfg.Log.Error("journal entry does not decode; sending it to the dead-letter topic", "shard", sh.Tag, "err", err)
		return deadLetter(r.cfg.DeadLetterTopic, sh, e, err)
	}
	return &kgo.Record{Topic: r.cfg.Topic, Key: orderevent.AppendKey(nil, &ev), Value: orderevent.AppendJSON(nil, &ev),
		Headers: []kgo.RecordHeader{{Key: orderevent.JournalHeader,
			Value: orderevent.AppendPosition(nil, orderevent.Position{Shard: sh.Tag, Entry: e.ID, Prev: prev})}}}
}

// ackedPrefix returns how many of recs, from the first, Kafka acknowledged
// with every record before them, reading res (in any order) by record; err
// is the first failure met, if any. A result that names no record of recs,
// or a record without a result, ends the prefix there: a reply franz-go
// never gave is not an acknowledgement.
func ackedPrefix(recs []*kgo.Record, res kgo.ProduceResults) (n int, err error) {
	pos := make(map[*kgo.Record]int, len(recs))
	for i, rec := range recs {
		pos[rec] = i
	}
	ok := make([]bool, len(recs))
	for _, pr := range res {
		i, known := pos[pr.Record]
		if pr.Err != nil {
			if err == nil {
				err = pr.Err
			}
			continue
		}
		if known {
			ok[i] = true
		}
	}
	for n < len(recs) && ok[n] {
		n++
	}
	return n, err
}

func deadLetter(topic string, sh Shard, e *Entry, why error) *kgo.Record {
	b := []byte(`{"journal":"`)
	b = append(b, sh.Tag...)
	b = append(b, `","id":"`...)
	b = append(b, e.ID...)
	b = append(b, `","fields":{`...)
	first := true
	for k, v := range e.Fields {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = strconv.AppendQuote(b, k)
		b = append(b, ':')
		b = strconv.AppendQuote(b, v)
	}
	b = append(b, "}}"...)
	return &kgo.Record{Topic: topic, Value: b, Headers: []kgo.RecordHeader{
		{Key: "error", Value: []byte(why.Error())},
		{Key: "origin", Value: []byte("journal " + sh.Tag + " " + e.ID)},
	}}
}
