package journal

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"flashsale/lua"
	"flashsale/sharding"
	"flashsale/sharding/repeatlog"
	"flashsale/sharding/startup"
)

// DefaultFence is the default of Config.Fence and FenceConfig.Hold: how long
// a gateway's fence mark holds relays back after its last beat.
const DefaultFence = 10 * time.Second

// FenceTransit is the most a gateway's beat may take from its stamp to the
// master (fence.lua refuses a later one): the relay hold must exceed the
// gateway's budget, its release budget and this.
const FenceTransit = 200 * time.Millisecond

// Fence replies (see fence.lua).
const (
	fenceLate = 0
	fenceBeat = 1
	fenceLeft = 2
)

// fenceSHA is fence.lua's SHA-1: beats go as EVALSHA in one DoMulti.
// (rueidis's Lua.ExecMulti loads the script on every node first, replicas
// included, and fails every beat while one node is down.)
var fenceSHA = fmt.Sprintf("%x", sha1.Sum([]byte(lua.Fence)))

// fenceMulti runs fence.lua once per (key, args) in one pipeline, EVAL for
// those a node without the script answered NOSCRIPT.
func fenceMulti(ctx context.Context, c rueidis.Client, keys []string, args [][]string) []rueidis.RedisResult {
	build := func(i int, eval bool) rueidis.Completed {
		if eval {
			return c.B().Eval().Script(lua.Fence).Numkeys(1).Key(keys[i]).Arg(args[i]...).Build()
		}
		return c.B().Evalsha().Sha1(fenceSHA).Numkeys(1).Key(keys[i]).Arg(args[i]...).Build()
	}
	cmds := make(rueidis.Commands, len(keys))
	for i := range keys {
		cmds[i] = build(i, false)
	}
	res := c.DoMulti(ctx, cmds...)
	var again []int
	for i, r := range res {
		if rerr, ok := rueidis.IsRedisErr(r.Error()); ok && rerr.IsNoScript() {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		cmds = cmds[:0]
		for _, i := range again {
			cmds = append(cmds, build(i, true))
		}
		for j, r := range c.DoMulti(ctx, cmds...) {
			res[again[j]] = r
		}
	}
	return res
}

// FenceConfig tunes a Fence.
type FenceConfig struct {
	// Every is the pause between beats (default 500ms). A relay takes an
	// entry no sooner than the beat after it, so it adds up to that to the
	// time an order takes to reach PostgreSQL.
	Every time.Duration
	// Hold is Config.Fence: a mark older than that is taken for a gateway
	// gone. A shard this gateway has not beaten for a third of it is not
	// written to (Fresh is false), so that its mark is there before its
	// first entry.
	Hold time.Duration
	// Tags lists the shards the gateway may write entries to.
	Tags func() []string
	// Pending adds to dst the shards where a void of the gateway waits to
	// land (queued, or being tried).
	Pending func(dst map[string]bool)
	// Log gets a run of failed beats (its first, a reminder every 10 s, its
	// end); nil logs nothing.
	Log *slog.Logger
}

// Fence keeps one gateway's fence marks: it beats every shard the gateway
// may write to, but for the shards where a void of its own waits to land,
// and says which shards it may write to now (Fresh). With the marks, a
// relay takes no entry that a void of this gateway may still undo (see
// relay.lua), so that a 503 after a lost reply stays true when this gateway
// is cut off from a master that the other relays still see. A Fence is safe
// for concurrent use; Fresh allocates nothing.
type Fence struct {
	cfg FenceConfig
	id  string
	c   rueidis.Client
	mu  sync.RWMutex
	// last is each shard's last accepted beat (unix ns of its stamp), by
	// tag; entries are never removed (a tag is a few bytes).
	last map[string]*atomic.Int64
	fail repeatlog.Failure
}

// NewFence returns the fence of a gateway with a new random id over c.
func NewFence(c rueidis.Client, cfg FenceConfig) *Fence {
	if cfg.Every <= 0 {
		cfg.Every = 500 * time.Millisecond
	}
	if cfg.Hold <= 0 {
		cfg.Hold = DefaultFence
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Fence{cfg: cfg, id: hex.EncodeToString(b[:]), c: c, last: map[string]*atomic.Int64{}}
}

// ID returns the gateway's id in the fence marks.
func (f *Fence) ID() string { return f.id }

// Fresh reports whether the gateway's mark on tag is recent enough to write
// an entry there at now: its last beat is within a third of the hold.
func (f *Fence) Fresh(tag string, now time.Time) bool {
	f.mu.RLock()
	p := f.last[tag]
	f.mu.RUnlock()
	return p != nil && now.UnixNano()-p.Load() < int64(f.cfg.Hold/3)
}

// Run beats every Every until ctx ends.
func (f *Fence) Run(ctx context.Context) {
	t := time.NewTicker(f.cfg.Every)
	defer t.Stop()
	for {
		if err := f.Beat(ctx); err != nil && ctx.Err() == nil && f.cfg.Log != nil {
			f.fail.Failed(f.cfg.Log, time.Now(), "fence beats failed: this gateway journals nothing on those shards once their marks are a third of -relay-fence old", "err", err)
		} else if err == nil && f.cfg.Log != nil {
			f.fail.Recovered(f.cfg.Log, time.Now(), "fence beats succeed again")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Beat beats every shard of Tags but those Pending names, once, and returns
// an error naming the shards whose beat failed.
func (f *Fence) Beat(ctx context.Context) error {
	stamp := time.Now() // before Pending is read: see fence.lua
	// Tags before Pending: a reshard published in between moves both to the
	// new layout, and Pending names a void's new shard as well as its old
	// one, never the other way round.
	return f.beat(ctx, stamp, f.cfg.Tags())
}

// BeatTags beats the shards of tags but those Pending names, once, as Beat
// does every shard of Tags: the catalog calls it for the shards of a sale
// it is about to serve, before Tags lists them.
func (f *Fence) BeatTags(ctx context.Context, tags []string) error {
	return f.beat(ctx, time.Now(), tags)
}

// beat beats all but the pending shards, stamped at stamp.
func (f *Fence) beat(ctx context.Context, stamp time.Time, all []string) error {
	pending := map[string]bool{}
	if f.cfg.Pending != nil {
		f.cfg.Pending(pending)
	}
	var tags []string
	for _, tag := range all {
		if !pending[tag] {
			tags = append(tags, tag)
		}
	}
	if len(tags) == 0 {
		return nil
	}
	ms := strconv.FormatInt(stamp.UnixMilli(), 10)
	transit := strconv.FormatInt(FenceTransit.Milliseconds(), 10)
	keys, args := make([]string, len(tags)), make([][]string, len(tags))
	for i, tag := range tags {
		keys[i], args[i] = string(sharding.AppendFenceMarksKey(nil, tag)), []string{f.id, "beat", ms, transit}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*FenceTransit) // fence.lua refuses what comes late
	defer cancel()
	var failed []string
	transient := true
	for i, r := range fenceMulti(ctx, f.c, keys, args) {
		n, err := r.AsInt64()
		switch {
		case err == nil && n == fenceBeat:
			f.mark(tags[i], stamp)
		case err == nil && n == fenceLate:
			failed = append(failed, tags[i]+" (late: the clocks or the network)")
		case err == nil:
			failed = append(failed, tags[i]+" (reply "+strconv.FormatInt(n, 10)+")")
			transient = false
		default:
			failed = append(failed, tags[i]+" ("+err.Error()+")")
			transient = transient && startup.Transient(err)
		}
	}
	if len(failed) > 0 {
		return &BeatError{msg: fmt.Sprintf("fence beats failed on %d of %d shards: %s", len(failed), len(tags), listed(failed)), transient: transient}
	}
	return nil
}

// BeatError is Beat's error: the shards whose beat failed and why.
type BeatError struct {
	msg       string
	transient bool
}

func (e *BeatError) Error() string { return e.msg }

// Transient reports whether every failed beat was late (a slow moment: a
// busy machine, a master failing over) or met an error of a server away or
// starting, so that a gateway's start waits for a beat that lands rather
// than exiting (startup.Transient asks it).
func (e *BeatError) Transient() bool { return e.transient }

// mark records a beat of tag stamped at.
func (f *Fence) mark(tag string, at time.Time) {
	f.mu.RLock()
	p := f.last[tag]
	f.mu.RUnlock()
	if p == nil {
		f.mu.Lock()
		if p = f.last[tag]; p == nil {
			p = new(atomic.Int64)
			f.last[tag] = p
		}
		f.mu.Unlock()
	}
	p.Store(at.UnixNano())
}

// Ready reports whether every shard of Tags has been beaten within a third
// of the hold, naming those that have not.
func (f *Fence) Ready(now time.Time) error {
	var stale []string
	for _, tag := range f.cfg.Tags() {
		if !f.Fresh(tag, now) {
			stale = append(stale, tag)
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("no fence beat for %v on %d shards (%s)", f.cfg.Hold/3, len(stale), listed(stale))
	}
	return nil
}

// Leave removes the gateway's marks from every shard of Tags, for a clean
// stop with no void left to land: its relays need not wait for it to be
// taken for gone.
func (f *Fence) Leave(ctx context.Context) error {
	tags := f.cfg.Tags()
	keys, args := make([]string, len(tags)), make([][]string, len(tags))
	for i, tag := range tags {
		keys[i], args[i] = string(sharding.AppendFenceMarksKey(nil, tag)), []string{f.id, "leave", "0", "0"}
	}
	for i, r := range fenceMulti(ctx, f.c, keys, args) {
		if n, err := r.AsInt64(); err != nil || n != fenceLeft {
			return fmt.Errorf("leaving the fence of %s: %d %v", tags[i], n, err)
		}
	}
	return nil
}

// listed joins the first few of names, saying how many more there are.
func listed(names []string) string {
	const most = 5
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
}
