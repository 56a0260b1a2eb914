package journal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"flashsale/lua"
	"flashsale/sharding"
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

var fenceScript = rueidis.NewLuaScript(lua.Fence)

// FenceConfig tunes a Fence.
type FenceConfig struct {
	// Every is the pause between beats (default 250ms).
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
}

// NewFence returns the fence of a gateway with a new random id over c.
func NewFence(c rueidis.Client, cfg FenceConfig) *Fence {
	if cfg.Every <= 0 {
		cfg.Every = 250 * time.Millisecond
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
		_ = f.Beat(ctx)
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
	pending := map[string]bool{}
	if f.cfg.Pending != nil {
		f.cfg.Pending(pending)
	}
	var tags []string
	for _, tag := range f.cfg.Tags() {
		if !pending[tag] {
			tags = append(tags, tag)
		}
	}
	if len(tags) == 0 {
		return nil
	}
	ms := strconv.FormatInt(stamp.UnixMilli(), 10)
	transit := strconv.FormatInt(FenceTransit.Milliseconds(), 10)
	execs := make([]rueidis.LuaExec, len(tags))
	for i, tag := range tags {
		execs[i] = rueidis.LuaExec{Keys: []string{string(sharding.AppendFenceMarksKey(nil, tag))}, Args: []string{f.id, "beat", ms, transit}}
	}
	ctx, cancel := context.WithTimeout(ctx, FenceTransit)
	defer cancel()
	var failed []string
	for i, r := range fenceScript.ExecMulti(ctx, f.c, execs...) {
		n, err := r.AsInt64()
		switch {
		case err == nil && n == fenceBeat:
			f.mark(tags[i], stamp)
		case err == nil && n == fenceLate:
			failed = append(failed, tags[i]+" (late: the clocks or the network)")
		case err == nil:
			failed = append(failed, tags[i]+" (reply "+strconv.FormatInt(n, 10)+")")
		default:
			failed = append(failed, tags[i]+" ("+err.Error()+")")
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("fence beats failed on %d of %d shards: %s", len(failed), len(tags), listed(failed))
	}
	return nil
}

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
	execs := make([]rueidis.LuaExec, len(tags))
	for i, tag := range tags {
		execs[i] = rueidis.LuaExec{Keys: []string{string(sharding.AppendFenceMarksKey(nil, tag))}, Args: []string{f.id, "leave", "0", "0"}}
	}
	for i, r := range fenceScript.ExecMulti(ctx, f.c, execs...) {
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
