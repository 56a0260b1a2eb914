// Package limit implements the gateway's per-IP and per-user token buckets.
//
// A Limiter holds one token bucket per 64-bit key with exactly the semantics
// of golang.org/x/time/rate: a bucket of capacity Burst is refilled
// continuously at Rate tokens per second, a key seen for the first time starts
// with a full bucket, and a refused call does not change the bucket. The
// difference is scale: x/time/rate keeps one mutex and 80+ bytes per
// Limiter, while this package keeps millions of 16-byte buckets in sharded
// maps, each shard behind its own mutex, and the hot path (an existing key)
// allocates nothing.
//
// # Memory
//
// A bucket is 16 bytes (tokens float64, last update in Unix nanoseconds) and
// its map slot adds the 8-byte key and the Swiss-table control byte, so a
// fully packed slot is 25 bytes; Go maps run between 7/16 and 7/8 full, so a
// key costs 29 to 57 bytes. TestMemoryPerKey measures it with
// runtime.MemStats: 500,000 keys over the default 256 shards take 26.6 MiB,
// 55.8 bytes per key (the figure moves with where each shard's map sits in
// its growth cycle). Two limiters (per IP and per user) for a 500,000-user
// sale therefore hold about 55 MiB; the default bound of 1<<20 keys caps one
// limiter near 60 MiB.
//
// # Time
//
// Allow reads now.UnixNano (the wall clock, not the monotonic reading), like
// the rest of the gateway's hot paths that take now. A clock stepping back
// refills nothing, exactly as rate.Limiter treats a t before its last update.
//
// # Bound and eviction
//
// MaxKeys bounds the number of buckets (split evenly over the shards). When a
// shard is full, inserting a new key first evicts buckets that have refilled
// to Burst: such a bucket carries no information, because a new bucket would
// start full anyway. The shard is sampled rather than swept (up to
// evictSample entries from a random starting point, which Go's map iteration
// provides), so an insert into a full shard costs O(evictSample), never
// O(shard). When none of the sampled buckets is full, the one with the most
// tokens is evicted. That is the trade-off of a bound: evicting a bucket that
// is not full forgives its client, who returns with a full bucket; choosing
// the fullest sampled bucket forgives as little as possible. Size MaxKeys
// above the expected population (500,000 users fit the default 1<<20 with
// room) so that this only happens under attack.
//
// # Locking
//
// Each shard has one mutex; no code path holds two, so there is no lock
// order to keep.
package limit

import (
	"math"
	"sync"
	"time"
)

// Defaults for Config fields left at zero.
const (
	// DefaultMaxKeys bounds the number of buckets of one Limiter.
	DefaultMaxKeys = 1 << 20
	// DefaultShards is the number of independently locked shards.
	DefaultShards = 256
)

// evictSample is how many entries of a full shard an insert looks at.
const evictSample = 16

// Config configures a Limiter. Rate and Burst have the meaning of
// rate.NewLimiter(rate.Limit(Rate), Burst); every key gets its own bucket.
type Config struct {
	// Rate is the refill rate in tokens per second. +Inf (or rate.Inf,
	// math.MaxFloat64) allows everything;
	// zero or negative never refills (each key gets Burst tokens in total).
	Rate float64
	// Burst is the bucket capacity; zero refuses everything unless Rate is +Inf.
	Burst int
	// MaxKeys bounds the number of buckets held; default DefaultMaxKeys.
	MaxKeys int
	// Shards is the number of shards, rounded up to a power of two; default
	// DefaultShards.
	Shards int
}

// bucket is the state of one key: tokens available at last (Unix ns).
type bucket struct {
	tokens float64
	last   int64
}

type shard struct {
	mu sync.Mutex
	m  map[uint64]bucket
	_  [64 - 16]byte // keep neighbouring shard locks off one cache line
}

// Limiter is a set of token buckets keyed by uint64. It is safe for
// concurrent use; Allow on an existing key does not allocate.
type Limiter struct {
	rate     float64
	burst    float64
	inf      bool
	perShard int
	mask     uint64
	shards   []shard
}

// New returns a Limiter for cfg, with defaults filled in.
func New(cfg Config) *Limiter {
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	if cfg.Shards <= 0 {
		cfg.Shards = DefaultShards
	}
	n := 1
	for n < cfg.Shards {
		n <<= 1
	}
	if n > cfg.MaxKeys {
		n = 1
		for n*2 <= cfg.MaxKeys {
			n <<= 1
		}
	}
	l := &Limiter{
		rate:     cfg.Rate,
		burst:    float64(max(cfg.Burst, 0)),
		inf:      cfg.Rate >= math.MaxFloat64,
		perShard: (cfg.MaxKeys + n - 1) / n,
		mask:     uint64(n - 1),
		shards:   make([]shard, n),
	}
	for i := range l.shards {
		l.shards[i].m = make(map[uint64]bucket)
	}
	return l
}

// mix spreads keys whose entropy sits in a few bits (IPv4 keys, small user
// ids) over the shards.
func mix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	return k
}

// Allow takes one token from key's bucket at now. When the bucket holds less
// than one token it returns false and the time until one token is available
// (the caller rounds it up to whole seconds for Retry-After); the bucket is
// then left unchanged, as rate.Limiter.AllowN leaves it. retryAfter is
// rate.InfDuration (math.MaxInt64) when a token will never be available.
// Allow does not allocate when key already has a bucket and is safe for
// concurrent use.
func (l *Limiter) Allow(now time.Time, key uint64) (ok bool, retryAfter time.Duration) {
	if l.inf {
		return true, 0
	}
	if l.burst < 1 {
		return false, math.MaxInt64
	}
	t := now.UnixNano()
	s := &l.shards[mix(key)&l.mask]
	s.mu.Lock()
	b, found := s.m[key]
	var tokens float64
	if !found {
		tokens = l.burst
		if len(s.m) >= l.perShard {
			l.evict(s, t)
		}
	} else {
		tokens = l.advance(b, t)
	}
	tokens--
	if tokens < 0 {
		s.mu.Unlock()
		return false, l.durationFromTokens(-tokens)
	}
	s.m[key] = bucket{tokens: tokens, last: t}
	s.mu.Unlock()
	return true, 0
}

// advance returns b's tokens at t, as rate.Limiter.advance computes them: time
// running backwards adds nothing, and the bucket never exceeds burst.
func (l *Limiter) advance(b bucket, t int64) float64 {
	last := b.last
	if t < last {
		last = t
	}
	tokens := b.tokens
	if l.rate > 0 {
		tokens += time.Duration(t-last).Seconds() * l.rate
	}
	if tokens > l.burst {
		tokens = l.burst
	}
	return tokens
}

// durationFromTokens mirrors rate.Limit.durationFromTokens.
func (l *Limiter) durationFromTokens(tokens float64) time.Duration {
	if l.rate <= 0 {
		return math.MaxInt64
	}
	d := tokens / l.rate * float64(time.Second)
	if d > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// evict makes room in the full shard s (locked) for one new key: it deletes
// the sampled buckets that have refilled, or else the fullest sampled one.
func (l *Limiter) evict(s *shard, t int64) {
	var (
		victim  uint64
		best    = -1.0
		freed   bool
		sampled int
	)
	for k, b := range s.m {
		tok := l.advance(b, t)
		if tok >= l.burst {
			delete(s.m, k)
			freed = true
		} else if tok > best {
			best, victim = tok, k
		}
		sampled++
		if sampled == evictSample {
			break
		}
	}
	if !freed && best >= 0 {
		delete(s.m, victim)
	}
}

// Len returns the number of buckets held. It locks each shard in turn, so the
// result is only a snapshot under concurrent use.
func (l *Limiter) Len() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}
