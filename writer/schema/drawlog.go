package schema

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flashsale/sharding/draw"
	"flashsale/sharding/sale"
)

// The draw log kept in PostgreSQL (table draw_log, migration 00005): the
// writer copies each drawn sale's log there from Redis (writer/internal/
// drawlog) with InsertDrawLog; ReadDrawLog reads it back in order.

// DrawLogConflict is InsertDrawLog's refusal of an entry at a (sale, seq)
// that PostgreSQL already holds with another hash or body: two logs of one
// sale disagree, and the one held is never written over.
type DrawLogConflict struct {
	Sale          int64
	Seq           int
	Held, Offered draw.Hash
	SameHash      bool // the hashes agree and the bodies do not (a row changed by hand)
}

func (c *DrawLogConflict) Error() string {
	if c.SameHash {
		return fmt.Sprintf("draw log of sale %d: entry %d (hash %s) is held in postgresql with another body; the row held is kept", c.Sale, c.Seq, c.Held)
	}
	return fmt.Sprintf("draw log of sale %d: entry %d is held in postgresql with hash %s, offered with hash %s; the entry held is kept", c.Sale, c.Seq, c.Held, c.Offered)
}

// InsertDrawLog inserts sale's log, entries[i] being its entry at seq i,
// and returns how many rows it added. It is idempotent: an entry held with
// the same hash and body is left as it is. An entry held with another hash
// (or body) stops it with a *DrawLogConflict, never an overwrite; the
// entries before it stay inserted. The caller checks the log first
// (draw.CheckLog): this function checks only that each row matches.
func InsertDrawLog(ctx context.Context, q Querier, saleID int64, entries []draw.Entry) (inserted int, err error) {
	for i, en := range entries {
		var seq int
		err := q.QueryRow(ctx, `
			INSERT INTO draw_log (sale_id, seq, hash, body) VALUES ($1, $2, $3, $4)
			ON CONFLICT (sale_id, seq) DO NOTHING RETURNING seq`, saleID, i, en.Hash.String(), string(en.Body)).Scan(&seq)
		if err == nil {
			inserted++
			continue
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return inserted, fmt.Errorf("inserting entry %d of the draw log of sale %d: %w", i, saleID, err)
		}
		held, err := readDrawEntry(ctx, q, saleID, i)
		if err != nil {
			return inserted, err
		}
		if held.Hash != en.Hash || !bytes.Equal(held.Body, en.Body) {
			return inserted, &DrawLogConflict{Sale: saleID, Seq: i, Held: held.Hash, Offered: en.Hash, SameHash: held.Hash == en.Hash}
		}
	}
	return inserted, nil
}

func readDrawEntry(ctx context.Context, q Querier, saleID int64, seq int) (draw.Entry, error) {
	var hash, body string
	if err := q.QueryRow(ctx, `SELECT hash, body FROM draw_log WHERE sale_id = $1 AND seq = $2`, saleID, seq).Scan(&hash, &body); err != nil {
		return draw.Entry{}, fmt.Errorf("reading entry %d of the draw log of sale %d: %w", seq, saleID, err)
	}
	h, err := draw.ParseHash(hash)
	if err != nil {
		return draw.Entry{}, fmt.Errorf("entry %d of the draw log of sale %d: %w", seq, saleID, err)
	}
	return draw.Entry{Body: []byte(body), Hash: h}, nil
}

// ReadDrawLog reads sale's log as PostgreSQL holds it, in order (none for a
// sale without one). A gap in the sequence numbers is an error: rows are
// inserted in order, so one is missing.
func ReadDrawLog(ctx context.Context, q Querier, saleID int64) ([]draw.Entry, error) {
	rows, err := q.Query(ctx, `SELECT seq, hash, body FROM draw_log WHERE sale_id = $1 ORDER BY seq`, saleID)
	if err != nil {
		return nil, fmt.Errorf("reading the draw log of sale %d: %w", saleID, err)
	}
	defer rows.Close()
	var out []draw.Entry
	for rows.Next() {
		var (
			seq        int
			hash, body string
		)
		if err := rows.Scan(&seq, &hash, &body); err != nil {
			return nil, fmt.Errorf("reading the draw log of sale %d: %w", saleID, err)
		}
		if seq != len(out) {
			return nil, fmt.Errorf("the draw log of sale %d in postgresql lacks entry %d (next held: %d)", saleID, len(out), seq)
		}
		h, err := draw.ParseHash(hash)
		if err != nil {
			return nil, fmt.Errorf("entry %d of the draw log of sale %d: %w", seq, saleID, err)
		}
		out = append(out, draw.Entry{Body: []byte(body), Hash: h})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the draw log of sale %d: %w", saleID, err)
	}
	return out, nil
}

// DrawnSales reads the sales with a draw (access queue or raffle, from
// their front door) whose scheduled end is after endedAfter, by id. Each
// comes without its items: id, times, payment window and front door. A
// front door that does not decode leaves its sale out and is named in the
// error returned with the others.
func DrawnSales(ctx context.Context, q Querier, endedAfter time.Time) ([]*sale.Sale, error) {
	rows, err := q.Query(ctx, `
		SELECT id, starts_at, ends_at, EXTRACT(EPOCH FROM payment_window)::float8, front_door
		FROM sales WHERE front_door IS NOT NULL AND ends_at > $1 ORDER BY id`, endedAfter)
	if err != nil {
		return nil, fmt.Errorf("reading the drawn sales: %w", err)
	}
	defer rows.Close()
	var (
		out []*sale.Sale
		bad []error
	)
	for rows.Next() {
		var (
			s      sale.Sale
			window float64
			door   []byte
		)
		if err := rows.Scan(&s.ID, &s.StartsAt, &s.EndsAt, &window, &door); err != nil {
			return nil, fmt.Errorf("reading the drawn sales: %w", err)
		}
		fd, err := ParseFrontDoor(door)
		if err != nil {
			bad = append(bad, fmt.Errorf("sale %d: %w", s.ID, err))
			continue
		}
		fd.Apply(&s)
		s.StartsAt, s.EndsAt = s.StartsAt.UTC(), s.EndsAt.UTC()
		s.PaymentWindow = sale.Duration(time.Duration(window * float64(time.Second)))
		if s.Drawn() {
			out = append(out, &s)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the drawn sales: %w", err)
	}
	return out, errors.Join(bad...)
}
