// Package presale is the gateway's side of a sale's presale phase (SPEC
// "Fair access"): who may buy before the general start, and the cap on the
// units the phase may sell.
//
// Who: a token carrying the claim the sale names with one of its values
// (auth.ClaimHas, decoded once per token and sale version, then cached), or a user
// id on the list an operator loaded (`flashctl sale presale load`, a Redis
// set each gateway copies into memory every ListEvery while the presale is
// near or on). A check after the first costs a map read and no allocation.
//
// The cap: the units the presale may still sell are a counter in Redis
// (sharding.PresaleCapKey, set by `flashctl sale create`). A presale
// purchase takes one with DECR before it reserves (a result below 0 gives
// it back: PRESALE_SOLD_OUT), and gives it back with INCR unless it was
// answered 202. A gateway that dies between the two leaves a unit of the cap
// unsold in the presale, never one sold over it: the cap holds. Units a
// presale buyer later cancels stay counted against the cap. Once a Take
// finds the cap sold, the gateway answers PRESALE_SOLD_OUT for GoneFor
// without asking Redis (a unit given back meanwhile waits that long).
package presale

import (
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"flashsale/gateway/internal/auth"
	"flashsale/sharding"
	"flashsale/sharding/repeatlog"
	"flashsale/sharding/sale"
)

// ListEvery is how often a live presale's list is read again.
const ListEvery = 2 * time.Second

// listLead is how long before a presale's start its list is first read.
const listLead = time.Minute

// Gate answers presale questions for every sale of a gateway.
type Gate struct {
	c     rueidis.Client
	acks  Acker // nil: the cap's takes go to the master alone
	log   *slog.Logger
	lists atomic.Pointer[map[int64]map[uint64]struct{}]
	seed  maphash.Seed
	mu    sync.RWMutex
	// claims caches auth.ClaimHas per (sale, token hash); bounded.
	claims map[claimKey]bool
	// gone holds, per sale, until when (unix ns) its cap is taken as sold:
	// a refused Take sets it for GoneFor, so that a crowd clicking after
	// the cap sold costs Redis nothing.
	gone sync.Map // int64 -> int64
	now  func() time.Time
}

// GoneFor is how long a cap found sold is taken as sold without asking
// Redis: a unit given back meanwhile waits at most that long.
const GoneFor = time.Second

// claimKey is a token's answer for one version of a sale (a new version
// may name other values).
type claimKey struct {
	sale, version int64
	token         uint64
}

// maxClaims bounds the claim cache; when it is full it starts afresh.
const maxClaims = 200_000

// Acker sends a write and answers once the replicas acknowledged it
// (stock.Batcher.DoAck): a take of the cap that a failover undid would let
// the presale sell past its cap.
type Acker interface {
	DoAck(ctx context.Context, cmd rueidis.Completed) (rueidis.RedisResult, int64)
}

// New returns a gate over the cluster client c whose takes of a cap go
// through acks (nil: to the master alone).
func New(c rueidis.Client, acks Acker, log *slog.Logger) *Gate {
	if log == nil {
		log = slog.Default()
	}
	g := &Gate{c: c, acks: acks, log: log, seed: maphash.MakeSeed(), claims: map[claimKey]bool{}, now: time.Now}
	g.lists.Store(&map[int64]map[uint64]struct{}{})
	return g
}

// Eligible reports whether user, holding token (verified), may buy in
// sale's presale. It allocates only the first time a token is seen.
func (g *Gate) Eligible(sale *sale.Sale, user uint64, token []byte) bool {
	p := sale.Presale
	if p == nil {
		return false
	}
	if p.List {
		if _, ok := (*g.lists.Load())[sale.ID][user]; ok {
			return true
		}
	}
	if p.Claim == "" {
		return false
	}
	k := claimKey{sale: sale.ID, version: sale.Version, token: maphash.Bytes(g.seed, token)}
	g.mu.RLock()
	ok, seen := g.claims[k]
	g.mu.RUnlock()
	if seen {
		return ok
	}
	ok = auth.ClaimHas(token, p.Claim, p.Values)
	g.mu.Lock()
	if len(g.claims) >= maxClaims {
		clear(g.claims)
	}
	g.claims[k] = ok
	g.mu.Unlock()
	return ok
}

// Take takes one unit of sale's presale cap: false when none is left (the
// unit is given back at once). A sale without a cap always gets one. The
// take waits for a replica (acks): a failover that undid takes answered
// would let the presale sell past its cap. An error leaves it unknown
// whether the unit was taken; it is not given back (the presale may sell
// one fewer, never one more).
func (g *Gate) Take(ctx context.Context, sale *sale.Sale) (bool, error) {
	if sale.Presale == nil || sale.Presale.Cap <= 0 {
		return true, nil
	}
	if until, ok := g.gone.Load(sale.ID); ok && g.now().UnixNano() < until.(int64) {
		return false, nil
	}
	k := sharding.PresaleCapKey(sale.ID)
	cmd := g.c.B().Decr().Key(k).Build()
	var res rueidis.RedisResult
	if g.acks != nil {
		res, _ = g.acks.DoAck(ctx, cmd)
	} else {
		res = g.c.Do(ctx, cmd)
	}
	n, err := res.AsInt64()
	if err != nil {
		return false, fmt.Errorf("taking a unit of the presale cap of sale %d: %w", sale.ID, err)
	}
	if n >= 0 {
		return true, nil
	}
	g.gone.Store(sale.ID, g.now().Add(GoneFor).UnixNano())
	return false, g.Give(ctx, sale)
}

// Give gives back a unit taken by Take.
func (g *Gate) Give(ctx context.Context, sale *sale.Sale) error {
	if sale.Presale == nil || sale.Presale.Cap <= 0 {
		return nil
	}
	if err := g.c.Do(ctx, g.c.B().Incr().Key(sharding.PresaleCapKey(sale.ID)).Build()).Error(); err != nil {
		return fmt.Errorf("giving back a unit of the presale cap of sale %d: %w", sale.ID, err)
	}
	return nil
}

// Source lists the sales a gateway knows (in the gateway, the catalog).
type Source interface {
	PresaleSales() []*sale.Sale
}

// Run reads the lists of live presales every ListEvery until ctx ends.
func (g *Gate) Run(ctx context.Context, src Source) {
	t := time.NewTicker(ListEvery)
	defer t.Stop()
	var fails repeatlog.Failure
	for {
		fails.Round(ctx, g.log, g.Refresh(ctx, time.Now(), src.PresaleSales()), "presale lists")
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh reads the list of every sale whose presale with a list starts
// within listLead or is on at now; the others' lists are dropped.
func (g *Gate) Refresh(ctx context.Context, now time.Time, sales []*sale.Sale) error {
	next := map[int64]map[uint64]struct{}{}
	old := *g.lists.Load()
	var first error
	for _, s := range sales {
		p := s.Presale
		if p == nil || !p.List || now.Before(p.StartsAt.Add(-listLead)) || !now.Before(s.StartsAt) {
			continue
		}
		m, err := g.readList(ctx, s.ID)
		if err != nil {
			if first == nil {
				first = err
			}
			m = old[s.ID] // keep the last good copy
		}
		next[s.ID] = m
	}
	g.lists.Store(&next)
	return first
}

func (g *Gate) readList(ctx context.Context, saleID int64) (map[uint64]struct{}, error) {
	ids, err := g.c.Do(ctx, g.c.B().Smembers().Key(sharding.PresaleListKey(saleID)).Build()).AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("reading the presale list of sale %d: %w", saleID, err)
	}
	m := make(map[uint64]struct{}, len(ids))
	for _, v := range ids {
		u, err := strconv.ParseUint(v, 10, 63)
		if err != nil || u == 0 {
			return nil, fmt.Errorf("presale list of sale %d: %q is not a user id", saleID, v)
		}
		m[u] = struct{}{}
	}
	return m, nil
}
