package httpapi

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"flashsale/sharding"
)

// maxWinners bounds the winners table: a sale of 10,000 units needs 10,000
// entries; at most this many are kept (about 500 bytes each with the token),
// later buyers are simply not remembered.
const maxWinners = 100_000

// winners remembers, per gateway, the bearer tokens that were answered 202 or
// 409 and the order each one holds, so that a buyer clicking again after the
// item sold out is told 409 ALREADY_PURCHASED with the order id rather than
// 410 SOLD_OUT, without a signature check or a Redis call: the lookup is by
// the exact token bytes this gateway already verified. A buyer whose repeat
// reaches another gateway, or who presents a new token, gets 410 SOLD_OUT,
// which is also true. An entry is not the truth: the order may have expired,
// or been cancelled through another gateway, since. So on the sold-out
// refusal an entry costs its click the token check and one HGET of the buyer
// record (Handler.stillHeld), which decides between the 409 and the 410; every
// other click on a sold-out item is still answered without either.
//
// Before the sell-out the table picks the cheaper Redis read for a repeat
// click (Handler.repeat): a known buyer's click reads the buyer record (HGET)
// rather than running the reserve script. Redis still decides: the entry only
// chooses which question to ask it.
type winners struct {
	seed   maphash.Seed
	n      atomic.Int64
	shards [64]winnerShard
}

type winnerShard struct {
	mu sync.RWMutex
	m  map[uint64]winner
}

type winner struct {
	token string
	sale  int64
	order sharding.OrderID
}

func newWinners() *winners {
	w := &winners{seed: maphash.MakeSeed()}
	for i := range w.shards {
		w.shards[i].m = make(map[uint64]winner)
	}
	return w
}

// add remembers that token holds order in sale. It allocates (a copy of the
// token) when the entry is new or changed, and is called only after a Redis
// answer.
func (w *winners) add(token []byte, sale int64, order sharding.OrderID) {
	if w.n.Load() >= maxWinners {
		return
	}
	h := maphash.Bytes(w.seed, token)
	s := &w.shards[h%uint64(len(w.shards))]
	s.mu.RLock()
	e, ok := s.m[h]
	s.mu.RUnlock()
	if ok && e.sale == sale && e.order == order && e.token == string(token) {
		return // a repeat: already remembered, nothing to copy
	}
	s.mu.Lock()
	if _, ok := s.m[h]; !ok {
		w.n.Add(1)
	}
	s.m[h] = winner{token: string(token), sale: sale, order: order}
	s.mu.Unlock()
}

// drop forgets token's entry in sale: its order ended.
func (w *winners) drop(token []byte, sale int64) {
	h := maphash.Bytes(w.seed, token)
	s := &w.shards[h%uint64(len(w.shards))]
	s.mu.Lock()
	if e, ok := s.m[h]; ok && e.sale == sale && e.token == string(token) {
		delete(s.m, h)
		w.n.Add(-1)
	}
	s.mu.Unlock()
}

// lookup returns the order token holds in sale, if this gateway answered it.
// It allocates nothing.
func (w *winners) lookup(token []byte, sale int64) (sharding.OrderID, bool) {
	if w.n.Load() == 0 || len(token) == 0 {
		return sharding.OrderID{}, false
	}
	h := maphash.Bytes(w.seed, token)
	s := &w.shards[h%uint64(len(w.shards))]
	s.mu.RLock()
	e, ok := s.m[h]
	s.mu.RUnlock()
	if !ok || e.sale != sale || e.token != string(token) {
		return sharding.OrderID{}, false
	}
	return e.order, true
}
