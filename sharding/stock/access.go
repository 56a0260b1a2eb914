package stock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"flashsale/sharding"
)

// The keys of a sale's fair access that the ops tool writes (SPEC "Fair
// access"): the secret seed of its draw, the units its presale may still
// sell, and the user ids of its presale list. Every write is acknowledged
// (with a Batcher, as flashctl's), as the stock's are: a failover right after
// `sale create` must not lose the seed whose commitment the sale publishes.

// PutDrawSeed writes seed (64 lower-case hex digits) as the secret seed of
// sale saleID's draw, expiring at expireAt, unless the key holds one already
// (SET NX GET: one atomic step). It returns the seed the key holds after the
// call: seed, or the one found there.
func (s *Store) PutDrawSeed(ctx context.Context, saleID int64, seed string, expireAt time.Time) (string, error) {
	k := sharding.RoomSeedKey(saleID)
	old, err := s.doAck(ctx, s.c.B().Set().Key(k).Value(seed).Nx().Get().Exat(expireAt).Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return seed, nil
	case err != nil:
		return "", fmt.Errorf("writing the draw seed of sale %d (%s): %w", saleID, k, err)
	}
	return old, nil
}

// DrawSeed returns the secret seed of sale saleID's draw, found false when
// the key is missing.
func (s *Store) DrawSeed(ctx context.Context, saleID int64) (seed string, found bool, err error) {
	k := sharding.RoomSeedKey(saleID)
	seed, err = s.c.Do(ctx, s.c.B().Get().Key(k).Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("reading the draw seed of sale %d (%s): %w", saleID, k, err)
	}
	return seed, true, nil
}

// PutPresaleCap sets the units sale saleID's presale may sell to units,
// expiring at expireAt, unless the key is set already (a create finished a
// second time keeps what the first wrote).
func (s *Store) PutPresaleCap(ctx context.Context, saleID, units int64, expireAt time.Time) error {
	k := sharding.PresaleCapKey(saleID)
	err := s.doAck(ctx, s.c.B().Set().Key(k).Value(strconv.FormatInt(units, 10)).Nx().Exat(expireAt).Build()).Error()
	if err != nil && !rueidis.IsRedisNil(err) {
		return fmt.Errorf("writing the presale cap of sale %d (%s): %w", saleID, k, err)
	}
	return nil
}

// PresaleCapLeft returns the units sale saleID's presale may still sell,
// found false when the key is missing.
func (s *Store) PresaleCapLeft(ctx context.Context, saleID int64) (units int64, found bool, err error) {
	k := sharding.PresaleCapKey(saleID)
	units, err = s.c.Do(ctx, s.c.B().Get().Key(k).Build()).AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("reading the presale cap of sale %d (%s): %w", saleID, k, err)
	}
	return units, true, nil
}

// PresaleBatch is how many user ids one SADD of AddPresaleUsers carries.
const PresaleBatch = 1000

// AddPresaleUsers adds users to sale saleID's presale list in SADDs of
// PresaleBatch ids, one after the other, and sets the list to expire at
// expireAt. It returns how many ids were new to the list and the list's size
// after. A failure part way leaves the batches before it in the list; adding
// the same ids again is harmless.
func (s *Store) AddPresaleUsers(ctx context.Context, saleID int64, users []uint64, expireAt time.Time) (added, size int64, err error) {
	k := sharding.PresaleListKey(saleID)
	for i := 0; i < len(users); i += PresaleBatch {
		batch := users[i:min(i+PresaleBatch, len(users))]
		members := make([]string, len(batch))
		for j, u := range batch {
			members[j] = strconv.FormatUint(u, 10)
		}
		n, err := s.doAck(ctx, s.c.B().Sadd().Key(k).Member(members...).Build()).AsInt64()
		if err != nil {
			return added, 0, fmt.Errorf("adding users %d to %d of %d to the presale list of sale %d (%s): %w", i+1, i+len(batch), len(users), saleID, k, err)
		}
		added += n
	}
	if err := s.doAck(ctx, s.c.B().Expireat().Key(k).Timestamp(expireAt.Unix()).Build()).Error(); err != nil {
		return added, 0, fmt.Errorf("setting the expiry of the presale list of sale %d (%s): %w", saleID, k, err)
	}
	size, err = s.PresaleListSize(ctx, saleID)
	return added, size, err
}

// PresaleListSize returns how many user ids sale saleID's presale list holds.
func (s *Store) PresaleListSize(ctx context.Context, saleID int64) (int64, error) {
	k := sharding.PresaleListKey(saleID)
	n, err := s.c.Do(ctx, s.c.B().Scard().Key(k).Build()).AsInt64()
	if err != nil {
		return 0, fmt.Errorf("reading the presale list of sale %d (%s): %w", saleID, k, err)
	}
	return n, nil
}

// DrawFrozen reports whether sale saleID's draw has been frozen by a gateway
// (its root recorded in the admission state, RoomStateKey): its entrants are
// final and the reveal may have happened.
func (s *Store) DrawFrozen(ctx context.Context, saleID int64) (bool, error) {
	k := sharding.RoomStateKey(saleID)
	n, err := s.c.Do(ctx, s.c.B().Hexists().Key(k).Field("root").Build()).AsInt64()
	if err != nil {
		return false, fmt.Errorf("reading the draw state of sale %d (%s): %w", saleID, k, err)
	}
	return n == 1, nil
}
