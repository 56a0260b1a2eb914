package schema

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"flashsale/sharding/sale"
)

// SetBrand stores sale's branding (its Brand and every item's image and
// description) over what PostgreSQL holds, in one transaction; the sale's
// other fields are left alone. An item id the sale does not have in
// PostgreSQL is an error.
func SetBrand(ctx context.Context, pool *pgxpool.Pool, sale *sale.Sale) error {
	brand, err := brandJSON(sale.Brand)
	if err != nil {
		return err
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("branding sale %d: %w", sale.ID, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `UPDATE sales SET brand = $2 WHERE id = $1`, sale.ID, brand); err != nil {
		return fmt.Errorf("branding sale %d: %w", sale.ID, err)
	}
	for _, it := range sale.Items {
		tag, err := tx.Exec(ctx, `UPDATE items SET image = $3, description = $4 WHERE id = $1 AND sale_id = $2`,
			it.ID, sale.ID, it.Image, it.Description)
		if err != nil {
			return fmt.Errorf("branding item %d: %w", it.ID, err)
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("branding item %d: PostgreSQL has no such item in sale %d", it.ID, sale.ID)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("branding sale %d: %w", sale.ID, err)
	}
	return nil
}

// brandJSON is the brand column's value: nil (NULL) for no branding.
func brandJSON(b *sale.Brand) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	j, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("encoding brand: %w", err)
	}
	return j, nil
}

// ParseBrand reads the brand column's value: nil for NULL.
func ParseBrand(j []byte) (*sale.Brand, error) {
	if len(j) == 0 {
		return nil, nil
	}
	var b sale.Brand
	if err := json.Unmarshal(j, &b); err != nil {
		return nil, fmt.Errorf("decoding brand: %w", err)
	}
	return &b, nil
}
