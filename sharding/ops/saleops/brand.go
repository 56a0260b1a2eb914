package saleops

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"flashsale/sharding/ops/tool"
	"flashsale/sharding/sale"
	"flashsale/writer/schema"
)

// SaleBranded is the report of `sale brand`.
type SaleBranded struct {
	Sale    int64    `json:"sale"`
	Version int64    `json:"version"`
	Origins []string `json:"imageOrigins"` // https origins the page's CSP names
}

// Text renders the report.
func (r *SaleBranded) Text(w io.Writer) error {
	origins := "none but the site's own"
	if len(r.Origins) > 0 {
		origins = strings.Join(r.Origins, " ")
	}
	_, err := fmt.Fprintf(w, "sale %d branded (version %d): the sale description shows it within every gateway's 1 s refresh; "+
		"the page's image origins (%s) reach its Content-Security-Policy once a cached page expires (the gateway's -page-max-age)\n",
		r.Sale, r.Version, origins)
	return err
}

// BrandSale gives the live sale file.ID the branding of file (its Brand and
// its items' images and descriptions): PostgreSQL first, then the
// description in Redis with Version+1, which every gateway reloads within
// its refresh. Every other field of file must match the live sale (a sale
// file edited for its branding only); a sale in the middle of a reshard is
// refused, as a pause is.
func BrandSale(ctx context.Context, t *tool.Tool, file *sale.Sale) (*SaleBranded, error) {
	if err := t.NeedDB(); err != nil {
		return nil, err
	}
	live, err := t.LoadSale(ctx, file.ID)
	if err != nil {
		return nil, err
	}
	if diff := unbrandedDiff(live, file); len(diff) > 0 {
		return nil, fmt.Errorf("sale %d: the file's %s differ from the live sale's: `sale brand` changes only brand and the items' image and description",
			file.ID, strings.Join(diff, ", "))
	}
	if p, err := t.Store.PendingReshard(ctx, file.ID); err != nil {
		return nil, err
	} else if p != nil {
		return nil, fmt.Errorf("sale %d is being resharded (%d to %d shards, %s): finish it first (flashctl reshard)", file.ID, p.From, p.To, p.Phase)
	}
	next := *live
	next.Brand, next.Items, next.Version = file.Brand, slices.Clone(live.Items), live.Version+1
	for i := range next.Items {
		next.Items[i].Image, next.Items[i].Description = file.Items[i].Image, file.Items[i].Description
	}
	if err := next.Validate(); err != nil {
		return nil, err
	}
	if err := schema.Migrate(ctx, t.DB, nil); err != nil {
		return nil, err
	}
	if err := schema.SetBrand(ctx, t.DB, &next); err != nil {
		return nil, err
	}
	if err := t.Store.StoreSale(ctx, &next); err != nil {
		return nil, err
	}
	return &SaleBranded{Sale: next.ID, Version: next.Version, Origins: next.ImageOrigins()}, nil
}

// unbrandedDiff names the sale file fields in which a and b differ, their
// branding, shards, version and state left out.
func unbrandedDiff(a, b *sale.Sale) []string {
	ma, mb := unbranded(a), unbranded(b)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(ma)) {
		if string(ma[k]) != string(mb[k]) {
			out = append(out, k)
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// unbranded is s as the sale file's fields, each as JSON, without the
// branding and what flashctl sets.
func unbranded(s *sale.Sale) map[string]json.RawMessage {
	c := *s
	c.Brand, c.Shards, c.Version, c.State, c.Draw = nil, nil, 0, "", nil
	c.Items = slices.Clone(s.Items)
	for i := range c.Items {
		c.Items[i].Image, c.Items[i].Description = "", ""
	}
	b, _ := json.Marshal(&c) // a Sale always marshals
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	return m
}
