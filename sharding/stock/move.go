package stock

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"flashsale/sharding"
	"flashsale/sharding/sale"
)

// Moving units between shards.
//
// A move of k units of an item from donor shard D to receiver shard R is three
// single-slot steps, each idempotent by the move id:
//
//  1. move_out on D: take k <= wanted units and journal "k|R|item" under the
//     move id in D's journal, in the same script;
//  2. move_in on R: credit k, and set a marker key for the id on R (with a
//     lifetime of MoveMarkerTTL) so the id is never credited twice;
//  3. drop the id from D's journal.
//
// Units leave D only together with a journal entry, and R is credited at most
// once per id, so a crash anywhere leaves a D entry that RecoverMoves
// completes: no unit is created or lost, and moves are finished forward,
// never undone. The marker outlives any move in flight by far (each step runs
// under a request deadline of seconds), so a recovery racing a live move cannot
// credit twice.

// MoveMarkerTTL is how long a receiver remembers a credited move id.
const MoveMarkerTTL = 24 * time.Hour

func newMoveID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Move moves up to want units of item from shard tag from to shard tag to and
// returns how many moved (0 when the donor had none).
func (s *Store) Move(ctx context.Context, itemID int64, from, to string, want int64) (int64, error) {
	id, k, err := s.MoveOut(ctx, itemID, from, to, want)
	if err != nil || k == 0 {
		return 0, err
	}
	if err := s.finishMove(ctx, from, id, k, to, itemID, false); err != nil {
		// The units are journaled on the donor; RecoverMoves completes the move.
		return 0, err
	}
	return k, nil
}

// MoveOut runs step 1 of a move: it takes up to want units of item from shard
// from, journaled there for receiver to, and returns the move id and the
// units taken (0 when the donor had none). The caller credits them to the
// receiver (a reservation with a Credit does, in its own script) and then
// calls DropMove; if it dies first, RecoverStalled finishes the move.
func (s *Store) MoveOut(ctx context.Context, itemID int64, from, to string, want int64) (string, int64, error) {
	if from == to || want < 1 {
		return "", 0, fmt.Errorf("moving stock: bad move of %d units from %q to %q", want, from, to)
	}
	id := newMoveID()
	rr, _ := s.evalAck(ctx, moveOutScript,
		[]string{string(sharding.AppendStockKey(nil, from, itemID)), string(sharding.AppendJournalKey(nil, from)), string(sharding.AppendFenceKey(nil, from))},
		[]string{id, strconv.FormatInt(want, 10), to, strconv.FormatInt(itemID, 10)}, false)
	k, err := rr.AsInt64()
	if err != nil {
		return "", 0, fmt.Errorf("moving stock out of %s: %w", from, err)
	}
	if k < 0 {
		return "", 0, fmt.Errorf("moving stock out of %s: %w", from, ErrFrozen)
	}
	return id, k, nil
}

// DropMove runs step 3 of a move whose units the receiver was credited with:
// it removes the move from the donor's journal.
func (s *Store) DropMove(ctx context.Context, from, id string) error {
	if err := s.c.Do(ctx, s.c.B().Hdel().Key(string(sharding.AppendJournalKey(nil, from))).Field(id).Build()).Error(); err != nil {
		return fmt.Errorf("finishing move %s: %w", id, err)
	}
	return nil
}

// finishMove runs steps 2 and 3 of a move journaled on from.
func (s *Store) finishMove(ctx context.Context, from, id string, k int64, to string, itemID int64, force bool) error {
	f := ""
	if force {
		f = "force"
	}
	rr, _ := s.evalAck(ctx, moveInScript,
		[]string{string(sharding.AppendStockKey(nil, to, itemID)), string(sharding.AppendMoveKey(nil, to, id)), string(sharding.AppendFenceKey(nil, to))},
		[]string{id, strconv.FormatInt(k, 10), f, strconv.Itoa(int(MoveMarkerTTL / time.Second))}, false)
	n, err := rr.AsInt64()
	if err != nil {
		return fmt.Errorf("moving stock into %s: %w", to, err)
	}
	if n < 0 {
		return fmt.Errorf("moving stock into %s: %w", to, ErrFrozen)
	}
	return s.DropMove(ctx, from, id)
}

// PendingMove is a move journaled on a donor shard and not yet finished.
type PendingMove struct {
	ID       string
	From, To string
	ItemID   int64
	Units    int64
}

// PendingMoves lists the unfinished moves journaled on sale's shards.
func (s *Store) PendingMoves(ctx context.Context, sale *sale.Sale) ([]PendingMove, error) {
	return s.pendingMoves(ctx, sale.Shards)
}

func (s *Store) pendingMoves(ctx context.Context, tags []string) ([]PendingMove, error) {
	var out []PendingMove
	for _, tag := range tags {
		m, err := s.c.Do(ctx, s.c.B().Hgetall().Key(string(sharding.AppendJournalKey(nil, tag))).Build()).AsStrMap()
		if err != nil {
			return nil, fmt.Errorf("reading move journal of %s: %w", tag, err)
		}
		for id, v := range m {
			f := strings.Split(v, "|")
			var k, item int64
			var err1, err2 error
			if len(f) == 3 {
				k, err1 = strconv.ParseInt(f[0], 10, 64)
				item, err2 = strconv.ParseInt(f[2], 10, 64)
			}
			if len(f) != 3 || err1 != nil || err2 != nil || k < 1 {
				return nil, fmt.Errorf("move journal of %s: malformed entry %s=%q", tag, id, v)
			}
			out = append(out, PendingMove{ID: id, From: tag, To: f[1], ItemID: item, Units: k})
		}
	}
	return out, nil
}

// RecoverMoves finishes every move journaled on sale's shards, as after a crash,
// and returns how many it finished. Safe to run while moves are in flight: each
// step is idempotent by move id.
func (s *Store) RecoverMoves(ctx context.Context, sale *sale.Sale) (int, error) {
	return s.recoverMoves(ctx, sale.Shards, false)
}

func (s *Store) recoverMoves(ctx context.Context, tags []string, force bool) (int, error) {
	pending, err := s.pendingMoves(ctx, tags)
	if err != nil {
		return 0, err
	}
	for i, p := range pending {
		if err := s.finishMove(ctx, p.From, p.ID, p.Units, p.To, p.ItemID, force); err != nil {
			return i, err
		}
	}
	return len(pending), nil
}

// Borrow refills the empty shard home of an item from another shard of sale,
// taking half of the donor's units (at least one), and reports how many units
// arrived. remaining is the caller's latest view of each shard's units (len ==
// shard count). The donor is drawn at random with odds proportional to its
// units, so a rush of borrowers spreads over the rich shards instead of all
// draining the richest one; a stale view only costs a move of 0 units. It is
// the answer to stranded stock: a user whose home shard ran dry is served from
// the rest of the item's stock.
func (s *Store) Borrow(ctx context.Context, sale *sale.Sale, itemID int64, home int, remaining []int64) (int64, error) {
	var sum int64
	for i, r := range remaining {
		if i != home && r > 0 {
			sum += r
		}
	}
	if sum == 0 {
		return 0, nil
	}
	pick := mrand.Int64N(sum)
	for i, r := range remaining {
		if i == home || r <= 0 {
			continue
		}
		if pick < r {
			return s.Move(ctx, itemID, sale.Shards[i], sale.Shards[home], (r+1)/2)
		}
		pick -= r
	}
	return 0, nil
}

// Available returns, per shard of sale, the units of item on the shard plus
// the units of item journaled on it by moves in flight (taken from it, not yet
// credited elsewhere). Their sum is every unit not held by an order, even in
// the middle of a move, so a sum of zero means the item is truly sold out: the
// gateway's sold-out decision reads this, never Remaining alone. One pipelined
// round trip of 2*S commands.
//
// The shards are read at slightly different instants, so a move finishing
// between the reading of its receiver and of its donor hides its units from
// that reading. A total of zero is therefore confirmed by a second reading
// (one more round trip, only when the item looks sold out).
func (s *Store) Available(ctx context.Context, sale *sale.Sale, itemID int64) ([]int64, error) {
	out, err := s.confirmed(ctx, sale, itemID)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Unknown is ReadStock's reading of a shard that did not answer.
const Unknown = -1

// ReadStock is Available for the sold-out poll: a shard that does not answer
// (its master down, a failover under way) reads Unknown and the others still
// count, so that units returned to the shards that are up are seen at once.
// It fails only when no shard answered or a reply is malformed. A total of
// zero is confirmed by a second reading only with every shard read.
func (s *Store) ReadStock(ctx context.Context, sale *sale.Sale, itemID int64) ([]int64, error) {
	out, err := s.confirmed(ctx, sale, itemID)
	if out == nil {
		return nil, err
	}
	for _, n := range out {
		if n != Unknown {
			return out, nil
		}
	}
	return nil, err
}

// confirmed reads the shards, once more when every one answered and the
// total is zero (see Available). With an error, out is the reading of the
// shards that answered (Unknown for the others), or nil for a malformed
// reply.
func (s *Store) confirmed(ctx context.Context, sale *sale.Sale, itemID int64) ([]int64, error) {
	out, err := s.available(ctx, sale, itemID)
	if err != nil || len(sale.Shards) < 2 {
		return out, err
	}
	for _, n := range out {
		if n > 0 {
			return out, nil
		}
	}
	return s.available(ctx, sale, itemID)
}

// available reads each shard's stock of itemID plus the units moving to it.
// A shard whose reading failed reads Unknown and the first failure is
// returned with the reading; a malformed reply returns no reading.
func (s *Store) available(ctx context.Context, sale *sale.Sale, itemID int64) ([]int64, error) {
	n := len(sale.Shards)
	cmds := make(rueidis.Commands, 0, 2*n)
	for _, tag := range sale.Shards {
		cmds = append(cmds, s.c.B().Get().Key(string(sharding.AppendStockKey(nil, tag, itemID))).Build(),
			s.c.B().Hvals().Key(string(sharding.AppendJournalKey(nil, tag))).Build())
	}
	res := s.c.DoMulti(ctx, cmds...)
	out := make([]int64, n)
	suffix := "|" + strconv.FormatInt(itemID, 10)
	var failed error
	for i := 0; i < n; i++ {
		v, err := res[2*i].AsInt64()
		var moves []string
		if err == nil || rueidis.IsRedisNil(err) {
			moves, err = res[2*i+1].AsStrSlice()
		}
		var bad *strconv.NumError
		switch {
		case errors.As(err, &bad):
			return nil, fmt.Errorf("reading stock of item %d on shard %d: %w", itemID, i, err)
		case err != nil:
			failed = cmp.Or(failed, fmt.Errorf("reading stock of item %d on shard %d: %w", itemID, i, err))
			out[i] = Unknown
			continue
		}
		out[i] = v
		for _, m := range moves {
			if strings.HasSuffix(m, suffix) {
				if k, err := strconv.ParseInt(m[:strings.IndexByte(m, '|')], 10, 64); err == nil {
					out[i] += k
				}
			}
		}
	}
	return out, failed
}

// RecoverStalled finishes the moves journaled on the shard with tag that were
// already pending in the previous call (their ids in seen), and returns the
// ids pending now and not finished, for the next call. Called every few
// seconds by the shard's journal relay, it completes a move whose borrower
// died between its steps without racing moves still in flight (each step is
// idempotent by move id anyway).
func (s *Store) RecoverStalled(ctx context.Context, tag string, seen map[string]bool) (map[string]bool, error) {
	pending, err := s.pendingMoves(ctx, []string{tag})
	if err != nil {
		return seen, err
	}
	next := make(map[string]bool, len(pending))
	for _, p := range pending {
		if !seen[p.ID] {
			next[p.ID] = true
			continue
		}
		if err := s.finishMove(ctx, p.From, p.ID, p.Units, p.To, p.ItemID, false); err != nil {
			next[p.ID] = true
		}
	}
	return next, nil
}
