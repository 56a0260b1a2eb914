package store

import (
	"context"

	"flashsale/sharding/sale"
	"flashsale/writer/schema"
)

// ErrSaleExists is returned by CreateSale for a sale id already stored.
var ErrSaleExists = schema.ErrSaleExists

// CreateSale inserts sale and its items (schema.CreateSale): publish runs
// before the commit, and when it fails nothing is committed.
func (s *Store) CreateSale(ctx context.Context, sale *sale.Sale, publish func(context.Context) error) error {
	return schema.CreateSale(ctx, s.pool, sale, publish)
}
