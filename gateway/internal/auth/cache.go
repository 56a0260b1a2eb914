package auth

import (
	"sync"
)

// cacheShards is the number of independently locked shards of a tokenCache.
const cacheShards = 64

// evictSample is how many entries of a full shard an insert looks at.
const evictSample = 8

// entry is one cached verdict. tok is the full token, compared on every hit
// so that a 64-bit hash collision can never hand one user another's
// identity. For the positive cache val is the user id and until the last
// Unix nanosecond at which the token is valid (exp plus skew); for the
// negative cache val holds a code and until is the end of the entry's TTL.
//
// Bytes per entry: the map slot is the 8-byte hash key plus this 32-byte
// struct plus one control byte (41 bytes fully packed; Go maps run 7/16 to
// 7/8 full, so 47 to 94 bytes per slot), plus the token string in its malloc
// size class (a 190-byte token takes 208 bytes). TestCacheBytesPerEntry
// measures about 255 bytes per entry for 190-byte tokens: 500,000 users cost
// about 120 MiB, and the default bound of 1<<20 entries about 270 MiB.
type entry struct {
	tok   string
	val   uint64
	until int64
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[uint64]entry
	_  [64 - 32]byte // keep neighbouring shard locks off one cache line
}

// tokenCache is a bounded, sharded map from token hash to entry. It is safe
// for concurrent use; get never allocates.
type tokenCache struct {
	perShard int
	shards   [cacheShards]cacheShard
}

func newTokenCache(size int) *tokenCache {
	c := &tokenCache{perShard: max(1, (size+cacheShards-1)/cacheShards)}
	for i := range c.shards {
		c.shards[i].m = make(map[uint64]entry)
	}
	return c
}

func (c *tokenCache) shard(h uint64) *cacheShard {
	// The low bits pick the map bucket inside Go's map; use the high bits here.
	return &c.shards[h>>58]
}

// get returns the entry for tok (hash h) if one is present and still valid at
// now (Unix ns). An entry found past its deadline is deleted and reported as
// stale, which the positive cache turns into ErrExpired without a signature
// check.
func (c *tokenCache) get(h uint64, tok []byte, now int64) (val uint64, hit, stale bool) {
	s := c.shard(h)
	s.mu.RLock()
	e, ok := s.m[h]
	s.mu.RUnlock()
	if !ok || e.tok != string(tok) {
		return 0, false, false
	}
	if now > e.until {
		s.mu.Lock()
		if cur, ok := s.m[h]; ok && cur.until == e.until && cur.tok == e.tok {
			delete(s.m, h)
		}
		s.mu.Unlock()
		return e.val, false, true
	}
	return e.val, true, false
}

// put stores an entry, evicting to stay within the bound when the shard is
// full: first the expired entries among a random sample, else one random
// entry.
func (c *tokenCache) put(h uint64, tok string, val uint64, until, now int64) {
	s := c.shard(h)
	s.mu.Lock()
	if _, ok := s.m[h]; !ok && len(s.m) >= c.perShard {
		var victim uint64
		freed, n := false, 0
		for k, e := range s.m {
			if n == 0 {
				victim = k
			}
			if now > e.until {
				delete(s.m, k)
				freed = true
			}
			if n++; n == evictSample {
				break
			}
		}
		if !freed {
			delete(s.m, victim)
		}
	}
	s.m[h] = entry{tok: tok, val: val, until: until}
	s.mu.Unlock()
}

// len returns the number of entries (a snapshot under concurrent use).
func (c *tokenCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}
