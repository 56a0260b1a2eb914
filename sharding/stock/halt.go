package stock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"flashsale/sharding"
	"flashsale/sharding/backoff"
	"flashsale/sharding/sale"
)

// The kill switch. An operator pauses a sale, resumes it, or ends it early for
// good. Two things carry the state:
//
//   - the halt key of every shard (sharding.AppendHaltKey), which reserve.lua
//     reads in the same atomic step that would take a unit: from the moment
//     SetState returns, no shard of the sale reserves anything, whatever a
//     gateway's copy of the sale says (the script answers paused or ended and
//     the gateway answers 503 SALE_PAUSED or 410 SALE_ENDED);
//   - the sale's description (Sale.State, Version+1), which every gateway's
//     catalog reloads within its refresh interval (1 s) and then answers
//     without a Redis call, and which the public sale description shows.
//
// Pause writes the halt keys first and the description second; resume deletes
// the halt keys first. Pay, cancel, expiry and releases are not halted: a
// paused sale's orders are paid or returned as usual. A sale being resharded
// cannot change state (ErrReshardRunning), and a reshard copies the halt keys
// to the new shards.

// ErrStateChange is a state change the sale's current state does not allow.
var ErrStateChange = errors.New("state change not allowed")

// SetState moves sale id to state ("" resumes, sale.StatePaused,
// sale.StateEnded) and returns the stored description. Setting the state
// the sale is already in is done again (it repairs a crashed change) and is
// not an error; an ended sale cannot be paused or resumed.
func (s *Store) SetState(ctx context.Context, id int64, state string) (*sale.Sale, error) {
	if state != "" && state != sale.StatePaused && state != sale.StateEnded {
		return nil, fmt.Errorf("state %q: %w", state, ErrStateChange)
	}
	sl, err := s.LoadSale(ctx, id)
	if err != nil {
		return nil, err
	}
	if sl.State == sale.StateEnded && state != sale.StateEnded {
		return nil, fmt.Errorf("sale %d was ended by an operator and cannot be paused or resumed: %w", id, ErrStateChange)
	}
	if j, err := s.loadJournal(ctx, id); err != nil {
		return nil, err
	} else if j != nil {
		return nil, fmt.Errorf("sale %d: %w; finish it first", id, ErrReshardRunning)
	}
	next := *sl
	if next.State != state {
		next.State, next.Version = state, sl.Version+1
	}
	// The halt keys first: a pause is exact from here, and a resume lets the
	// scripts sell before the gateways' copies of the description say so.
	if err := s.setHalt(ctx, sl.Shards, state); err != nil {
		return nil, err
	}
	return &next, s.StoreSale(ctx, &next)
}

// haltRetry bounds how long setHalt keeps writing the halt keys that failed:
// long enough for a master's replica to take over (a few seconds), short
// enough for an operator waiting on the command.
var haltRetry = 30 * time.Second

// haltBackoff spaces the attempts.
var haltBackoff = backoff.Policy{First: 100 * time.Millisecond, Max: 2 * time.Second}

// StateAction names what moving a sale to state does: "resumed", "paused" or
// "ended".
func StateAction(state string) string {
	return map[string]string{"": "resumed", sale.StatePaused: "paused", sale.StateEnded: "ended"}[state]
}

// setHalt writes state to the halt key of every shard in tags, or deletes the
// keys when state is "". A key that fails is written again (the write is
// idempotent) until every key is written or haltRetry passed; then the error
// names the shards left behind, because the sale is left in a mixed state:
// some shards obey the new state and the others the old one, and the
// description is unchanged, until the command is run again.
func (s *Store) setHalt(ctx context.Context, tags []string, state string) error {
	pending := make([]int, len(tags))
	for i := range pending {
		pending[i] = i
	}
	var last error
	deadline := time.Now().Add(haltRetry)
	for attempt := 0; ; attempt++ {
		cmds := make(rueidis.Commands, len(pending))
		for j, i := range pending {
			k := string(sharding.AppendHaltKey(nil, tags[i]))
			if state == "" {
				cmds[j] = s.c.B().Del().Key(k).Build()
			} else {
				cmds[j] = s.c.B().Set().Key(k).Value(state).Build()
			}
		}
		left := pending[:0]
		for j, r := range s.doAckEach(ctx, cmds) {
			if err := r.Error(); err != nil {
				left, last = append(left, pending[j]), err
			}
		}
		if pending = left; len(pending) == 0 {
			return nil
		}
		if time.Now().After(deadline) || !backoff.Sleep(ctx, haltBackoff.Wait(attempt)) {
			break
		}
	}
	word := StateAction(state)
	return fmt.Errorf("writing the halt keys of the sale's shards: %d of %d shards (%v) not written after %d s: %w; "+
		"the sale is only partly %s (%d shards are, the others keep their old state) and its description is unchanged: run the command again",
		len(pending), len(tags), pending, int(haltRetry.Seconds()), last, word, len(tags)-len(pending))
}

// Halts returns the halt key of every shard of sale ("" where none), so a
// check can compare them with the description.
func (s *Store) Halts(ctx context.Context, sale *sale.Sale) ([]string, error) {
	cmds := make(rueidis.Commands, len(sale.Shards))
	for i, tag := range sale.Shards {
		cmds[i] = s.c.B().Get().Key(string(sharding.AppendHaltKey(nil, tag))).Build()
	}
	out := make([]string, len(cmds))
	for i, r := range s.c.DoMulti(ctx, cmds...) {
		v, err := r.ToString()
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the halt key of shard %d: %w", i, err)
		}
		out[i] = v
	}
	return out, nil
}
