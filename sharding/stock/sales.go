package stock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"flashsale/sharding"
	"flashsale/sharding/sale"
)

// ErrLive is returned by Preload when the sale already has stock in Redis and
// force is not set.
var ErrLive = errors.New("sale already has stock in Redis (use --force to overwrite)")

// Preload stores sale's description and its items' stock, split evenly over
// its shards (sharding.Split), and adds it to the sales index. It refuses with
// ErrLive when any stock key of the sale exists, unless force is set.
func (s *Store) Preload(ctx context.Context, sale *sale.Sale, force bool) error {
	if err := sale.Validate(); err != nil {
		return err
	}
	if len(sale.Shards) == 0 {
		return errors.New("preload: sale has no shards placed")
	}
	if !force {
		var cmds rueidis.Commands
		for _, it := range sale.Items {
			for _, tag := range sale.Shards {
				cmds = append(cmds, s.c.B().Exists().Key(string(sharding.AppendStockKey(nil, tag, it.ID))).Build())
			}
		}
		for _, r := range s.c.DoMulti(ctx, cmds...) {
			n, err := r.AsInt64()
			if err != nil {
				return fmt.Errorf("preload: checking existing stock: %w", err)
			}
			if n > 0 {
				return ErrLive
			}
		}
	}
	var cmds rueidis.Commands
	for _, it := range sale.Items {
		for i, q := range sharding.Split(it.Quantity, len(sale.Shards)) {
			cmds = append(cmds, s.c.B().Set().Key(string(sharding.AppendStockKey(nil, sale.Shards[i], it.ID))).Value(strconv.FormatInt(q, 10)).Build())
		}
	}
	// Acknowledged (with a Batcher, as flashctl's): the description written
	// next lives on one master, and its WAIT says nothing of the others'.
	if err := s.doAckAll(ctx, cmds); err != nil {
		return fmt.Errorf("preload: writing stock: %w", err)
	}
	return s.StoreSale(ctx, sale)
}

// StoreSale writes sale's description and adds it to the sales index.
func (s *Store) StoreSale(ctx context.Context, sale *sale.Sale) error {
	b, err := json.Marshal(sale)
	if err != nil {
		return fmt.Errorf("encoding sale: %w", err)
	}
	err = s.doAckAll(ctx, rueidis.Commands{
		s.c.B().Set().Key(sharding.SaleKey(sale.ID)).Value(string(b)).Build(),
		s.c.B().Sadd().Key(sharding.SalesKey).Member(strconv.FormatInt(sale.ID, 10)).Build()})
	if err != nil {
		return fmt.Errorf("storing sale %d: %w", sale.ID, err)
	}
	return nil
}

// SaleIDs returns the ids in the sales index.
func (s *Store) SaleIDs(ctx context.Context) ([]int64, error) {
	members, err := s.c.Do(ctx, s.c.B().Smembers().Key(sharding.SalesKey).Build()).AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("reading the sales index: %w", err)
	}
	out := make([]int64, 0, len(members))
	for _, m := range members {
		if id, err := strconv.ParseInt(m, 10, 64); err == nil && id > 0 {
			out = append(out, id)
		}
	}
	return out, nil
}

// ErrNoSale is returned by LoadSale for an unknown sale id.
var ErrNoSale = errors.New("no such sale")

// LoadSale reads one sale's description.
func (s *Store) LoadSale(ctx context.Context, id int64) (*sale.Sale, error) {
	st := storedSale(id, s.c.Do(ctx, s.c.B().Get().Key(sharding.SaleKey(id)).Build()))
	return st.Decode()
}

// DecodeSale decodes and validates a sale's description as stored under
// sharding.SaleKey(id).
func DecodeSale(id int64, b []byte) (*sale.Sale, error) {
	var s sale.Sale
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decoding sale %d: %w", id, err)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("sale %d in Redis is invalid: %w", id, err)
	}
	if s.ID != id {
		return nil, fmt.Errorf("sale %d in Redis is invalid: its description names sale %d", id, s.ID)
	}
	return &s, nil
}

// StoredSale is one sale's description as ReadSales found it: Raw, or Err
// (wrapping ErrNoSale when there is none).
type StoredSale struct {
	ID  int64
	Raw string
	Err error
}

// storedSale is the StoredSale of r, the GET of sale id's description.
func storedSale(id int64, r rueidis.RedisResult) StoredSale {
	raw, err := r.ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return StoredSale{ID: id, Err: fmt.Errorf("sale %d: %w", id, ErrNoSale)}
	case err != nil:
		return StoredSale{ID: id, Err: fmt.Errorf("loading sale %d: %w", id, err)}
	}
	return StoredSale{ID: id, Raw: raw}
}

// Decode returns the sale st describes (DecodeSale of Raw), or st.Err.
func (st *StoredSale) Decode() (*sale.Sale, error) {
	if st.Err != nil {
		return nil, st.Err
	}
	return DecodeSale(st.ID, []byte(st.Raw))
}

// ReadSales reads the stored descriptions of ids, undecoded, pipelined: about
// one round trip for all of them, where LoadSale in turn costs one each (a
// gateway that has seen hundreds of sales reads them all every second).
func (s *Store) ReadSales(ctx context.Context, ids []int64) []StoredSale {
	out := make([]StoredSale, len(ids))
	if len(ids) == 0 {
		return out
	}
	cmds := make(rueidis.Commands, len(ids))
	for i, id := range ids {
		cmds[i] = s.c.B().Get().Key(sharding.SaleKey(id)).Build()
	}
	for i, r := range s.c.DoMulti(ctx, cmds...) {
		out[i] = storedSale(ids[i], r)
	}
	return out
}

// Remaining returns the units of item left on each shard of sale.
func (s *Store) Remaining(ctx context.Context, sale *sale.Sale, itemID int64) ([]int64, error) {
	cmds := make(rueidis.Commands, len(sale.Shards))
	for i, tag := range sale.Shards {
		cmds[i] = s.c.B().Get().Key(string(sharding.AppendStockKey(nil, tag, itemID))).Build()
	}
	out := make([]int64, len(cmds))
	for i, r := range s.c.DoMulti(ctx, cmds...) {
		n, err := r.AsInt64()
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading stock of item %d on shard %d: %w", itemID, i, err)
		}
		out[i] = n
	}
	return out, nil
}
