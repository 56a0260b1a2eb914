package drawverify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"

	"flashsale/sharding/api"
	"flashsale/sharding/draw"
	"flashsale/sharding/ops/tool"
)

// DefaultGateway is the gateway `sale draw verify` asks when neither
// --gateway nor FLASHCTL_GATEWAY names one.
const DefaultGateway = "http://127.0.0.1:18080"

// The states of a sale's draw, as GET .../draw names them.
const (
	DrawOpen     = "OPEN"     // entries open; no root yet
	DrawFrozen   = "FROZEN"   // entrants frozen under root and count; seed not revealed yet
	DrawRevealed = "REVEALED" // seed revealed; entries published with their draws and places
)

// DrawPage is the body of GET /api/flash-sales/sales/{id}/draw[?from=K]: the
// draw's state and, once revealed, the entries from index From (the leaves
// in sorted order, each with its draw and place); Next is where the next
// page starts, nil on the last. A saved draw is one DrawPage with every
// entry and no Next. Hashes are lower-case hex.
type DrawPage struct {
	SaleID     int64   `json:"saleId"`
	Access     string  `json:"access"`
	State      string  `json:"state"`
	Commitment *string `json:"commitment"` // nil: the sale was created without one
	Count      int     `json:"count"`
	Root       string  `json:"root,omitempty"`
	FrozenAt   string  `json:"frozenAt,omitempty"`
	Seed       string  `json:"seed,omitempty"`
	Committed  *bool   `json:"committed,omitempty"`
	// ID is the revealed draw's address (draw.ID), Pages its number of
	// pages: page k is served, immutable, at .../draw/{id}/pages/{k}.
	ID    string `json:"id,omitempty"`
	Pages int    `json:"pages,omitempty"`
	// Beacon is the round that seals the draw (nil for a draw on the seed
	// alone); HeadKey the public key of its tree head, Head the signed tree
	// head once frozen.
	Beacon  *BeaconJSON `json:"beacon,omitempty"`
	HeadKey string      `json:"headKey,omitempty"`
	Head    *HeadJSON   `json:"head,omitempty"`
	From    int         `json:"from"`
	Entries []DrawEntry `json:"entries,omitempty"`
	Next    *int        `json:"next,omitempty"`
}

// DrawEntry is one published entrant: its leaf, its draw and its place (1
// is first).
type DrawEntry struct {
	Leaf  string `json:"leaf"`
	Draw  string `json:"draw"`
	Place int    `json:"place"`
}

// ErrNotRevealed is returned for a draw whose seed is not revealed yet.
var ErrNotRevealed = errors.New("draw not revealed yet")

// maxDrawPage bounds one page's body: 10,000 entries are about 1.7 MB.
const maxDrawPage = 64 << 20

// FetchDraw reads sale id's draw from the gateway at base (such as
// http://127.0.0.1:18080): the first page from .../draw, the others from
// the revealed draw's address (.../draw/{id}/pages/{k}, what a CDN keeps),
// or, from a gateway that serves no address, by following Next; and returns
// it as one DrawPage. Every page must describe the same draw as the first
// and start where the one before ended.
func FetchDraw(ctx context.Context, c *http.Client, base string, id int64) (*DrawPage, error) {
	u := base + "/api/flash-sales/sales/" + strconv.FormatInt(id, 10) + "/draw"
	all, err := fetchDrawPage(ctx, c, u, id)
	if err != nil {
		return nil, err
	}
	if all.From != 0 {
		return nil, fmt.Errorf("%s: the first page starts at entry %d, not 0", u, all.From)
	}
	if _, ok := draw.ParseLowerHash([]byte(all.ID)); all.ID != "" && !ok {
		return nil, fmt.Errorf("%s: the draw's address %q is not 64 lower-case hex digits", u, all.ID)
	}
	for k, p := 1, all; p.Next != nil; k++ {
		if err := followsOn(p, len(all.Entries), all.Count); err != nil {
			return nil, fmt.Errorf("%s: %w", u, err)
		}
		next := u + "?from=" + strconv.Itoa(*p.Next)
		if all.ID != "" {
			next = u + "/" + all.ID + "/pages/" + strconv.Itoa(k)
		}
		if p, err = fetchDrawPage(ctx, c, next, id); err != nil {
			return nil, err
		}
		if err := sameDraw(all, p, len(all.Entries)); err != nil {
			return nil, fmt.Errorf("%s: %w", u, err)
		}
		all.Entries = append(all.Entries, p.Entries...)
		all.Next = p.Next
	}
	return all, nil
}

// followsOn checks that page p, the last one read, ends at have entries of
// count and that its Next starts the page after it.
func followsOn(p *DrawPage, have, count int) error {
	switch {
	case p.From+len(p.Entries) != have || len(p.Entries) == 0 || *p.Next != have:
		return fmt.Errorf("the page from %d holds %d entries and says the next starts at %d, after %d read: not a continuation", p.From, len(p.Entries), *p.Next, have)
	case have >= count:
		return fmt.Errorf("%d entries read of a count of %d, and the gateway says more follow", have, count)
	}
	return nil
}

// sameDraw checks that page p, from index from, is a page of the draw first
// describes.
func sameDraw(first, p *DrawPage, from int) error {
	switch {
	case p.From != from:
		return fmt.Errorf("asked for the entries from %d, the page starts at %d", from, p.From)
	case p.SaleID != first.SaleID || p.State != first.State || p.Count != first.Count || p.Root != first.Root || p.Seed != first.Seed ||
		hexOrNull(p.Commitment) != hexOrNull(first.Commitment) || p.ID != first.ID:
		return fmt.Errorf("the page from %d describes another draw than the first page (sale %d %s, %d entrants, root %s): run the check again",
			from, p.SaleID, p.State, p.Count, p.Root)
	}
	return nil
}

// fetchDrawPage GETs one page, turning the gateway's 404s into what they
// mean.
func fetchDrawPage(ctx context.Context, c *http.Client, u string, id int64) (*DrawPage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking the gateway for the draw of sale %d: %w", id, err)
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, maxDrawPage)
	if resp.StatusCode != http.StatusOK {
		return nil, drawRefusal(resp.StatusCode, body, u, id)
	}
	var p DrawPage
	if err := json.NewDecoder(body).Decode(&p); err != nil {
		return nil, fmt.Errorf("GET %s: the answer is not a draw: %w", u, err)
	}
	return &p, nil
}

// drawRefusal is the error of a GET .../draw answered with status code.
func drawRefusal(code int, body io.Reader, u string, id int64) error {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(body).Decode(&e)
	switch {
	case code == http.StatusNotFound && e.Error == api.NoDraw:
		return fmt.Errorf("sale %d has no draw (its access mode is open: buyers are not ordered by a draw), so there is nothing to verify", id)
	case code == http.StatusNotFound && e.Error == api.SaleNotFound:
		return fmt.Errorf("the gateway does not know sale %d (GET %s: %s)", id, u, api.SaleNotFound)
	}
	return fmt.Errorf("GET %s: %d %s %s", u, code, http.StatusText(code), e.Error)
}

// ReadDrawFile reads a draw saved whole (one DrawPage with every entry,
// from 0, no Next) from path; "-" reads standard input.
func ReadDrawFile(path string) (*DrawPage, error) {
	in := tool.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("reading the draw: %w", err)
		}
		defer f.Close()
		in = f
	}
	var p DrawPage
	if err := json.NewDecoder(in).Decode(&p); err != nil {
		return nil, fmt.Errorf("reading the draw from %s: %w", path, err)
	}
	if p.Next != nil || p.From != 0 {
		return nil, fmt.Errorf("%s holds one page of the draw (entries from %d, next %s): save the whole draw (every page's entries in one, without next)",
			path, p.From, intOrNull(p.Next))
	}
	return &p, nil
}

func hexOrNull(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

func intOrNull(n *int) string {
	if n == nil {
		return "null"
	}
	return strconv.Itoa(*n)
}

// GatewayURL checks --gateway: an http or https URL with a host and no
// query; it returns it without a trailing slash.
func GatewayURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return "", tool.Usagef("sale draw verify: --gateway %q: want a gateway's http or https URL, such as %s", s, DefaultGateway)
	}
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s, nil
}

// publishedOf is the draw.Published of a revealed draw page with every
// entry; a field that is not a hash fails with the field named.
func publishedOf(p *DrawPage) (*draw.Published, error) {
	pub := &draw.Published{Count: p.Count}
	var err error
	if pub.Commitment, err = draw.ParseHash(*p.Commitment); err != nil {
		return nil, fmt.Errorf("commitment: %w", err)
	}
	if pub.Seed, err = draw.ParseHash(p.Seed); err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	if pub.Root, err = draw.ParseHash(p.Root); err != nil {
		return nil, fmt.Errorf("root: %w", err)
	}
	pub.Leaves = make([]draw.Hash, len(p.Entries))
	pub.Draws = make([]draw.Hash, len(p.Entries))
	pub.Places = make([]int, len(p.Entries))
	for i, e := range p.Entries {
		if pub.Leaves[i], err = draw.ParseHash(e.Leaf); err != nil {
			return nil, fmt.Errorf("entry %d: leaf: %w", i, err)
		}
		if pub.Draws[i], err = draw.ParseHash(e.Draw); err != nil {
			return nil, fmt.Errorf("entry %d: draw: %w", i, err)
		}
		pub.Places[i] = e.Place
	}
	return pub, nil
}
