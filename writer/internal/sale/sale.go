// Package sale implements the `writer sale` commands: create a sale from a
// JSON or YAML file (PostgreSQL rows plus sharded stock preloaded in Redis),
// list sales, and show one with its order counts and remaining stock.
//
// A sale file is the JSON form of sharding.Sale, or YAML with the same field
// names:
//
//	id: 42
//	name: Winter drop
//	startsAt: 2026-12-01T10:00:00Z
//	endsAt: 2026-12-01T11:00:00Z
//	paymentWindow: 10m
//	items:
//	  - {id: 4201, name: Sneaker, price: 12900, currency: EUR, quantity: 10000}
//
// Unknown fields are refused, so a misspelt field never silently falls back to
// a default. Shard hash tags are placed by `create` (one per shard, spread over
// the cluster's masters) unless the file names them.
package sale

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"go.yaml.in/yaml/v3"

	"flashsale/sharding"
	"flashsale/sharding/stock"
	"flashsale/writer/internal/store"
)

// Parse decodes and validates a sale description. format is "json" or
// "yaml"; "" guesses from the first non-space byte ('{' is JSON).
func Parse(data []byte, format string) (*sharding.Sale, error) {
	if format == "" {
		format = "yaml"
		if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
			format = "json"
		}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("sale file is empty")
	}
	if format == "yaml" {
		var doc any
		dec := yaml.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("reading yaml: %w", err)
		}
		if _, ok := doc.(map[string]any); !ok {
			return nil, errors.New("reading yaml: want a mapping of sale fields at the top level")
		}
		// Re-encode as JSON so both formats go through one strict decoder
		// and sharding.Sale's own JSON rules (durations, RFC 3339 times).
		j, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("reading yaml: %w", err)
		}
		data = j
	} else if format != "json" {
		return nil, fmt.Errorf("unknown sale file format %q: want json or yaml", format)
	}
	var s sharding.Sale
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("reading sale: %w", err)
	}
	if dec.More() {
		return nil, errors.New("reading sale: more than one JSON value in the file")
	}
	for i, it := range s.Items {
		if strings.TrimSpace(it.Name) == "" {
			return nil, fmt.Errorf("item %d (#%d): name is missing", it.ID, i+1)
		}
		if it.Currency == "" {
			return nil, fmt.Errorf("item %d: currency is missing", it.ID)
		}
	}
	if strings.TrimSpace(s.Name) == "" {
		return nil, errors.New("sale name is missing")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// ReadFile reads and parses the sale file at path; the extension (.json,
// .yaml, .yml) picks the format, anything else is guessed from the content.
func ReadFile(path string) (*sharding.Sale, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading sale file: %w", err)
	}
	format := ""
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		format = "json"
	case ".yaml", ".yml":
		format = "yaml"
	}
	s, err := Parse(data, format)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Create places the sale's shards (shards of them; 0 means one per cluster
// master) unless the sale names them, then writes it to PostgreSQL and
// preloads its stock in Redis, committing PostgreSQL only once Redis holds
// the stock. A sale id already known to either store is refused.
func Create(ctx context.Context, st *store.Store, rs *stock.Store, s *sharding.Sale, shards int) error {
	if exists, err := st.SaleExists(ctx, s.ID); err != nil {
		return err
	} else if exists {
		return fmt.Errorf("sale %d: %w in PostgreSQL; pick another id", s.ID, store.ErrSaleExists)
	}
	if _, err := rs.LoadSale(ctx, s.ID); err == nil {
		return fmt.Errorf("sale %d: %w in Redis; pick another id", s.ID, store.ErrSaleExists)
	} else if !errors.Is(err, stock.ErrNoSale) {
		return err
	}
	if len(s.Shards) == 0 {
		topo, err := stock.Topology(ctx, rs.Client())
		if err != nil {
			return err
		}
		if shards <= 0 {
			shards = len(topo.Masters)
		}
		tags, err := sharding.PlaceTags(s.ID, shards, topo)
		if err != nil {
			return err
		}
		s.Shards = tags
	}
	if s.Version == 0 {
		s.Version = 1
	}
	if err := s.Validate(); err != nil {
		return err
	}
	return st.CreateSale(ctx, s, func(ctx context.Context) error {
		if err := rs.Preload(ctx, s, false); err != nil {
			return fmt.Errorf("preloading stock in redis: %w", err)
		}
		return nil
	})
}

// List writes one line per sale to w.
func List(ctx context.Context, st *store.Store, w io.Writer) error {
	rows, err := st.ListSales(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTARTS\tENDS\tWINDOW\tSHARDS\tITEMS\tQUANTITY\tSOLD")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", r.ID, r.Name,
			r.StartsAt.UTC().Format(time.RFC3339), r.EndsAt.UTC().Format(time.RFC3339), r.Window, r.Shards, r.Items, r.Quantity, r.Sold)
	}
	return tw.Flush()
}

// Show writes sale id's description, its items with order counts by status
// from PostgreSQL, and the stock left per shard in Redis.
func Show(ctx context.Context, st *store.Store, rs *stock.Store, id int64, w io.Writer) error {
	row, items, found, err := st.SaleStats(ctx, id)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("sale %d: no such sale in PostgreSQL", id)
	}
	fmt.Fprintf(w, "sale %d %q  %s .. %s  payment window %s  shards %d\n", row.ID, row.Name,
		row.StartsAt.UTC().Format(time.RFC3339), row.EndsAt.UTC().Format(time.RFC3339), row.Window, row.Shards)
	layout, lerr := rs.LoadSale(ctx, id)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ITEM\tNAME\tPRICE\tQTY\tSOLD\tPENDING\tPAID\tEXPIRED\tCANCELLED\tFAILED\tREDIS LEFT\tPER SHARD")
	for _, it := range items {
		left, per := "?", "?"
		if lerr == nil {
			if rem, err := rs.Remaining(ctx, layout, it.ID); err == nil {
				var sum int64
				parts := make([]string, len(rem))
				for i, n := range rem {
					sum += n
					parts[i] = fmt.Sprint(n)
				}
				left, per = fmt.Sprint(sum), strings.Join(parts, ",")
			}
		}
		b := it.ByStatus
		fmt.Fprintf(tw, "%d\t%s\t%d %s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", it.ID, it.Name, it.Price, it.Currency,
			it.Quantity, it.Sold, b[store.StatusPending], b[store.StatusPaid], b[store.StatusExpired],
			b[store.StatusCancelled], b[store.StatusFailed], left, per)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if lerr != nil {
		fmt.Fprintf(w, "redis: %v\n", lerr)
	}
	return nil
}
