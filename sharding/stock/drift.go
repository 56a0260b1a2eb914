package stock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"flashsale/sharding"
)

// DriftReading is the writer's drift reading of one sale, as published in
// Redis for the gateways (sharding.DriftKey): when it was taken and, per
// item, Q - (S + M + P + J).
type DriftReading struct {
	At    time.Time
	Items map[int64]int64
}

// driftTTL is how long a published reading lives: a writer that stopped
// reading leaves nothing behind for long. The gateways export its age
// growing meanwhile, and after it went no drift and an age that keeps
// growing (from when a reading was due).
const driftTTL = 10 * time.Minute

// PublishDrift records the writer's reading of sale saleID.
func (s *Store) PublishDrift(ctx context.Context, saleID int64, r DriftReading) error {
	k := sharding.DriftKey(saleID)
	fv := s.c.B().Hset().Key(k).FieldValue().FieldValue("at", strconv.FormatInt(r.At.UnixMilli(), 10))
	for item, d := range r.Items {
		fv = fv.FieldValue(strconv.FormatInt(item, 10), strconv.FormatInt(d, 10))
	}
	for _, res := range s.c.DoMulti(ctx, fv.Build(), s.c.B().Pexpire().Key(k).Milliseconds(driftTTL.Milliseconds()).Build()) {
		if err := res.Error(); err != nil {
			return fmt.Errorf("publishing the drift of sale %d: %w", saleID, err)
		}
	}
	return nil
}

// ReadDrifts reads the published drift readings of the sales ids; a sale
// with none (no writer reads it, or it stopped longer than driftTTL ago) is
// absent from the map. A reading that does not parse is an error naming
// its sale and field; the other sales are still returned.
func (s *Store) ReadDrifts(ctx context.Context, ids []int64) (map[int64]DriftReading, error) {
	out := make(map[int64]DriftReading, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	cmds := make(rueidis.Commands, len(ids))
	for i, id := range ids {
		cmds[i] = s.c.B().Hgetall().Key(sharding.DriftKey(id)).Build()
	}
	var firstErr error
	for i, res := range s.c.DoMulti(ctx, cmds...) {
		m, err := res.AsStrMap()
		if err == nil && len(m) > 0 {
			var r DriftReading
			if r, err = parseDrift(m); err == nil {
				out[ids[i]] = r
			}
		}
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("reading the drift of sale %d: %w", ids[i], err)
		}
	}
	return out, firstErr
}

// parseDrift checks a published reading: "at" a unix ms time after 2020,
// every other field an item id with an integer drift.
func parseDrift(m map[string]string) (DriftReading, error) {
	ms, err := strconv.ParseInt(m["at"], 10, 64)
	if err != nil || ms < 1577836800000 {
		return DriftReading{}, fmt.Errorf(`field "at" is %q, not a time in unix milliseconds`, m["at"])
	}
	r := DriftReading{At: time.UnixMilli(ms), Items: make(map[int64]int64, len(m)-1)}
	for k, v := range m {
		if k == "at" {
			continue
		}
		item, err1 := strconv.ParseInt(k, 10, 64)
		d, err2 := strconv.ParseInt(v, 10, 64)
		if err1 != nil || err2 != nil || item <= 0 {
			return DriftReading{}, fmt.Errorf("field %q is %q, not an item id with an integer drift", k, v)
		}
		r.Items[item] = d
	}
	return r, nil
}
