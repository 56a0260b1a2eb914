package journal

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
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
	"flashsale/sharding/clock"
	"flashsale/sharding/repeatlog"
	"flashsale/sharding/startup"
)

// DefaultFence is the default of Config.Fence and FenceConfig.Hold: how long
// a gateway's fence mark holds relays back after its last beat.
const DefaultFence = 10 * time.Second

// fenceLeft is fence.lua's reply to a leave.
const fenceLeft = 2

// beatTimeout bounds one pipeline of beats.
const beatTimeout = time.Second

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
// is cut off from a master that the other relays still see.
//
// A mark is a time of the master's own clock: each beat answers the
// master's time, and the next beat hands it back to be recorded once the
// gateway has found no void of its own waiting for the shard (fence.lua).
// No clock of the gateway's is compared with the master's, and a beat held
// up in the network tells the truth whenever it lands: a gateway whose clock
// is off by any amount beats as well as one whose clock is right.
// Freshness is measured on the gateway's monotonic clock from the answer
// whose time became the mark. A Fence is safe for concurrent use; Fresh
// allocates nothing.
type Fence struct {
	cfg   FenceConfig
	id    string
	c     rueidis.Client
	start time.Time // the monotonic origin of the times below
	mu    sync.RWMutex
	// shards is each shard's state, by tag; entries are never removed (a
	// tag is a few bytes).
	shards map[string]*shardFence
	fail   repeatlog.Failure
	// offset is the worst clock offset of the last beat round (master's
	// time less this gateway's wall clock at the middle of the round trip,
	// ns); see Offset.
	offset atomic.Int64
	// jumps counts the answers a master's clock made jump (see Jumps).
	jumps atomic.Int64
}

// clockJump is how far a master's answer may stray from its previous one
// moved by this gateway's monotonic clock before it counts as a jump (the
// beats' round trips stay well inside it).
const clockJump = 500 * time.Millisecond

// shardFence is one shard's beats.
type shardFence struct {
	mu   sync.Mutex
	prev int64 // the last answer (master ms) not yet handed back, 0 for none
	// prevAt is when the round that got it was sent (ns since
	// Fence.start): the master's time was taken after it, so a mark of that
	// answer is at least this old; prevTrip is that round's length.
	prevAt, prevTrip int64
	// marked is when the answer whose time is the mark came (ns since
	// Fence.start), 0 before the first mark.
	marked atomic.Int64
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
	return &Fence{cfg: cfg, id: hex.EncodeToString(b[:]), c: c, start: time.Now(), shards: map[string]*shardFence{}}
}

// ID returns the gateway's id in the fence marks.
func (f *Fence) ID() string { return f.id }

// Fresh reports whether the gateway's mark on tag is recent enough to write
// an entry there at now (a reading of time.Now): the answer whose time it
// is came within a third of the hold, by the monotonic clock.
func (f *Fence) Fresh(tag string, now time.Time) bool {
	f.mu.RLock()
	sf := f.shards[tag]
	f.mu.RUnlock()
	if sf == nil {
		return false
	}
	m := sf.marked.Load()
	return m != 0 && int64(now.Sub(f.start))-m < int64(f.cfg.Hold/3)
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
// an error naming the shards whose beat failed. A shard beaten for the
// first time (no answer to hand back) is beaten twice, so that it has a
// mark when Beat returns.
func (f *Fence) Beat(ctx context.Context) error {
	// Tags before Pending (read by beat): a reshard published in between
	// moves both to the new layout, and Pending names a void's new shard as
	// well as its old one, never the other way round.
	return f.BeatTags(ctx, f.cfg.Tags())
}

// BeatTags beats the shards of tags as Beat does every shard of Tags: the
// catalog calls it for the shards of a sale it is about to serve, before
// Tags lists them.
func (f *Fence) BeatTags(ctx context.Context, tags []string) error {
	again, err := f.beat(ctx, tags)
	if len(again) > 0 {
		_, err2 := f.beat(ctx, again)
		err = errors.Join(err, err2)
	}
	return err
}

// beat beats all but the pending shards once: it hands each its last
// answer back and keeps the new one. It returns the shards that answered
// but are not fresh after it (beaten for the first time, or after beats
// failed for a while: the answer handed back was old), which a second beat
// makes fresh at once.
func (f *Fence) beat(ctx context.Context, all []string) (first []string, err error) {
	pending := map[string]bool{}
	if f.cfg.Pending != nil {
		f.cfg.Pending(pending)
	}
	var tags []string
	var sfs []*shardFence
	for _, tag := range all {
		if !pending[tag] {
			tags = append(tags, tag)
			sfs = append(sfs, f.shard(tag))
		}
	}
	if len(tags) == 0 {
		return nil, nil
	}
	keys, args := make([]string, len(tags)), make([][]string, len(tags))
	sent := make([]int64, len(tags)) // the answer handed back, and when it came
	sentAt := make([]int64, len(tags))
	for i, tag := range tags {
		sf := sfs[i]
		sf.mu.Lock()
		sent[i], sentAt[i] = sf.prev, sf.prevAt
		sf.mu.Unlock()
		prev := ""
		if sent[i] != 0 {
			prev = strconv.FormatInt(sent[i], 10)
		}
		keys[i], args[i] = string(sharding.AppendFenceMarksKey(nil, tag)), []string{f.id, "beat", prev}
	}
	ctx, cancel := context.WithTimeout(ctx, beatTimeout)
	defer cancel()
	var failed []string
	transient := true
	sentWall, sentAt0 := clock.Now(), time.Now()
	res := fenceMulti(ctx, f.c, keys, args)
	trip := time.Since(sentAt0)
	mid := sentWall.Add(trip / 2)
	at := int64(sentAt0.Sub(f.start))
	var worst time.Duration
	for i, r := range res {
		now, recorded, err := parseBeat(r)
		switch {
		case err == nil:
			if off := time.UnixMilli(now).Sub(mid); off > worst || -off > worst {
				worst = max(off, -off)
				f.offset.Store(int64(off))
			}
			sf := sfs[i]
			sf.mu.Lock()
			if sf.prev != 0 {
				// Each answer was taken somewhere within its round:
				// the two rounds' lengths are the reading's slack.
				moved := time.Duration(now-sf.prev)*time.Millisecond - time.Duration(at-sf.prevAt)
				if slack := clockJump + trip + time.Duration(sf.prevTrip); moved > slack || moved < -slack {
					f.jumps.Add(1)
					if f.cfg.Log != nil {
						f.cfg.Log.Warn("a Redis master's clock jumped between two fence beats", "shard", tags[i], "by", moved.Round(time.Millisecond))
					}
				}
			}
			if recorded && sentAt[i] > sf.marked.Load() {
				sf.marked.Store(sentAt[i])
			}
			sf.prev, sf.prevAt, sf.prevTrip = now, at, int64(trip)
			stale := sent[i] == 0 || int64(time.Since(f.start))-sf.marked.Load() >= int64(f.cfg.Hold/3)
			sf.mu.Unlock()
			if stale {
				first = append(first, tags[i])
			}
		case errors.Is(err, errBeatReply):
			failed = append(failed, tags[i]+" ("+err.Error()+")")
			transient = false
		default:
			failed = append(failed, tags[i]+" ("+err.Error()+")")
			transient = transient && startup.Transient(err)
		}
	}
	if len(failed) > 0 {
		return first, &BeatError{msg: fmt.Sprintf("fence beats failed on %d of %d shards: %s", len(failed), len(tags), listed(failed)), transient: transient}
	}
	return first, nil
}

// Offset returns the largest clock offset the last beat round saw either
// way: a master's answer less this gateway's wall clock at the middle of
// the round trip. No rule of the fence reads it (a mark is the master's own
// time); it is shown (flashsale_gateway_clock_offset_seconds) because the
// stamps this gateway hands to others move with its clock.
func (f *Fence) Offset() time.Duration { return time.Duration(f.offset.Load()) }

// Jumps returns how many beat answers showed a master's clock jump: its
// time moved from its previous answer by more than half a second off this
// gateway's monotonic clock. The relay's hold and the fence's marks read
// the masters' clocks: a jump forward by more than the hold less the
// budgets, while an attempt is unsettled, could let a relay take an entry
// a void still means to undo (sharding/journal/DESIGN.md, "Clocks"). A
// failover to a master whose clock differs counts too.
func (f *Fence) Jumps() int64 { return f.jumps.Load() }

// errBeatReply is a beat's reply that is not fence.lua's.
var errBeatReply = errors.New("malformed fence reply")

// parseBeat reads fence.lua's reply to a beat (from another process: a
// time must be positive, the flag 0 or 1).
func parseBeat(r rueidis.RedisResult) (now int64, recorded bool, err error) {
	arr, err := r.ToArray()
	if err != nil {
		return 0, false, err
	}
	if len(arr) != 2 {
		return 0, false, fmt.Errorf("%w: %d elements", errBeatReply, len(arr))
	}
	now, err1 := arr[0].AsInt64()
	flag, err2 := arr[1].AsInt64()
	if err1 != nil || err2 != nil || now <= 0 || (flag != 0 && flag != 1) {
		return 0, false, fmt.Errorf("%w: %d, %d", errBeatReply, now, flag)
	}
	return now, flag == 1, nil
}

// shard returns tag's state, made on first use.
func (f *Fence) shard(tag string) *shardFence {
	f.mu.RLock()
	sf := f.shards[tag]
	f.mu.RUnlock()
	if sf != nil {
		return sf
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if sf = f.shards[tag]; sf == nil {
		sf = &shardFence{}
		f.shards[tag] = sf
	}
	return sf
}

// BeatError is Beat's error: the shards whose beat failed and why.
type BeatError struct {
	msg       string
	transient bool
}

func (e *BeatError) Error() string { return e.msg }

// Transient reports whether every failed beat met an error of a server
// away, slow or starting, so that a gateway's start waits for a beat that
// lands rather than exiting (startup.Transient asks it).
func (e *BeatError) Transient() bool { return e.transient }

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
		keys[i], args[i] = string(sharding.AppendFenceMarksKey(nil, tag)), []string{f.id, "leave", ""}
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
