package saleops

// A sale file is the JSON form of sale.Sale, or YAML with the same field
// names:
//
//	id: 42
//	name: Winter drop
//	startsAt: 2026-12-01T10:00:00Z
//	endsAt: 2026-12-01T11:00:00Z
//	paymentWindow: 10m
//	items:
//	  - {id: 4201, name: Sneaker, price: 12900, currency: EUR, quantity: 10000}
//	  - id: 4202
//	    name: Canvas tote
//	    price: 2900
//	    currency: EUR
//	    quantity: 500
//	    image: /sale/media/tote.svg          # optional, as is description
//	    description: Heavy canvas, one size.
//	brand:                      # optional: how the sale page looks
//	  shop: Hokusai Shoes
//	  logo: https://img.shop.example/logo.svg
//	  accent: "#0a58ca"
//	  banner: Free shipping on every order
//
// The branding fields (brand, and each item's image and description) are
// checked by sale.Sale.Validate: image URLs are https or paths on the
// page's own site, the accent a hex colour that reads as text on the page,
// lengths bounded; a bad value is refused with the field named.
//
// Unknown fields are refused, so a misspelt field never silently falls back to
// a default. Shard hash tags are placed by `flashctl sale create` (one per
// shard, spread over the cluster's masters) unless the file names them.
// deploy/sale.yaml is a sample.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"flashsale/sharding/ops/tool"
	"flashsale/sharding/sale"
)

// ParseSale decodes and validates a sale description. format is "json" or
// "yaml"; "" guesses from the first non-space byte ('{' is JSON).
func ParseSale(data []byte, format string) (*sale.Sale, error) {
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
		// and sale.Sale's own JSON rules (durations, RFC 3339 times).
		j, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("reading yaml: %w", err)
		}
		data = j
	} else if format != "json" {
		return nil, fmt.Errorf("unknown sale file format %q: want json or yaml", format)
	}
	var s sale.Sale
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
		if n := utf8.RuneCountInString(it.Name); n > maxNameLen {
			return nil, fmt.Errorf("items[%d] (item %d).name: %d characters, at most %d", i, it.ID, n, maxNameLen)
		}
		if it.Currency == "" {
			return nil, fmt.Errorf("item %d: currency is missing", it.ID)
		}
	}
	if strings.TrimSpace(s.Name) == "" {
		return nil, errors.New("sale name is missing")
	}
	if n := utf8.RuneCountInString(s.Name); n > maxNameLen {
		return nil, fmt.Errorf("name: %d characters, at most %d", n, maxNameLen)
	}
	if s.State != "" {
		return nil, errors.New("state is not part of a sale file: a sale starts active; `flashctl sale pause|end` changes it")
	}
	if s.Draw != nil {
		return nil, errDrawInFile
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// maxNameLen bounds the names of a sale and its items, in characters: the
// sale page shows them as headings.
const maxNameLen = 200

// MaxSaleFile bounds a sale file: a real one is a few kilobytes. The bound
// is loose on purpose: a file with one oversized field (a description
// pasted whole) is read, so that the error names that field.
const MaxSaleFile = 16 << 20

// ReadSaleFile reads and parses the sale file at path; the extension (.json,
// .yaml, .yml) picks the format, anything else is guessed from the content.
// Path "-" reads standard input (`kubectl exec -i ... --file - < sale.yaml`).
func ReadSaleFile(path string) (*sale.Sale, error) {
	in := tool.Stdin
	if path == "-" {
		path = "standard input"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("reading sale file: %w", err)
		}
		defer f.Close()
		in = f
	}
	data, err := io.ReadAll(io.LimitReader(in, MaxSaleFile+1))
	if err == nil && len(data) > MaxSaleFile {
		err = fmt.Errorf("more than %d bytes", MaxSaleFile)
	}
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
	s, err := ParseSale(data, format)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
